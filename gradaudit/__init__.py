"""gradaudit: ask every derivative path in JAX the same question and report where they disagree."""

from gradaudit.judge import Finding, Verdict, judge
from gradaudit.loading import load_paths
from gradaudit.paths import PathResult, run_paths
from gradaudit.results import AuditReport, ScenarioResult
from gradaudit.runner import audit_scenario, run_audit
from gradaudit.scenario import Scenario

__version__ = "0.1.0"

__all__ = [
    "AuditReport",
    "Finding",
    "PathResult",
    "Scenario",
    "ScenarioResult",
    "Verdict",
    "__version__",
    "audit_scenario",
    "judge",
    "load_paths",
    "run_audit",
    "run_paths",
]
