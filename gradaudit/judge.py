"""Comparison of paths: provenance, findings and the scenario's status.

Selection is checked twice, as the seed teaches: which argument supplied each output value
(read off finite differences, so independent of JAX's AD and lowering) and which argument each
AD path sends that output's derivative to. Then the full Jacobians are compared entry by entry,
AD paths with each other (to rounding) and each with finite differences (to a dtype-aware
tolerance).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from gradaudit.paths import AD_PATHS, FAMILIES, FINITE_DIFFERENCE, PATH_LABELS, VALUE, PathResult, block_names

CONSISTENT = "consistent"
MISMATCH = "mismatch"
ERROR = "error"
STATUSES: tuple[str, ...] = (CONSISTENT, MISMATCH, ERROR)

ROUTING = "routing"
DISAGREEMENT = "disagreement"
RAISED = "raised"

Sources = tuple[int, ...]
"""The arguments an output element depends on, by index (empty: none)."""


@dataclass(frozen=True)
class Tolerances:
    """How close two paths must be: |a - b| <= atol + rtol * |b|."""

    fd_rtol: float
    fd_atol: float
    ad_rtol: float
    ad_atol: float


@dataclass(frozen=True)
class Finding:
    """One disagreement: which paths, where, and what each said."""

    kind: str
    """`routing` (derivative sent to the wrong argument), `disagreement` (Jacobians differ) or `raised`."""
    paths: tuple[str, ...]
    message: str
    count: int = 1
    """How many output elements (routing) or Jacobian entries (disagreement) are affected."""
    of: int = 1
    """Out of how many."""
    location: str | None = None
    """The first affected entry, as `d out[i]/d case k[j]`, or output element for routing."""
    values: dict[str, float] = field(default_factory=dict)
    """What each path gave at that entry."""

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "paths": list(self.paths),
            "message": self.message,
            "count": self.count,
            "of": self.of,
            "location": self.location,
            "values": self.values,
        }


@dataclass(frozen=True)
class Provenance:
    """Per output element: which argument supplied the value, and where each AD path sends its derivative."""

    output_shape: tuple[int, ...]
    value_from: tuple[Sources, ...]
    routes: dict[str, tuple[Sources, ...]]

    def to_list(self, arg_names: tuple[str, ...]) -> list[dict]:
        entries = []
        for flat, sources in enumerate(self.value_from):
            entry = {
                "element": [int(i) for i in np.unravel_index(flat, self.output_shape)] if self.output_shape else [],
                "value_from": [arg_names[i] for i in sources],
            }
            for path, routes in self.routes.items():
                entry[path] = [arg_names[i] for i in routes[flat]]
            entries.append(entry)
        return entries


@dataclass(frozen=True)
class Verdict:
    status: str
    findings: tuple[Finding, ...]
    provenance: Provenance | None


def _index(shape: tuple[int, ...], flat: int) -> str:
    if not shape:
        return ""
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"


def _and(words: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _names(sources: Sources, arg_names: tuple[str, ...]) -> str:
    return _and([arg_names[i] for i in sources])


def _sources(jacobians: tuple[np.ndarray, ...], output_shape: tuple[int, ...], threshold: float) -> tuple[Sources, ...]:
    """For each output element, the arguments whose Jacobian block is non-zero beyond `threshold`."""
    size = int(np.prod(output_shape, dtype=np.int64))
    depends = [
        np.any(np.abs(np.asarray(jac, dtype=np.float64).reshape(size, -1)) > threshold, axis=1)
        if np.size(jac) else np.zeros(size, dtype=bool)
        for jac in jacobians
    ]
    return tuple(tuple(i for i, dep in enumerate(depends) if dep[j]) for j in range(size))


def provenance(results: dict[str, PathResult], threshold: float) -> Provenance | None:
    """Provenance from finite differences and the AD paths; None when the function cannot be evaluated."""
    value, fd = results[VALUE], results[FINITE_DIFFERENCE]
    if not value.ok or not fd.ok:
        return None
    shape = tuple(np.shape(value.arrays[0]))
    routes = {
        name: _sources(results[name].arrays, shape, threshold)
        for name in AD_PATHS
        if name in results and results[name].ok
    }
    return Provenance(output_shape=shape, value_from=_sources(fd.arrays, shape, threshold), routes=routes)


def _labels(paths: Sequence[str]) -> str:
    return _and([PATH_LABELS[p] for p in paths])


def _grouped(items: Iterable[tuple[str, object]]) -> dict[object, list[str]]:
    """Paths grouped by what they said, in path order, so one finding names every path that said it."""
    groups: dict[object, list[str]] = {}
    for path, said in items:
        groups.setdefault(said, []).append(path)
    return groups


def _routing_findings(prov: Provenance, arg_names: tuple[str, ...]) -> list[Finding]:
    findings = []
    total = len(prov.value_from)
    for routes, paths in _grouped(prov.routes.items()).items():
        wrong = [j for j, (want, got) in enumerate(zip(prov.value_from, routes, strict=True)) if want != got]
        if not wrong:
            continue
        j = wrong[0]
        supplied = f"value from {_names(prov.value_from[j], arg_names)}" if prov.value_from[j] else "value from no input"
        verb = "sends" if len(paths) == 1 else "send"
        sent = f"{verb} it to {_names(routes[j], arg_names)}" if routes[j] else f"{verb} it nowhere"
        element = _index(prov.output_shape, j)
        prefix = f"element {element}: " if element else ""
        suffix = f" ({len(wrong)} of {total} elements)" if total > 1 else ""
        findings.append(
            Finding(
                kind=ROUTING,
                paths=tuple(paths),
                message=f"{prefix}{supplied} · {_labels(paths)} {sent}{suffix}",
                count=len(wrong),
                of=total,
                location=f"out{element}",
            )
        )
    return findings


def _differences(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> np.ndarray | None:
    """Flat indices where `a` is not close to the reference `b`; None when the shapes differ."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a64.shape != b64.shape:
        return None
    return np.flatnonzero(~np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True))


def _agree(first: PathResult, second: PathResult, rtol: float, atol: float) -> bool:
    for a, b in zip(first.arrays, second.arrays, strict=True):
        bad = _differences(a, b, rtol, atol)
        if bad is None or bad.size:
            return False
    return True


def _agreement_classes(paths: Sequence[PathResult], rtol: float, atol: float) -> list[list[PathResult]]:
    """Paths grouped with the first earlier path they agree with, so a finding names every path on each side."""
    classes: list[list[PathResult]] = []
    for path in paths:
        home = next((c for c in classes if _agree(path, c[0], rtol, atol)), None)
        if home is None:
            classes.append([path])
        else:
            home.append(path)
    return classes


def _compare(
    side: Sequence[PathResult],
    reference: Sequence[PathResult],
    rtol: float,
    atol: float,
    output_shape: tuple[int, ...],
    names: tuple[str, ...],
    order: int,
) -> Finding | None:
    """Entry-by-entry comparison of one side's derivative blocks (named `names`) with the reference side's."""
    first, second = side[0], reference[0]
    differing = 0
    total = 0
    first_entry = None
    for block, (a, b) in enumerate(zip(first.arrays, second.arrays, strict=True)):
        total += np.size(a)
        bad = _differences(a, b, rtol, atol)
        if bad is None:
            differing += np.size(a)
            first_entry = first_entry or (block, None, None, None)
            continue
        differing += bad.size
        if bad.size and first_entry is None:
            flat = int(bad[0])
            first_entry = (block, flat, float(np.asarray(a).reshape(-1)[flat]), float(np.asarray(b).reshape(-1)[flat]))
    if not differing:
        return None
    block, flat, got, want = first_entry
    these, those = _labels([p.name for p in side]), _labels([p.name for p in reference])
    verb = "disagrees" if len(side) == 1 else "disagree"
    paths = tuple(p.name for p in (*side, *reference))
    if flat is None:
        return Finding(
            kind=DISAGREEMENT,
            paths=paths,
            message=f"{these} and {those} give derivatives of different shapes for {names[block]}",
            count=differing,
            of=total,
        )
    in_shape = np.shape(first.arrays[block])[len(output_shape):]
    out_flat, in_flat = divmod(flat, max(1, int(np.prod(in_shape, dtype=np.int64))))
    symbol = "d" if order == 1 else f"d{order}"
    location = f"{symbol} out{_index(output_shape, out_flat)}/d {names[block]}{_index(in_shape, in_flat)}"
    return Finding(
        kind=DISAGREEMENT,
        paths=paths,
        message=f"{these} {verb} with {those} on {differing} of {total} entries; first at {location}: "
        f"{want:g} from {those}, {got:g} from {these}",
        count=differing,
        of=total,
        location=location,
        values={**{p.name: want for p in reference}, **{p.name: got for p in side}},
    )


def judge(results: dict[str, PathResult], arg_names: tuple[str, ...], tolerances: Tolerances) -> Verdict:
    """The verdict on one scenario from all its paths' results."""
    value = results[VALUE]
    if not value.ok:
        finding = Finding(
            kind=RAISED,
            paths=(VALUE,),
            message=f"evaluating the function raised {value.error}; no derivative can be checked",
        )
        return Verdict(status=ERROR, findings=(finding,), provenance=None)
    raised = _grouped((name, str(result.error)) for name, result in results.items() if not result.ok)
    findings = [
        Finding(kind=RAISED, paths=tuple(paths), message=f"{_labels(paths)} raised {error}")
        for error, paths in raised.items()
    ]
    prov = provenance(results, tolerances.fd_atol)
    if prov is not None:
        findings.extend(_routing_findings(prov, arg_names))
    output_shape = tuple(np.shape(value.arrays[0]))
    for family in FAMILIES:
        if family.reference not in results:
            continue
        names = block_names(arg_names, family.order)
        ad_ok = [results[name] for name in family.ad_paths if results[name].ok]
        classes = _agreement_classes(ad_ok, tolerances.ad_rtol, tolerances.ad_atol)
        pairs = [(later, earlier, tolerances.ad_rtol, tolerances.ad_atol) for earlier, later in itertools.combinations(classes, 2)]
        reference = results[family.reference]
        if reference.ok:
            pairs += [(side, [reference], tolerances.fd_rtol, tolerances.fd_atol) for side in classes]
        for side, other, rtol, atol in pairs:
            found = _compare(side, other, rtol, atol, output_shape, names, family.order)
            if found:
                findings.append(found)
    if any(f.kind == RAISED for f in findings):
        status = ERROR
    elif findings:
        status = MISMATCH
    else:
        status = CONSISTENT
    return Verdict(status=status, findings=tuple(findings), provenance=prov)
