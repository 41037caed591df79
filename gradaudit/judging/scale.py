"""Rounding at the Jacobian's scale: AD paths of an ill-conditioned Jacobian part by more than an
entry's own size allows, by millionths of the whole; within the dtype's rounding of the entry's row
and column (or of the whole, while within finite differences' relative tolerance of the entry) the
difference is rounding, noted, not counted (docs/judging.md)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from gradaudit.numerics.finite_differences import rounding


def row_and_column_scale(blocks: Sequence[np.ndarray], out_size: int, combine=np.maximum) -> list[np.ndarray] | None:
    """Per first-order block, per entry d out[i]/d x[j] (flat): the largest finite |derivative| in
    its row (out[i] against every input) or its column (every output against x[j]), the larger of
    the two (`combine`, or the smaller). Forward mode computes a column at once and rounds it to its
    largest entry, reverse mode a row; None where the blocks do not split into rows of the output."""
    if not blocks:
        return None
    sizes = [int(np.size(b)) for b in blocks]
    flat = np.concatenate([np.asarray(b, dtype=np.float64).reshape(-1) for b in blocks])[None, :]
    scale = stacked_row_and_column_scale(flat, sizes, out_size, combine)
    return None if scale is None else np.split(scale[0], np.cumsum(sizes)[:-1])


def stacked_row_and_column_scale(
    entries: np.ndarray, sizes: Sequence[int], out_size: int, combine=np.maximum, outputs: np.ndarray | None = None
) -> np.ndarray | None:
    """`row_and_column_scale` for cases alike at once: `entries` a row per case of first-order blocks of
    `sizes`, flat; the same shape back. `outputs` (a row per case of the output's elements, where given)
    count in each entry's row: AD's rounding of an output's terms is bounded by the output as well."""
    if not out_size or any(size % out_size for size in sizes):
        return None
    with np.errstate(invalid="ignore"):
        magnitudes = np.nan_to_num(np.abs(np.asarray(entries, dtype=np.float64)), nan=0.0, posinf=0.0)
    cases = magnitudes.shape[0]
    matrices = [m.reshape(cases, out_size, -1) for m in np.split(magnitudes, np.cumsum(sizes)[:-1], axis=1)]
    rows = functools.reduce(np.maximum, [m.max(axis=2, initial=0.0) for m in matrices])
    if outputs is not None:
        with np.errstate(invalid="ignore"):
            rows = np.maximum(rows, np.nan_to_num(np.abs(np.asarray(outputs, dtype=np.float64)), nan=0.0, posinf=0.0))
    return np.concatenate(
        [combine(rows[:, :, None], m.max(axis=1, initial=0.0)[:, None, :]).reshape(cases, -1) for m in matrices],
        axis=1,
    )


Split = tuple[list[np.ndarray | None], list[np.ndarray]]
"""`bad`'s entries per block: those kept as disagreements, and those set aside as rounding."""


def beyond_scale(
    got_blocks: Sequence[np.ndarray],
    want_blocks: Sequence[np.ndarray],
    bad: list[np.ndarray | None],
    fd_rtol: float,
    out_size: int,
    largest: float | None = None,
) -> Split:
    """`bad` (AD paths against each other, entry by entry) split into the entries that differ beyond
    the rounding the dtype allows the Jacobian there as a whole, and those within it: an
    ill-conditioned linear-algebra Jacobian's small entries, rounded in forward mode to their
    column's largest and in reverse mode to their row's, part by more than their own size allows,
    by millionths of the whole. Within it: the difference is at most the square root of the dtype's
    epsilon (what a computation of condition up to 1/sqrt(eps) rounds to) times the entry's row and
    column scale (`row_and_column_scale`), a bound finite differences' own absolute tolerance
    (4 sqrt(eps)) is looser than; or at most that times the Jacobian's largest entry while no more
    than finite differences' relative tolerance of the entry itself (a difference they could never
    resolve: a wrong factor, sign or zero is not). `largest`: `want_blocks`' largest finite |entry|,
    where known already."""
    condition = math.sqrt(rounding(np.asarray(want_blocks[0]).dtype))

    def within(got: np.ndarray, want: np.ndarray, gap: np.ndarray, scale: np.ndarray, largest: float) -> np.ndarray:
        small = (gap <= condition * largest) & (gap <= fd_rtol * np.maximum(np.abs(got), np.abs(want)))
        return (gap <= condition * scale) | small

    return _split(got_blocks, want_blocks, want_blocks, bad, out_size, condition, np.maximum, within, largest)


RESOLUTION = 4.0
"""How many of the dtype's epsilons of a scale an AD path may part from finite differences by and still
be below what the numbers there resolve: AD's rounding of the terms it sums. At an entry's row and
column scale (`below_resolution`); at the function's largest number, where an entry passed only by the
absolute tolerance is not sent to a finer dtype for it (`fd_trust.passed_by_absolute`)."""


def below_resolution(
    ad_blocks: Sequence[np.ndarray],
    reference_blocks: Sequence[np.ndarray],
    bad: list[np.ndarray | None],
    out_size: int,
    largest: float | None = None,
) -> Split:
    """`bad` (an AD path against finite differences, entry by entry) split into the entries that
    differ beyond a few epsilons of the AD path's row scale and of its column scale there (the
    smaller), and those within: a gap that small is under the resolution of the numbers both the
    entry's row and its column are made of (a solve whose inverse holds 3e12 rounds an exact
    1e-11 derivative to 1e-4 in float64), so no comparison can call it wrong. An elementwise
    function's entry is its own row's and column's largest: a wrong one is never within, nor one
    whose row holds a large derivative of another input but whose column does not. `largest`:
    `ad_blocks`' largest finite |entry|, where known already."""
    resolution = RESOLUTION * rounding(np.asarray(ad_blocks[0]).dtype)

    def within(got: np.ndarray, want: np.ndarray, gap: np.ndarray, scale: np.ndarray, largest: float) -> np.ndarray:
        return gap <= resolution * scale

    return _split(ad_blocks, reference_blocks, ad_blocks, bad, out_size, resolution, np.minimum, within, largest)


def _split(
    got_blocks: Sequence[np.ndarray],
    want_blocks: Sequence[np.ndarray],
    scaled_blocks: Sequence[np.ndarray],
    bad: list[np.ndarray | None],
    out_size: int,
    bound: float,
    combine,
    within,
    largest: float | None,
) -> Split:
    """`bad` split by `within(got, want, gap, scale, largest)` at each bad entry, the scale that of
    `scaled_blocks`' rows and columns (`combine`d) and `largest` its largest finite |entry| (worked
    out here where None); both numbers must be finite. Nothing more is worked out where every gap
    is beyond `bound` times the largest entry (most disagreements: a wrong value, not rounding)."""
    if all(indices is None or not indices.size for indices in bad):
        return bad, []
    values: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    with np.errstate(invalid="ignore", over="ignore"):
        for block, indices in enumerate(bad):
            if indices is not None and indices.size:
                got = np.asarray(got_blocks[block], dtype=np.float64).reshape(-1)[indices]
                want = np.asarray(want_blocks[block], dtype=np.float64).reshape(-1)[indices]
                values[block] = (got, want, np.abs(got - want))
        smallest = min(float(np.fmin.reduce(gap)) for _, _, gap in values.values())
        if largest is None:
            largest = largest_finite(scaled_blocks)
    if not smallest <= bound * largest:  # NaN too
        return bad, []
    scale = row_and_column_scale(scaled_blocks, out_size, combine)
    if scale is None:
        return bad, []
    kept, set_aside = [], []
    for block, indices in enumerate(bad):
        if block not in values or indices is None:
            kept.append(indices)
            set_aside.append(np.zeros(0, dtype=np.intp))
            continue
        got, want, gap = values[block]
        with np.errstate(invalid="ignore", over="ignore"):
            rounded = np.isfinite(got) & np.isfinite(want) & within(got, want, gap, scale[block][indices], largest)
        kept.append(indices[~rounded])
        set_aside.append(indices[rounded])
    return kept, set_aside


def largest_finite(blocks: Sequence[np.ndarray]) -> float:
    """The largest finite |entry| of `blocks`; 0 where none is."""
    with np.errstate(invalid="ignore", over="ignore"):
        magnitudes = [np.abs(np.asarray(b, dtype=np.float64)) for b in blocks]
        return max((float(np.max(m, initial=0.0, where=np.isfinite(m))) for m in magnitudes), default=0.0)
