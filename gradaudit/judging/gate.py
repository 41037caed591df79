"""What fails a run: a scenario's own expectation (strict xfail) and findings already in a baseline.

Without either, a scenario passes only when it is consistent. With `expect:`, it passes when its
status (and exception) is the expected one, and fails with "stale expectation" when it is
consistent against an expected finding, as pytest's strict xfail does. With a baseline report,
findings already in it are `known` and do not fail; new ones do; baseline findings no longer seen
are `resolved`. Findings are recognised by scenario name and fingerprint (which paths disagreed,
the class of the wrong value and which entries: see `Finding.fingerprint`), never by line number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from gradaudit.model.findings import CONSISTENT, ERROR, INTERRUPTED, RAISED, Finding
from gradaudit.model.options import OptionError
from gradaudit.model.results import REPORT_SCHEMA, AuditReport, Outcome, ScenarioResult
from gradaudit.sources.saved_reports import ReportError, check_fingerprints


class BaselineError(OptionError):
    """The baseline file cannot be used; the message says why."""


@dataclass(frozen=True)
class Baseline:
    """Fingerprints of the findings a previous report had, per scenario name."""

    source: str
    findings: dict[str, frozenset[str]] = field(default_factory=dict)


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
    if not isinstance(document, dict) or document.get("schema") != REPORT_SCHEMA:
        found = document.get("schema") if isinstance(document, dict) else type(document).__name__
        raise BaselineError(f"{path}: baseline must be a gradaudit JSON report (schema {REPORT_SCHEMA!r}), found {found!r}")
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
    return Baseline(source=path, findings=findings)


def _raised_types(findings: tuple[Finding, ...]) -> set[str]:
    return {f.error_type for f in findings if f.kind == RAISED and f.error_type}


def outcome(result: ScenarioResult, baseline: Baseline | None) -> Outcome:
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
        got = result.status + (f" ({', '.join(sorted(_raised_types(result.findings)))})" if result.status == ERROR else "")
        return Outcome(passed=False, reason=f"expected {wanted}, got {got}", new=fingerprints)
    if baseline is not None:
        before = baseline.findings.get(result.scenario.name, frozenset())
        new = tuple(f for f in fingerprints if f not in before)
        known = tuple(f for f in fingerprints if f in before)
        if new:
            return Outcome(passed=False, reason=f"{len(new)} new finding{'s' if len(new) > 1 else ''}", new=new, known=known)
        if known:
            return Outcome(passed=True, reason="known findings (baseline)", known=known)
    if result.status == CONSISTENT:
        return Outcome(passed=True, reason="consistent")
    return Outcome(passed=False, reason=result.status, new=fingerprints)


def apply_gate(report: AuditReport, baseline: Baseline | None) -> AuditReport:
    """The report with every result's outcome, and the baseline findings no longer seen."""
    results = tuple(replace(r, outcome=outcome(r, baseline)) for r in report.results)
    resolved: tuple[tuple[str, str], ...] = ()
    if baseline is not None:
        now = {r.scenario.name: {f.fingerprint for f in r.findings} for r in results}
        resolved = tuple((name, fingerprint) for name, fingerprints in baseline.findings.items() if name in now for fingerprint in sorted(fingerprints - now[name]))
    return replace(report, results=results, resolved=resolved, baseline=None if baseline is None else baseline.source)
