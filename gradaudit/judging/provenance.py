"""Provenance: which argument supplied each output element (read off finite differences, so
independent of JAX's AD and lowering) and which argument each AD path sends its derivative to; a
routing finding where they differ and the numbers disagree too."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gradaudit.judging.batch import Case, columns_of, estimate_of, value_of
from gradaudit.judging.wording import argument_names, entries_summary, grouped_by_said, index_text, path_labels
from gradaudit.model.findings import CLASSES, ROUTING, Finding, FindingClass, Provenance, Sources
from gradaudit.model.paths import AD_PATHS, FINITE_DIFFERENCE, path_name


def sources_of(
    blocks: Sequence[np.ndarray], output_shape: tuple[int, ...], thresholds: np.ndarray
) -> list[tuple[Sources, ...]]:
    """Per member (the first axis of every block: members' blocks stacked), for each output
    element, the arguments whose block row is non-zero beyond the member's threshold, or NaN: a NaN
    derivative is a wrong number, reported as one, not a derivative sent nowhere."""
    count, size = len(thresholds), math.prod(output_shape)
    depends = np.zeros((count, size, len(blocks)), dtype=bool)
    for i, block in enumerate(blocks):
        if block.size:
            with np.errstate(invalid="ignore"):
                depends[:, :, i] = np.any(
                    ~(np.abs(block.reshape(count, size, -1).astype(np.float64)) <= thresholds[:, None, None]), axis=2
                )
    known: dict[tuple[bool, ...], Sources] = {}

    def sources(row: list[bool]) -> Sources:
        key = tuple(row)
        if key not in known:
            known[key] = tuple(i for i, depends_on in enumerate(row) if depends_on)
        return known[key]

    return [tuple(sources(row) for row in member) for member in depends.tolist()]


def provenances(cases: Sequence[Case]) -> list[Provenance | None]:
    """Per case (cases alike in paths and shapes), provenance from finite differences and the
    first-order AD paths; None when the function cannot be evaluated.

    At a kink the central difference can vanish while each side has a slope, so the one-sided
    slopes count as evidence that the input supplied the value.
    """
    first = cases[0]
    value, fd = value_of(first.results, first.bindings), first.results[path_name(FINITE_DIFFERENCE, first.bindings[0])]
    if not value.ok or not fd.ok:
        return [None] * len(cases)
    shape = tuple(np.shape(value.ok_arrays[0]))
    thresholds = np.array([case.tolerances.fd_atol for case in cases])
    fds = [case.results[fd.name] for case in cases]
    evidence = [
        np.max(np.nan_to_num(np.abs(np.stack([central, left, right])), nan=0.0), axis=0)
        for central, left, right in zip(
            columns_of(fds),
            columns_of(fds, lambda path: estimate_of(path, "left")),
            columns_of(fds, lambda path: estimate_of(path, "right")),
            strict=True,
        )
    ]
    routes, seen = {}, {}
    for name in (path_name(p, binding) for binding in first.bindings for p in AD_PATHS):
        if name in first.results and first.results[name].ok:
            columns = columns_of([case.results[name] for case in cases])
            # Paths with the same bits (eager and jit twins, often) have the same sources.
            bits = tuple((column.dtype.str, column.shape, column.tobytes()) for column in columns)
            if bits not in seen:
                seen[bits] = sources_of(columns, shape, thresholds)
            routes[name] = seen[bits]
    value_from = sources_of(evidence, shape, thresholds)
    return [
        Provenance(
            output_shape=shape, value_from=value_from[b], routes={name: sources[b] for name, sources in routes.items()}
        )
        for b in range(len(cases))
    ]


def _misrouted(
    prov: Provenance, disagreeing: dict[str, dict[int, FindingClass]]
) -> dict[tuple[str, ...], tuple[tuple, dict[int, FindingClass]]]:
    """Per group of paths that route alike: their routes, and the elements they send elsewhere than
    the value came from where their numbers also disagree, each with the worst class found there."""
    found = {}
    for routes, paths in grouped_by_said(prov.routes.items()).items():
        elements: dict[int, FindingClass] = {}
        for p in paths:
            for out, cls in disagreeing.get(p, {}).items():
                if out not in elements or CLASSES.index(cls) < CLASSES.index(elements[out]):
                    elements[out] = cls
        wrong = {
            j: elements[j]
            for j, (want, got) in enumerate(zip(prov.value_from, routes, strict=True))
            if want != got and j in elements
        }
        if wrong:
            found[tuple(paths)] = (routes, wrong)
    return found


def routing_findings(
    prov: Provenance, arg_names: tuple[str, ...], disagreeing: dict[str, dict[int, FindingClass]]
) -> tuple[list[Finding], dict[str, tuple[int, ...]]]:
    """Elements whose derivative a path sends elsewhere than the value came from, where its numbers
    also disagree (in a class the gate fails by default); classed as the worst of those entries.
    With them, per AD path, the output elements its finding names (what the pictures outline)."""
    findings = []
    total = len(prov.value_from)
    groups = _misrouted(prov, disagreeing)
    named = {path: tuple(elements) for paths, (_, elements) in groups.items() for path in paths}
    for paths, (routes, elements) in groups.items():
        wrong = list(elements)
        j = wrong[0]
        supplied = (
            f"value from {argument_names(prov.value_from[j], arg_names)}"
            if prov.value_from[j]
            else "value from no input"
        )
        verb = "sends" if len(paths) == 1 else "send"
        sent = f"{verb} it to {argument_names(routes[j], arg_names)}" if routes[j] else f"{verb} it nowhere"
        element = index_text(prov.output_shape, j)
        prefix = f"element {element}: " if element else ""
        suffix = f" ({len(wrong)} of {total} elements)" if total > 1 else ""
        sent_nowhere = {not routes[k] for k in wrong}
        findings.append(
            Finding(
                kind=ROUTING,
                paths=tuple(paths),
                message=f"{prefix}{supplied} · {path_labels(paths)} {sent}{suffix}",
                count=len(wrong),
                of=total,
                location=f"out{element}",
                wrong="mixed" if len(sent_nowhere) > 1 else ("nowhere" if sent_nowhere.pop() else "elsewhere"),
                entries=entries_summary([np.asarray(wrong)], total),
                finding_class=min((elements[k] for k in wrong), key=CLASSES.index),
                reason=f"{supplied} (finite differences); {path_labels(paths)} {sent}",
            )
        )
    return findings, named
