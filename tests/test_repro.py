"""Each wrong or eager-jit finding as a plain-JAX script that prints the numbers the report holds."""

import json
import math
from pathlib import Path

import jax
import numpy as np
import pytest

import gradaudit
from gradaudit.model.paths import label
from tests.helpers import ROOT, run_cli, run_script

FOUND = ROOT / "tests" / "data" / "survey"
"""Reproducer files an earlier survey wrote, kept here: a new survey renumbers its own."""
FILES = [
    FOUND / "lax.select_n-1.yaml",  # reverse mode drops an out-of-range selector's case, both bindings
    FOUND / "wrappers.getitem-1.yaml",  # uint8 255 read one way eagerly, another under jit with constants
    FOUND / "lax.clamp-1.yaml",  # clamp with lo > hi, every mode
    FOUND / "scipy.special.i0-3.yaml",  # i0'(0) against finite differences
    FOUND / "numpy.unique-2.yaml",  # jit cannot compile unique: finite differences evaluate it eagerly
    ROOT / "examples" / "second_order.yaml",  # Hessians of a squared selection, finite differences of the Jacobian
]


def printed(script: Path) -> tuple[str, dict[str, float]]:
    """What a script prints when run on its own, in a fresh process: its entry and each path's number."""
    done = run_script(script)
    assert done.returncode == 0, done.stderr
    first, *lines = done.stdout.strip().splitlines()
    return first.removeprefix("at ").removesuffix(":"), {
        name: float(value) for name, value in (line.split(": ", 1) for line in lines)
    }


def same(reported: float, script: float, path: str) -> bool:
    """Equal (NaN with NaN); finite differences to within their rounding, as the script recomputes them."""
    if math.isnan(reported) or math.isnan(script):
        return math.isnan(reported) and math.isnan(script)
    slack = 1e-3 * max(1.0, abs(reported)) if "finite_difference" in path else 0.0
    return reported == script or abs(reported - script) <= slack


def reported(value) -> float:
    return (
        float(value)
        if not isinstance(value, str)
        else float({"Infinity": "inf", "-Infinity": "-inf", "NaN": "nan"}.get(value, value))
    )


@pytest.mark.slow
def test_every_script_prints_the_numbers_the_report_holds(tmp_path):
    out, report = tmp_path / "repro", tmp_path / "report.json"
    ran = run_cli("run", *map(str, FILES), "--repro-dir", str(out), "--json", str(report), "-q")
    assert ran.exit_code == 1, ran.stderr
    results = json.loads(report.read_text())["results"]
    expected = sum(
        1
        for r in results
        for f in r["findings"]
        if f["kind"] == "disagreement" and f["class"] in ("wrong", "eager-jit")
    )
    scripts = sorted(out.glob("*.py"))
    assert len(scripts) == expected > 0 and f"wrote {expected} reproducer scripts to {out}" in ran.stderr
    for script in scripts:
        text = script.read_text()
        assert "gradaudit" not in "".join(line for line in text.splitlines() if line.startswith(("import", "from"))), (
            "a script imports only JAX and NumPy"
        )
        assert "sys.path.insert" not in text, "JAX's functions and gradaudit's wrappers are imported as installed"
        where, numbers = printed(script)
        result = next(r for r in results if script.stem.rsplit("-", 1)[0] == r["name"])
        finding = next(
            f
            for f in result["findings"]
            if f.get("location") == where and {label(p) for p in f["paths"]} == set(numbers)
        )
        for path in finding["paths"]:
            assert same(reported(finding["values"][path]), numbers[label(path)], path), (
                f"{script.name}: {label(path)} printed {numbers[label(path)]}, "
                f"the report holds {finding['values'][path]}"
            )


def test_the_api_writes_a_script_for_a_function_imported_by_name(tmp_path):
    audit = gradaudit.audit(jax.lax.select_n, np.int32(5), np.float32(1.0), np.float32(2.0))
    scripts = audit.reproducers(tmp_path)
    assert [p.name for p in scripts] == ["select_n-1.py", "select_n-2.py"]
    where, numbers = printed(scripts[0])
    assert where == "d out/d cases[1]"
    assert numbers["jacfwd"] == 1.0 and numbers["jacrev"] == 0.0 and numbers["jit(jacrev) with constants"] == 0.0
    assert printed(scripts[1])[1]["finite differences"] == pytest.approx(1.0)


def test_a_function_without_a_name_gets_no_script_and_the_run_says_why(tmp_path):
    audit = gradaudit.audit(lambda a, b: jax.lax.select_n(np.int32(5), a, b), np.float32(1.0), np.float32(2.0))
    assert audit.status == "mismatch" and audit.reproducers(tmp_path) == [] and not list(tmp_path.iterdir())


def test_a_script_written_beside_a_survey_file_names_itself_in_how_to_run_it(tmp_path):
    from gradaudit.render.repro import write_beside

    audit = gradaudit.audit(jax.lax.select_n, np.int32(5), np.float32(1.0), np.float32(2.0))
    written = write_beside([(audit.result, tmp_path / "lax.select_n-3.yaml")])
    script = written[str(tmp_path / "lax.select_n-3.yaml")]
    assert script.name == "lax.select_n-3.py" and "python lax.select_n-3.py" in script.read_text()
    assert printed(script)[1]["jacrev"] == 0.0
