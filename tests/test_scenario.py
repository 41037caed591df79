"""Loading and validation: valid files become Scenarios; every bad input is exit 2 with file:line:col."""

from __future__ import annotations

import time

import pytest

from gradaudit.model.scenario import Selector, Tolerance
from gradaudit.sources.scenario_files import load_paths
from tests.helpers import run_cli, write_yaml

VALID = """
defaults: {dtype: float32, shape: [3]}
scenarios:
  - name: first
    selector: {dtype: int8, value: [-1, 0, 1]}
    cases: 2
  - name: second
    selector: {dtype: bool, value: true}
    cases: 2
    shape: []
    dtype: float64
    seed: 7
    tolerance: {rtol: 0.01, atol: 0.001}
    eps: 0.5
    values: [1.5, -2]
"""


def test_valid_file_loads_with_defaults_merged(tmp_path):
    path = write_yaml(tmp_path, "ok.yaml", VALID)
    loaded = load_paths([str(path)])
    assert loaded.errors == []
    first, second = loaded.scenarios
    assert first.name == "first"
    assert first.target.selector == Selector(dtype="int8", value=[-1, 0, 1])
    assert (first.target.cases, first.target.shape, first.target.dtype, first.seed) == (2, (3,), "float32", 0)
    assert (first.source.line, first.source.col) == (3, 5)
    assert second.target.shape == () and second.target.dtype == "float64"
    assert second.tolerance == Tolerance(rtol=0.01, atol=0.001)
    assert second.eps == 0.5 and second.target.values == (1.5, -2.0) and second.seed == 7


def test_folders_are_searched_recursively_and_sorted(tmp_path):
    scenario = (
        "scenarios:\n  - {{name: {name}, selector: {{dtype: int32, value: 0}}, cases: 1, shape: [], dtype: float32}}\n"
    )
    write_yaml(tmp_path, "b/z.yml", scenario.format(name="z"))
    write_yaml(tmp_path, "a.yaml", scenario.format(name="a"))
    write_yaml(tmp_path, "b/c/m.yaml", scenario.format(name="m"))
    write_yaml(tmp_path, "notes.txt", "not a scenario")
    loaded = load_paths([str(tmp_path)])
    assert loaded.errors == []
    assert [s.name for s in loaded.scenarios] == ["a", "m", "z"]


BASE = "  - name: s\n    selector: {dtype: int32, value: 0}\n    cases: 2\n    shape: []\n    dtype: float32\n"

BAD_INPUTS = {
    # PyYAML notices both a line late: the error points where the bracket opened, where the colon is missing
    "yaml-syntax": ("scenarios:\n  - name: [unclosed\n", "2:11", "YAML syntax error"),
    "yaml-missing-colon": (
        "scenarios:\n  - name: a\n    fn foo\n    inputs: [1]\n",
        "3:5",
        "could not find expected ':'",
    ),
    "unknown-key": (
        "scenarios:\n" + BASE + "    selctor: 1\n",
        "7:5",
        "unknown key 'selctor' in a scenario; did you mean 'selector'?",
    ),
    "unknown-top-key": ("scenario:\n" + BASE, "1:1", "did you mean 'scenarios'?"),
    "duplicate-key": ("scenarios:\n" + BASE + "    cases: 3\n", "7:5", "duplicate key 'cases'"),
    "missing-field": (
        "scenarios:\n  - name: s\n    selector: {dtype: int32, value: 0}\n    shape: []\n    dtype: float32\n",
        "2:5",
        "missing 'cases'",
    ),
    "empty-file": ("", "1:1", "empty file"),
    "no-scenarios": ("scenarios: []\n", "1:12", "nothing to audit"),
    "uint32-negative": (
        "scenarios:\n" + BASE.replace("int32, value: 0", "uint32, value: -1"),
        "3:38",
        "-1 is not representable in uint32 (0..4294967295)",
    ),
    "int8-overflow": (
        "scenarios:\n" + BASE.replace("int32, value: 0", "int8, value: 300"),
        "3:36",
        "300 is not representable in int8 (-128..127)",
    ),
    "float-selector": (
        "scenarios:\n" + BASE.replace("int32", "float32", 1),
        "3:23",
        "selector dtype must be bool or an integer dtype",
    ),
    "bool-three-cases": (
        "scenarios:\n" + BASE.replace("int32, value: 0", "bool, value: true").replace("cases: 2", "cases: 3"),
        "3:23",
        "at most 2 cases",
    ),
    "zero-cases": ("scenarios:\n" + BASE.replace("cases: 2", "cases: 0"), "4:12", "cases must be >= 1"),
    "negative-dimension": (
        "scenarios:\n" + BASE.replace("shape: []", "shape: [2, -3]"),
        "5:16",
        "shape dimensions must be integers >= 0",
    ),
    "selector-shape": (
        "scenarios:\n" + BASE.replace("value: 0", "value: [0, 1]").replace("shape: []", "shape: [3]"),
        "3:37",
        "must be a scalar or the case shape [3]",
    ),
    "float-cases": (
        "scenarios:\n" + BASE.replace("dtype: float32", "dtype: int32"),
        "6:12",
        "dtype must be one of bfloat16, float16, float32, float64",
    ),
    "python-tag": (
        "scenarios:\n" + BASE.replace("cases: 2", "cases: !!python/object:os.system 2"),
        "4:12",
        "unsupported YAML tag",
    ),
    "not-utf8": (b"scenarios:\n  - name: \xff\xfe\n", "2:11", "not UTF-8"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_exit_2_with_location_and_no_traceback(tmp_path, name):
    text, where, message = BAD_INPUTS[name]
    path = tmp_path / "bad.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    result = run_cli("run", str(path))
    assert result.exit_code == 2, result.stderr
    assert result.exception is None
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"{path}:")]
    assert any(f"{path}:{where}" in line and message in line for line in lines), result.stderr


def test_duplicate_names_across_files_point_at_both(tmp_path):
    write_yaml(tmp_path, "a.yaml", "scenarios:\n" + BASE)
    write_yaml(tmp_path, "b.yaml", "scenarios:\n" + BASE)
    result = run_cli("run", str(tmp_path))
    assert result.exit_code == 2
    assert (
        f"{tmp_path / 'b.yaml'}:2:5: duplicate scenario name 's' (first defined at {tmp_path / 'a.yaml'}:2:5)"
        in result.stderr
    )


def test_every_error_in_every_file_is_reported_in_one_run(tmp_path):
    write_yaml(
        tmp_path,
        "one.yaml",
        "scenarios:\n"
        + BASE.replace("cases: 2", "cases: 0")
        + BASE.replace("name: s", "name: t").replace("float32", "float33"),
    )
    write_yaml(tmp_path, "two.yaml", "scenarios:\n  - name: [\n")
    result = run_cli("run", str(tmp_path))
    assert result.exit_code == 2
    located = [line for line in result.stderr.splitlines() if line.startswith(str(tmp_path))]
    assert len(located) == 3, result.stderr
    assert "3 input errors in 2 files; nothing was audited" in result.stderr


def test_missing_path_and_empty_folder_are_input_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_cli("run", str(tmp_path / "nope.yaml"), str(tmp_path / "empty"))
    assert result.exit_code == 2
    assert "nope.yaml:1:1: no such file or folder" in result.stderr
    assert "no *.yaml or *.yml files in this folder" in result.stderr


def test_input_errors_go_into_the_json_report(tmp_path):
    path = write_yaml(tmp_path, "bad.yaml", "scenarios:\n" + BASE.replace("cases: 2", "cases: 0"))
    out = tmp_path / "report.json"
    result = run_cli("run", str(path), "--json", str(out))
    assert result.exit_code == 2
    import json

    report = json.loads(out.read_text())
    assert report["summary"]["total"] == 0
    assert report["errors"] == [{"file": str(path), "line": 4, "col": 12, "message": "cases must be >= 1, got 0"}]


HOSTILE = {
    "top-level-list": ("- 1\n- 2\n", "1:1", "the file must be a mapping, got a list"),
    "scenarios-mapping": ("scenarios: {a: 1}\n", "1:12", "'scenarios' must be a list, got a mapping"),
    "ragged-selector": (
        "scenarios:\n" + BASE.replace("value: 0", "value: [[1, 2], [3]]").replace("shape: []", "shape: [2, 2]"),
        "3:37",
        "not rectangular",
    ),
    "merge-key": ("scenarios:\n" + BASE + "    <<: {seed: 1}\n", "7:5", "merge keys ('<<') are not supported"),
    "huge-integer": (
        "scenarios:\n" + BASE.replace("value: 0", "value: 100000000000000000000000000000"),
        "3:37",
        "integer too large: 30 digits (at most 1e+20, past uint64's range)",
    ),
    "string-seed": ("scenarios:\n" + BASE + '    seed: "1"\n', "7:11", "seed must be an integer, got '1'"),
    "nul-byte": ("scen\x00arios: 1\n", "1:5", "invalid character U+0000"),
    "tab-indent": ("scenarios:\n\t- name: tab\n", "2:1", "YAML indents with spaces only"),
    "deep-nesting": ("a: " + "[" * 5000 + "]" * 5000 + "\n", "1:", "YAML syntax error"),
    "second-document": ("scenarios:\n" + BASE + "---\nscenarios: []\n", "8:1", "found another one after '---'"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_are_exit_2_with_location(tmp_path, name):
    text, where, message = HOSTILE[name]
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    result = run_cli("run", str(path))
    assert result.exit_code == 2 and result.exception is None
    assert any(line.startswith(f"{path}:{where}") and message in line for line in result.stderr.splitlines()), (
        result.stderr
    )


SWEEP = """
defaults: {dtype: float32}
sweep:
  name: "{selector.dtype}-{selector.value}-n{cases}-{shape}"
  selector: {dtype: [int8, int32, uint32, bool], value: [-1, 0, 255]}
  cases: [1, 2, 6]
  shape: [[], [3]]
"""


def test_sweeps_expand_to_the_product_and_count_what_they_skip(tmp_path):
    path = write_yaml(tmp_path, "sweep.yaml", SWEEP)
    loaded = load_paths([str(path)])
    assert loaded.errors == []
    names = {s.name for s in loaded.scenarios}
    # 4 dtypes x 3 values x 3 case counts x 2 shapes = 72; skipped: int8 255 (6), uint32 -1 (6),
    # and every bool combination (values -1/0/255 are not booleans: 18).
    assert len(loaded.scenarios) == 72 - 6 - 6 - 18
    assert {"int8--1-n6-3", "uint32-255-n1-scalar", "int32-0-n2-3"} <= names
    first = next(s for s in loaded.scenarios if s.name == "int32-255-n6-3")
    assert (first.target.selector.dtype, first.target.selector.value, first.target.cases, first.target.shape) == (
        "int32",
        255,
        6,
        (3,),
    )
    assert first.target.dtype == "float32"
    (note,) = loaded.notes
    assert note.startswith(f"{path}:3:3: sweep gives 42 scenarios, skipped 30 (")
    assert "a bool selector value must be true or false, got -1: 6" in note
    result = run_cli("list", str(path))
    assert result.exit_code == 0 and result.stdout.splitlines()[-1] == "42 scenarios"
    assert "sweep gives 42 scenarios" in result.stderr


@pytest.mark.parametrize(
    "sweep, where, message",
    [
        ("  name: x-{cases}\n  cases: [1, 0]\n", "4:14", "cases must be >= 1, got 0"),
        ("  name: x\n  cases: [1, 2]\n", "3:9", "gives 2 combinations the name 'x'"),
        ("  name: x-{shape}\n  cases: [1]\n", "3:9", "uses '{shape}', which the sweep does not sweep"),
        ("  name: x-{cases}\n  cases: 2\n", "4:10", "'cases' lists its alternatives"),
        ("  cases: [1]\n", "3:3", "a sweep needs a 'name' template"),
        ("  name: x-{cases}\n  cases: [1]\n  selctor: {}\n", "5:3", "did you mean 'selector'?"),
    ],
)
def test_bad_sweeps_are_input_errors(tmp_path, sweep, where, message):
    path = write_yaml(
        tmp_path,
        "bad.yaml",
        "defaults: {dtype: float32, shape: [], selector: {dtype: int32, value: 0}}\nsweep:\n" + sweep,
    )
    result = run_cli("run", str(path))
    assert result.exit_code == 2
    assert any(line.startswith(f"{path}:{where}") and message in line for line in result.stderr.splitlines()), (
        result.stderr
    )


def _laughs(levels: int) -> str:
    """A YAML value of 10**levels leaves written in a few hundred bytes with aliases."""
    value = "&l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"
    for level in range(1, levels):
        value = f"&l{level} [{value}" + f", *l{level - 1}" * 9 + "]"
    return value


@pytest.mark.parametrize(
    "value, message",
    [
        ("&v [1, *v]", "selector value contains itself through a YAML alias"),
        (
            _laughs(9),
            "selector value has 1,000,000,000 elements once its YAML aliases are expanded (at most 1,000,000)",
        ),
        ("[" * 40 + "1" + "]" * 40, "selector value is nested more than 32 levels deep"),
    ],
)
def test_alias_bombs_and_deep_nesting_are_refused_quickly(tmp_path, value, message):
    path = tmp_path / "bomb.yaml"
    path.write_text(
        "scenarios:\n  - name: bomb\n    cases: 2\n    shape: []\n    dtype: float32\n"
        f"    selector:\n      dtype: int32\n      value: {value}\n"
    )
    start = time.perf_counter()
    result = run_cli("run", str(path))
    assert result.exit_code == 2 and result.exception is None
    assert f"{path}:8:" in result.stderr and message in result.stderr, result.stderr
    assert time.perf_counter() - start < 5


def test_oversized_scenarios_are_refused_before_allocation(tmp_path, monkeypatch):
    path = write_yaml(
        tmp_path,
        "big.yaml",
        """
        scenarios:
          - {name: huge, selector: {dtype: int32, value: 1}, cases: 2, shape: [3000, 3000], dtype: float32}
          - {name: small, selector: {dtype: int32, value: 1}, cases: 3, shape: [4], dtype: float32}
        """,
    )
    start = time.perf_counter()
    result = run_cli("run", str(path))
    assert result.exit_code == 2
    assert (
        f"{path}:2:5: scenario 'huge' is too large: an input of 9,000,000 elements exceeds the limit of 1,000,000 "
        "(limits.elements)" in result.stderr
    )
    assert "small" not in result.stderr
    assert time.perf_counter() - start < 5
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.gradaudit]\nlimits = {elements = 3, jacobian = 100}\n")
    tight = run_cli("run", str(path), "-k", "small")
    assert tight.exit_code == 2
    assert "an input of 4 elements exceeds the limit of 3 (limits.elements)" in tight.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.gradaudit]\nlimits = {element = 3}\n")
    assert "unknown limit 'element'; did you mean 'elements'?" in run_cli("run", str(path)).stderr


DIRECTIONAL_MODULE = """
import jax
import jax.numpy as jnp


@jax.custom_jvp
def softplus_wrong(x):
    return jnp.logaddexp(x, 0.0)


@softplus_wrong.defjvp
def _jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus_wrong(x), 1.1 * jax.nn.sigmoid(x) * t  # ten per cent too large


def wrong(w, idx):
    return jnp.sum(softplus_wrong(w[idx]) ** 2)


def smooth(w, idx):
    return jnp.sum(jnp.tanh(w[idx]) ** 2)
"""


@pytest.mark.slow
def test_a_scenario_file_compares_a_large_function_along_directions_as_the_api_does(tmp_path):
    (tmp_path / "userlib.py").write_text(DIRECTIONAL_MODULE)
    inputs = "inputs: [{dtype: float32, shape: [100000], fill: normal}, {dtype: int32, value: [0, 5, 7]}]"
    path = write_yaml(
        tmp_path,
        "large.yaml",
        f"""
        scenarios:
          - {{name: wrong-along, fn: "userlib:wrong", {inputs}, directions: 3}}
          - {{name: smooth-along, fn: "userlib:smooth", {inputs}, directions: 3}}
        """,
    )
    run = run_cli("run", str(path), "--json", "-", "--json-detail", "full")
    assert run.exit_code == 1, run.stderr
    results = {r["name"]: r for r in run.json()["results"]}
    assert results["smooth-along"]["status"] == "consistent"
    wrong = results["wrong-along"]
    assert wrong["status"] == "mismatch" and wrong["scenario"]["directions"] == 3
    assert any("finite differences" in f["message"] and "/d v" in f["message"] for f in wrong["findings"]), wrong
    # whole Jacobians of the same function are over the limits: directions are what make it auditable
    whole = write_yaml(tmp_path, "whole.yaml", f'scenarios:\n  - {{name: whole, fn: "userlib:wrong", {inputs}}}\n')
    refused = run_cli("run", str(whole))
    assert refused.exit_code == 2 and "limits.jacobian" in refused.stderr, refused.stderr
    bad = write_yaml(
        tmp_path, "bad.yaml", f'scenarios:\n  - {{name: b, fn: "userlib:wrong", {inputs}, directions: 0}}\n'
    )
    refused = run_cli("run", str(bad))
    assert refused.exit_code == 2 and f"{bad}:2:" in refused.stderr and "directions must be >= 1" in refused.stderr


def test_zero_size_cases_keyword_parentheses_and_scientific_notation(tmp_path):
    path = write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: empty, selector: {dtype: int32, value: 2}, cases: 2, shape: [0], dtype: float32, \
tolerance: {rtol: 1e-3, atol: 1E-4}, eps: 2e-3}
        """,
    )
    result = run_cli("run", str(path), "--json", "-")
    assert result.exit_code == 0
    scenario = result.json()["results"][0]["scenario"]
    assert scenario["tolerance"] == {"rtol": 0.001, "atol": 0.0001} and scenario["eps"] == 0.002
    assert run_cli("list", str(path), "-k", "a (b)").exit_code == 2
    assert run_cli("list", str(path), "-k", "(empty)").exit_code == 0


def test_fn_in_defaults_leaves_select_n_scenarios_alone(tmp_path):
    folder = tmp_path
    (folder / "edge.py").write_text("def square(x):\n    return x * x\n")
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


def test_a_key_of_the_other_kind_is_reported_as_not_applying_not_as_the_scenario_being_the_other_kind(tmp_path):
    path = write_yaml(
        tmp_path,
        "mixed.yaml",
        "scenarios:\n"
        "  - {name: c, selector: {dtype: int32, value: 0}, cases: 2, shape: [], dtype: float32, directions: 2}\n",
    )
    errors = [str(e) for e in load_paths([str(path)]).errors]
    assert errors == [
        f"{path}:2:88: 'directions' does not apply to a select_n scenario (one with 'selector') (allowed: name, "
        "selector, cases, shape, dtype, values, output, order, seed, eps, tolerance, expect)"
    ], errors
