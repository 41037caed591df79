"""`gradaudit search`: hypothesis explores a space and shrinks each kind of disagreement to a minimal file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import yaml

from tests.helpers import run_cli, write_yaml

SELECTOR_SPACE = """
search:
  name: selector-space
  selector: {dtype: [bool, int8, int32, uint8, uint32], value: {min: -300, max: 300}}
  cases: {min: 1, max: 6}
  shape: [[], [3], [2, 3]]
"""


def _scenario(path) -> dict:
    (entry,) = yaml.safe_load(path.read_text())["scenarios"]
    return entry


@pytest.mark.slow
def test_legacy_rule_both_defects_shrunk_to_scalars_and_reproducible(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_yaml(tmp_path, "space.yaml", SELECTOR_SPACE)
    result = run_cli("search", "space.yaml", "--budget", "300", "--seed", "0", "--out", "found", "--rule", "legacy")
    assert result.exit_code == 1, result.stderr
    files = sorted((tmp_path / "found").glob("*.yaml"))
    assert [f.name for f in files] == ["selector-space-1.yaml", "selector-space-2.yaml"]
    by_status = {}
    for path in files:
        text = path.read_text()
        assert text.startswith(
            "# Found by `gradaudit search space.yaml --budget 300 --seed 0 --rule legacy --out found`"
        )
        by_status["error" if "# Status: error." in text else "mismatch"] = _scenario(path)
    error, mismatch = by_status["error"], by_status["mismatch"]
    # The single-case boolean IndexError, minimal: one case, a scalar, the first value hypothesis tries.
    assert error["selector"]["dtype"] == "bool" and error["cases"] == 1 and error["shape"] == []
    # The out-of-range mismatch, minimal: one case, a scalar selector just outside [0, 0].
    assert mismatch["shape"] == [] and mismatch["cases"] == 1
    assert mismatch["selector"]["dtype"] != "bool" and mismatch["selector"]["value"] in (1, -1)
    replay = run_cli("run", "found", "--rule", "legacy", "--json", "-")
    assert replay.exit_code == 1
    assert replay.json()["summary"] == {"total": 2, "consistent": 0, "mismatch": 1, "error": 1}
    raised = [f for r in replay.json()["results"] for f in r["findings"] if f["kind"] == "raised"]
    assert {f["fingerprint"] for f in raised} == {"raised:raised:jacrev+jit_jacrev:IndexError"}
    assert "2 kinds of disagreement found; reproduce: gradaudit run found --rule legacy" in result.stdout
    # The budget is what exploring audits, exactly; what shrinking tries is counted on its own.
    assert re.search(
        r"search selector-space: 300 scenarios audited \(budget 300\), \d+ more while shrinking", result.stdout
    )


@pytest.mark.slow
def test_fixed_rule_finds_nothing_within_the_same_budget(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_yaml(tmp_path, "space.yaml", SELECTOR_SPACE)
    result = run_cli("search", "space.yaml", "--budget", "300", "--out", "found", "--rule", "fixed")
    assert result.exit_code == 0, result.stderr
    audited = int(re.search(r"nothing found: all (\d+) scenarios audited were consistent", result.stdout).group(1))
    spent = int(re.search(r"(\d+) scenarios audited \(budget 300\)", result.stdout).group(1))
    assert spent == audited == 300  # the whole budget, exactly, was spent on distinct valid scenarios
    assert not list((tmp_path / "found").glob("*.yaml"))


@pytest.mark.slow
def test_the_same_seed_gives_the_same_files_with_any_number_of_workers_and_the_database_is_kept_unless_turned_off(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    write_yaml(tmp_path, "space.yaml", SELECTOR_SPACE)

    def written(out: str) -> dict[str, str]:
        return {p.name: p.read_text().replace(f"--out {out}`", "--out OUT`") for p in (tmp_path / out).glob("*.yaml")}

    contents = []
    # In this process, then in two workers auditing side by side: one search.
    for out, jobs in (("a", "0"), ("b", "2")):
        assert (
            run_cli(
                "search",
                "space.yaml",
                "--budget",
                "60",
                "--seed",
                "7",
                "--out",
                out,
                "--rule",
                "legacy",
                "--no-database",
                "--jobs",
                jobs,
            ).exit_code
            == 1
        )
        contents.append(written(out))
    assert contents[0] and contents[0] == contents[1]
    examples = tmp_path / ".gradaudit" / "hypothesis" / "examples"
    assert not examples.exists()
    assert (
        run_cli("search", "space.yaml", "--budget", "60", "--seed", "7", "--out", "c", "--rule", "legacy").exit_code
        == 1
    )
    assert any(examples.iterdir())
    assert written("c") == contents[0]
    assert not (tmp_path / ".hypothesis").exists()


FUNCTIONS = """
import jax.numpy as jnp


def index(x, idx):
    return x[idx]


def smooth(x):
    return jnp.sin(x) * x
"""


@pytest.mark.slow
def test_function_space_shrinks_an_out_of_range_gather_and_the_file_runs_from_its_own_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "fns.py").write_text(FUNCTIONS)
    write_yaml(
        tmp_path,
        "lib/space.yaml",
        """
        search:
          name: index-space
          fn: fns:index
          inputs:
            - {dtype: float32, shape: [[4]], value: {min: -2.0, max: 2.0}}
            - {dtype: [int32, int8], shape: [[], [2], [3]], value: {min: -8, max: 8}}
        """,
    )
    result = run_cli("search", "lib/space.yaml", "--budget", "100", "--out", "elsewhere/found")
    assert result.exit_code == 1, result.stderr
    (path,) = (tmp_path / "elsewhere" / "found").glob("*.yaml")
    entry = _scenario(path)
    x, idx = entry["inputs"]
    assert x["value"] == [0.0, 0.0, 0.0, 0.0]
    assert len(idx["value"]) == 2 and any(not 0 <= i < 4 for i in idx["value"])
    assert yaml.safe_load(path.read_text())["modules"] == "../../lib"
    assert run_cli("run", str(path), "-q").exit_code == 1
    write_yaml(
        tmp_path,
        "lib/smooth.yaml",
        "search: {name: smooth-space, fn: 'fns:smooth', inputs: [{dtype: float32, value: {min: -3, max: 3}}]}\n",
    )
    clean = run_cli("search", "lib/smooth.yaml", "--budget", "30", "--out", "none")
    assert clean.exit_code == 0 and "nothing found" in clean.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "search: {name: s, selector: {dtype: [int8], value: {min: 3, max: -3}}, cases: [2], shape: [[]]}\n",
            "1:52: the range of 'selector.value' is empty: min 3 > max -3",
        ),
        (
            "search: {name: s, selector: {dtype: [float32], value: [0]}, cases: [2], shape: [[]]}\n",
            "'selector.dtype' must be one of bool, int8",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [[]], colour: red}\n",
            "unknown key 'colour' in the search space",
        ),
        ("search: {selector: {dtype: [int8], value: [0]}, cases: [2], shape: [[]]}\n", "a search space needs a 'name'"),
        ("search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2]}\n", "a select_n space needs 'shape'"),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [3]}\n",
            "'shape' lists the shapes to try",
        ),
        ("search: {name: s, fn: nope, inputs: []}\n", "'fn' must be 'module:function'"),
        ("scenarios: []\n", "unknown key 'scenarios' in the file"),
        ("search: [1\n", "YAML syntax error"),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: {min: 1, max: 3}}\n",
            "'shape' takes a list of alternatives, not a range",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [[a]]}\n",
            "a shape in 'shape' is a list of sizes >= 0",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [[-1]]}\n",
            "a shape in 'shape' is a list of sizes >= 0",
        ),
        (
            "search: {name: a/b, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [[]]}\n",
            "a 'name' of at most 100 letters, digits",
        ),
        (
            "search: {name: s, selector: {dtype: [uint8], value: {min: -10, max: -1}}, cases: [2], shape: [[]]}\n",
            "no selector dtype of uint8 can hold these values",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [true], shape: [[]]}\n",
            "'cases' must be an integer >= 1",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [[]], output: [cube]}\n",
            "'output' must be one of identity",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [[]], "
            "eps: {min: 0, max: 1}}\n",
            "'eps' is one number > 0",
        ),
        ("search: {name: s, fn: 'nomod:f', inputs: [{dtype: float32}]}\n", "cannot import module 'nomod'"),
        ("search: {name: s, fn: 'os:getcwd', inputs: []}\n", "'inputs' needs at least one input range"),
        ("search: {name: s, fn: 'os:getcwd', inputs: [{dtype: [floaty]}]}\n", "'dtype' must be one of"),
        (
            "search: {name: s, fn: 'os:getcwd', inputs: [{dtype: float32, shape: [[1.5]]}]}\n",
            "a shape in 'shape' is a list of sizes >= 0",
        ),
        (
            "search: {name: s, fn: 'os:getcwd', inputs: [{dtype: float32}], bind: [both, wrong]}\n",
            "'bind' must be one of traced, constant, both",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [&a [*a]]}\n",
            "contains itself through a YAML alias",
        ),
        (
            "search: {name: s, fn: 'os:getcwd', inputs: [{dtype: float32, value: {min: .nan, max: 1}}]}\n",
            "'value' must be a finite number",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], shape: [[]], eps: .inf}\n",
            "'eps' is one number > 0",
        ),
        (
            "search: {name: s, selector: {dtype: [int8], value: [0]}, cases: [2], "
            "shape: [[1000000000000000000000000000]]}\n",
            "integer too large",
        ),
    ],
)
def test_bad_space_files_are_exit_2_with_file_line_col(tmp_path, monkeypatch, text, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "space.yaml").write_text(text)
    result = run_cli("search", "space.yaml", "--out", "found")
    assert result.exit_code == 2
    assert "space.yaml:" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "found").exists()


def test_limits_apply_to_drawn_scenarios_and_a_space_with_nothing_valid_is_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.gradaudit]\nlimits = {elements = 2}\n")
    write_yaml(
        tmp_path,
        "space.yaml",
        "search: {name: big, selector: {dtype: [int32], value: {min: -1, max: 5}}, cases: [2], shape: [[3]]}\n",
    )
    result = run_cli("search", "space.yaml", "--budget", "5", "--out", "found", "--no-database")
    assert result.exit_code == 2
    assert "space.yaml: no valid scenario could be drawn from this space" in result.stderr
    assert "an input of 3 elements exceeds the limit of 2 (limits.elements)" in result.stderr
    assert not list((tmp_path / "found").glob("*.yaml"))
    # An output's size is known only by tracing the function: in workers (--jobs 1), never here.
    (tmp_path / "pyproject.toml").write_text("[tool.gradaudit]\nlimits = {jacobian = 20}\n")
    (tmp_path / "wide.py").write_text("import jax.numpy as jnp\n\n\ndef outer(x):\n    return jnp.outer(x, x)\n")
    write_yaml(
        tmp_path,
        "wide.yaml",
        "search: {name: wide, fn: 'wide:outer', inputs: [{dtype: float32, shape: [[3]], value: {min: -1, max: 1}}]}\n",
    )
    for jobs in ("0", "1"):
        result = run_cli("search", "wide.yaml", "--budget", "3", "--out", "found", "--no-database", "--jobs", jobs)
        assert result.exit_code == 2, result.stdout + result.stderr
        assert (
            "no valid scenario could be drawn" in result.stderr
            and "27 entries, over the limit of 20 (limits.jacobian)" in result.stderr
        )
    # A captured value can decide the output's size: a draw over the limits says nothing of one
    # with another captured value (here 6 copies are, 1 copy is not).
    (tmp_path / "tiles.py").write_text("import jax.numpy as jnp\n\n\ndef tile(x, n):\n    return jnp.tile(x, int(n))\n")
    write_yaml(
        tmp_path,
        "tiles.yaml",
        "search: {name: tiles, fn: 'tiles:tile', bind: constant, "
        "inputs: [{dtype: float32, shape: [[2]], value: {min: -1, max: 1}}, {dtype: int32, value: [6, 1]}]}\n",
    )
    tiled = run_cli("search", "tiles.yaml", "--budget", "3", "--out", "found", "--no-database", "--jobs", "0")
    assert tiled.exit_code in (0, 1), tiled.stdout + tiled.stderr
    assert re.search(r"search tiles: [1-9]\d* scenarios audited", tiled.stdout), tiled.stdout


def test_float_inputs_with_integer_bounds_are_drawn_as_floats():
    from hypothesis import given, settings

    from gradaudit.search import Axis, Space, scenario_strategy

    space = Space(
        name="s",
        file="s.yaml",
        axes={},
        fn="m:f",
        inputs=({"dtype": Axis(choices=("float32",)), "value": Axis(minimum=-2, maximum=2)},),
    )
    drawn = []

    @settings(max_examples=60, database=None)
    @given(scenario_strategy(space))
    def collect(entry):
        drawn.append(entry["inputs"][0]["value"])

    collect()
    assert all(-2 <= v <= 2 for v in drawn)
    assert any(v != int(v) for v in drawn)


def test_files_no_search_wrote_are_never_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_yaml(
        tmp_path, "space.yaml", "search: {name: x, selector: {dtype: [int8], value: [0, 1]}, cases: [1], shape: [[]]}\n"
    )
    (tmp_path / "found").mkdir()
    (tmp_path / "found" / "x-1.yaml").write_text("mine\n")
    (tmp_path / "found" / "x-y-1.yaml").write_text("# Found by `gradaudit search other.yaml ...`\n")
    refused = run_cli("search", "space.yaml", "--out", "found", "--budget", "5", "--rule", "legacy", "--no-database")
    assert refused.exit_code == 2 and "found/x-1.yaml was not written by gradaudit search" in refused.stderr
    assert (tmp_path / "found" / "x-1.yaml").read_text() == "mine\n"
    (tmp_path / "found" / "x-1.yaml").unlink()
    assert (
        run_cli(
            "search", "space.yaml", "--out", "found", "--budget", "5", "--rule", "legacy", "--no-database"
        ).exit_code
        == 1
    )
    assert (tmp_path / "found" / "x-y-1.yaml").exists() and (tmp_path / "found" / "x-1.yaml").exists()


@pytest.mark.slow
def test_scenarios_that_abort_the_interpreter_or_hang_are_kinds_of_their_own_and_the_search_goes_on(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "aborting.py").write_text(
        "import os\nimport time\n\n\ndef maybe_abort(x, i):\n    if int(i) == 3:\n        os.abort()\n"
        "    if int(i) == 1:\n        time.sleep(600)\n    return x * 2.0\n"
    )
    # A constant, `i` is a plain number whenever the function is traced: even checking a draw's size
    # runs into the abort or the hang, so the search's own process must leave that to its workers.
    write_yaml(
        tmp_path,
        "space.yaml",
        """
        search:
          name: abort-space
          fn: aborting:maybe_abort
          bind: constant
          inputs:
            - {dtype: float32, value: {min: -1.0, max: 1.0}}
            - {dtype: int32, value: {min: 0, max: 3}}
        """,
    )
    # Two workers audit the draws side by side; each crash or hang costs only its worker.
    command = [
        sys.executable,
        "-m",
        "gradaudit",
        "search",
        "space.yaml",
        "--budget",
        "8",
        "--out",
        "found",
        "--jobs",
        "2",
        "--timeout",
        "3",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=400, env={**os.environ, "NO_COLOR": "1"})
    assert result.returncode == 1, result.stdout + result.stderr
    found = {_scenario(path)["inputs"][1]["value"]: path.read_text() for path in (tmp_path / "found").glob("*.yaml")}
    assert sorted(found) == [1, 3], result.stdout
    # the hang is confirmed under four times the timeout: a slow function would have finished
    assert "crashed: SIGABRT" in found[3] and "timed out after 12 s" in found[1]
    path = next(p for p in (tmp_path / "found").glob("*.yaml") if _scenario(p)["inputs"][1]["value"] == 3)
    again = run_cli("run", str(path), "--json", "-", "--jobs", "1")  # in a worker: it aborts the interpreter
    assert again.json()["results"][0]["status"] == "error" and "crashed: SIGABRT" in again.stdout


def test_draws_do_not_depend_on_what_the_process_did_before(tmp_path, monkeypatch):
    # Hypothesis mixes in constants from the source of "local" modules imported so far (a user's
    # project, this package installed editable), keeps state in the strategies it caches between
    # tests, and holds caches weakly (emptied whenever the garbage collector runs): a search must
    # draw the same scenarios whatever the process did before it (another function surveyed first,
    # --jobs 0 importing the engines).
    from gradaudit.model.findings import CONSISTENT
    from gradaudit.model.results import ScenarioResult
    from gradaudit.search import search
    from gradaudit.survey.explore import spaces

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "unusual_constants.py").write_text(
        "".join(f"C{k} = {value!r}\n" for k, value in enumerate((1.2345678, -0.87654321, 0.31415926, 1.6180339)))
    )
    space = spaces(["jax.lax.integer_pow"])[0]

    def drawn() -> list[str]:
        seen: list[str] = []

        def audit(scenario) -> ScenarioResult:
            seen.append(repr([spec.array().tolist() for spec in scenario.target.inputs]) + repr(scenario.target.kwargs))
            return ScenarioResult(scenario, (), (), CONSISTENT, {}, (), None, 0.0)

        search(space, 30, 0, audit, None)
        return seen

    before = drawn()
    assert drawn() == before  # the same search again in this process
    __import__("unusual_constants")
    garbage = [[k] for k in range(5000)]  # allocations move the collector's schedule
    after = drawn()
    assert len(before) > 300 and after == before and garbage
    assert not any("1.2345678" in draw for draw in after)


def test_a_found_scenarios_long_input_of_zeros_ones_or_a_range_is_written_as_its_fill(tmp_path):
    from gradaudit.search import scenario_text
    from gradaudit.sources.scenario_files import load_text

    inputs = [
        {"dtype": "float32", "value": [[0.0] * 30] * 10},
        {"dtype": "float32", "value": [float(i) for i in range(12)]},
        {"dtype": "float32", "value": [0.5, 0.0, 0.0]},  # short: as it is
        {"dtype": "float32", "value": [0.0] * 11 + [2.0]},  # not a fill
    ]
    entry = {"name": "w", "fn": "jax.numpy:sum", "inputs": inputs}
    text = scenario_text(entry)
    assert "shape: [10, 30]\n    fill: zeros" in text and "shape: [12]\n    fill: arange" in text
    assert "value: [0.5, 0.0, 0.0]" in text and "2.0]" in text
    (scenario,), errors = load_text(text, str(tmp_path / "w.yaml"))
    assert errors == []
    for spec, given in zip(scenario.target.inputs, inputs, strict=True):
        np.testing.assert_array_equal(spec.array(), np.asarray(given["value"], dtype=np.float32))


def test_a_search_whose_function_rejects_everything_stops_and_says_so():
    from gradaudit.search import InvalidDraw, search
    from gradaudit.search.explore import HOPELESS_AUDITS
    from gradaudit.survey.explore import spaces

    audits = []

    def audit(scenario):
        audits.append(scenario)
        raise InvalidDraw("the function rejects these inputs: ValueError")

    outcome = search(spaces(["jax.lax.integer_pow"])[0], 30, 0, audit, None)
    assert outcome.audited == 0 and outcome.found == []
    assert outcome.problem.startswith("no valid scenario could be drawn from this space (the function rejects")
    assert HOPELESS_AUDITS <= len(audits) < 3 * HOPELESS_AUDITS, len(audits)


@pytest.mark.parametrize("hangs", [True, False])
def test_shrinking_through_scenarios_that_time_out_tries_few_each_costing_a_timeout(hangs, monkeypatch):
    """Every audit shrinking a kind that timed out counts TIMED_OUT_COST against what it may spend (four
    at most); shrinking a kind that did not stops at the first scenario that times out on its way. (Here
    every scalar hangs, which would stop the search auditing after three: that limit is lifted.)"""
    monkeypatch.setattr("gradaudit.search.explore.HANGS_PER_ARGUMENT", 10**6)
    from gradaudit.model.findings import CONSISTENT, ERROR, MISMATCH, RAISED, Finding, FindingClass
    from gradaudit.model.paths import JACREV, VALUE
    from gradaudit.model.results import ScenarioResult
    from gradaudit.search import search
    from gradaudit.search.explore import SHRINK_COST, TIMED_OUT_COST
    from gradaudit.survey.explore import spaces

    timed_out = Finding(RAISED, (VALUE,), "value raised TimeoutError", error_type="TimeoutError")
    timed_out = replace(timed_out, finding_class=FindingClass.TIMED_OUT)
    wrong = Finding(RAISED, (JACREV,), "jacrev raised ValueError", error_type="ValueError")
    wrong = replace(wrong, finding_class=FindingClass.WRONG)
    shrinking: list[int] = []
    timeouts: Counter = Counter()

    def heard(message: str) -> None:
        kind = re.match(r"shrinking kind (\d+)", message)
        if kind:
            shrinking[:] = [int(kind[1])]

    def audit(scenario) -> ScenarioResult:
        x = np.abs(np.asarray(scenario.target.inputs[0].array(), dtype=np.float64))
        large = int(np.sum((x > 2.0) & (x < 1e3)))  # the sweep changes one input at a time: at most 1
        if hangs and large >= 2 or not hangs and x.size == 1:  # the kind "hangs", or scalars do on the way to it
            timeouts[shrinking[0] if shrinking else 0] += 1
            return ScenarioResult(scenario, (), (), ERROR, {}, (timed_out,), None, 0.0)
        if large >= 2:
            return ScenarioResult(scenario, (), (), MISMATCH, {}, (wrong,), None, 0.0)
        return ScenarioResult(scenario, (), (), CONSISTENT, {}, (), None, 0.0)

    outcome = search(spaces(["jax.lax.integer_pow"])[0], 30, 1, audit, None, on_progress=heard)
    drawn = [found for found in outcome.found if not found.swept]
    assert drawn, "a draw, not the sweep, found a kind"
    met = {kind: n for kind, n in timeouts.items() if kind}
    assert outcome.timed_out == sum(timeouts.values()), "each audit that timed out is counted, exploring and shrinking"
    assert hangs or met, "shrinking met scenarios that time out"
    assert all(n <= (SHRINK_COST // TIMED_OUT_COST if hangs else 1) for n in met.values()), met
    # A kind that timed out spends TIMED_OUT_COST an audit; another settles on its kind's smallest so far.
    assert not hangs or all(found.audits <= SHRINK_COST // TIMED_OUT_COST for found in drawn)
    assert hangs or all(outcome.found[k - 1].spent and outcome.found[k - 1].result.status == MISMATCH for k in met)


def _timing_out_past(limit: float):
    """A search's audit (and what it audited) where every scenario with a value past `limit` times out."""
    from gradaudit.model.findings import CONSISTENT, ERROR, RAISED, Finding, FindingClass
    from gradaudit.model.paths import VALUE
    from gradaudit.model.results import ScenarioResult

    timed_out = replace(
        Finding(RAISED, (VALUE,), "value raised TimeoutError", error_type="TimeoutError"),
        finding_class=FindingClass.TIMED_OUT,
    )
    audited: list[np.ndarray] = []
    timeouts: Counter = Counter()

    def audit(scenario) -> ScenarioResult:
        array = scenario.target.inputs[0].array()
        x = np.asarray(array, dtype=np.float64)
        audited.append(x)
        with np.errstate(invalid="ignore"):
            if np.any(~np.isfinite(x) | (np.abs(x) >= limit)):
                timeouts[str(array.dtype), x.shape] += 1  # every place a hang can be: input 1, large
                return ScenarioResult(scenario, (), (), ERROR, {}, (timed_out,), None, 0.0)
        return ScenarioResult(scenario, (), (), CONSISTENT, {}, (), None, 0.0)

    return audit, audited, timeouts


def test_a_function_that_hangs_far_out_costs_three_timeouts_an_input_and_everything_nearer_in_is_audited():
    """A function that loops for ever once its argument is large hangs on every decade past that: the search
    audits nearest values first, stops an input's further-out values after three timeouts there, and counts
    what it left; the same seed leaves the same."""
    from gradaudit.model.found import HANGS_PER_ARGUMENT
    from gradaudit.search import search
    from gradaudit.survey.explore import spaces

    space = spaces(["jax.numpy.exp2"])[0]
    outcomes = []
    for _ in range(2):
        audit, audited, timeouts = _timing_out_past(1e8)
        outcomes.append(search(space, 5, 0, audit, None))
    outcome = outcomes[0]
    far = [
        entry
        for entry in space.sweep()
        if any(abs(v) >= 1e8 or v != v for v in np.ravel(np.asarray(entry["inputs"][0]["value"], dtype=float)))
    ]
    assert len(far) > 20, "the sweep has decades and non-finite values past 1e8"
    assert outcome.timed_out == sum(timeouts.values()) == HANGS_PER_ARGUMENT, timeouts
    assert sum(outcome.not_audited.values()) >= len(far) - outcome.timed_out - 5  # a draw may land far out too
    assert all(re.fullmatch(r"input 1, large", place) for place in outcome.not_audited)
    seen = {repr(x.tolist()) for x in audited}
    for entry in space.sweep():
        values = np.asarray(entry["inputs"][0]["value"], dtype=float)
        if np.all(np.abs(values) < 1e8):  # tiny ones too: large values that hang do not stop small ones
            assert repr(values.astype(entry["inputs"][0]["dtype"]).astype(float).tolist()) in seen, entry
    assert outcomes[1].not_audited == outcome.not_audited and outcomes[1].timed_out == outcome.timed_out


@pytest.mark.slow
def test_workers_left_hanging_stop_after_three_timeouts_and_the_search_says_what_it_did_not_audit(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slow.py").write_text(
        "import time\n\n\ndef slow_past_ten(x):\n    if abs(float(x)) > 10:\n        time.sleep(600)\n"
        "    return x * 2.0\n"
    )
    write_yaml(
        tmp_path,
        "space.yaml",
        """
        search:
          name: slow
          fn: slow:slow_past_ten
          bind: constant
          inputs:
            - {dtype: float32, value: {min: -1000.0, max: 1000.0}}
        """,
    )
    command = [sys.executable, "-m", "gradaudit", "search", "space.yaml", "--budget", "12", "--out", "found"]
    command += [
        "--jobs",
        "1",
        "--timeout",
        "5",
        "--no-database",
    ]  # an audit of x * 2 takes well under 5 s, loaded or not
    result = subprocess.run(command, capture_output=True, text=True, timeout=400, env={**os.environ, "NO_COLOR": "1"})
    assert result.returncode == 1, result.stdout + result.stderr
    said = " ".join(result.stdout.split())  # as the terminal wraps it
    left = re.search(r"(\d+) drawn scenarios not audited, further out in an input than audits that timed out", said)
    assert left and int(left[1]) > 0, result.stdout
    assert "(input 1, large: " in said
    # confirmed under four times the timeout: what is reported hung for 20 s, not 5
    assert any("timed out after 20 s" in found.read_text() for found in (tmp_path / "found").glob("*.yaml")), (
        result.stdout
    )


SLOW_FIRST_CALL = """
import time
from pathlib import Path

import jax
import jax.numpy as jnp

MARKER = Path(__file__).with_name("called")


@jax.custom_jvp
def doubled_slope(x):
    if not isinstance(x, jax.core.Tracer) and not MARKER.exists():
        MARKER.touch()  # the first eager call anywhere is slow, as a cold compilation can be
        time.sleep(30)
    return jnp.sin(x)


@doubled_slope.defjvp
def _jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return doubled_slope(x), 2.0 * jnp.cos(x) * t  # twice the true slope: a wrong rule
"""


@pytest.mark.slow
def test_a_kind_whose_confirmation_times_out_once_is_confirmed_again_and_reported_as_found(tmp_path, monkeypatch):
    # The screen computes jit paths only, so the kind is found quickly; confirming it calls the function
    # eagerly for the first time, which takes past the timeout once. Reported as found, not as a timeout.
    monkeypatch.chdir(tmp_path)
    result = _search_one_worker(tmp_path, SLOW_FIRST_CALL, "wrong-rule", "doubled_slope", "{min: 0.5, max: 1.0}", 3, 5)
    assert result.returncode == 1, result.stdout + result.stderr
    assert (tmp_path / "called").exists()  # the slow first call happened
    (found,) = (tmp_path / "found").glob("*.yaml")
    text = found.read_text()
    assert "# Status: mismatch." in text and "timed out" not in text, text
    assert re.search(r"#\s+wrong:disagreement:", text), text


SLOW_IN_EACH_PROCESS = """
import time

import jax.numpy as jnp

STARTED = []


def slow_to_start(x):
    if not STARTED:
        STARTED.append(1)
        time.sleep(8)  # each fresh process's first call: slow, as a cold start on a loaded machine is
    return jnp.sin(x)
"""


@pytest.mark.slow
def test_a_function_slower_than_the_timeout_but_not_stuck_is_no_timeout_defect(tmp_path, monkeypatch):
    # Every draw's screen times out (5 s against 8), each in a fresh worker. A timeout alone cannot tell
    # slow from stuck: confirmed under four times the timeout, the function finishes, consistent.
    monkeypatch.chdir(tmp_path)
    result = _search_one_worker(
        tmp_path, SLOW_IN_EACH_PROCESS, "slow-start", "slow_to_start", "{min: 0.5, max: 0.5}", 1, 5
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert list((tmp_path / "found").glob("*.yaml")) == [], result.stdout


def _search_one_worker(tmp_path, module: str, name: str, fn: str, value: str, budget: int, timeout: int):
    """`gradaudit search` of one float32 input of `fn` in `module`'s source, in one worker under `timeout`."""
    (tmp_path / "searched.py").write_text(module)
    space = f"search:\n  name: {name}\n  fn: searched:{fn}\n  inputs:\n    - {{dtype: float32, value: {value}}}\n"
    (tmp_path / "space.yaml").write_text(space)
    command = [sys.executable, "-m", "gradaudit", "search", "space.yaml", "--budget", str(budget), "--out", "found"]
    command += ["--jobs", "1", "--timeout", str(timeout), "--no-database"]
    return subprocess.run(command, capture_output=True, text=True, timeout=400, env={**os.environ, "NO_COLOR": "1"})
