"""Comparison of paths: provenance, findings, notes and the scenario's status.

Selection is checked twice, as the seed teaches: which argument supplied each output value
(read off finite differences, so independent of JAX's AD and lowering) and which argument each
AD path sends that output's derivative to. Then the full derivative blocks are compared entry by
entry, AD paths with each other (to rounding) and each with finite differences (to a dtype-aware
tolerance), except where finite differences see a kink or a non-finite value: those entries
become notes, not findings.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import ml_dtypes
import numpy as np

from gradaudit.judging.batch import (
    Case,
    Stacks,
    estimate_of,
    per_block,
    stack_rows,
    undefined_of,
    unstack_row,
    value_of,
)
from gradaudit.judging.classes import (
    BY_DESIGN,
    FINER_AGREES,
    UNRESOLVED,
    WRONG,
    Reference,
    Settled,
    Surroundings,
    between_slopes,
    classify,
    crossing_non_finite,
    explain,
    ranked,
    settle,
)
from gradaudit.judging.fd_trust import (
    ESTIMATES,
    Masks,
    Trust,
    absorbed_by_rounding,
    drowned_in_rounding,
    hidden_by_tolerance,
    loosely_checked,
    passed_by_absolute,
    read_estimates,
)
from gradaudit.judging.provenance import provenances, routing_findings
from gradaudit.judging.refine import PROBED, Refined, refined, rounding_unit
from gradaudit.judging.scale import RESOLUTION, below_resolution, beyond_scale, stacked_row_and_column_scale
from gradaudit.judging.tolerances import Tolerances, coarse_notes
from gradaudit.judging.wording import (
    entries_summary,
    entry_location,
    grouped_by_said,
    index_text,
    path_labels,
)
from gradaudit.model import dtypes
from gradaudit.model.computed import Prober
from gradaudit.model.findings import (
    CLASSES,
    CONSISTENT,
    DISAGREEMENT,
    ERROR,
    FAIL_ON_DEFAULT,
    MISMATCH,
    RAISED,
    VALUE_RAISED,
    Compared,
    Finding,
    FindingClass,
    Note,
    Provenance,
    Verdict,
    raised_class,
)
from gradaudit.model.mechanisms import non_finite_inside
from gradaudit.model.paths import (
    FAMILIES,
    JACFWD,
    JACREV,
    JIT_PREFIX,
    JIT_VALUE,
    ORDERS,
    VALUE,
    PathFamily,
    PathResult,
    base_name,
    block_names,
    label,
    path_name,
    primary_name,
    transform_of,
)
from gradaudit.numerics.finite_differences import rounding, step_size

# --- finite differences: where they can be trusted -------------------------------------------


RANKED_FAILING = {c.value: c for c in CLASSES if c in FAIL_ON_DEFAULT}
"""The classes the gate fails by default, by name: where routing is judged."""
RESOLVED = (
    "a few of the dtype's epsilons of the AD Jacobian's largest entry in the entry's row and in its column "
    "(below what those numbers resolve)"
)
"""How a note names `scale.below_resolution`'s bound."""


@dataclass(frozen=True)
class _Against:
    """A family's comparisons with its finite-difference reference, for one case."""

    trust: Trust
    noise: Masks
    """The reference's rounding noise, plus the spread of its estimates where they move: what a
    comparison with it allows beyond the tolerance."""
    bad: dict[str, list[np.ndarray | None]]
    """Per AD path of the family: `_Comparison.bad` of the path against the reference."""
    kinked: bool
    """Whether `trust` holds a kink anywhere."""
    unchecked: tuple[int, int]
    """How many of the entries finite differences cannot check (a kink, undefined, absorbed), of how many."""
    absolute_only: int = 0
    """How many entries an AD path passed only by the absolute tolerance (`fd_trust.passed_by_absolute`)."""
    unresolved: bool = False
    """Whether finite differences left entries a finer dtype may resolve (`_unresolved`)."""


def _rounding_of_terms(
    cases: Sequence[Case], reference: str, paths: Sequence[str], order: int, stacks: Stacks
) -> np.ndarray | None:
    """Per case (rows) and entry d out[i]/d x[j] (stacked as `stack_rows`), what rounding the function's
    terms can hide from a difference quotient at x[j]: 4 eps sum over k != j of |J[i, k]| |x[k]|,
    over h_j / 2, eps the output's rounding, J the largest of the AD paths' and finite differences'
    finite derivatives, x every differentiated input, h_j the step taken at x[j]. This is the
    forward-error bound of a sum (out[i] moves with J[i, k] x[k] terms, each rounded to eps of
    itself; x[j]'s own term moves with the step and is not noise) over the half step,
    where the reference's own `noise` counts |out[i]| alone: out[i] = 0 from 3e38 - 3e38 has no
    noise of its own, yet any move of x[j] below 1e31 is lost in it. None: first order only, or
    nothing to add (no input has a neighbour larger than its own step can see)."""
    first = cases[0]
    like = first.results[reference].ok_arrays
    if order != 1 or not first.inputs or len(first.inputs) != len(like):
        return None
    sources = [p for p in paths if len(first.results[p].ok_arrays) == len(like)]
    derivatives = [stacks.path(p) for p in sources]
    derivatives.append(stacks.estimate(reference, "extrapolated"))
    with np.errstate(invalid="ignore", over="ignore"):
        largest = functools.reduce(np.maximum, [np.nan_to_num(np.abs(d), nan=0.0, posinf=0.0) for d in derivatives])
        inputs = [
            np.nan_to_num(
                np.abs(np.stack([np.asarray(case.inputs[k], dtype=np.float64).reshape(-1) for case in cases])),
                nan=0.0,
                posinf=0.0,
            )
            for k in range(len(like))
        ]
        sizes = [x.shape[1] for x in inputs]
        out_size = math.prod(np.shape(like[0])) // max(1, sizes[0]) if sizes[0] else 0
        if not out_size or any(
            math.prod(np.shape(block)) != out_size * size for block, size in zip(like, sizes, strict=True)
        ):
            return None
        blocks = [
            b.reshape(len(cases), out_size, size)
            for b, size in zip(
                np.split(largest, np.cumsum([out_size * size for size in sizes])[:-1], axis=1), sizes, strict=True
            )
        ]
        own = [block * x[:, None, :] for block, x in zip(blocks, inputs, strict=True)]
        terms = sum(term.sum(axis=2) for term in own)
        steps = []
        for k, size in enumerate(sizes):
            dtype = np.asarray(first.inputs[k]).dtype
            default = dtypes.default_eps(dtype.name)
            eps = np.array([[default if case.eps is None else case.eps] for case in cases])
            steps.append((step_size(inputs[k], eps, dtype) / 2).reshape(len(cases), 1, size))
        out_rounding = rounding(np.asarray(value_of(first.results, first.bindings).ok_arrays[0]).dtype)
        # The other terms only: x[j] itself is exact, and its own term moves with the step.
        # Only where x[j] moves out[i] at all: an entry no path gives a derivative (exp's off-diagonal, where
        # out[0] = exp(x[0]) holds no x[1]) has no step to lose in out[i]'s terms.
        hidden = [
            np.where(block > 0, 4.0 * out_rounding * np.maximum(terms[:, :, None] - term, 0.0) / step, 0.0)
            for block, term, step in zip(blocks, own, steps, strict=True)
        ]
    return np.concatenate([h.reshape(len(cases), -1) for h in hidden], axis=1)


def _against(cases: Sequence[Case], reference: str, paths: Sequence[str], order: int, stacks: Stacks) -> list[_Against]:
    """For cases alike in blocks and shapes (a group's members), all at once: where the finite
    differences of `reference` can be trusted (see Trust), from their estimates at several steps,
    and which entries of each of `paths` are not close to them (compared where trusted, moving
    entries only where the path is finite, within the noise and spread)."""
    references = [case.results[reference] for case in cases]
    undefined = [undefined_of(r) for r in references]
    undefined_flat = stack_rows(undefined).astype(bool)
    fd_atol = np.array([[case.tolerances.fd_atol] for case in cases])
    fd_rtol = np.array([[case.tolerances.fd_rtol] for case in cases])
    larger = np.zeros(undefined_flat.shape, dtype=bool)
    slopes: tuple | None = None
    if references[0].estimates is None:
        kink = moves = np.zeros(undefined_flat.shape, dtype=bool)
        spread = noise = np.zeros(undefined_flat.shape)
    else:
        stacked = {name: stacks.estimate(reference, name) for name in ESTIMATES}
        hidden = _rounding_of_terms(cases, reference, paths, order, stacks)
        estimates = read_estimates(stacked, undefined_flat, fd_rtol, fd_atol, hidden)
        kink, moves, spread, larger = estimates.kink, estimates.moves, estimates.spread, estimates.larger
        noise = estimates.noise
        slopes = (stacked["left_half"], stacked["right_half"], (stacked["left"], stacked["right"]))
    allowance = noise + np.where(moves, spread, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        magnitudes = [np.abs(stacks.path(reference))]
        magnitudes += [
            np.abs(stacks.path(name))
            for name in paths
            if len(cases[0].results[name].ok_arrays) == len(references[0].ok_arrays)
        ]
        largest = functools.reduce(
            np.fmax, [np.where(np.isfinite(m), m, np.nan) for m in magnitudes if m.shape == undefined_flat.shape]
        )
    absorbed = np.zeros(undefined_flat.shape, dtype=bool)
    if np.any(larger):
        absorbed = absorbed_by_rounding(larger, allowance, largest, fd_atol) & ~undefined_flat & ~kink
    blocks = len(references[0].ok_arrays)
    scaled = [
        name
        for name in paths
        if all(case.results[name].ok and len(case.results[name].ok_arrays) == blocks for case in cases)
        and stacks.path(name).shape == undefined_flat.shape
    ]
    scales = [stacks.largest(name) for name in scaled]
    if scales:
        # Finite differences' own estimate counts too: a rule whose tangent is wrongly 0 drowns nothing.
        with np.errstate(invalid="ignore"):
            extrapolated = np.abs(stacks.estimate(reference, "extrapolated"))
        scales.append(np.max(extrapolated, axis=1, initial=0.0, where=np.isfinite(extrapolated)))
        derivatives = functools.reduce(np.maximum, scales)[:, None]
        absorbed |= drowned_in_rounding(allowance, derivatives, fd_atol) & ~undefined_flat & ~kink
    loose = loosely_checked(allowance, largest, fd_rtol, fd_atol) & ~undefined_flat & ~kink & ~absorbed
    kinked: np.ndarray = np.asarray(np.asarray(kink).any(axis=1))
    unchecked = np.count_nonzero(kink | undefined_flat | absorbed, axis=1)
    absolute_only = np.zeros(len(cases), dtype=np.int64)
    unresolved = np.zeros(len(cases), dtype=bool)
    if order == 1 and scaled and references[0].estimates is not None:
        # in float64 too: the referee says where float64 could not check the entries closely either
        unresolved = _unresolved(kink, absorbed | loose, undefined_flat, [np.size(a) for a in references[0].ok_arrays])
    if order == 1 and scaled and references[0].estimates is not None and _narrow(cases[0].results[scaled[0]]):
        # asked of a narrow dtype alone: the float64 referee checks those entries again
        with np.errstate(invalid="ignore", over="ignore"):
            settling = np.abs(stacked["central"] - stacked["central_half"])
        eps = rounding(np.asarray(cases[0].results[scaled[0]].ok_arrays[0]).dtype)
        rounded = RESOLUTION * eps * _rounding_scale(cases, stacks, largest, derivatives[:, 0], references[0].ok_arrays)
        excluded = kink | undefined_flat | absorbed
        absolute_only = passed_by_absolute(
            [stacks.path(name) for name in scaled],
            stacks.path(reference),
            allowance + settling,
            excluded,
            fd_rtol,
            fd_atol,
            rounded,
        )
        # said in the rounding note, not sent to float64: about one smooth float32 scenario in thirty has such an
        # entry, and a float64 run for each slowed bench/unseen_grid.py by 29% (docs/judging.md)
        loose |= hidden_by_tolerance(allowance, largest, fd_rtol, rounded) & ~excluded
    bad: dict[str, list[list[np.ndarray | None]]] = {}
    for name in paths:
        closeness = _closeness(
            stacks,
            name,
            reference,
            fd_rtol,
            fd_atol,
            allowance,
            lambda got: (
                (kink if slopes is None else kink & between_slopes(got, *slopes))
                | undefined_flat
                | (moves & ~np.isfinite(got))
            ),
        )
        if closeness is not None:
            bad[name] = closeness.bad
    return [
        _Against(
            trust=Trust(
                kink=unstack_row(kink[b], mine),
                moving=unstack_row(moves[b], mine),
                spread=unstack_row(spread[b], mine),
                undefined=mine,
                absorbed=unstack_row(absorbed[b], mine),
                loose=unstack_row(loose[b], mine),
            ),
            noise=unstack_row(allowance[b], mine),
            bad={name: found[b] for name, found in bad.items()},
            kinked=bool(kinked[b]),
            unchecked=(int(unchecked[b]), undefined_flat.shape[1]),
            absolute_only=int(absolute_only[b]),
            unresolved=bool(unresolved[b]),
        )
        for b, mine in enumerate(undefined)
    ]


@dataclass(frozen=True)
class _Closeness:
    """Where a side is close to a reference, entry by entry, for cases alike (a row each)."""

    close: np.ndarray
    like: Sequence[np.ndarray]
    """The first case's reference blocks: their shapes split a row into blocks."""
    alike: list[bool]
    """Per block, whether the side's has the reference's shape (another shape is never close)."""

    @property
    def bad(self) -> list[list[np.ndarray | None]]:
        """Per case, per block, the flat indices not close (None: a block of another shape)."""
        return [
            [indices if same else None for indices, same in zip(mine, self.alike, strict=True)]
            for mine in per_block(~self.close, self.like)
        ]

    @property
    def agreeing(self) -> np.ndarray:
        """Per case, whether every entry of every block is close."""
        return np.asarray(self.close.all(axis=1) & all(self.alike))


def _closeness(
    stacks: Stacks,
    side: str,
    reference: str,
    rtol,
    atol,
    noise=None,
    skip: Callable[[np.ndarray], np.ndarray] | None = None,
) -> _Closeness | None:
    """Where path `side` is close to path `reference` (`_close`) for each of cases alike, all at
    once (tolerances and noise a column per case; `skip` the entries not to compare, from the
    side's); None where the paths' blocks differ in number (compared case by case, which says how)."""
    cases = stacks.cases
    like = cases[0].results[reference].ok_arrays
    blocks = cases[0].results[side].ok_arrays
    if len(blocks) != len(like):
        return None
    # A block of another shape than the reference's is compared as NaN, and its indices are None.
    alike = [np.shape(a) == np.shape(b) for a, b in zip(blocks, like, strict=True)]
    got = (
        stacks.path(side)
        if all(alike)
        else stack_rows(
            [
                [
                    a if same else np.full(np.shape(b), np.nan)
                    for a, b, same in zip(case.results[side].ok_arrays, like, alike, strict=True)
                ]
                for case in cases
            ]
        )
    )
    close = _close(got, stacks.path(reference), rtol, atol, noise)
    if skip is not None:
        close |= skip(got)
    return _Closeness(close, like, alike)


class _Pairs:
    """Comparisons of one path with another to AD tolerance (rounding) for cases alike, worked out
    for every case when the first asks (cases alike mostly ask the same)."""

    def __init__(self, stacks: Stacks):
        self.stacks = stacks
        self.rtol = np.array([[case.tolerances.ad_rtol] for case in stacks.cases])
        self.atol = np.array([[case.tolerances.ad_atol] for case in stacks.cases])
        self.found: dict[tuple[str, str], tuple[list[list[np.ndarray | None]], np.ndarray] | None] = {}

    def _pair(self, side: str, reference: str) -> tuple[list[list[np.ndarray | None]], np.ndarray] | None:
        if (side, reference) not in self.found:
            closeness = _closeness(self.stacks, side, reference, self.rtol, self.atol)
            self.found[side, reference] = None if closeness is None else (closeness.bad, closeness.agreeing)
        return self.found[side, reference]

    def bad(self, row: int, side: str, reference: str) -> list[np.ndarray | None] | None:
        """Case `row`'s `_Comparison.bad` of path `side` against `reference`; None: compare it alone."""
        found = self._pair(side, reference)
        return None if found is None else found[0][row]

    def agree(self, row: int, side: str, reference: str) -> bool | None:
        """Whether case `row`'s `side` agrees with `reference` entry by entry; None: compare it alone."""
        found = self._pair(side, reference)
        return None if found is None else bool(found[1][row])


# --- provenance -------------------------------------------------------------------------------


# --- numeric comparison -----------------------------------------------------------------------


def _rounding_scale(
    cases: Sequence[Case], stacks: Stacks, largest: np.ndarray, derivatives: np.ndarray, blocks: Sequence
) -> np.ndarray:
    """Per case and first-order entry (flat), the scale AD rounds it at: the largest number in its row (the
    output element among them) or its column (`scale.stacked_row_and_column_scale` of `largest`, every path's
    |entry|), else the function's (`derivatives` and the value's largest, a column). A rule twice the slope of
    an entry 1e-4 beside numbers of 1e9 elsewhere is not AD's rounding of them."""
    valued = all(VALUE in case.results and case.results[VALUE].ok for case in cases)
    whole = np.maximum(derivatives, stacks.largest(VALUE)) if valued else derivatives
    out_size = int(np.size(cases[0].results[VALUE].ok_arrays[0])) if valued else 0
    scale = stacked_row_and_column_scale(
        largest, [int(np.size(b)) for b in blocks], out_size, outputs=stacks.path(VALUE) if valued else None
    )
    return whole[:, None] if scale is None or scale.shape != largest.shape else scale


def _unresolved(kink: np.ndarray, rounded: np.ndarray, undefined: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Per case (rows of cases alike, entries flat, blocks of `sizes` one per input), whether finite
    differences left entries a finer dtype's steps may resolve: an entry with an estimate whose step is lost
    in the value's rounding or checked only within rounding above a few percent of the derivative
    (`rounded`: `1000 + 1e-4 sin x` in float32, whose value rounds by 6e-5 where a step moves it by 4e-7),
    or half or more of one input's entries with an estimate read as kinks (float32's steps at inputs offset
    by 1e4 straddle a layer norm's features 1 apart). The referee checks such runs in float64."""
    defined = ~undefined
    found = np.any(rounded & defined, axis=1)
    start = 0
    for size in sizes:
        block = slice(start, start + size)
        estimated = np.count_nonzero(defined[:, block], axis=1)
        kinked = np.count_nonzero(kink[:, block] & defined[:, block], axis=1)
        found |= (estimated > 0) & (2 * kinked >= estimated)
        start += size
    return found


def _narrow(path: PathResult) -> bool:
    """Whether `path`'s first block is a floating dtype narrower than float64."""
    dtype = np.asarray(path.ok_arrays[0]).dtype if path.ok_arrays else np.dtype(np.float64)
    return (dtype.kind == "f" and dtype.itemsize < 8) or dtype.name == "bfloat16"


def _close(a64: np.ndarray, b64: np.ndarray, rtol, atol, noise=None) -> np.ndarray:
    """Where `a` is close to the reference `b`, entry by entry (float64 arrays of one shape; the
    tolerances numbers or a column per row): equal values agree (an infinity agrees with the same
    infinity), NaN agrees with NaN, and finite values agree within atol + rtol * |b| + noise; a
    non-finite value against a finite one never agrees, however large the tolerance."""
    with np.errstate(invalid="ignore", over="ignore"):
        allowed = atol + rtol * np.abs(b64) + (0.0 if noise is None else noise)
        finite = np.isfinite(a64) & np.isfinite(b64)
        return (finite & (np.abs(a64 - b64) <= allowed)) | (np.isnan(a64) & np.isnan(b64)) | (a64 == b64)


def _bad_entries(a, b, rtol: float, atol: float, skip=None, noise=None) -> np.ndarray | None:
    """Flat indices where `a` is not close to the reference `b` (`_close`; skipped entries
    excluded); None when shapes differ."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a64.shape != b64.shape:
        return None
    close = _close(a64, b64, rtol, atol, noise)
    if skip is not None:
        close |= skip
    return np.flatnonzero(~close)


def _identical(a, b) -> bool:
    """The same dtype, shape and bits (an eager path and its jit twin, often): agreement without arithmetic."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _agree(first: PathResult, second: PathResult, rtol: float, atol: float) -> bool:
    for a, b in zip(first.ok_arrays, second.ok_arrays, strict=True):
        if _identical(a, b):
            continue
        bad = _bad_entries(a, b, rtol, atol)
        if bad is None or bad.size:
            return False
    return True


def twins_agree(results: dict[str, PathResult], tolerances: Tolerances) -> bool:
    """Whether each eager path agrees with its jit twin (`jacrev` with `jit_jacrev`, `value` with
    `jit_value`, per binding) to AD tolerance, entry by entry, or both raised the same exception
    type or do not apply for the same reason."""
    for name, path in results.items():
        twin = results.get(JIT_PREFIX + name)
        if base_name(name) not in (VALUE, JACFWD, JACREV) or twin is None:
            continue
        if path.ok and twin.ok:
            if not _agree(path, twin, tolerances.ad_rtol, tolerances.ad_atol):
                return False
        elif path.ok or twin.ok or path.not_applicable != twin.not_applicable:
            return False
        elif path.error is not None and (twin.error is None or path.error.type != twin.error.type):
            return False
    return True


def _agreement_classes(
    paths: Sequence[PathResult], agree: Callable[[PathResult, PathResult], bool]
) -> list[list[PathResult]]:
    """Paths grouped with the first earlier path they agree with, so a finding names every path on each side."""
    classes: list[list[PathResult]] = []
    for path in paths:
        home = next((c for c in classes if agree(path, c[0])), None)
        if home is None:
            classes.append([path])
        else:
            home.append(path)
    return classes


_FLOAT64_MAX = float(np.finfo(np.float64).max)

_NO_CLASSES = np.zeros(0, dtype=object)
"""The classes of a block without differing entries (shared: never written to)."""

RATIO_SPREAD = 0.02
"""A wrong value is `x<ratio>` when its ratio to the reference varies by at most this (relative) over the entries."""


def wrong_class(got: np.ndarray, want: np.ndarray) -> str:
    """What kind of wrong `got` is against `want` over the disagreeing entries: `nan` (NaN on one side
    only), `inf` (non-finite against finite), `zero` (got is zero throughout), `x<r>` (a constant
    ratio r, two significant digits: `x-1` is a sign flip), or `value` (anything else)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if np.any(np.isnan(got) != np.isnan(want)):
        return "nan"
    if np.any(~np.isfinite(got) | ~np.isfinite(want)):
        return "inf"
    if np.all(got == 0):
        return "zero"
    if np.all(want != 0):
        with np.errstate(over="ignore", invalid="ignore"):  # an overflowing ratio is no constant factor
            ratio = got / want
            middle = float(np.median(ratio))
            if np.max(np.abs(ratio - middle)) <= RATIO_SPREAD * abs(middle):
                return f"x{middle:.2g}"
    return "value"


def _summed_over(blocks: Sequence[np.ndarray], tied: tuple[tuple[int, int], ...], out: int, out_size: int) -> float:
    """First-order blocks' d out[out]/d x_k[j] summed over the (k, j) pairs `tied`: the slope along their diagonal
    that those partial derivatives predict."""
    rows = [np.asarray(b, dtype=np.float64).reshape(max(1, int(out_size)), -1) for b in blocks]
    return float(sum(rows[k][out, j] for k, j in tied if k < len(rows)))


MIRRORED = 0.1
"""A twin of one side within this share of the gap between two AD paths of different modes gives the other
side's number (`_Classifying.mirrored_at`): the split is the twins' own."""


@dataclass(frozen=True)
class _Classifying:
    """What a comparison's entries are classed by (`classes.classify`): the case's numbers, finite
    differences' word at each entry of the family (None: no reference), and whether the two sides
    are a path and its own eager/jit or binding twin."""

    surroundings_of: Callable[[], Surroundings]
    """The case's numbers, worked out when an entry first needs classing (most comparisons have none)."""
    reference: Reference | None
    twins: bool
    crossing: Masks | None = None
    """Per block, entries whose row or column holds a non-finite derivative (`crossing_non_finite`)."""
    probe: Prober | None = None
    """Where every AD path stands against finite differences: the probe that can settle a `wrong` entry."""
    tolerance: tuple[float, float] = (0.0, 0.0)
    """(rtol, atol) of the comparison, for the probe's evidence."""
    twin_paths: tuple[PathResult, ...] = ()
    """Where `twins` says a side's eager/jit or binding twins sit on another side: those twins. An entry is
    one transform giving two answers only where a twin gives another number there; where every twin gives the
    side's own (their sides parted over a NaN input elsewhere), the side's split is its own."""
    twin_tolerance: tuple[float, float] = (0.0, 0.0)
    """(rtol, atol) of AD against AD, by which a twin gives another number."""
    mirrors: tuple[tuple[PathResult, ...], tuple[PathResult, ...]] = ((), ())
    """For two AD paths of different modes, each side all in one binding (eager or jit, traced or constant) and
    the two in different ones: the first side's twins in the second's binding, and the second's in the first's
    (`_mirrors`). An entry where twins of each side give the other side's number is the twins' split seen
    across modes (jacfwd against jit(jacrev) where jacfwd and jacrev agree, jit(jacfwd) and jit(jacrev) agree,
    and eager and jit part: a layer norm's fast variance in float32), not a mode's rule."""

    @functools.cached_property
    def surroundings(self) -> Surroundings:
        return self.surroundings_of()

    def twins_at(self, block: int, flat: np.ndarray, got: np.ndarray) -> bool | np.ndarray:
        """`twins`, entry by entry where the twins are known: whether some twin gives another number than
        `got` at the entries `flat` of `block`."""
        if not self.twins or not self.twin_paths:
            return self.twins
        differ = np.zeros(np.shape(flat), bool)
        for twin in self.twin_paths:
            theirs = _entries_of(twin, block, flat)
            if theirs is None:
                return True
            differ |= ~_close(np.asarray(got, dtype=np.float64), theirs, *self.twin_tolerance)
        return differ

    def mirrored_at(self, block: int, flat: np.ndarray, got: np.ndarray, want: np.ndarray) -> np.ndarray:
        """Entry by entry (`flat` of `block`), whether a twin of the first side gives the second side's number
        `want` and a twin of the second gives `got`: within AD's tolerance, or within MIRRORED of the gap between
        the sides (the modes of one binding round apart too, by less)."""
        got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)

        def given(twins: tuple[PathResult, ...], number: np.ndarray) -> np.ndarray:
            found = np.zeros(np.shape(flat), bool)
            for twin in twins:
                theirs = _entries_of(twin, block, flat)
                if theirs is None:
                    continue
                with np.errstate(invalid="ignore", over="ignore"):
                    found |= _close(theirs, number, *self.twin_tolerance) | (
                        np.abs(theirs - number) <= MIRRORED * np.abs(got - want)
                    )
            return found

        return given(self.mirrors[0], want) & given(self.mirrors[1], got)

    def crossed(self, block: int, flat: int) -> bool:
        return self.crossing is not None and bool(np.asarray(self.crossing[block]).reshape(-1)[flat])

    def column(self, block: int, order: int, block_size: int, flat: int) -> tuple[int, int] | None:
        """The (argument, element) a first-order entry differentiates by: what one probe evaluates."""
        if self.probe is None or order != 1:
            return None
        _, own = self.surroundings.own(block, order, np.asarray([flat]), block_size)
        return (own[0][0], int(own[0][1][0])) if own else None

    def settled(
        self,
        block: int,
        order: int,
        block_size: int,
        flat: int,
        got: float,
        want: float,
        side_blocks: Sequence[np.ndarray] | None = None,
    ) -> Settled | None:
        """What a probe at the entry says (`classes.settle`), or None: no probe, or it changes nothing.
        `side_blocks`: the AD side's derivative blocks, summed over tied inputs for the probe."""
        if (
            self.probe is None
            or self.reference is None
            or order != 1
            or not (math.isfinite(got) and math.isfinite(want))
        ):
            return None
        s = self.surroundings
        element, own = s.own(block, order, np.asarray([flat]), block_size)
        if not own:
            return None
        argument, elements = own[0]
        out, at = int(element[0]), int(elements[0])
        probe = self.probe(argument, at, out)
        if probe is None:
            return None
        predicted = followed = None
        extrapolated = self.reference.estimates.get("extrapolated")
        if extrapolated is not None and len(probe.tied) > 1:
            predicted = _summed_over(extrapolated, probe.tied, out, s.output.size)
            if side_blocks is not None:
                followed = _summed_over(side_blocks, probe.tied, out, s.output.size)
        value = abs(float(s.output.reshape(-1)[out])) if s.output.size else 0.0
        # An entry finite differences cannot resolve is left unjudged only where no wider dtype can say
        # more: a narrower one's finding goes to the float64 referee, whose own judge applies the rules.
        widest = s.rounding <= dtypes.machine_epsilon("float64")
        return settle(
            probe,
            got,
            want,
            predicted,
            *self.tolerance,
            4.0 * s.rounding * value,
            followed,
            epsilon=s.rounding,
            final=widest,
        )


@dataclass(frozen=True)
class _Comparison:
    """How one side's blocks compare with a reference side's."""

    side: Sequence[PathResult]
    reference: Sequence[PathResult]
    rtol: float
    atol: float
    skip: Masks | None = None
    noise: Masks | None = None
    known: list[np.ndarray | None] | None = None
    """`bad`, where it was worked out already (with other cases', `_against`)."""
    classifying: _Classifying | None = None
    """How its entries are classed; None: every entry `wrong` (a comparison across devices)."""

    @functools.cached_property
    def labels(self) -> tuple[str, str]:
        """The side's paths and the reference's, as a message names them."""
        return path_labels([p.name for p in self.side]), path_labels([p.name for p in self.reference])

    @functools.cached_property
    def bad(self) -> list[np.ndarray | None]:
        """Per block, the flat indices of the side's entries not close to the reference's (None
        where the shapes differ); computed once, for the finding and the elements it names."""
        if self.known is not None:
            return self.known
        first, second = self.side[0], self.reference[0]
        return [
            _bad_entries(
                a,
                b,
                self.rtol,
                self.atol,
                None if self.skip is None else self.skip[i],
                None if self.noise is None else self.noise[i],
            )
            for i, (a, b) in enumerate(zip(first.ok_arrays, second.ok_arrays, strict=True))
        ]

    def _values(self, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What the side and the reference gave at `bad`'s entries of `block`, as float64, and by
        how many tolerances they part there (`_excess`); worked out once per block."""
        known = self.__dict__.setdefault("_block_values", {})
        if block not in known:
            indices = self.bad[block]
            assert indices is not None, "only blocks of one shape have values compared"
            got = np.asarray(self.side[0].ok_arrays[block], dtype=np.float64).reshape(-1)[indices]
            want = np.asarray(self.reference[0].ok_arrays[block], dtype=np.float64).reshape(-1)[indices]
            known[block] = (got, want, self._excess(block, got, want, indices))
        return known[block]

    def classified(self, order: int) -> list[np.ndarray]:
        """Per block, the class of each differing entry (`bad`'s order); blocks of another shape are
        `wrong`. Worked out once (the findings and the routing elements both ask)."""
        known = self.__dict__.setdefault("_classified", {})
        if order not in known:
            known[order] = self._classes(order)
        return known[order]

    def _classes(self, order: int) -> list[np.ndarray]:
        found = []
        probed: set[tuple[int, int]] = set()
        for block, indices in enumerate(self.bad):
            if indices is None or not indices.size:
                found.append(_NO_CLASSES)
                continue
            if self.classifying is None:
                found.append(np.full(indices.shape, WRONG.value, dtype=object))
                continue
            got, want, _ = self._values(block)
            size = int(np.size(self.side[0].ok_arrays[block]))
            c = self.classifying
            crossing = None if c.crossing is None else c.crossing[block]
            twins = c.twins_at(block, indices, got)
            if c.mirrors[0] and c.mirrors[1]:
                twins = twins | c.mirrored_at(block, indices, got, want)
            classes = classify(c.surroundings, c.reference, block, order, size, indices, got, want, twins, crossing)
            if c.probe is not None:
                for k in np.flatnonzero(classes == WRONG.value)[: PROBED * PROBED]:
                    column = c.column(block, order, size, int(indices[k]))
                    if column is None or (column not in probed and len(probed) >= PROBED):
                        continue
                    probed.add(column)
                    settled = c.settled(
                        block, order, size, int(indices[k]), float(got[k]), float(want[k]), self.side[0].ok_arrays
                    )
                    if settled is not None:
                        classes[k] = settled.outcome
                        self.probed[block, int(indices[k])] = settled
            found.append(classes)
        return found

    @functools.cached_property
    def probed(self) -> dict[tuple[int, int], Settled]:
        """(block, flat) -> what a probe settled there (`_Classifying.settled`)."""
        return {}

    def settled_notes(self, output_shape: tuple[int, ...], names: tuple[str, ...], order: int) -> list[Note]:
        """A note per outcome for the entries a probe settled beyond finite differences' usual step (not
        findings): those finer steps checked, and those no step can judge, said as unjudged, not checked."""
        if not self.probed:
            return []
        these = path_labels([p.name for p in self.side])
        total = sum(np.size(a) for a in self.side[0].ok_arrays)
        notes = []
        for outcome, said in (
            (FINER_AGREES, "checked at finer steps"),
            (UNRESOLVED, "left unjudged"),
            (BY_DESIGN, "differ by design"),
        ):
            settled = [(key, s) for key, s in self.probed.items() if s.outcome == outcome]
            if not settled:
                continue
            (block, flat), first = settled[0]
            location = _location(self.side[0].ok_arrays[block], output_shape, names[block], order, flat)
            notes.append(
                Note(
                    paths=tuple(p.name for p in (*self.side, *self.reference)),
                    message=f"{these} {said} on {len(settled)} of {total} entries, first at {location}: "
                    f"{first.reason}; not counted",
                    count=len(settled),
                    of=total,
                    location=location,
                )
            )
        return notes

    def findings(self, output_shape: tuple[int, ...], names: tuple[str, ...], order: int) -> list[Finding]:
        """One finding per class among the differing entries, most severe first."""
        first = self.side[0]
        bad = self.bad
        differing = sum(np.size(a) if b is None else b.size for a, b in zip(first.ok_arrays, bad, strict=True))
        if not differing:
            return []
        total = sum(np.size(a) for a in first.ok_arrays)
        these, those = self.labels
        paths = tuple(p.name for p in (*self.side, *self.reference))
        if any(b is None for b in bad):
            block = next(i for i, b in enumerate(bad) if b is None)
            message = f"{these} and {those} give derivatives of different shapes for {names[block]}"
            return [
                Finding(
                    kind=DISAGREEMENT,
                    paths=paths,
                    message=message,
                    count=differing,
                    of=total,
                    magnitude=np.inf,
                    wrong="shape",
                )
            ]
        classes = self.classified(order)
        found = []
        kinds = ranked([c for block in classes for c in block])
        for finding_class in kinds:
            # only this class's entries: not those a probe settled as a note (finer steps, unjudged, by design)
            chosen = [c == finding_class.value for c in classes]
            found.append(self._finding(chosen, finding_class, output_shape, names, order, total))
        return found

    def _finding(
        self,
        chosen: list,
        finding_class: FindingClass,
        output_shape: tuple[int, ...],
        names: tuple[str, ...],
        order: int,
        total: int,
    ) -> Finding:
        """The finding for the differing entries of one class: `chosen` picks them out of `bad`'s
        (per block, a mask over its entries)."""
        first = self.side[0]
        indices = [b[c] for b, c in zip(self.bad, chosen, strict=True) if b is not None]
        differing = sum(b.size for b in indices)
        these, those = self.labels
        verb = "disagrees" if len(self.side) == 1 else "disagree"
        paths = tuple(p.name for p in (*self.side, *self.reference))
        nothing = np.zeros(0)
        values = [
            tuple(v[c] for v in self._values(block)) if b.size else (nothing, nothing, nothing)
            for block, (b, c) in enumerate(zip(indices, chosen, strict=True))
        ]
        got, want, gaps = [v[0] for v in values], [v[1] for v in values], [v[2] for v in values]
        # The largest disagreement, in multiples of its tolerance (the first of equals): what a user wants to see first.
        present = [i for i in range(len(indices)) if indices[i].size]
        block = present[0] if len(present) == 1 else max(present, key=lambda i: (float(np.max(gaps[i])), -i))
        at = int(np.argmax(gaps[block]))
        flat = int(indices[block][at])
        got_value, want_value = float(got[block][at]), float(want[block][at])
        location = _location(first.ok_arrays[block], output_shape, names[block], order, flat)
        where = "at" if differing == 1 else "largest at"
        message = (
            f"{these} {verb} with {those} on {differing} of {total} entries; {where} {location}: {want_value:g} from "
            f"{those}, {got_value:g} from {these}"
        )
        gap = _gap(got_value, want_value, self.rtol, self.atol, self._noise_at(block, flat))
        reason, evidence = "", dict[str, float]()
        if self.classifying is not None:
            c = self.classifying
            size = int(np.size(first.ok_arrays[block]))
            reason, evidence = explain(
                finding_class,
                c.surroundings,
                c.reference,
                block,
                order,
                size,
                flat,
                (got_value, want_value),
                c.crossed(block, flat),
            )
            if (block, flat) in self.probed:
                reason = f"{reason}; {self.probed[block, flat].reason}"
        return Finding(
            kind=DISAGREEMENT,
            paths=paths,
            message=message + gap,
            count=differing,
            of=total,
            location=location,
            values={**{p.name: want_value for p in self.reference}, **{p.name: got_value for p in self.side}},
            magnitude=float(gaps[block][at]),
            wrong=wrong_class(np.concatenate(got), np.concatenate(want)),
            entries=entries_summary(indices, total),
            finding_class=finding_class,
            reason=reason,
            evidence=evidence,
        )

    def _noise_at(self, block: int, flat: int) -> float:
        return 0.0 if self.noise is None else float(np.asarray(self.noise[block], dtype=np.float64).reshape(-1)[flat])

    def splits_twins(self) -> bool:
        """Whether one path is on one side and its eager or jit twin (same mode) on the other."""

        def twins(paths: Sequence[PathResult]) -> set[str]:
            return {transform_of(p.name) for p in paths}

        return bool(twins(self.side) & twins(self.reference))

    def _excess(self, block: int, got: np.ndarray, want: np.ndarray, bad: np.ndarray) -> np.ndarray:
        """|got - want| over what the tolerance allows there (inf where only one side is finite)."""
        noise = 0.0 if self.noise is None else np.asarray(self.noise[block], dtype=np.float64).reshape(-1)[bad]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            allowed = self.atol + self.rtol * np.abs(want) + noise
            ratio = np.abs(got - want) / allowed
        # NaN (a side NaN) ranks above inf (a side infinite), which ranks above every finite excess.
        return np.where(np.isnan(ratio), np.inf, np.minimum(ratio, _FLOAT64_MAX))

    def disagreeing_elements(self, output_shape: tuple[int, ...], order: int) -> dict[int, FindingClass]:
        """Output elements (flat) with at least one differing entry of a class the gate fails by
        default, each with the most severe class among its entries: where routing can be judged."""
        elements: dict[int, FindingClass] = {}
        out_size = math.prod(output_shape)
        for a, bad, classes in zip(self.side[0].ok_arrays, self.bad, self.classified(order), strict=True):
            in_size = max(1, int(np.size(a)) // max(1, out_size))
            if bad is None:
                by_class = {WRONG.value: np.arange(out_size)}
            else:
                by_class = {
                    name: np.unique(bad[classes == name] // in_size)
                    for name in set(classes.tolist())
                    if name in RANKED_FAILING
                }
            for name, among in by_class.items():
                found = RANKED_FAILING[name]
                for element in among.tolist():
                    if element not in elements or CLASSES.index(found) < CLASSES.index(elements[element]):
                        elements[element] = found
        return elements


def _gap(got: float, want: float, rtol: float, atol: float, noise: float) -> str:
    """The difference at an entry, relative to the reference, and what the tolerance allowed there."""
    if not (math.isfinite(got) and math.isfinite(want)):
        return ""
    allowed = atol + rtol * abs(want) + noise
    relative = f", relative {abs(got - want) / abs(want):.2g}" if want else ""
    return f" (difference {abs(got - want):.3g}{relative}; tolerance {allowed:.3g})"


def _location(block: np.ndarray, output_shape: tuple[int, ...], name: str, order: int, flat: int) -> str:
    return entry_location(np.shape(block), output_shape, name, order, flat)


def _first_entry(masks: Masks) -> tuple[int, int] | None:
    """(block, flat index) of the first entry set in `masks`, or None."""
    for block, mask in enumerate(masks):
        flat = np.asarray(mask).reshape(-1)
        if flat.any():
            return block, int(np.argmax(flat))
    return None


def _finite_difference_notes(
    reference: PathResult,
    trusted: Trust,
    noise: Masks | None,
    output_shape: tuple[int, ...],
    names: tuple[str, ...],
    order: int,
) -> list[Note]:
    """What finite differences could not judge (kinks, no finite estimate, rounding of `noise` that
    drowns the derivative) or judged loosely (moving estimates)."""
    total = sum(np.size(m) for m in trusted.kink)
    label_ = label(reference.name)

    def note(
        masks: Masks, estimates_of: Callable[[], dict[str, tuple[np.ndarray, ...]]], describe: Callable[..., str]
    ) -> list[Note]:
        """A note at the first entry of `masks`, with each estimate's value there, worded by `describe`."""
        first = _first_entry(masks)
        if first is None:
            return []
        block, flat = first
        estimates = estimates_of()
        count = sum(int(np.count_nonzero(m)) for m in masks)
        values = {name: float(arrays[block].reshape(-1)[flat]) for name, arrays in estimates.items()}
        location = _location(reference.ok_arrays[block], output_shape, names[block], order, flat)
        message = describe(location=location, count=count, **values)
        return [Note(paths=(reference.name,), message=message, count=count, of=total, location=location, values=values)]

    rounding = noise if noise is not None else tuple(np.full(np.shape(m), np.nan) for m in trusted.kink)

    # Every kink rule asks for more than rounding can do (slack, or a central estimate moving beyond it):
    # a step lost in rounding (1e7 + x in float32) is the absorbed note's, not a kink.
    kinks = note(
        trusted.kink,
        lambda: {"left": estimate_of(reference, "left_half"), "right": estimate_of(reference, "right_half")},
        lambda location, count, left, right: (
            f"kink or jump at {location}: slope {left:g} from the left, {right:g} from the right (the one-sided "
            f"slopes disagree, or the estimates do not converge as the step shrinks); {count} of {total} entries "
            f"not compared with {label_}"
        ),
    )

    def moving_words(
        location: str, count: int, central: float, central_half: float, spread: float, rounding: float
    ) -> str:
        # The allowance less the spread is the rounding alone: a move within it says nothing of the slopes.
        alone = rounding - spread
        how = (
            f"by no more than rounding can move it ({alone:.3g})"
            if abs(central_half - central) <= alone
            else "while the one-sided slopes settled"
        )
        return (
            f"near a pole or strong curvature at {location}: the central estimate moved from {central:g} to "
            f"{central_half:g} as the step halved, {how}; {count} of {total} entries compared with {label_} within "
            f"the spread of its estimates ({spread:g} there)"
        )

    # An entry whose step is lost in rounding is that note's, not a pole's or curvature's.
    moving = note(
        tuple(m & ~a for m, a in zip(trusted.moving, trusted.absorbed, strict=True))
        if trusted.absorbed
        else trusted.moving,
        lambda: {
            "central": estimate_of(reference, "central"),
            "central_half": estimate_of(reference, "central_half"),
            "spread": trusted.spread,
            "rounding": rounding,
        },
        moving_words,
    )
    absorbed = note(
        trusted.absorbed,
        lambda: {
            "finite_difference": estimate_of(reference, "extrapolated"),
            "rounding": rounding,
        },
        lambda location, count, finite_difference, rounding: (
            f"finite differences cannot check {count} of {total} entries, first at {location} ({finite_difference:g} "
            f"there, give or take {rounding:.3g}): the step is lost in the rounding of the function's value or of its "
            "larger terms, which cancel there (inputs many times the step, times their derivatives), more than "
            f"the derivatives themselves, so a wrong one passes within it; compared with {label_} only within that "
            "rounding"
        ),
    )

    def loose_words(location: str, count: int, finite_difference: float, rounding: float) -> str:
        share = f", {rounding / abs(finite_difference):.0%} of it" if finite_difference else ""
        return (
            f"finite differences check {count} of {total} entries only within their rounding, first at {location} "
            f"({finite_difference:g} there, give or take {rounding:.3g}{share}): the function's value rounds by more "
            "than a few percent of what its steps move it, so a derivative wrong by less passes; audit it in float64 "
            "to check it more closely"
        )

    loose = note(
        trusted.loose,
        lambda: {"finite_difference": estimate_of(reference, "extrapolated"), "rounding": rounding},
        loose_words,
    )
    count = sum(int(np.count_nonzero(u)) for u in trusted.undefined)
    undefined = (
        [
            Note(
                paths=(reference.name,),
                message=(
                    f"no finite estimate here: non-finite inputs or outputs, or a step past the dtype's range: {count} "
                    f"of {total} entries have no {label_}"
                ),
                count=count,
                of=total,
            )
        ]
        if count
        else []
    )
    return kinks + moving + absorbed + loose + undefined


def _scale_note(
    side: Sequence[PathResult],
    reference: Sequence[PathResult],
    within: list[np.ndarray],
    output_shape: tuple[int, ...],
    names: tuple[str, ...],
    by: str = "the dtype's rounding of the Jacobian at the scale of each entry's row and column",
) -> list[Note]:
    """A note for AD entries set aside by `scale.beyond_scale` or `scale.below_resolution` (`by`
    says which): what was not counted, and where."""
    count = sum(w.size for w in within)
    if not count:
        return []
    block = next(b for b, w in enumerate(within) if w.size)
    flat = int(within[block][0])
    location = _location(reference[0].ok_arrays[block], output_shape, names[block], 1, flat)
    got = float(np.asarray(side[0].ok_arrays[block], dtype=np.float64).reshape(-1)[flat])
    want = float(np.asarray(reference[0].ok_arrays[block], dtype=np.float64).reshape(-1)[flat])
    total = sum(np.size(a) for a in reference[0].ok_arrays)
    these, those = path_labels([p.name for p in side]), path_labels([p.name for p in reference])
    message = (
        f"{these} and {those} differ on {count} of {total} entries by no more than {by}, first at {location} "
        f"({got:g} against {want:g}): rounding, not counted"
    )
    return [
        Note(
            paths=tuple(p.name for p in (*side, *reference)), message=message, count=count, of=total, location=location
        )
    ]


def _device_findings(
    results: dict[str, PathResult], arg_names: tuple[str, ...], output_shape: tuple[int, ...], tolerances: Tolerances
) -> list[Finding]:
    """Each path on a further device against the same path on the first: they should agree to rounding."""
    findings = []
    for name, result in results.items():
        primary = results.get(primary_name(name))
        if primary is None or primary is result or not (result.ok and primary.ok):
            continue
        order = ORDERS[base_name(name)]
        names = ("",) if order == 0 else block_names(arg_names, order)
        findings += _Comparison([result], [primary], tolerances.ad_rtol, tolerances.ad_atol).findings(
            output_shape, names, order
        )
    return findings


@dataclass(frozen=True)
class _Elementwise:
    """A case's entry-by-entry work, done for cases alike all at once (`_elementwise`)."""

    against: dict[str, _Against]
    """Per finite-difference reference a family's AD paths are compared with: the comparisons."""
    provenance: Provenance | None
    pairs: _Pairs
    """Comparisons of paths with each other, shared by the cases alike."""
    row: int
    """The case's place among them."""

    def bad(self, side: PathResult, reference: PathResult, tolerances: Tolerances) -> list[np.ndarray | None]:
        """`_Comparison.bad` of `side` against `reference` to AD tolerance."""
        known = self.pairs.bad(self.row, side.name, reference.name)
        return (
            known if known is not None else _Comparison([side], [reference], tolerances.ad_rtol, tolerances.ad_atol).bad
        )

    def non_finite(self, path: PathResult) -> bool:
        """Whether `path` holds an infinite or NaN entry."""
        return bool(self.pairs.stacks.non_finite(path.name)[self.row])

    def largest(self, path: PathResult) -> float:
        """`path`'s largest finite |entry| (its stack shared with the cases alike)."""
        return float(self.pairs.stacks.largest(path.name)[self.row])

    def agree(self, side: PathResult, reference: PathResult, tolerances: Tolerances) -> bool:
        """Whether `side` agrees with `reference` to AD tolerance, entry by entry (`_agree`)."""
        known = self.pairs.agree(self.row, side.name, reference.name)
        if known is not None:
            return known
        return all(indices is not None and not indices.size for indices in self.bad(side, reference, tolerances))


def _layout(case: Case) -> tuple:
    """What cases must share for their entry-by-entry work to be one NumPy call: paths, their
    outcomes, blocks' shapes and dtypes, and the inputs' (a group's members share all of it)."""

    def arrays(blocks: Sequence[np.ndarray]) -> tuple:
        return tuple((np.shape(a), np.asarray(a).dtype.str) for a in blocks)

    paths = tuple(
        (name, path.status, arrays(path.arrays or ()), path.estimates is None) for name, path in case.results.items()
    )
    return tuple(case.bindings), arrays(case.inputs), paths


def _references(case: Case) -> Iterator[tuple[PathFamily, list[PathResult]]]:
    """Each family the case has a reference for, with the references that gave estimates (the
    first is the one its AD paths are compared with)."""
    for family in FAMILIES:
        _, reference_names = family.bound(case.bindings)
        if reference_names[0] in case.results:
            yield family, [case.results[n] for n in reference_names if case.results[n].ok]


def _elementwise(cases: Sequence[Case]) -> list[_Elementwise | None]:
    """The entry-by-entry work of cases alike (`_layout`): trust, non-finite entries, provenance;
    None for cases whose value was not computed (nothing is compared)."""
    first = cases[0]
    if not value_of(first.results, first.bindings).ok:
        return [None] * len(cases)
    against: list[dict[str, _Against]] = [{} for _ in cases]
    stacks = Stacks(cases)
    for family, references in _references(first):
        if references:
            name = references[0].name
            paths = [p for p in family.bound(first.bindings)[0] if p in first.results and first.results[p].ok]
            for mine, compared in zip(against, _against(cases, name, paths, family.order, stacks), strict=True):
                mine[name] = compared
    pairs = _Pairs(stacks)
    return [
        _Elementwise(against=mine, provenance=prov, pairs=pairs, row=row)
        for row, (mine, prov) in enumerate(zip(against, provenances(cases), strict=True))
    ]


def judge(
    results: dict[str, PathResult],
    arg_names: tuple[str, ...],
    tolerances: Tolerances,
    bindings: Sequence[str] = ("",),
    inputs: Sequence[np.ndarray] = (),
) -> Verdict:
    """The verdict on one scenario from all its paths' results (one set of paths per binding) at
    `inputs` (the differentiated ones)."""
    return judge_all([Case(results, arg_names, tolerances, bindings, inputs)])[0]


def judge_all(cases: Sequence[Case]) -> list[Verdict]:
    """The verdict on each case, each as `judge` gives it; cases alike in paths and shapes (a
    group's members) have their entry-by-entry work done together, a NumPy call for them all where
    each would make its own (judging a 10,000-scenario grid took a third of its workers' time)."""
    alike: dict[tuple, list[int]] = {}
    for index, case in enumerate(cases):
        alike.setdefault(_layout(case), []).append(index)
    shared: list[_Elementwise | None] = [None] * len(cases)
    for indices in alike.values():
        for index, elementwise in zip(indices, _elementwise([cases[i] for i in indices]), strict=True):
            shared[index] = elementwise
    return [_verdict(case, elementwise) for case, elementwise in zip(cases, shared, strict=True)]


def _surroundings(case: Case, value: PathResult) -> Surroundings:
    """The case's inputs and value as its entries are classed by; `largest` from the value's dtype,
    and the output elements any value path (eager or jit, per binding) finds finite."""
    output = value.ok_arrays[0]
    largest, spacing = _limits(np.asarray(output).dtype)
    triggers = case.triggers
    values = [
        r.ok_arrays[0]
        for r in case.results.values()
        if base_name(r.name) in (VALUE, JIT_VALUE) and r.ok and np.shape(r.ok_arrays[0]) == np.shape(output)
    ]
    with np.errstate(invalid="ignore", over="ignore"):
        finite = (
            functools.reduce(np.logical_or, (np.isfinite(np.asarray(v, dtype=np.float64)) for v in values))
            if values
            else None
        )
        return Surroundings(
            inputs=tuple(np.asarray(a, dtype=np.float64) for a in case.inputs),
            output=np.asarray(output, dtype=np.float64),
            arg_names=case.arg_names,
            largest=largest,
            rounding=spacing,
            output_finite=finite,
            inside_of=None if triggers is None else lambda: non_finite_inside(triggers(True)),
        )


@functools.cache  # a handful of dtypes, asked once per case
def _limits(dtype: np.dtype) -> tuple[float, float]:
    """A value dtype's largest finite number and its epsilon (inf and 0 for integers)."""
    if np.issubdtype(dtype, np.inexact) or dtype.kind == "V":
        return float(ml_dtypes.finfo(dtype).max), rounding(dtype)
    return math.inf, 0.0


def _reference_evidence(reference: PathResult, trusted: Trust) -> Reference:
    """What finite differences said at each entry, as `classes` reads it."""
    estimates = (
        {name: estimate_of(reference, name) for name in ("left_half", "right_half", "left", "right", "extrapolated")}
        if reference.estimates is not None
        else {}
    )
    return Reference(kink=trusted.kink, undefined=trusted.undefined, estimates=estimates)


def _twin_elsewhere(side: Sequence[PathResult], ad_paths: Sequence[PathResult]) -> bool:
    """Whether each path of `side` has an eager/jit or binding twin (the same mode) on another side:
    a side that disagrees with finite differences alone, without its twin, is one transform giving
    two answers."""
    names = {p.name for p in side}
    elsewhere = {transform_of(p.name) for p in ad_paths if p.name not in names}
    return all(transform_of(path.name) in elsewhere for path in side)


def _entries_of(path: PathResult, block: int, flat: np.ndarray) -> np.ndarray | None:
    """`path`'s numbers at the entries `flat` of `block` (float64); None where it has no such entries."""
    if block >= len(path.ok_arrays) or np.size(path.ok_arrays[block]) <= int(np.max(flat, initial=0)):
        return None
    return np.asarray(path.ok_arrays[block], dtype=np.float64).reshape(-1)[flat]


def _mirrors(
    side: Sequence[PathResult], other: Sequence[PathResult], ad_paths: Sequence[PathResult]
) -> tuple[tuple[PathResult, ...], tuple[PathResult, ...]]:
    """`_Classifying.mirrors` of a pair of AD sides: empty unless each side is all in one binding and the two
    in different ones (two modes parting within one binding are a mode's rule, whatever the other binding
    does)."""
    bindings = [{_binding_of(p.name) for p in paths} for paths in (side, other)]
    if any(len(b) != 1 for b in bindings) or bindings[0] == bindings[1]:
        return (), ()

    def twins(paths: Sequence[PathResult], binding: set[str]) -> tuple[PathResult, ...]:
        modes = {transform_of(p.name) for p in paths}
        return tuple(p for p in ad_paths if transform_of(p.name) in modes and _binding_of(p.name) in binding)

    return twins(side, bindings[1]), twins(other, bindings[0])


def _binding_of(name: str) -> str:
    """How a path is computed, its transform aside: `jit_:const` for `jit_jacrev:const` (eager or jit, traced
    or constant, device); a path and its twin of the same binding share the transform."""
    return name.replace(transform_of(name), "", 1)


def _twins_of(side: Sequence[PathResult], ad_paths: Sequence[PathResult]) -> list[PathResult]:
    """The eager/jit or binding twins (the same mode) of `side`'s paths among the other AD paths."""
    names = {p.name for p in side}
    modes = {transform_of(p.name) for p in side}
    return [p for p in ad_paths if p.name not in names and transform_of(p.name) in modes]


def _value_notes(value: PathResult) -> list[Note]:
    """The function's value is itself NaN or infinite somewhere: derivatives there are not a number to check."""
    output = np.asarray(value.ok_arrays[0], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~np.isfinite(output))
    if not bad.size:
        return []
    first = int(bad[0])
    location = f"out{index_text(output.shape, first)}"
    return [
        Note(
            paths=(value.name,),
            message=(
                f"the function's value is {output.reshape(-1)[first]:g} at {location} ({bad.size} of {output.size} "
                "elements): its derivatives there have no number to agree on"
            ),
            count=int(bad.size),
            of=int(output.size),
            location=location,
        )
    ]


def _refinement(case: Case, reference: PathResult, compared: _Against, surroundings: Surroundings) -> Refined | None:
    """The reference refined at kink entries that converge at finer steps (`refine.refined`)."""
    assert case.probe is not None
    size_of = [int(np.size(b)) for b in reference.ok_arrays]

    def locate(block: int, flat: int) -> tuple[int, int, int] | None:
        element, own = surroundings.own(block, 1, np.asarray([flat]), size_of[block])
        return (own[0][0], int(own[0][1][0]), int(element[0])) if own else None

    output = surroundings.output.reshape(-1)
    tolerances = case.tolerances
    return refined(
        reference,
        compared.trust.kink,
        compared.noise,
        locate,
        case.probe,
        tolerances.fd_rtol,
        tolerances.fd_atol,
        lambda out: surroundings.rounding * abs(float(output[out])) if output.size else 0.0,
        lambda out: rounding_unit(surroundings.rounding, float(output[out])) if output.size else 0.0,
    )


def _refined_bad(
    refinement: Refined,
    bad: dict[str, list[np.ndarray | None]],
    tolerances: Tolerances,
    results: dict[str, PathResult],
    name: str,
) -> list[np.ndarray | None] | None:
    """A side's entries not close to finite differences (`bad[name]`), the refined entries judged
    against their refined estimates instead of the usual step's."""
    known = bad.get(name)
    if known is None or name not in results or not results[name].ok:
        return known
    side = results[name].ok_arrays
    refined_in: dict[int, list[int]] = {}
    extra: dict[int, list[int]] = {}
    for (block, flat), slopes in refinement.entries.items():
        refined_in.setdefault(block, []).append(flat)
        got = np.asarray([np.asarray(side[block], dtype=np.float64).reshape(-1)[flat]])
        noise = None if refinement.noise is None else np.asarray([refinement.noise[block].reshape(-1)[flat]])
        if not _close(got, np.asarray([slopes.central]), tolerances.fd_rtol, tolerances.fd_atol, noise)[0]:
            extra.setdefault(block, []).append(flat)
    return [
        None
        if b is None
        else np.union1d(np.setdiff1d(b, refined_in.get(block, [])), extra.get(block, [])).astype(b.dtype)
        for block, b in enumerate(known)
    ]


def _refinement_note(refinement: Refined, output_shape: tuple[int, ...], names: tuple[str, ...]) -> Note:
    (block, flat), first = next(iter(refinement.entries.items()))
    location = _location(refinement.reference.ok_arrays[block], output_shape, names[block], 1, flat)
    count = len(refinement.entries)
    slopes = f"{first.left:g} from the left, {first.right:g} from the right"
    if first.shrinking:
        how = (
            f"at {first.step:.3g} they part by {abs(first.right - first.left):.3g} ({slopes}) and at "
            f"{first.finer_step:.3g} by {first.finer_gap:.3g}, shrinking with the step as a smooth function's do, "
            f"while the central slope holds within {first.spread:.3g}"
        )
    else:
        how = f"at {first.step:.3g} and the next finer step the slopes agree ({slopes})"
    tolerance = refinement.tolerance(first)
    unresolved = (
        f"; rounding there can hide {first.hidden:.3g} in a slope, more than the tolerance ({tolerance:.3g}): finite "
        "differences do not resolve the slope, and the entries are compared with that allowance"
        if first.hidden > tolerance
        else ""
    )
    return Note(
        paths=(refinement.reference.name,),
        message=(
            f"finite differences refined at {count} {'entry' if count == 1 else 'entries'} where the usual step saw a "
            f"kink, first at {location}: at step {first.usual:.3g} the one-sided slopes part; {how}, so "
            f"{first.central:g} is compared there{unresolved}"
        ),
        count=count,
        of=sum(int(np.size(b)) for b in refinement.reference.ok_arrays),
        location=location,
        values={"step": first.step, "central": first.central, "left": first.left, "right": first.right},
    )


def _verdict(case: Case, elementwise: _Elementwise | None) -> Verdict:
    """One case's verdict, its entry-by-entry work done (`_elementwise`)."""
    results, arg_names, tolerances, bindings = case.results, case.arg_names, case.tolerances, case.bindings
    value = value_of(results, bindings)
    if elementwise is None:  # the value was not computed
        # Where the value path does not apply (a user function that calls jax.jvp on a custom_vjp
        # function), it has no error to name but the reason it does not apply.
        why = value.error.located() if value.error is not None else f"NotApplicable: {value.not_applicable}"
        error_type = value.error.type if value.error is not None else None
        finding = Finding(
            kind=RAISED,
            paths=(VALUE,),
            message=f"{VALUE_RAISED} {why}; no derivative can be checked",
            error_type=error_type,
            finding_class=raised_class(error_type),
        )
        return Verdict(status=ERROR, findings=(finding,), provenance=None)
    raised = grouped_by_said((name, result.error) for name, result in results.items() if result.error is not None)
    raising = [
        Finding(
            kind=RAISED,
            paths=tuple(paths),
            message=f"{path_labels(paths)} raised {error.located()}",
            error_type=error.type,
            finding_class=raised_class(error.type),
        )
        for error, paths in raised.items()
    ]
    findings: list[Finding] = []
    notes = [
        Note(paths=(name,), message=f"{label(name)} does not apply: {result.not_applicable}")
        for name, result in results.items()
        if result.not_applicable
    ]
    notes += _value_notes(value)
    output_shape = tuple(np.shape(value.ok_arrays[0]))
    surroundings_of = functools.cache(functools.partial(_surroundings, case, value))
    compiled = [
        r for r in (results.get(path_name(JIT_VALUE, b)) for b in bindings) if r is not None and r.ok and r is not value
    ]

    def agree(side: PathResult, reference: PathResult) -> bool:
        return elementwise.agree(side, reference, tolerances)

    for side in _agreement_classes(compiled, agree):
        known = elementwise.bad(side[0], value, tolerances)
        values = _Comparison(
            side,
            [value],
            tolerances.ad_rtol,
            tolerances.ad_atol,
            known=known,
            classifying=_Classifying(surroundings_of, None, twins=True),
        )
        findings += values.findings(output_shape, ("",), 0)
    disagreeing: dict[str, dict[int, FindingClass]] = {}
    unchecked = (0, 0)
    absolute_only, unresolved = 0, False
    families: list[Compared] = []
    for family, references in _references(case):
        ad_names, _ = family.bound(bindings)
        names = block_names(arg_names, family.order)
        ad_paths = [results[n] for n in ad_names if n in results and results[n].ok]
        classes = _agreement_classes(ad_paths, agree)
        evidence: Reference | None = None
        refinement: Refined | None = None
        if references:
            compared = elementwise.against[references[0].name]
            if family.order == 1 and case.probe is not None and compared.kinked:
                refinement = _refinement(case, references[0], compared, surroundings_of())
            evidence = (
                _reference_evidence(references[0], compared.trust)
                if refinement is None
                else _reference_evidence(refinement.reference, replace(compared.trust, kink=refinement.kink))
            )
        # Only a non-finite number every AD path finds crosses anything: none in the first, none at all.
        non_finite = family.order == 1 and ad_paths and elementwise.non_finite(ad_paths[0])
        crossing = (
            crossing_non_finite([p.ok_arrays for p in ad_paths], int(np.size(value.ok_arrays[0])))
            if non_finite
            else None
        )

        def classed(
            twins: bool,
            probe: Prober | None = None,
            twin_paths: Sequence[PathResult] = (),
            evidence: Reference | None = evidence,
            crossing: Masks | None = crossing,
            mirrors: tuple[tuple[PathResult, ...], tuple[PathResult, ...]] = ((), ()),
        ) -> _Classifying:
            tolerance = (tolerances.fd_rtol, tolerances.fd_atol)
            ad = (tolerances.ad_rtol, tolerances.ad_atol)
            return _Classifying(
                surroundings_of, evidence, twins, crossing, probe, tolerance, tuple(twin_paths), ad, mirrors
            )

        comparisons = []
        split = False  # two AD paths of the family disagree beyond rounding at the Jacobian's scale
        for earlier, later in itertools.combinations(classes, 2):
            known = elementwise.bad(later[0], earlier[0], tolerances)
            if family.order == 1:
                known, rounded = beyond_scale(
                    later[0].ok_arrays,
                    earlier[0].ok_arrays,
                    known,
                    tolerances.fd_rtol,
                    int(np.size(value.ok_arrays[0])),
                    elementwise.largest(earlier[0]),
                )
                notes += _scale_note(later, earlier, rounded, output_shape, names)
            split = split or known is None or any(k is None or np.size(k) for k in known)
            pair = _Comparison(later, earlier, tolerances.ad_rtol, tolerances.ad_atol, known=known)
            twins = pair.splits_twins()
            mirrors = ((), ()) if twins else _mirrors(later, earlier, ad_paths)
            comparisons.append(replace(pair, classifying=classed(twins, mirrors=mirrors)))
        if references:
            compared = elementwise.against[references[0].name]
            reference, trusted = references[0], compared.trust
            noise: Masks | None = compared.noise
            known_bad: Callable[[str], list[np.ndarray | None] | None] = compared.bad.get
            if refinement is not None:
                reference, noise = refinement.reference, refinement.noise
                trusted = replace(trusted, kink=refinement.kink)
                known_bad = functools.partial(_refined_bad, refinement, compared.bad, tolerances, results)
                notes.append(_refinement_note(refinement, output_shape, names))
            skip = trusted.skipped
            allowance = tuple(np.asarray(n, dtype=np.float64) for n in noise) if noise is not None else ()
            families.append(Compared(family.order, reference, tolerances.fd_rtol, tolerances.fd_atol, skip, allowance))
            if family.order == 1:
                notes += coarse_notes(tolerances, case.inputs)
            if family.order == 1 and refinement is None:
                unchecked = compared.unchecked
            elif family.order == 1:
                skipped = (
                    [s | a for s, a in zip(skip, trusted.absorbed, strict=True)] if trusted.absorbed else list(skip)
                )
                unchecked = (sum(int(np.sum(s)) for s in skipped), sum(int(np.size(s)) for s in skipped))
            if family.order == 1:
                absolute_only = compared.absolute_only
                unresolved = compared.unresolved
            notes += _finite_difference_notes(reference, trusted, noise, output_shape, names, family.order)
            # Every AD path on one side against finite differences (apart by rounding at most): the signature
            # of a step finite differences cannot take (or of a wrong rule): a probe may settle which.
            consensus = case.probe if not split else None
            against_reference = []
            for side in classes:
                against_known = known_bad(side[0].name)
                if family.order == 1 and against_known is not None:
                    against_known, rounded = below_resolution(
                        side[0].ok_arrays,
                        reference.ok_arrays,
                        against_known,
                        int(np.size(value.ok_arrays[0])),
                        elementwise.largest(side[0]),
                    )
                    notes += _scale_note(side, [reference], rounded, output_shape, names, RESOLVED)
                comparison = _Comparison(
                    side,
                    [reference],
                    tolerances.fd_rtol,
                    tolerances.fd_atol,
                    noise=noise,
                    known=against_known,
                    classifying=classed(_twin_elsewhere(side, ad_paths), consensus, _twins_of(side, ad_paths)),
                )
                against_reference.append(comparison)
            comparisons += against_reference
            # Under another binding the function itself may compute something else: compare its references
            # too, where both have an estimate.
            comparisons += [
                _Comparison(
                    [other],
                    [reference],
                    tolerances.fd_rtol,
                    tolerances.fd_atol,
                    tuple(s | u for s, u in zip(skip, undefined_of(other), strict=True)),
                    noise,
                    classifying=classed(True),
                )
                for other in references[1:]
            ]
            if family.order == 1:
                for comparison in against_reference:
                    elements = comparison.disagreeing_elements(output_shape, family.order)
                    for path in comparison.side:
                        disagreeing[path.name] = elements
        elif ad_paths:
            families.append(Compared(family.order, None, tolerances.ad_rtol, tolerances.ad_atol))
        for comparison in comparisons:
            findings += comparison.findings(output_shape, names, family.order)
            notes += comparison.settled_notes(output_shape, names, family.order)
    findings += _device_findings(results, arg_names, output_shape, tolerances)
    prov = elementwise.provenance
    first_order = [results[p] for p in FAMILIES[0].bound(bindings)[0] if p in results]
    if first_order and all(r.not_applicable for r in first_order):
        raising.append(
            Finding(
                kind=RAISED,
                paths=tuple(r.name for r in first_order),
                message="no derivative path applies to this function: nothing was checked",
                error_type="NotApplicable",
            )
        )
    routing, misrouted_elements = routing_findings(prov, arg_names, disagreeing) if prov is not None else ([], {})
    findings = raising + routing + findings
    if any(f.kind == RAISED for f in findings):
        status = ERROR
    elif findings:
        status = MISMATCH
    else:
        status = CONSISTENT
    return Verdict(
        status=status,
        findings=tuple(findings),
        provenance=prov,
        notes=tuple(notes),
        unchecked=unchecked,
        absolute_only=absolute_only,
        unresolved=unresolved,
        compared=tuple(families),
        misrouted=misrouted_elements,
    )
