"""From what an engine computed to a scenario's result: judged, diagnosed, the same way for every engine."""

from __future__ import annotations

import time

from gradaudit.model.computed import Computed
from gradaudit.judging.diagnoses import Evidence, diagnose
from gradaudit.judging.judge import judge, tolerances_for
from gradaudit.model.findings import ERROR, RAISED, Finding
from gradaudit.model.paths import JIT_JACFWD, JIT_JACREV, JIT_VALUE, VALUE
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import Scenario


def assess(scenario: Scenario, computed: Computed, tolerance: tuple[float | None, float | None] = (None, None)) -> ScenarioResult:
    """The scenario's verdict, findings, notes and diagnosis from its paths; an error result when
    the engine could not compute them (a timeout, a crashed worker, a scenario too large)."""
    if computed.failure is not None:
        finding = Finding(kind=RAISED, paths=(VALUE,), message=computed.failure.message, error_type=computed.failure.error_type)
        return ScenarioResult(
            scenario=scenario, arg_names=(), inputs=(), status=ERROR, paths={}, findings=(finding,), provenance=None,
            seconds=computed.seconds, method=computed.engine, notes=computed.notes,
        )
    started = time.perf_counter()
    verdict = judge(computed.paths, computed.arg_names, tolerances_for(scenario, tolerance), computed.bindings)
    evidence = Evidence(paths=computed.paths, findings=verdict.findings, notes=verdict.notes, trace=computed.primitives or frozenset)
    diagnosis = diagnose(evidence)
    judged = time.perf_counter() - started
    return ScenarioResult(
        scenario=scenario,
        arg_names=computed.arg_names,
        inputs=computed.inputs,
        status=verdict.status,
        paths=computed.paths,
        findings=verdict.findings,
        notes=(*verdict.notes, *computed.notes),
        provenance=verdict.provenance,
        diagnosis=diagnosis,
        seconds=computed.seconds + judged,
        method=computed.engine,
        judge_seconds=judged,
    )


def one_story(result: ScenarioResult) -> bool:
    """Whether no finding sets an eager path against its jit twin (`jacrev` against `jit_jacrev`,
    `value` against `jit_value`): where eager and jit agree, the jit paths, each the user's
    function compiled and called on its own, reproduce every finding. The group engine's results
    are kept only then: its eager paths ran vmapped over the group."""
    twins = {JIT_VALUE, JIT_JACFWD, JIT_JACREV}
    for finding in result.findings:
        named = set(finding.paths)
        for name in named:
            jit, eager = name.startswith("jit_"), "jit_" + name
            twin = name.removeprefix("jit_") if jit else eager
            if (name.split(":")[0] in twins or eager.split(":")[0] in twins) and twin not in named:
                return False
    return True
