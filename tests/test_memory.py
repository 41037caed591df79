"""A run keeps of each consistent scenario only what its reports show, so memory does not grow with
the arrays of scenarios that agreed; what is shown stays the same."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

from gradaudit.model.findings import CONSISTENT
from gradaudit.model.options import Options
from gradaudit.model.paths import KEPT_ELEMENTS
from gradaudit.render.json_report import dump, report_to_json
from gradaudit.render.terminal import print_report
from gradaudit.service import audit
from gradaudit.sources.scenario_files import load_paths
from tests.helpers import ROOT, write_yaml

WIDE = """
scenarios:
  - name: wide-sine
    fn: wide_fns:sine
    inputs:
      - {dtype: float32, fill: arange, shape: [40]}
  - name: wide-lookup
    fn: wide_fns:lookup
    inputs:
      - {dtype: float32, fill: arange, shape: [40]}
      - {dtype: int32, value: 3}
"""


def _shown(report) -> tuple[str, str]:
    """The terminal's text (verbose) and the findings-detail JSON, timings taken out."""
    console = Console(file=io.StringIO(), width=200, no_color=True)
    print_report(console, report, verbose=True)
    document = report_to_json(report, "findings")
    text = dump(document)
    for result in report.results:
        text = text.replace(f'"seconds":{round(result.seconds, 6)}', "").replace(
            f'"seconds": {round(result.seconds, 6)}', ""
        )
    return console.file.getvalue(), text  # type: ignore[attr-defined]  # a StringIO, given above


def test_a_lightened_run_drops_agreeing_arrays_and_shows_the_same(tmp_path):
    (tmp_path / "wide_fns.py").write_text(
        "import jax.numpy as jnp\n\ndef sine(x):\n    return jnp.sin(x)\n\ndef lookup(x, i):\n    return x * x[i]\n",
        encoding="utf-8",
    )
    write_yaml(tmp_path, "wide.yaml", WIDE)
    loaded = load_paths([str(tmp_path / "wide.yaml"), str(ROOT / "scenarios" / "select_n" / "representative.yaml")])
    assert not loaded.errors
    options = Options(rule="legacy", jobs=0, cache=None)
    whole, light = audit(loaded.scenarios, options), audit(loaded.scenarios, options, lighten=True)
    assert [r.status for r in whole.results] == [r.status for r in light.results]
    wide = {r.scenario.name: r for r in light.results if r.scenario.name.startswith("wide")}
    assert {r.status for r in wide.values()} == {CONSISTENT}
    for result in wide.values():
        # 40 x 40 Jacobians agreed: dropped, the paths still ok; the inputs kept.
        assert all(path.ok and path.arrays == () and path.estimates is None for path in result.paths.values())
        assert np.asarray(result.inputs[0]).shape == (40,)
    failing = [r for r in light.results if r.status != CONSISTENT]
    assert failing and all(any(p.arrays for p in r.paths.values() if p.ok) for r in failing)
    # Failing scenarios keep every array (their evidence); consistent ones a few numbers at most.
    for ours, theirs in zip(light.results, whole.results, strict=True):
        assert ours.paths.keys() == theirs.paths.keys()
        for name, path in ours.paths.items():
            if path.ok and (path.arrays or ours.status != CONSISTENT):
                assert ours.status != CONSISTENT or sum(np.size(b) for b in path.ok_arrays) <= KEPT_ELEMENTS
                for kept, full in zip(path.ok_arrays, theirs.paths[name].ok_arrays, strict=True):
                    np.testing.assert_array_equal(kept, full)
    assert _shown(light) == _shown(whole)
