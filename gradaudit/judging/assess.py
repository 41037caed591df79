"""From what an engine computed to a scenario's result: judged, diagnosed, the same way for every engine."""

from __future__ import annotations

import time
from dataclasses import replace

from gradaudit.judging.diagnoses import Evidence, diagnose
from gradaudit.judging.judge import judge, tolerances_for, twins_agree
from gradaudit.model.computed import Computed
from gradaudit.model.findings import ERROR, RAISED, Finding
from gradaudit.model.paths import VALUE
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import Scenario


def assess(scenario: Scenario, computed: Computed, tolerance: tuple[float | None, float | None] = (None, None)) -> ScenarioResult:
    """The scenario's verdict, findings, notes and diagnosis from its paths; an error result when
    the engine could not compute them (a timeout, a crashed worker, a scenario too large)."""
    if computed.failure is not None:
        finding = Finding(kind=RAISED, paths=(VALUE,), message=computed.failure.message, error_type=computed.failure.error_type)
        return ScenarioResult(
            scenario=scenario,
            arg_names=(),
            inputs=(),
            status=ERROR,
            paths={},
            findings=(finding,),
            provenance=None,
            seconds=computed.seconds,
            method=computed.engine,
            notes=computed.notes,
        )
    started = time.perf_counter()
    verdict = judge(computed.paths, computed.arg_names, tolerances_for(scenario, tolerance), computed.bindings, computed.inputs)
    evidence = Evidence(paths=computed.paths, findings=verdict.findings, notes=verdict.notes, trace=computed.primitives or frozenset)
    diagnosis = diagnose(evidence)
    judged = time.perf_counter() - started
    return ScenarioResult(
        scenario=scenario,
        arg_names=computed.arg_names,
        inputs=computed.inputs,
        status=verdict.status,
        # The finite-difference estimates at each step were the judge's working, not evidence a report
        # keeps: without them a result is a third the size to send from a worker and to hold.
        paths={name: replace(path, estimates=None) if path.estimates is not None else path for name, path in computed.paths.items()},
        findings=verdict.findings,
        notes=(*verdict.notes, *computed.notes),
        provenance=verdict.provenance,
        diagnosis=diagnosis,
        seconds=computed.seconds + judged,
        method=computed.engine,
        judge_seconds=judged,
    )


def one_story(result: ScenarioResult, tolerance: tuple[float | None, float | None] = (None, None)) -> bool:
    """Whether each eager path agrees with its jit twin (`twins_agree`). The group engine's results
    are kept only then: its eager paths ran vmapped over the group, its jit paths are the user's
    function compiled and called on this scenario alone, so where they agree the jit paths
    reproduce every finding, and where they do not, the batched run may have said something the
    function alone does not."""
    return twins_agree(result.paths, tolerances_for(result.scenario, tolerance))
