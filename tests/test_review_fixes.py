"""Edge cases a review found: each used to crash, exit with the wrong code, or mislead."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli, write_yaml

MODULE = """
import sys
import jax.numpy as jnp


def exits(x):
    sys.exit(0)


def square(x):
    return x * x


def integers(x):
    return jnp.arange(3)


def nothing(x):
    return None
"""


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "edge.py").write_text(MODULE)
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(5)\n")
    return tmp_path


def test_a_function_calling_sys_exit_is_an_error_and_the_run_goes_on(folder):
    path = write_yaml(
        folder,
        "s.yaml",
        """
        scenarios:
          - {name: exits, fn: "edge:exits", inputs: [{dtype: float32, value: 1.0}]}
          - {name: square, fn: "edge:square", inputs: [{dtype: float32, value: 2.0}]}
        """,
    )
    result = run_cli("run", str(path), "--json", "-")
    assert result.exit_code == 1
    statuses = {r["name"]: r["status"] for r in result.json()["results"]}
    assert statuses == {"exits": "error", "square": "consistent"}


def test_a_module_exiting_on_import_is_an_input_error(folder):
    path = write_yaml(
        folder, "s.yaml", 'scenarios:\n  - {name: x, fn: "exits_on_import:f", inputs: [{dtype: float32, value: 1.0}]}\n'
    )
    result = run_cli("run", str(path))
    assert result.exit_code == 2 and "importing 'exits_on_import' raised SystemExit" in result.stderr


def test_functions_without_floating_output_say_so(folder):
    path = write_yaml(
        folder,
        "s.yaml",
        """
        scenarios:
          - {name: integers, fn: "edge:integers", inputs: [{dtype: float32, value: 1.0}]}
          - {name: nothing, fn: "edge:nothing", inputs: [{dtype: float32, value: 1.0}]}
        """,
    )
    results = run_cli("run", str(path), "--json", "-").json()["results"]
    for entry in results:
        assert entry["status"] == "error"
        assert "the function returned no floating-point output to differentiate" in entry["findings"][0]["message"]


def test_zero_size_cases_keyword_parentheses_and_scientific_notation(tmp_path):
    path = write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: empty, selector: {dtype: int32, value: 2}, cases: 2, shape: [0], dtype: float32, tolerance: {rtol: 1e-3, atol: 1E-4}, eps: 2e-3}
        """,
    )
    result = run_cli("run", str(path), "--json", "-")
    assert result.exit_code == 0
    scenario = result.json()["results"][0]["scenario"]
    assert scenario["tolerance"] == {"rtol": 0.001, "atol": 0.0001} and scenario["eps"] == 0.002
    assert run_cli("list", str(path), "-k", "a (b)").exit_code == 2
    assert run_cli("list", str(path), "-k", "(empty)").exit_code == 0


def test_fn_in_defaults_leaves_select_n_scenarios_alone(folder):
    path = write_yaml(
        folder,
        "mixed.yaml",
        """
        defaults: {fn: "edge:square", dtype: float32}
        scenarios:
          - {name: by-default, inputs: [{dtype: float32, value: 3.0}]}
          - {name: select, selector: {dtype: int32, value: 1}, cases: 2, shape: []}
        """,
    )
    result = run_cli("run", str(path), "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert [r["scenario"]["kind"] for r in result.json()["results"]] == ["function", "select_n"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("[tool.gradaudit]\npaths = [1]\n", "'paths' must be a list of strings"),
        ("[tool]\ngradaudit = 1\n", "[tool.gradaudit] must be a table"),
        ("tool = 1\n", None),
        (b"\xff\xfe", "cannot read"),
        ("[tool.gradaudit]\ntolerance = {rtol = true}\n", "'tolerance' must be"),
    ],
)
def test_broken_configuration_is_exit_2_never_a_traceback(tmp_path, monkeypatch, content, message):
    path = write_yaml(
        tmp_path,
        "ok.yaml",
        "scenarios:\n  - {name: a, selector: {dtype: int32, value: 1}, cases: 2, shape: [], dtype: float32}\n",
    )
    target = tmp_path / "pyproject.toml"
    target.write_bytes(content) if isinstance(content, bytes) else target.write_text(content)
    monkeypatch.chdir(tmp_path)
    result = run_cli("list", str(path))
    assert result.exception is None
    if message is None:
        assert result.exit_code == 0
    else:
        assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_merge_refuses_shards_with_input_errors_and_incomplete_reports(tmp_path):
    good = write_yaml(
        tmp_path,
        "good.yaml",
        "scenarios:\n  - {name: a, selector: {dtype: int32, value: 1}, cases: 2, shape: [], dtype: float32}\n",
    )
    bad = write_yaml(tmp_path, "bad.yaml", "scenarios: []\n")
    run_cli("run", str(good), "--json", str(tmp_path / "good.json"))
    assert run_cli("run", str(bad), "--json", str(tmp_path / "bad.json")).exit_code == 2
    merged = run_cli("merge", str(tmp_path / "good.json"), str(tmp_path / "bad.json"), "-o", str(tmp_path / "m.json"))
    assert merged.exit_code == 2 and "had 1 input error(s)" in merged.stderr
    (tmp_path / "min.json").write_text('{"schema": "gradaudit.report/1"}')
    incomplete = run_cli(
        "merge", str(tmp_path / "good.json"), str(tmp_path / "min.json"), "-o", str(tmp_path / "m.json")
    )
    assert incomplete.exit_code == 2 and "needs 'environment' and 'results'" in incomplete.stderr
    (tmp_path / "base.json").write_text('{"schema": "gradaudit.report/1", "results": "x"}')
    baseline = run_cli("run", str(good), "--baseline", str(tmp_path / "base.json"))
    assert baseline.exit_code == 2 and "'results' must be a list" in baseline.stderr
    missing = run_cli("merge", str(tmp_path / "good.json"), "-o", str(tmp_path / "no" / "m.json"))
    assert missing.exit_code == 2 and "-o" in missing.stderr


def test_json_on_stdout_stays_parseable_under_github_actions(tmp_path, monkeypatch):
    path = write_yaml(
        tmp_path,
        "ok.yaml",
        "scenarios:\n  - {name: a, selector: {dtype: int32, value: 2}, cases: 2, shape: [], dtype: float32}\n",
    )
    from click.testing import CliRunner

    from gradaudit.cli import main

    result = CliRunner().invoke(
        main, ["run", str(path), "--rule", "legacy", "--json", "-"], env={"GITHUB_ACTIONS": "true"}
    )
    assert json.loads(result.stdout)["summary"]["mismatch"] == 1
    both = run_cli("run", str(path), "--json", "-", "--format", "github")
    assert both.exit_code == 2 and "cannot both go to stdout" in both.stderr
