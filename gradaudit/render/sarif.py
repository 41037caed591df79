"""SARIF 2.1.0, so findings show in GitHub code scanning (and any SARIF viewer) at their scenario's line.

One result per finding of a scenario that fails its gate, and per finding the gate reported but
did not fail (`fail_on`), at the scenario's file:line:col, its level by class (`LEVELS`); its
rule is the scenario's diagnosis (`GA002`, with its explanation and fixes as help) or, without
one, the kind of finding (`disagreement`, `routing`, `raised`). The finding's fingerprint is the
result's partial fingerprint, so code scanning follows a finding across runs as `gradaudit diff`
and the baseline do; findings a baseline accepts are left out (they do not fail the run), and the
ones it does not know are `baselineState: new`.
"""

from __future__ import annotations

import json
from pathlib import Path

from gradaudit.judging.diagnoses import BY_ID, Diagnosis
from gradaudit.model.findings import DISAGREEMENT, FAIL_ON_DEFAULT, RAISED, ROUTING, Finding, FindingClass
from gradaudit.model.results import AuditReport, RuleComparison, ScenarioResult
from gradaudit.render import FileFormat

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INPUT_ERROR = "input-error"
KIND_RULES: dict[str, tuple[str, str]] = {
    DISAGREEMENT: (
        "paths disagree",
        "Two derivative paths (or a path and finite differences) give different values for the same entries.",
    ),
    ROUTING: (
        "a derivative goes elsewhere",
        "The value comes from one input element while a derivative path sends its derivative to another, or nowhere.",
    ),
    RAISED: (
        "a path raised",
        "Some derivative paths raise an exception where others, or the function itself, succeed.",
    ),
    INPUT_ERROR: (
        "bad input",
        "A scenario file cannot be audited as written (the run exits 2 and audits nothing); the message says what is "
        "allowed.",
    ),
}
"""Rules for findings without a diagnosis: one per kind of finding, and one for input errors."""


LEVELS: dict[FindingClass, str] = {
    **{finding_class: "error" for finding_class in FAIL_ON_DEFAULT},
    FindingClass.NON_FINITE: "warning",
    FindingClass.NON_DIFFERENTIABLE: "note",
    FindingClass.UNJUDGED: "note",
}
"""SARIF's level per class: the classes the gate fails by default are errors; a split at non-finite
numbers a warning; paths picking different one-sided derivatives at a kink, and a split the float64 referee
cannot judge, notes."""


def _rule_id(result: ScenarioResult, finding: Finding) -> str:
    return result.diagnosis.id if result.diagnosis is not None else finding.kind


def _diagnosis_rule(diagnosis: Diagnosis) -> dict:
    fixes = "\n".join(f"fix {n}: {fix}" for n, fix in enumerate(diagnosis.fixes, 1))
    return {
        "id": diagnosis.id,
        "name": diagnosis.id,
        "shortDescription": {"text": diagnosis.title},
        "fullDescription": {"text": diagnosis.explanation},
        "help": {"text": f"{diagnosis.explanation}\n{fixes}"},
        "helpUri": next((r for r in diagnosis.references if r.startswith("http")), None)
        or "https://docs.jax.dev/en/latest/notebooks/autodiff_cookbook.html",
        "defaultConfiguration": {"level": "error"},
    }


def _kind_rule(kind: str) -> dict:
    title, text = KIND_RULES[kind]
    return {
        "id": kind,
        "name": kind,
        "shortDescription": {"text": title},
        "fullDescription": {"text": text},
        "defaultConfiguration": {"level": "error"},
    }


def _uri(file: str) -> str:
    """The file as code scanning locates it: relative to the working folder (the checkout) where it lies inside it."""
    path = Path(file)
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _location(file: str, line: int, col: int) -> list[dict]:
    return [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(file)},
                "region": {"startLine": line, "startColumn": col},
            }
        }
    ]


def _places(result: ScenarioResult) -> dict[str, list[dict]]:
    """Where a finding points: the user's function where the scenario names one of their own (the
    scenario then a related location), else the scenario."""
    source = result.scenario.source
    defined = getattr(result.scenario.target, "defined_at", None)
    if defined is None:
        return {"locations": _location(source.file, source.line, source.col)}
    scenario = _location(source.file, source.line, source.col)[0]
    scenario.update(id=1, message={"text": f"the scenario {result.scenario.name}"})
    return {"locations": _location(defined.file, defined.line, defined.col), "relatedLocations": [scenario]}


def _results(report: AuditReport, rule_label: str = "") -> tuple[list[dict], dict[str, dict]]:
    results: list[dict] = []
    rules: dict[str, dict] = {}
    for error in report.errors:  # a run refused for bad input shows where, as the terminal does
        rules.setdefault(INPUT_ERROR, _kind_rule(INPUT_ERROR))
        results.append(
            {
                "ruleId": INPUT_ERROR,
                "level": "error",
                "message": {"text": error.message},
                "locations": _location(error.location.file, error.location.line, error.location.col),
            }
        )
    for result in report.results:
        if result.passed and not (result.outcome and result.outcome.reported):
            continue
        known = set(result.outcome.known) if result.outcome else set()
        for finding in result.ranked_findings:
            if finding.fingerprint in known:
                continue
            rule = _rule_id(result, finding)
            rules.setdefault(
                rule, _diagnosis_rule(BY_ID[rule]) if result.diagnosis is not None else _kind_rule(finding.kind)
            )
            results.append(
                {
                    "ruleId": rule,
                    "level": LEVELS[finding.finding_class],
                    "message": {
                        "text": f"{result.scenario.name}{rule_label}: {finding.labelled}"
                        + (f" Why: {finding.reason}" if finding.reason else "")
                    },
                    **_places(result),
                    "partialFingerprints": {
                        "gradauditFinding/v1": f"{result.scenario.name}{rule_label}|{finding.fingerprint}"
                    },
                    "baselineState": "new" if report.baseline is not None else None,
                    "properties": {
                        "scenario": result.scenario.name,
                        "status": result.status,
                        "class": str(finding.finding_class),
                    },
                }
            )
            if results[-1]["baselineState"] is None:
                del results[-1]["baselineState"]
    return results, rules


def _document(pairs: list[tuple[AuditReport, str]]) -> str:
    from importlib.metadata import version

    results, rules = [], {}
    for report, label in pairs:
        found, named = _results(report, label)
        results += found
        rules.update(named)
    run = {
        "tool": {
            "driver": {
                "name": "gradaudit",
                "version": version("gradaudit"),
                "informationUri": "https://pypi.org/project/gradaudit/",
                "rules": list(rules.values()),
            }
        },
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2) + "\n"


class SarifFormat(FileFormat):
    def render(self, report: AuditReport) -> str:
        return _document([(report, "")])

    def render_comparison(self, comparison: RuleComparison) -> str:
        return _document(
            [(report, f" [{rule}]") for rule, report in zip(comparison.rules, comparison.reports, strict=True)]
        )
