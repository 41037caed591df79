"""A search's quick screen: the group program's jit paths settle a draw, and a draw whose quick verdict
holds a finding the gate lets pass gets its eager paths as a user calls them."""

from __future__ import annotations

import numpy as np

SPLIT = """
import jax
import jax.numpy as jnp


def root(x):
    # At 0, jnp.where's untaken branch makes jacrev's column NaN: a finding the gate lets pass by default.
    return jnp.where(x > 0, jnp.sqrt(jnp.abs(x)), 0.0)


def split(x):
    # Compiled, the value is 1.5 times the eager one: a stand-in for a compiler's error.
    inner = x
    while hasattr(inner, "primal"):
        inner = inner.primal
    compiled = isinstance(inner, jax.core.Tracer)
    return root(x) * (1.5 if compiled else 1.0)
"""


def _screened(tmp_path, monkeypatch, rows: str):
    from gradaudit.service import screen_all
    from gradaudit.sources.scenario_files import load_text

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "splits.py").write_text(SPLIT)
    scenarios, errors = load_text("scenarios:\n" + rows, "s.yaml")
    assert not errors
    return list(screen_all(scenarios))


def test_a_draw_whose_quick_verdict_lets_a_finding_pass_gets_its_eager_paths_and_keeps_the_quick_ones(
    tmp_path, monkeypatch
):
    (settled, nan, split) = _screened(
        tmp_path,
        monkeypatch,
        "  - {name: plain, fn: 'splits:root', inputs: [{dtype: float32, value: [1.0, 4.0]}]}\n"
        "  - {name: pole, fn: 'splits:root', inputs: [{dtype: float32, value: [0.0, 4.0]}]}\n"
        "  - {name: split, fn: 'splits:split', inputs: [{dtype: float32, value: [0.0, 4.0]}]}\n",
    )
    # Settled by the group program alone: no eager path was computed.
    assert settled.status == "consistent"
    assert "jacrev" not in settled.paths and settled.paths["jit_jacrev"].engine == "group"
    # A NaN derivative at 0: the eager paths are computed (the literal engine), the jit ones and
    # finite differences kept from the group program; every one of them is what its name says.
    assert {nan.paths[p].engine for p in ("value", "jacfwd", "jacrev")} == {"literal"}
    assert {nan.paths[p].engine for p in ("jit_value", "jit_jacfwd", "jit_jacrev", "finite_difference")} == {"group"}
    np.testing.assert_array_equal(nan.paths["jacfwd"].arrays[0], [[0.0, 0.0], [0.0, 0.25]])
    np.testing.assert_array_equal(nan.paths["jacrev"].arrays[0], [[np.nan, 0.0], [np.nan, 0.25]])
    for eager in ("jacfwd", "jacrev"):
        np.testing.assert_array_equal(nan.paths[eager].arrays[0], nan.paths[f"jit_{eager}"].arrays[0])
    assert "eager-jit" not in {str(f.finding_class) for f in nan.findings}
    # The split only the eager paths show: eager value sqrt(x), compiled 1.5 sqrt(x).
    np.testing.assert_allclose(split.paths["value"].arrays[0], [0.0, 2.0])
    np.testing.assert_allclose(split.paths["jit_value"].arrays[0], [0.0, 3.0])
    assert split.paths["jit_value"].engine == "group"
    assert "eager-jit" in {str(f.finding_class) for f in split.findings}, str(split)


def test_a_quick_path_bound_otherwise_than_the_literal_one_of_its_name_is_computed_again():
    # The group engine passes a select_n selector in traced; the literal engine captures it as a
    # constant, under the same path names. Eager paths with the selector captured must meet jit paths
    # with it captured too, so none of the group's paths is kept.
    from gradaudit.engines.group import GroupEngine
    from gradaudit.engines.literal import LiteralEngine
    from gradaudit.screening import QUICK_PATHS
    from gradaudit.sources.scenario_files import load_text

    scenarios, errors = load_text(
        "scenarios:\n  - {name: s, selector: {dtype: int32, value: 2}, cases: 2, shape: [], dtype: float32}\n", "s.yaml"
    )
    assert not errors
    (quick,) = [computed for batch in GroupEngine(eager=False).run(scenarios) for _, computed in batch]
    assert {path.binding for path in quick.paths.values()} == {"traced"}
    given = {name: path for name, path in quick.paths.items() if name in QUICK_PATHS}
    assert set(given) == {"jit_value", "jit_jacfwd", "jit_jacrev", "finite_difference"}
    completed = LiteralEngine().completed(scenarios[0], given)
    assert {(path.engine, path.binding) for path in completed.paths.values()} == {("literal", "constant")}
    assert set(given) < set(completed.paths)
