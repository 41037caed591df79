"""The audit's results as data: what renderers read and nothing else writes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from gradaudit.model.errors import InputError
from gradaudit.model.findings import (
    CONSISTENT,
    DISAGREEMENT,
    INTERRUPTED,
    STATUSES,
    Compared,
    Finding,
    Note,
    Provenance,
)
from gradaudit.model.paths import PathResult
from gradaudit.model.scenario import Scenario

if TYPE_CHECKING:
    from gradaudit.judging.diagnoses import Diagnosis

REPORT_SCHEMA = "gradaudit.report/2"
"""2: every finding has a `class`, and outcomes list the findings `reported` but not failed."""
READABLE_SCHEMAS = ("gradaudit.report/1", REPORT_SCHEMA)
"""Reports `diff`, `merge` and `--baseline` read: this form and the one before classes."""
COMPARE_SCHEMA = "gradaudit.compare/1"
FINGERPRINTS = 3
"""The form of findings' fingerprints a report holds (3: class, signature, form of the wrong value,
entries; 2 lacked the class). A report of form 2 is matched with the class left out (`without_class`)."""


@dataclass(frozen=True)
class Outcome:
    """Whether a scenario passes the gate (see gate.py), and why."""

    passed: bool
    reason: str
    new: tuple[str, ...] = ()
    """Fingerprints of findings that fail the run."""
    known: tuple[str, ...] = ()
    """Fingerprints of findings a baseline or an expectation accepts."""
    reported: tuple[str, ...] = ()
    """Fingerprints of findings of classes the gate does not fail (`fail_on`): shown, not failed."""


@dataclass(frozen=True, eq=False)
class ScenarioResult:
    """One scenario's paths, provenance, findings and status."""

    scenario: Scenario
    arg_names: tuple[str, ...]
    inputs: tuple[np.ndarray, ...]
    """The values the paths were evaluated at, one per argument."""
    status: str
    paths: dict[str, PathResult]
    findings: tuple[Finding, ...]
    provenance: Provenance | None
    seconds: float
    notes: tuple[Note, ...] = ()
    """What the audit saw but did not count against the scenario: kinks, paths that do not apply."""
    diagnosis: Diagnosis | None = None
    outcome: Outcome | None = None
    """Set by the gate; None means: passes when consistent."""
    method: str = "literal"
    """The engine that computed the paths reported: `literal`, `bundle` or `group` (see engines/)."""
    judge_seconds: float = 0.0
    unchecked: tuple[int, int] = (0, 0)
    """(first-order entries finite differences could not check, of how many): see `Verdict.unchecked`."""
    absolute_only: int = 0
    """See `Verdict.absolute_only`; 0 where the absolute tolerance is the user's or the dtype float64."""
    unresolved: bool = False
    """See `Verdict.unresolved`."""
    compared: tuple[Compared, ...] = ()
    """What the judge compared each family with (`Verdict.compared`); empty for a result read back from a report."""
    misrouted: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Per AD path, the output elements its routing finding names (`Verdict.misrouted`)."""

    @property
    def passed(self) -> bool:
        return self.outcome.passed if self.outcome is not None else self.status == CONSISTENT

    @property
    def ranked_findings(self) -> tuple[Finding, ...]:
        """Findings most severe class first; within a class the disagreements first, largest (in
        multiples of its tolerance) first, then the judge's order: what every output leads with, so
        that the terminal, JUnit, SARIF and HTML all lead with numbers."""
        return tuple(sorted(self.findings, key=lambda f: (f.rank, f.kind != DISAGREEMENT, -f.magnitude)))


def lightened(result: ScenarioResult) -> ScenarioResult:
    """A consistent result without the arrays no report shows for it (`PathResult.lightened`), so
    that a long run's memory does not grow with arrays that agreed; others as they are."""
    if result.status != CONSISTENT:
        return result
    paths = {name: path.lightened() for name, path in result.paths.items()}
    if all(paths[name] is path for name, path in result.paths.items()) and not result.compared:
        return result
    return replace(result, paths=paths, compared=())


@dataclass(frozen=True, eq=False)
class AuditReport:
    """A whole run: where it ran, what it found, and any input errors."""

    environment: dict
    results: tuple[ScenarioResult, ...] = ()
    errors: tuple[InputError, ...] = ()
    files: tuple[str, ...] = field(default_factory=tuple)
    resolved: tuple[tuple[str, str], ...] = ()
    """(scenario, fingerprint) of baseline findings this run no longer sees."""
    baseline: str | None = None
    """The baseline report the gate used, if any."""
    warnings: tuple[str, ...] = ()
    """What the run worked around and a user should know (a cache folder it could not use)."""
    shuffle: int | None = None
    """The seed of the order scenarios were audited in (`--shuffle`), or None: file order."""
    timings: dict = field(default_factory=dict)
    """Seconds spent judging, how many fast-path groups and bundles there were, and under `workers`
    what worker processes spent (for --profile)."""

    @property
    def passed(self) -> bool:
        """Whether the run passes: every scenario passes its gate."""
        return all(result.passed for result in self.results)

    def gate_summary(self) -> dict[str, int]:
        """Scenarios passing and failing the gate, and findings new, known and resolved."""
        return {
            "passed": sum(r.passed for r in self.results),
            "failed": sum(not r.passed for r in self.results),
            "new": sum(len(r.outcome.new) for r in self.results if r.outcome),
            "known": sum(len(r.outcome.known) for r in self.results if r.outcome),
            "reported": sum(len(r.outcome.reported) for r in self.results if r.outcome),
            "resolved": len(self.resolved),
        }

    @property
    def summary(self) -> dict[str, int]:
        return _counts(self.results)

    def suite_summaries(self) -> dict[str, dict[str, int]]:
        """Counts per suite (top folder), in the order suites first appear."""
        suites: dict[str, list[ScenarioResult]] = {}
        for result in self.results:
            suites.setdefault(result.scenario.suite, []).append(result)
        return {suite: _counts(results) for suite, results in suites.items()}


def _counts(results) -> dict[str, int]:
    counts = Counter(result.status for result in results)
    summary: dict[str, int] = {"total": len(results), **{status: counts.get(status, 0) for status in STATUSES}}
    if counts.get(INTERRUPTED):
        summary[INTERRUPTED] = counts[INTERRUPTED]
    return summary


@dataclass(frozen=True, eq=False)
class RuleComparison:
    """The same scenarios audited under several select_n transpose rules, in the order given."""

    rules: tuple[str, ...]
    reports: tuple[AuditReport, ...]

    def rows(self) -> list[tuple[ScenarioResult, ...]]:
        """Per scenario, its result under each rule."""
        return list(zip(*(report.results for report in self.reports), strict=True))

    def transitions(self, before: int, after: int) -> Counter[tuple[str, str]]:
        """How many scenarios went from each status under rule `before` to each under rule `after`."""
        return Counter((row[before].status, row[after].status) for row in self.rows())
