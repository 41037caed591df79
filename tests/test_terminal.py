"""The terminal table, read as a user reads it: cells, findings lines, summary."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

from gradaudit.judging.judge import judge
from gradaudit.judging.tolerances import Tolerances
from gradaudit.model.errors import InputError, Location
from gradaudit.model.paths import FINITE_DIFFERENCE, JACFWD, JACREV, JIT_JACFWD, JIT_JACREV, VALUE, PathError
from gradaudit.model.results import AuditReport, ScenarioResult
from gradaudit.model.scenario import Scenario, SelectN, Selector
from gradaudit.render.terminal import print_input_errors, print_report
from tests.helpers import path_results, run_cli, write_yaml

TOL = Tolerances(fd_rtol=1e-3, fd_atol=1e-3, ad_rtol=1e-6, ad_atol=1e-6)


def _result(name, selector, cases, shape, per_path) -> ScenarioResult:
    paths = path_results({**per_path, JIT_JACFWD: per_path[JACFWD]})
    names = tuple(f"case {i}" for i in range(cases))
    verdict = judge(paths, names, TOL)
    scenario = Scenario(
        name=name,
        source=Location("suite.yaml", 4, 5),
        target=SelectN(selector=selector, cases=cases, shape=shape, dtype="float32"),
    )
    return ScenarioResult(scenario, names, (), verdict.status, paths, verdict.findings, verdict.provenance, 0.0)


def _render(report: AuditReport, verbose=False, width=200) -> str:
    buffer = io.StringIO()
    print_report(Console(file=buffer, width=width, no_color=True), report, verbose)
    return buffer.getvalue()


def test_table_shows_gradient_tuples_routes_and_verdicts():
    lost = _result(
        "lost",
        Selector("int32", 2),
        2,
        (),
        {VALUE: [5.0], JACFWD: [0.0, 1.0], JACREV: [0.0, 0.0], JIT_JACREV: [0.0, 0.0], FINITE_DIFFERENCE: [0.0, 1.0]},
    )
    error = PathError("IndexError", "tuple index out of range", "")
    raised = _result(
        "raised",
        Selector("bool", False),
        1,
        (),
        {VALUE: [1.0], JACFWD: [1.0], JACREV: error, JIT_JACREV: error, FINITE_DIFFERENCE: [1.0]},
    )
    fd = [np.diag([1.0, 0.0]), np.diag([0.0, 1.0])]
    fine = _result(
        "fine",
        Selector("bool", [True, False]),
        2,
        (2,),
        {VALUE: [[1.0, 2.0]], JACFWD: fd, JACREV: fd, JIT_JACREV: fd, FINITE_DIFFERENCE: fd},
    )
    report = AuditReport(environment={}, results=(lost, raised, fine))
    text = _render(report)
    lost_row = next(line for line in text.splitlines() if "lost" in line and "int32 2" in line)
    assert "case 1" in lost_row and "(0, 1)" in lost_row and "(0, 0)" in lost_row and "mismatch" in lost_row
    raised_row = next(line for line in text.splitlines() if line.startswith("│ raised"))
    assert "bool false" in raised_row and "(1,)" in raised_row and "IndexError" in raised_row and "error" in raised_row
    assert "fine" not in text.split("\n\n")[0]
    assert "suite.yaml:4:5: lost: [wrong] value from case 1 · jacrev and jit(jacrev) send it nowhere" in text
    assert "suite.yaml:4:5: raised: [raised] jacrev and jit(jacrev) raised IndexError: tuple index out of range" in text
    assert text.strip().splitlines()[-1] == "3 scenarios: 1 consistent, 1 mismatch, 1 error"
    verbose = _render(report, verbose=True)
    fine_row = next(line for line in verbose.splitlines() if line.startswith("│ fine"))
    assert "bool [T F]" in fine_row and "[0 1]" in fine_row and "consistent" in fine_row

    # An 80-column terminal: a row per scenario, whole words, the blamed paths named; the finding lines follow.
    narrow = _render(report, width=80)
    table = narrow.split("\n\n")[0].splitlines()
    assert all(len(line) <= 80 for line in table)
    assert "scenario" in table[1] and "verdict" in table[1] and "paths in the wrong" in table[1]
    lost_row = next(line for line in table if line.startswith("│ lost"))
    assert "mismatch" in lost_row and "jacrev, jit(jacrev)" in lost_row and "jacfwd" not in lost_row
    raised_row = next(line for line in table if line.startswith("│ raised"))
    assert "error" in raised_row and "jacrev, jit(jacrev)" in raised_row
    assert "suite.yaml:4:5: lost: [wrong] value from case 1 · jacrev and jit(jacrev) send it nowhere" in narrow


def test_input_errors_are_listed_with_locations_and_counted():
    buffer = io.StringIO()
    errors = [
        InputError(Location("a.yaml", 3, 7), "cases must be >= 1, got 0"),
        InputError(Location("b.yaml", 1, 1), "empty file"),
    ]
    print_input_errors(Console(file=buffer, width=200, no_color=True), errors)
    assert buffer.getvalue().splitlines() == [
        "a.yaml:3:7: cases must be >= 1, got 0",
        "b.yaml:1:1: empty file",
        "2 input errors in 2 files; nothing was audited",
    ]


def test_a_run_with_many_failing_scenarios_groups_findings_by_kind_and_names_a_few(tmp_path):
    from gradaudit.render.terminal import EXAMPLES, MANY, ROWS
    from tests.helpers import run_cli

    above = [
        f"  - {{name: above-{k}, selector: {{dtype: int32, value: {k + 2}}}, cases: 2, shape: [3]}}"
        for k in range(MANY + 5)
    ]
    one_case = [
        f"  - {{name: bool-one-case-{k}, selector: {{dtype: bool, value: {str(k % 2 == 0).lower()}}}, "
        f"cases: 1, shape: [{k + 1}]}}"
        for k in range(4)
    ]
    (tmp_path / "many.yaml").write_text("defaults: {dtype: float32}\nscenarios:\n" + "\n".join(above + one_case) + "\n")
    grouped = run_cli("run", str(tmp_path / "many.yaml"), "--rule", "legacy", "--json", str(tmp_path / "r.json"))
    total = len(above) + len(one_case)
    assert grouped.exit_code == 1
    assert f"the first {ROWS} of {total} scenarios with findings" in grouped.stdout
    assert f"{total} scenarios with findings ({total} failing) in 2 kinds" in grouped.stdout
    counts = [
        line.split()[0]
        for line in grouped.stdout.splitlines()
        if line.startswith(" ") and ("mismatch: " in line or "error: " in line) and "e.g." not in line
    ]
    assert counts == [str(len(above)), str(len(one_case))]
    assert (
        f"and {len(above) - EXAMPLES} more" in grouped.stdout
        and f"and {len(one_case) - EXAMPLES} more" in grouped.stdout
    )
    named = {
        f"above-{k}" for k in range(len(above)) if f"above-{k}:" in grouped.stdout or f"above-{k} " in grouped.stdout
    }
    assert len(named) < ROWS + EXAMPLES + 1  # the table's rows and the examples, never all of them
    assert f"seen in: above-0, above-1, above-2, and {len(above) - 3} more" in grouped.stdout
    assert f"\n{total} scenarios: 0 consistent, {len(above)} mismatch, {len(one_case)} error" in grouped.stdout
    verbose = run_cli("run", str(tmp_path / "many.yaml"), "--rule", "legacy", "-v")
    assert (
        all(f"above-{k}: " in verbose.stdout for k in range(len(above)))
        and "scenarios with findings" not in verbose.stdout
    )
    assert len(grouped.stdout) < len(verbose.stdout) / 2


def test_a_path_with_no_finite_number_reads_nan_not_ok(tmp_path):
    from tests.helpers import run_cli, write_yaml

    (tmp_path / "overflowing.py").write_text(
        "import jax.numpy as jnp\n\n\ndef sigmoid(x):\n    return jnp.exp(x) / (1 + jnp.exp(x))\n"
    )
    path = write_yaml(
        tmp_path,
        "s.yaml",
        "scenarios:\n"
        "  - {name: overflows, fn: 'overflowing:sigmoid', inputs: [{dtype: float32, value: 100.0}]}\n"
        "  - {name: ordinary, fn: 'overflowing:sigmoid', inputs: [{dtype: float32, value: 1.0}]}\n",
    )
    rows = {
        line.split("│")[1].strip(): line for line in run_cli("run", str(path), "-v").stdout.splitlines() if "│" in line
    }
    # exp(100) / (1 + exp(100)) is inf / inf in float32: every path agrees on NaN, which is not "ok" to read.
    assert rows["overflows"].count(" nan ") == 5 and " ok " not in rows["overflows"]
    assert rows["ordinary"].count(" ok ") == 5


def test_verbose_shows_what_a_consistent_scenario_could_not_check(tmp_path):
    # A passing scenario's notes (a coarse tolerance, entries rounding leaves unchecked) were in the JSON report
    # only: -v prints them under the table, and the plain table stays as it was.
    path = write_yaml(
        tmp_path,
        "half.yaml",
        "scenarios:\n- name: half-tanh\n  fn: jax.numpy:tanh\n  inputs: [{dtype: float16, value: [0.5, 1.0]}]\n",
    )
    verbose = run_cli("run", str(path), "-v")
    assert verbose.exit_code == 0
    assert "half-tanh: note: finite differences check these derivatives only within 0.125" in verbose.stdout
    plain = run_cli("run", str(path))
    assert plain.exit_code == 0 and "note:" not in plain.stdout
