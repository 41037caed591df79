"""Reading a JSON report back (`merge`, `diff`): every field they use is checked, so a damaged or
hand-edited report is a clear input error, never a traceback, and a report of a run that did not
finish is refused rather than read as 'no findings'."""

from __future__ import annotations

import json
from pathlib import Path

from gradaudit.model.findings import INTERRUPTED, STATUSES
from gradaudit.model.results import FINGERPRINTS, READABLE_SCHEMAS


class ReportError(Exception):
    """A report cannot be used; the message names the file and what is wrong."""


def _check_result(path: str, index: int, result) -> None:
    where = f"{path}: results[{index}]"
    if not isinstance(result, dict) or not all(k in result for k in ("name", "status", "scenario", "findings")):
        raise ReportError(f"{where} needs 'name', 'status', 'scenario' and 'findings'")
    if not isinstance(result["name"], str) or not isinstance(result["status"], str):
        raise ReportError(f"{where}: 'name' and 'status' must be strings")
    if result["status"] not in (*STATUSES, INTERRUPTED):
        raise ReportError(f"{where}: unknown status {result['status']!r} (one of {', '.join(STATUSES)})")
    if not isinstance(result["scenario"], dict) or not isinstance(result["scenario"].get("suite", ""), str):
        raise ReportError(f"{where}: 'scenario' must be an object whose 'suite' is a string")
    outcome = result.get("outcome")
    if outcome is not None and not (
        isinstance(outcome, dict)
        and isinstance(outcome.get("passed"), bool)
        and all(isinstance(outcome.get(k, []), list) for k in ("new", "known"))
    ):
        raise ReportError(
            f"{where}: 'outcome' must be null or an object with 'passed' (true or false), 'new' and 'known' lists"
        )
    findings = result["findings"]
    if not isinstance(findings, list) or not all(
        isinstance(f, dict) and isinstance(f.get("fingerprint"), str) and isinstance(f.get("message"), str)
        for f in findings
    ):
        raise ReportError(f"{where}: 'findings' must be a list of objects with a string 'fingerprint' and 'message'")


READABLE_FINGERPRINTS = (2, FINGERPRINTS)
"""Fingerprint forms a report may hold: 2 is matched with today's by leaving the class out."""


def check_fingerprints(path: str, document: dict) -> None:
    """Refuse a report whose fingerprints are of a form this gradaudit cannot match with its own:
    compared with today's, every finding would look new or resolved."""
    if document.get("fingerprints") not in READABLE_FINGERPRINTS:
        raise ReportError(
            f"{path}: written by a gradaudit whose finding fingerprints were of another form "
            f"(this one writes form {FINGERPRINTS}: class, paths, form of the wrong value and entries, and reads form "
            "2); "
            "run the audit again to write it anew (`gradaudit baseline` for a baseline)"
        )


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON (reports never hold NaN or infinity)")


def read_json(path: str):
    """A report file's JSON: strict (no NaN or infinity, encodable text); ReportError naming the file otherwise."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=_no_constant)
        # Strict JSON and encodable text throughout: no NaN or infinity (1e400), no lone surrogates.
        json.dumps(document, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except OSError as exc:
        raise ReportError(f"{path}: cannot read: {exc.strerror}") from None
    except (
        UnicodeDecodeError,
        UnicodeEncodeError,
    ) as exc:  # the UnicodeErrors read_text and encode raise: each has a reason
        raise ReportError(f"{path}: not UTF-8 text ({exc.reason}): not a gradaudit report") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise ReportError(f"{path}: not a usable report: {exc}") from None
    return document


def read_report(path: str) -> dict:
    """A finished run's gradaudit JSON report, with every field merge and diff read checked."""
    document = read_json(path)
    if not isinstance(document, dict) or document.get("schema") not in READABLE_SCHEMAS:
        raise ReportError(f"{path}: not a gradaudit report (schema {READABLE_SCHEMAS[-1]!r})")
    environment = document.get("environment")
    if not isinstance(environment, dict) or not isinstance(document.get("results"), list):
        raise ReportError(f"{path}: a gradaudit report needs 'environment' and 'results'")
    devices = environment.get("devices", [])
    if not isinstance(devices, list) or not all(isinstance(d, dict) for d in devices):
        raise ReportError(f"{path}: environment.devices must be a list of objects")
    for key, kind in (("files", str), ("errors", dict), ("resolved", dict)):
        if not isinstance(document.get(key, []), list) or not all(isinstance(v, kind) for v in document.get(key, [])):
            raise ReportError(f"{path}: '{key}' must be a list of {'strings' if kind is str else 'objects'}")
    if not isinstance(document.get("gate", {}), dict):
        raise ReportError(f"{path}: 'gate' must be an object")
    if document.get("errors"):
        raise ReportError(
            f"{path}: this report had {len(document['errors'])} input error(s), so its run audited nothing it can "
            "vouch for; fix them and run again"
        )
    names: set[str] = set()
    for index, result in enumerate(document["results"]):
        _check_result(path, index, result)
        if result["status"] == INTERRUPTED:
            raise ReportError(f"{path}: results[{index}] ('{result['name']}') was interrupted: the run did not finish")
        if result["name"] in names:
            raise ReportError(f"{path}: results[{index}]: scenario '{result['name']}' appears twice")
        names.add(result["name"])
    check_fingerprints(path, document)
    return document
