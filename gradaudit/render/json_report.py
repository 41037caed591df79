"""The JSON report (`gradaudit.report/1`): complete enough to re-judge a run without re-running it."""

from __future__ import annotations

import json
import math

import numpy as np

from gradaudit.model.paths import FAMILIES, JIT_VALUE, VALUE, PathResult, base_name, block_names
from gradaudit.render import FileFormat
from gradaudit.model.results import (
    COMPARE_SCHEMA,
    FINGERPRINTS,
    REPORT_SCHEMA,
    AuditReport,
    RuleComparison,
    ScenarioResult,
)

SECOND_ORDER_PATHS = frozenset((*FAMILIES[1].ad_paths, FAMILIES[1].reference))


def _plain(value: object) -> object:
    """A document as strict JSON allows it: non-finite floats become 'nan', 'inf', '-inf', at any depth."""
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def array_to_json(array: np.ndarray) -> object:
    array = np.asarray(array)
    if array.dtype.kind in "biu":
        return array.tolist()
    return np.asarray(array, dtype=np.float64).tolist()


def path_to_json(result: PathResult, arg_names: tuple[str, ...], arrays: bool = True) -> dict:
    """A path as the report keeps it; without `arrays`, only its status and where and how it ran."""
    placed = {} if result.device is None else {"device": result.device}
    body = _path_body(result, arg_names) if arrays or not result.ok else {"status": "ok"}
    return {**body, "engine": result.engine, "binding": result.binding, **placed}


def _path_body(result: PathResult, arg_names: tuple[str, ...]) -> dict:
    if result.not_applicable:
        return {"status": "not_applicable", "reason": result.not_applicable}
    if not result.ok:
        error = result.error
        return {
            "status": "error",
            "error": {"type": error.type, "message": error.message, "where": error.where, "user_where": error.user_where},
        }
    if base_name(result.name) in (VALUE, JIT_VALUE):
        return {"status": "ok", "value": array_to_json(result.arrays[0])}
    if base_name(result.name) in SECOND_ORDER_PATHS:
        names = block_names(arg_names, 2)
        return {"status": "ok", "hessian": {name: array_to_json(a) for name, a in zip(names, result.arrays, strict=True)}}
    return {"status": "ok", "jacobians": {name: array_to_json(a) for name, a in zip(arg_names, result.arrays, strict=True)}}


def result_to_json(result: ScenarioResult, detail: str = "full") -> dict:
    """A scenario's result; with detail `findings`, a consistent scenario's paths keep only their
    status (its arrays agree, so its inputs, provenance and verdict are the evidence kept)."""
    scenario = result.scenario
    arrays = detail == "full" or bool(result.findings)
    return {
        "name": scenario.name,
        "source": f"{scenario.source.file}:{scenario.source.line}",
        "scenario": scenario.to_dict(),
        "status": result.status,
        "method": result.method,
        "seconds": round(result.seconds, 6),
        "inputs": {name: array_to_json(a) for name, a in zip(result.arg_names, result.inputs, strict=True)},
        "paths": {name: path_to_json(path, result.arg_names, arrays) for name, path in result.paths.items()},
        "provenance": None if result.provenance is None or not arrays else result.provenance.to_list(result.arg_names),
        "findings": [finding.to_dict() for finding in result.findings],
        "notes": [note.to_dict() for note in result.notes],
        "diagnosis": None if result.diagnosis is None else result.diagnosis.to_dict(),
        "outcome": None if result.outcome is None else result.outcome.to_dict(),
    }


def report_to_json(report: AuditReport, detail: str = "full") -> dict:
    return {
        "schema": REPORT_SCHEMA,
        "fingerprints": FINGERPRINTS,
        "environment": report.environment,
        "summary": report.summary,
        "suites": report.suite_summaries(),
        "gate": {**report.gate_summary(), "baseline": report.baseline},
        "resolved": [{"name": name, "fingerprint": fingerprint} for name, fingerprint in report.resolved],
        "files": list(report.files),
        "warnings": list(report.warnings),
        "detail": detail,
        "results": [result_to_json(result, detail) for result in report.results],
        "errors": [error.to_dict() for error in report.errors],
    }


def comparison_to_json(comparison: RuleComparison, detail: str = "full") -> dict:
    return {
        "schema": COMPARE_SCHEMA,
        "rules": list(comparison.rules),
        "summary": {rule: report.summary for rule, report in zip(comparison.rules, comparison.reports, strict=True)},
        "changes": [
            {
                "name": row[0].scenario.name,
                "source": f"{row[0].scenario.source.file}:{row[0].scenario.source.line}",
                "status": {rule: result.status for rule, result in zip(comparison.rules, row, strict=True)},
            }
            for row in comparison.rows()
        ],
        "reports": {rule: report_to_json(report, detail) for rule, report in zip(comparison.rules, comparison.reports, strict=True)},
    }


def result_line(result: ScenarioResult) -> str:
    """One result as a line of JSON Lines (for the .partial file a run appends to as it goes)."""
    return json.dumps(_plain(result_to_json(result, "findings")), allow_nan=False) + "\n"


def _dump(document: dict) -> str:
    return json.dumps(_plain(document), indent=2, allow_nan=False) + "\n"


class JsonFormat(FileFormat):
    def __init__(self, detail: str = "findings"):
        self.detail = detail

    def render(self, report: AuditReport) -> str:
        return _dump(report_to_json(report, self.detail))

    def render_comparison(self, comparison: RuleComparison) -> str:
        return _dump(comparison_to_json(comparison, self.detail))
