"""From what an engine computed to a scenario's result: judged, diagnosed, the same way for every engine."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from gradaudit.judging.batch import Case
from gradaudit.judging.diagnoses import Diagnosis, Evidence, diagnose, nothing_met
from gradaudit.judging.judge import judge_all, twins_agree
from gradaudit.judging.tolerances import atol_given, tolerances_for
from gradaudit.model.computed import Computed
from gradaudit.model.findings import DISAGREEMENT, ERROR, RAISED, Finding, Verdict, raised_class
from gradaudit.model.paths import (
    EAGER_TWINS,
    HESSIAN_FINITE_DIFFERENCE,
    NOT_APPLICABLE,
    VALUE,
    base_name,
    primary_name,
)
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import Scenario


def assess(scenario: Scenario, computed: Computed, tolerance: tuple[float | None, ...] = ()) -> ScenarioResult:
    """The scenario's verdict, findings, notes and diagnosis from its paths; an error result when
    the engine could not compute them (a timeout, a crashed worker, a scenario too large)."""
    return assess_all([(scenario, computed)], tolerance)[0]


def assess_all(
    computed: Sequence[tuple[Scenario, Computed]], tolerance: tuple[float | None, ...] = ()
) -> list[ScenarioResult]:
    """Each scenario's result, as `assess` gives it; scenarios computed together (a group's
    members) are judged together (`judge_all`), each charged an equal share of the time."""
    started = time.perf_counter()
    judged = [(scenario, paths) for scenario, paths in computed if paths.failure is None]
    # One evaluation of the function's mechanisms for the judge and the diagnoses alike.
    met = [None if paths.triggers is None else functools.cache(paths.triggers) for _, paths in judged]
    cases = [
        Case(
            paths.paths,
            paths.arg_names,
            tolerances_for(scenario, tolerance, paths.paths),
            paths.bindings,
            paths.inputs,
            scenario.eps,
            paths.probe,
            triggers,
        )
        for (scenario, paths), triggers in zip(judged, met, strict=True)
    ]
    verdicts = judge_all(cases)
    computing = 0.0  # eager Hessians computed on demand: the scenario's computing time, not the judge's
    for index, ((scenario, paths), verdict) in enumerate(zip(judged, verdicts, strict=True)):
        asked = _twins_wanted(paths, verdict) if paths.twins is not None else set()
        before = time.perf_counter()
        twins = paths.twins(asked) if asked and paths.twins is not None else {}
        spent = time.perf_counter() - before
        computing += spent
        if twins:  # judged again with them: a compiled Hessian alone against its eager form is an eager/jit split
            judged[index] = (scenario, replace(paths, paths={**paths.paths, **twins}, seconds=paths.seconds + spent))
            verdicts[index] = judge_all([replace(cases[index], results=judged[index][1].paths)])[0]
    diagnoses = [
        diagnose(_evidence(paths, verdict, triggers))
        for (_, paths), verdict, triggers in zip(judged, verdicts, met, strict=True)
    ]
    share = (time.perf_counter() - started - computing) / max(1, len(judged))
    together = zip(judged, verdicts, diagnoses, strict=True)
    found = iter((scenario, paths, verdict, diagnosis, tolerance) for (scenario, paths), verdict, diagnosis in together)
    return [
        _failed(scenario, paths) if paths.failure is not None else _result(*next(found), share)
        for scenario, paths in computed
    ]


def _twins_wanted(computed: Computed, verdict: Verdict) -> set[str]:
    """The compiled Hessian paths (`paths.EAGER_TWINS`) whose eager twin was not computed, where the
    judge needs it: in a disagreement, it cannot yet tell whether compiling or the rule is wrong
    (where some disagree with finite differences of the Jacobian, only those: one that agrees with
    them needs no twin to be judged); where jit cannot compile the function, only the eager form
    can be checked at all."""
    disagreements = [f for f in verdict.findings if f.kind == DISAGREEMENT]
    against = [f for f in disagreements if any(base_name(p) == HESSIAN_FINITE_DIFFERENCE for p in f.paths)]
    uncompiled = {rule.reason for rule in NOT_APPLICABLE if rule.compiled_only}
    named = {name for finding in against or disagreements for name in finding.paths}
    named |= {name for name, path in computed.paths.items() if path.not_applicable in uncompiled}
    return {
        name
        for name in named
        if base_name(name) in EAGER_TWINS
        and primary_name(name) == name
        and name.replace(base_name(name), EAGER_TWINS[base_name(name)], 1) not in computed.paths
    }


def _evidence(computed: Computed, verdict: Verdict, triggers: Callable[..., frozenset[str]] | None) -> Evidence:
    """What a diagnosis may look at: the verdict, and the function traced or evaluated when asked
    (`triggers`: the computed function's mechanisms, cached for the judge and the diagnoses)."""
    return Evidence(
        paths=computed.paths,
        findings=verdict.findings,
        notes=verdict.notes,
        trace=computed.primitives or frozenset,
        evaluate=triggers or nothing_met,
    )


def _failed(scenario: Scenario, computed: Computed) -> ScenarioResult:
    """The error result of a scenario its engine could not compute."""
    assert computed.failure is not None
    finding = Finding(
        kind=RAISED,
        paths=(VALUE,),
        message=computed.failure.message,
        error_type=computed.failure.error_type,
        finding_class=raised_class(computed.failure.error_type),
    )
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


def _result(
    scenario: Scenario,
    computed: Computed,
    verdict: Verdict,
    diagnosis: Diagnosis | None,
    tolerance: tuple[float | None, ...],
    judged: float,
) -> ScenarioResult:
    return ScenarioResult(
        scenario=scenario,
        arg_names=computed.arg_names,
        inputs=computed.inputs,
        status=verdict.status,
        # The finite-difference estimates at each step were the judge's working, not evidence a report
        # keeps: without them a result is a third the size to send from a worker and to hold.
        paths={
            name: replace(path, estimates=None) if path.estimates is not None else path
            for name, path in computed.paths.items()
        },
        findings=verdict.findings,
        notes=(*verdict.notes, *computed.notes),
        provenance=verdict.provenance,
        diagnosis=diagnosis,
        seconds=computed.seconds + judged,
        method=computed.engine,
        judge_seconds=judged,
        unchecked=verdict.unchecked,
        unresolved=verdict.unresolved,
        # kept where a finer dtype can referee and the absolute tolerance is the dtype's
        absolute_only=(
            0 if scenario.precision_dtype == "float64" or atol_given(scenario, tolerance) else verdict.absolute_only
        ),
        compared=tuple(
            replace(c, reference=replace(c.reference, estimates=None)) if c.reference is not None else c
            for c in verdict.compared
        ),
        misrouted=verdict.misrouted,
    )


def one_story(result: ScenarioResult, tolerance: tuple[float | None, ...] = ()) -> bool:
    """Whether a group engine's result may be reported as it is. Its jit paths are a user's own
    programs (one program for selections, `bundled`: `engines.group`), but its eager paths ran as one
    eager vmap over the group, which may answer otherwise than a user's eager call (batched XLA code
    can turn a NaN into 0). A user's function's result is therefore kept only where it found nothing
    and each eager path agrees with its jit twin; one with a finding is audited again, each path as
    named, before the finding and its class are reported. A `bundled` kind (select_n's selections,
    which a batch computes as one call does) keeps its findings where the twins agree."""
    if result.findings and not result.scenario.target.bundled:
        return False
    return twins_agree(result.paths, tolerances_for(result.scenario, tolerance))  # AD against AD: no scale
