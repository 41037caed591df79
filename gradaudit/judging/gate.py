"""What fails a run: the classes of finding `fail_on` names, a scenario's own expectation (strict
xfail) and findings already in a baseline.

Without either, a scenario passes when none of its findings is of a class in `fail_on` (by default
the classes with something to fix: crashed, timed-out, raised, wrong, eager-jit, leak); findings of
the other classes (non-finite, non-differentiable) are reported, not failed. With `expect:`, it passes when its
status (and exception) is the expected one, and fails with "stale expectation" when it is
consistent against an expected finding, as pytest's strict xfail does. With a baseline report,
findings already in it are `known` and do not fail; new ones do; baseline findings no longer seen
are `resolved`. Findings are recognised by scenario name and fingerprint (which paths disagreed,
the class of the wrong value and which entries: see `Finding.fingerprint`), never by line number.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from gradaudit.model.findings import (
    CLASSES,
    CONSISTENT,
    ERROR,
    FAIL_ON_DEFAULT,
    INTERRUPTED,
    RAISED,
    Finding,
    without_class,
)
from gradaudit.model.options import OptionError
from gradaudit.model.results import FINGERPRINTS, READABLE_SCHEMAS, AuditReport, Outcome, ScenarioResult
from gradaudit.sources.saved_reports import ReportError, check_fingerprints


class BaselineError(OptionError):
    """The baseline file cannot be used; the message says why."""


@dataclass(frozen=True)
class Baseline:
    """Fingerprints of the findings a previous report had, per scenario name."""

    source: str
    findings: dict[str, frozenset[str]] = field(default_factory=dict)
    form: int = FINGERPRINTS
    """The form of its fingerprints: a report of form 2 (before classes) is matched without them."""

    def key(self, fingerprint: str) -> str:
        """A finding's fingerprint as this baseline's form writes it."""
        return fingerprint if self.form == FINGERPRINTS else without_class(fingerprint)


def load_baseline(path: str) -> Baseline:
    """Read a `gradaudit.report/1` JSON report as a baseline."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read baseline: {exc.strerror}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}:{exc.lineno}:{exc.colno}: baseline is not JSON: {exc.msg}") from None
    if not isinstance(document, dict) or document.get("schema") not in READABLE_SCHEMAS:
        found = document.get("schema") if isinstance(document, dict) else type(document).__name__
        raise BaselineError(
            f"{path}: baseline must be a gradaudit JSON report (schema {READABLE_SCHEMAS[-1]!r}), found {found!r}"
        )
    findings: dict[str, frozenset[str]] = {}
    if not isinstance(document.get("results", []), list):
        raise BaselineError(f"{path}: 'results' must be a list")
    for index, result in enumerate(document.get("results") or []):
        try:
            findings[result["name"]] = frozenset(f["fingerprint"] for f in result.get("findings", []))
        except (KeyError, TypeError, AttributeError):
            raise BaselineError(f"{path}: results[{index}] lacks a name or finding fingerprints") from None
    try:
        check_fingerprints(path, document)
    except ReportError as exc:
        raise BaselineError(str(exc)) from None
    return Baseline(source=path, findings=findings, form=document["fingerprints"])


def _raised_types(findings: tuple[Finding, ...]) -> set[str]:
    return {f.error_type for f in findings if f.kind == RAISED and f.error_type}


def _counted(findings: Iterable[Finding]) -> str:
    """'2 non-finite, 1 non-differentiable': findings by class, in ranking order."""
    counts = Counter(f.finding_class for f in findings)
    return ", ".join(f"{counts[c]} {c}" for c in CLASSES if c in counts)


def outcome(result: ScenarioResult, baseline: Baseline | None, fail_on: Iterable[str] = FAIL_ON_DEFAULT) -> Outcome:
    """Whether `result` passes: its expectation, else its findings of the classes `fail_on` names
    (those a baseline knows excepted); findings of other classes are `reported`."""
    if result.status == INTERRUPTED:
        return Outcome(passed=False, reason="interrupted before it finished")
    expect = result.scenario.expect
    fingerprints = tuple(dict.fromkeys(f.fingerprint for f in result.findings))
    if expect is not None:
        met = result.status == expect.status
        if met and expect.exception is not None:
            met = expect.exception in _raised_types(result.findings)
        if met:
            reason = "consistent as expected" if expect.status == CONSISTENT else f"expected {expect.status}"
            return Outcome(passed=True, reason=reason, known=fingerprints)
        wanted = expect.status + (f" ({expect.exception})" if expect.exception else "")
        if result.status == CONSISTENT:
            return Outcome(passed=False, reason=f"stale expectation: expected {wanted}, but every path agrees")
        got = result.status + (
            f" ({', '.join(sorted(_raised_types(result.findings)))})" if result.status == ERROR else ""
        )
        return Outcome(passed=False, reason=f"expected {wanted}, got {got}", new=fingerprints)
    failing_classes = set(fail_on)
    failing = [f for f in result.findings if f.finding_class in failing_classes]
    passing = [f for f in result.findings if f.finding_class not in failing_classes]
    failed = tuple(dict.fromkeys(f.fingerprint for f in failing))
    reported = tuple(dict.fromkeys(f.fingerprint for f in passing))
    if baseline is not None:
        before = baseline.findings.get(result.scenario.name, frozenset())
        new = tuple(f for f in failed if baseline.key(f) not in before)
        known = tuple(f for f in failed if baseline.key(f) in before)
        # a scenario the baseline never ran (an API audit, named after its function) says so
        name = result.scenario.name
        unknown = "" if name in baseline.findings else f" (the baseline has no '{name}')"
        if new:
            return Outcome(
                passed=False,
                reason=f"{len(new)} new finding{'s' if len(new) > 1 else ''}{unknown}",
                new=new,
                known=known,
                reported=reported,
            )
        if known:
            return Outcome(passed=True, reason="known findings (baseline)", known=known, reported=reported)
    if result.status == CONSISTENT:
        count, of = result.unchecked
        if of and count == of:
            return Outcome(
                passed=True, reason=f"AD paths agree; finite differences could not check {count} of {of} entries"
            )
        return Outcome(passed=True, reason="consistent")
    if not failing:
        return Outcome(passed=True, reason=f"reported, not failed: {_counted(passing)}", reported=reported)
    return Outcome(passed=False, reason=f"{result.status}: {_counted(failing)}", new=failed, reported=reported)


def apply_gate(report: AuditReport, baseline: Baseline | None, fail_on: Iterable[str] = FAIL_ON_DEFAULT) -> AuditReport:
    """The report with every result's outcome, and the baseline findings no longer seen."""
    fail_on = tuple(fail_on)
    results = tuple(replace(r, outcome=outcome(r, baseline, fail_on)) for r in report.results)
    resolved: tuple[tuple[str, str], ...] = ()
    if baseline is not None:
        now = {r.scenario.name: {baseline.key(f.fingerprint) for f in r.findings} for r in results}
        resolved = tuple(
            (name, fingerprint)
            for name, fingerprints in baseline.findings.items()
            if name in now
            for fingerprint in sorted(fingerprints - now[name])
        )
    return replace(report, results=results, resolved=resolved, baseline=None if baseline is None else baseline.source)
