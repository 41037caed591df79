"""The JSON report (`gradaudit.report/2`): complete enough to re-judge a run without re-running it."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import fields

import numpy as np

from gradaudit.model.paths import FAMILIES, JIT_VALUE, VALUE, PathResult, base_name, block_names
from gradaudit.model.results import (
    COMPARE_SCHEMA,
    FINGERPRINTS,
    REPORT_SCHEMA,
    AuditReport,
    RuleComparison,
    ScenarioResult,
)
from gradaudit.render import FileFormat

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
    """An array as nested lists of strict JSON: floats that are all whole numbers (one-hot
    Jacobians) written as integers, which JSON reads as the same numbers in a third of the text;
    non-finite entries as 'nan', 'inf', '-inf' (see `_plain`)."""
    array = np.asarray(array)
    if array.dtype.kind in "biu":
        return array.tolist()
    wide = array.astype(np.float64)
    if not np.isfinite(wide).all():
        shown = wide.astype(object)
        for mask, text in ((np.isnan(wide), "nan"), (wide == np.inf, "inf"), (wide == -np.inf, "-inf")):
            shown[mask] = text
        return shown.tolist()
    if (
        wide.size
        and np.array_equal(wide, np.trunc(wide))
        and np.abs(wide).max() < 2**53
        and not (np.signbit(wide) & (wide == 0)).any()
    ):
        return wide.astype(np.int64).tolist()  # -0.0 (above) keeps its sign as a float
    return wide.tolist()


def path_to_json(
    result: PathResult, arg_names: tuple[str, ...], arrays: bool = True, same: dict[str, str | None] | None = None
) -> dict:
    """A path as the report keeps it: without `arrays`, only its status; with `same` given, its
    `engine`, `binding` and `device` only where they differ from those (the result's own)."""
    recorded = {
        "engine": result.engine,
        "binding": result.binding,
        **({} if result.device is None else {"device": result.device}),
    }
    body = _path_body(result, arg_names) if arrays or not result.ok else {"status": "ok"}
    return {**body, **{key: value for key, value in recorded.items() if same is None or same.get(key) != value}}


def _paths_to_json(result: ScenarioResult, arrays: bool, detail: str, same: dict[str, str | None]) -> dict:
    """Every path; with detail `findings`, a path whose arrays hold the same numbers as a path
    written before it (of the same kind: a value, Jacobians, Hessians) says `"equals": that path`
    instead of repeating them. Each path was computed on its own; only the writing is shared."""
    written: dict[tuple, str] = {}
    document = {}
    for name, path in result.paths.items():
        if arrays and detail != "full" and path.ok:
            bits = (_kind(name), *(_numbers(a) for a in path.ok_arrays))
            if bits in written:
                document[name] = {**path_to_json(path, result.arg_names, False, same), "equals": written[bits]}
                continue
            written[bits] = name
        document[name] = path_to_json(path, result.arg_names, arrays, same)
    return document


def _numbers(array) -> tuple:
    """An array's shape and numbers, as a key equal for equal numbers whatever the dtype (0.0 and
    -0.0 alike; NaN equals NaN of the same bits, which is every NaN JAX makes)."""
    wide = np.asarray(array, dtype=np.float64) + 0.0
    return wide.shape, wide.tobytes()


def _outcome(result: ScenarioResult) -> dict:
    """The gate's outcome; `new` and `known` name the findings by their position in `findings`
    (the first with each fingerprint), not by repeating their fingerprints."""
    first: dict[str, int] = {}
    for position, finding in enumerate(result.findings):
        first.setdefault(finding.fingerprint, position)
    outcome = result.outcome
    assert outcome is not None, "only results with a gate outcome are asked for it"
    return {
        "passed": outcome.passed,
        "reason": outcome.reason,
        "new": [first[f] for f in outcome.new],
        "known": [first[f] for f in outcome.known],
        "reported": [first[f] for f in outcome.reported],
    }


def _provenance(entries: list[dict]) -> list[dict]:
    """Per routing, the output elements that share it: `{"elements": [...], "value_from": [...],
    path: [...]}`, elements in order, so a 300-element output routed one way is one entry."""
    grouped: dict[str, dict] = {}
    for entry in entries:
        routing = {key: value for key, value in entry.items() if key != "element"}
        grouped.setdefault(json.dumps(routing), {"elements": [], **routing})["elements"].append(entry["element"])
    return list(grouped.values())


def _kind(name: str) -> str:
    base = base_name(name)
    return "value" if base in (VALUE, JIT_VALUE) else ("hessian" if base in SECOND_ORDER_PATHS else "jacobians")


def _path_body(result: PathResult, arg_names: tuple[str, ...]) -> dict:
    if result.not_applicable:
        return {"status": "not_applicable", "reason": result.not_applicable}
    if not result.ok:
        error = result.error
        assert error is not None, "exactly one of arrays, error and not_applicable is set (PathResult)"
        return {
            "status": "error",
            "error": {
                "type": error.type,
                "message": error.message,
                "where": error.where,
                "user_where": error.user_where,
            },
        }
    if base_name(result.name) in (VALUE, JIT_VALUE):
        return {"status": "ok", "value": array_to_json(result.ok_arrays[0])}
    if base_name(result.name) in SECOND_ORDER_PATHS:
        names = block_names(arg_names, 2)
        return {
            "status": "ok",
            "hessian": {name: array_to_json(a) for name, a in zip(names, result.ok_arrays, strict=True)},
        }
    return {
        "status": "ok",
        "jacobians": {name: array_to_json(a) for name, a in zip(arg_names, result.ok_arrays, strict=True)},
    }


def result_to_json(result: ScenarioResult, detail: str = "full") -> dict:
    """A scenario's result; with detail `findings`, a consistent scenario's paths keep only their
    status (its arrays agree, so its inputs, provenance and verdict are the evidence kept). Its
    diagnosis is named by id: the report's `diagnoses` holds each one's text once."""
    return {**_judged(result, detail), "outcome": None if result.outcome is None else _outcome(result)}


def _judged(result: ScenarioResult, detail: str) -> dict:
    """A result as the audit left it, before the gate's outcome."""
    scenario = result.scenario
    arrays = detail == "full" or bool(result.findings)
    first = next(iter(result.paths.values()), None)
    same = {} if first is None else {"engine": result.method, "binding": first.binding, "device": first.device}
    return {
        "name": scenario.name,
        "source": f"{scenario.source.file}:{scenario.source.line}",
        "scenario": {key: value for key, value in scenario.to_dict().items() if value is not None and key != "name"},
        "status": result.status,
        "method": result.method,
        **{key: value for key, value in same.items() if key != "engine" and value is not None},
        "seconds": round(result.seconds, 6),
        "inputs": {name: array_to_json(a) for name, a in zip(result.arg_names, result.inputs, strict=True)},
        "paths": _paths_to_json(result, arrays, detail, same),
        "provenance": None
        if result.provenance is None or not arrays
        else _provenance(result.provenance.to_list(result.arg_names)),
        "findings": [finding.to_dict() for finding in result.findings],
        "notes": [note.to_dict() for note in result.notes],
        "diagnosis": None if result.diagnosis is None else {"id": result.diagnosis.id},
    }


def _diagnoses(results) -> dict:
    """Each diagnosis the results name, by id: title, explanation, evidence, fixes and references, once."""
    found = {}
    for result in results:
        if result.diagnosis is not None and result.diagnosis.id not in found:
            found[result.diagnosis.id] = result.diagnosis.to_dict()
    return dict(sorted(found.items()))


def report_to_json(report: AuditReport, detail: str = "full", rendered: RenderedRows | None = None) -> dict:
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
        "shuffle": report.shuffle,
        "diagnoses": _diagnoses(report.results),
        "results": _Rows(
            (rendered and rendered.row(result, detail)) or result_to_json(result, detail) for result in report.results
        ),
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
        "reports": {
            rule: report_to_json(report, detail)
            for rule, report in zip(comparison.rules, comparison.reports, strict=True)
        },
    }


_AS_JUDGED = tuple(f.name for f in fields(ScenarioResult) if f.name not in ("outcome", "paths"))
"""What a rendered row depends on and the gate does not change. Paths are left out: after rendering
they change only by `results.lightened`, which keeps what a row of detail `findings` shows, and
holding them would hold every array of the run."""


class RenderedRows:
    """Rows rendered while a run goes on (for its `.partial` file, JSON Lines), kept so that the
    report written at the end takes them as they are: rendering is as costly as writing the report,
    and is done once."""

    def __init__(self) -> None:
        self._rows: dict[int, tuple[tuple, str]] = {}

    def line(self, result: ScenarioResult) -> str:
        """The result as one line of JSON (detail `findings`, before any gate outcome), remembered."""
        row = _compact(_judged(result, "findings"))
        self._rows[id(result.scenario)] = (tuple(getattr(result, name) for name in _AS_JUDGED), row)
        return row + "\n"

    def row(self, result: ScenarioResult, detail: str) -> str | None:
        """The report's row for `result`, from the line rendered for it with the gate's outcome
        added; None where none was (another detail, or a result that has changed since)."""
        seen = self._rows.get(id(result.scenario)) if detail == "findings" else None
        if seen is None or any(
            kept is not getattr(result, name) for kept, name in zip(seen[0], _AS_JUDGED, strict=True)
        ):
            return None
        outcome = None if result.outcome is None else _outcome(result)
        return f'{seen[1][:-1]},"outcome":{_compact(outcome)}}}'


class _Rows:
    """A list of objects made one at a time as the report is written (the results; each an object,
    or its compact JSON text): a report of 10,000 scenarios is never whole in memory."""

    def __init__(self, rows: Iterable[dict | str]):
        self.rows = rows


def _chunks(value: object, indent: str = "") -> Iterator[str]:
    """The document's text, piece by piece: objects one key a line; a list of objects one object a
    line, each compact, so a report of 10,000 scenarios is a file of 10,000 lines that diff and
    grep read, not of millions. Strict JSON: non-finite numbers become strings (see `_plain`)."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        yield "{"
        for position, (key, item) in enumerate(value.items()):
            yield f"{',' if position else ''}\n{inner}{json.dumps(key)}: "
            yield from _chunks(item, inner)
        yield f"\n{indent}}}"
    elif isinstance(value, _Rows) or (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
        rows = value.rows if isinstance(value, _Rows) else value
        written = 0
        for row in rows:
            yield f"{',' if written else '['}\n{inner}{row if isinstance(row, str) else _compact(row)}"
            written += 1
        yield f"\n{indent}]" if written else "[]"
    else:
        yield json.dumps(_plain(value), allow_nan=False)


def _compact(row: dict | None) -> str:
    """One object on one line; `_plain` walks it only when it holds a non-finite number."""
    try:
        return json.dumps(row, allow_nan=False, separators=(",", ":"))
    except ValueError:
        return json.dumps(_plain(row), allow_nan=False, separators=(",", ":"))


def dump(document: dict) -> str:
    """A report document as gradaudit writes it (see `_chunks`), whole."""
    return "".join(_chunks(document)) + "\n"


class JsonFormat(FileFormat):
    def __init__(self, detail: str = "findings", rendered: RenderedRows | None = None):
        self.detail = detail
        self.rendered = rendered

    def render(self, report: AuditReport) -> Iterator[str]:
        yield from _chunks(report_to_json(report, self.detail, self.rendered))
        yield "\n"

    def render_comparison(self, comparison: RuleComparison) -> Iterator[str]:
        yield from _chunks(comparison_to_json(comparison, self.detail))
        yield "\n"
