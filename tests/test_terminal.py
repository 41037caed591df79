"""The terminal table, read as a user reads it: cells, findings lines, summary."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

from gradaudit.judging.judge import Tolerances, judge
from gradaudit.model.paths import FINITE_DIFFERENCE, JACFWD, JACREV, JIT_JACFWD, JIT_JACREV, VALUE, PathError
from gradaudit.render.terminal import print_input_errors, print_report
from gradaudit.model.results import AuditReport, ScenarioResult
from gradaudit.model.scenario import Scenario, SelectN, Selector
from gradaudit.model.errors import InputError, Location
from tests.helpers import path_results

TOL = Tolerances(fd_rtol=1e-3, fd_atol=1e-3, ad_rtol=1e-6, ad_atol=1e-6)


def _result(name, selector, cases, shape, per_path) -> ScenarioResult:
    paths = path_results({**per_path, JIT_JACFWD: per_path[JACFWD]})
    names = tuple(f"case {i}" for i in range(cases))
    verdict = judge(paths, names, TOL)
    scenario = Scenario(
        name=name, source=Location("suite.yaml", 4, 5), target=SelectN(selector=selector, cases=cases, shape=shape, dtype="float32")
    )
    return ScenarioResult(scenario, names, (), verdict.status, paths, verdict.findings, verdict.provenance, 0.0)


def _render(report: AuditReport, verbose=False) -> str:
    buffer = io.StringIO()
    print_report(Console(file=buffer, width=200, no_color=True), report, verbose)
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
    assert "suite.yaml:4:5: lost: value from case 1 · jacrev and jit(jacrev) send it nowhere" in text
    assert "suite.yaml:4:5: raised: jacrev and jit(jacrev) raised IndexError: tuple index out of range" in text
    assert text.strip().splitlines()[-1] == "3 scenarios: 1 consistent, 1 mismatch, 1 error"
    verbose = _render(report, verbose=True)
    fine_row = next(line for line in verbose.splitlines() if line.startswith("│ fine"))
    assert "bool [T F]" in fine_row and "[0 1]" in fine_row and "consistent" in fine_row


def test_input_errors_are_listed_with_locations_and_counted():
    buffer = io.StringIO()
    errors = [InputError(Location("a.yaml", 3, 7), "cases must be >= 1, got 0"), InputError(Location("b.yaml", 1, 1), "empty file")]
    print_input_errors(Console(file=buffer, width=200, no_color=True), errors)
    assert buffer.getvalue().splitlines() == [
        "a.yaml:3:7: cases must be >= 1, got 0",
        "b.yaml:1:1: empty file",
        "2 input errors in 2 files; nothing was audited",
    ]
