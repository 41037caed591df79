"""Merging JSON reports of shards into one report whose summary equals a single full run's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gradaudit.model.findings import STATUSES
from gradaudit.model.results import READABLE_SCHEMAS
from gradaudit.sources.saved_reports import ReportError, read_report


def _counts(results: list[dict]) -> dict[str, int]:
    counts = Counter(r["status"] for r in results)
    return {"total": len(results), **{status: counts.get(status, 0) for status in STATUSES}}


def same_environment(paths: Sequence[str], documents: Sequence[dict], keys: tuple[str, ...] = ()) -> None:
    """ReportError unless every document ran where the first did (JAX, jaxlib, rule, backend) and
    agrees with it on `keys` of its own (a survey's budget and seed)."""
    first = documents[0]
    for path, document in zip(paths[1:], documents[1:], strict=True):
        pairs = [
            (key, document["environment"].get(key), first["environment"].get(key))
            for key in ("jax", "jaxlib", "rule", "backend")
        ]
        pairs += [(key, document.get(key), first.get(key)) for key in ("schema", "fingerprints", *keys)]
        for key, theirs, ours in pairs:
            if theirs != ours:
                raise ReportError(
                    f"{path}: {key} is {theirs!r}, but {paths[0]} has {ours!r}: only shards of one run can be merged"
                )


def disjoint(paths: Sequence[str], documents: Sequence[dict], key: str) -> list[dict]:
    """Every document's entries under `key`, in order; ReportError for a name in two of them."""
    entries: list[dict] = []
    seen: dict[str, str] = {}
    for path, document in zip(paths, documents, strict=True):
        for entry in document[key]:
            if entry["name"] in seen:
                raise ReportError(
                    f"{path}: '{entry['name']}' is also in {seen[entry['name']]}: shards must not overlap"
                )
            seen[entry["name"]] = path
            entries.append(entry)
    return entries


def merge_reports(paths: list[str]) -> dict:
    """One report from several: results and errors concatenated, every count recomputed."""
    documents = [read_report(p) for p in paths]
    first = documents[0]
    same_environment(paths, documents)
    results = disjoint(paths, documents, "results")
    suites: dict[str, list[dict]] = {}
    for result in results:
        suites.setdefault(result["scenario"].get("suite", ""), []).append(result)
    outcomes = [r.get("outcome") or {"passed": r["status"] == "consistent", "new": [], "known": []} for r in results]
    reported = sum(len(o.get("reported", [])) for o in outcomes)
    resolved = [entry for document in documents for entry in document.get("resolved", [])]
    environment = dict(first["environment"])
    environment["x64"] = any(d["environment"].get("x64") for d in documents)
    return {
        "schema": first["schema"],
        "fingerprints": first["fingerprints"],
        "environment": environment,
        "summary": _counts(results),
        "suites": {suite: _counts(members) for suite, members in suites.items()},
        "gate": {
            "passed": sum(o["passed"] for o in outcomes),
            "failed": sum(not o["passed"] for o in outcomes),
            "new": sum(len(o["new"]) for o in outcomes),
            "known": sum(len(o["known"]) for o in outcomes),
            **({"reported": reported} if first["schema"] != READABLE_SCHEMAS[0] else {}),
            "resolved": len(resolved),
            "baseline": first.get("gate", {}).get("baseline"),
        },
        "resolved": resolved,
        "files": list(dict.fromkeys(f for d in documents for f in d.get("files", []))),
        "diagnoses": dict(sorted({k: v for d in documents for k, v in d.get("diagnoses", {}).items()}.items())),
        "results": results,
        "errors": [e for d in documents for e in d.get("errors", [])],
        "merged_from": paths,
    }
