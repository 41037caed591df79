"""`gradaudit diff A.json B.json`: what changed between two reports, which is how a team reads a JAX upgrade.

Scenarios are matched by name and findings by fingerprint (what disagreed), as the baseline gate
does, so line numbers and counts never make a change. A finding in B and not in A is new, one in
A and not in B is resolved; a scenario whose status or findings moved is changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gradaudit.model.findings import without_class
from gradaudit.model.results import FINGERPRINTS
from gradaudit.sources.saved_reports import read_report

DIFF_SCHEMA = "gradaudit.diff/1"

ENVIRONMENT_KEYS = ("jax", "jaxlib", "python", "backend", "rule", "x64")


@dataclass(frozen=True)
class FindingChange:
    scenario: str
    fingerprint: str
    message: str


@dataclass(frozen=True)
class ReportDiff:
    before: str
    after: str
    environment: dict[str, tuple[object, object]]
    """Environment facts that differ: key -> (before, after); devices compared by name."""
    new: tuple[FindingChange, ...]
    resolved: tuple[FindingChange, ...]
    changed: tuple[tuple[str, str, str], ...]
    """(scenario, status before, status after) where the status or the findings moved."""
    added: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    counts: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "schema": DIFF_SCHEMA,
            "before": self.before,
            "after": self.after,
            "environment": {key: {"before": a, "after": b} for key, (a, b) in self.environment.items()},
            "summary": {
                "new": len(self.new),
                "resolved": len(self.resolved),
                "changed": len(self.changed),
                "added": len(self.added),
                "removed": len(self.removed),
                "unchanged": self.unchanged,
            },
            "new": [vars(f) for f in self.new],
            "resolved": [vars(f) for f in self.resolved],
            "changed": [{"name": name, "before": a, "after": b} for name, a, b in self.changed],
            "added": list(self.added),
            "removed": list(self.removed),
            "counts": self.counts,
        }


def _findings(result: dict, classed: bool = True) -> dict[str, str]:
    """fingerprint -> the first message with it; without `classed`, fingerprints without their
    class (to match a report of fingerprint form 2, written before classes)."""
    found: dict[str, str] = {}
    for finding in result.get("findings", []):
        fingerprint = finding.get("fingerprint", "")
        found.setdefault(fingerprint if classed else without_class(fingerprint), finding.get("message", ""))
    return found


def _devices(environment: dict) -> list[str]:
    return [str(d.get("name") or f"{d.get('platform')}:{d.get('id')}") for d in environment.get("devices", [])]


def diff_reports(before_path: str, after_path: str) -> ReportDiff:
    """The changes from the report at `before_path` to the one at `after_path` (ReportError if either is unusable)."""
    before, after = read_report(before_path), read_report(after_path)
    environment = {
        key: (before["environment"].get(key), after["environment"].get(key))
        for key in ENVIRONMENT_KEYS
        if before["environment"].get(key) != after["environment"].get(key)
    }
    if _devices(before["environment"]) != _devices(after["environment"]):
        environment["devices"] = (", ".join(_devices(before["environment"])), ", ".join(_devices(after["environment"])))
    old = {r["name"]: r for r in before["results"]}
    now = {r["name"]: r for r in after["results"]}
    new, resolved, changed = [], [], []
    unchanged = 0
    classed = before["fingerprints"] == after["fingerprints"] == FINGERPRINTS
    for name, result in now.items():
        was = old.get(name)
        found = _findings(result, classed)
        had = _findings(was, classed) if was is not None else {}
        new += [FindingChange(name, fp, message) for fp, message in found.items() if fp not in had]
        resolved += [FindingChange(name, fp, message) for fp, message in had.items() if fp not in found]
        if was is not None and (was["status"] != result["status"] or set(found) != set(had)):
            changed.append((name, was["status"], result["status"]))
        elif was is not None:
            unchanged += 1
    return ReportDiff(
        before=before_path,
        after=after_path,
        environment=environment,
        new=tuple(new),
        resolved=tuple(resolved),
        changed=tuple(changed),
        added=tuple(name for name in now if name not in old),
        removed=tuple(name for name in old if name not in now),
        unchanged=unchanged,
        counts={"before": before.get("summary", {}), "after": after.get("summary", {})},
    )
