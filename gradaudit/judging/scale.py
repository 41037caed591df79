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


def row_and_column_scale(blocks: Sequence[np.ndarray], out_size: int) -> list[np.ndarray] | None:
    """Per first-order block, per entry d out[i]/d x[j] (flat): the largest finite |derivative| in
    its row (out[i] against every input) or its column (every output against x[j]). Forward mode
    computes a column at once and rounds it to its largest entry, reverse mode a row; None where
    the blocks do not split into rows of the output."""
    if not out_size or any(np.size(b) % out_size for b in blocks):
        return None
    with np.errstate(invalid="ignore"):
        matrices = [
            np.nan_to_num(np.abs(np.asarray(b, dtype=np.float64)).reshape(out_size, -1), nan=0.0, posinf=0.0)
            for b in blocks
        ]
    rows = functools.reduce(np.maximum, [m.max(axis=1, initial=0.0) for m in matrices])
    return [np.maximum(rows[:, None], m.max(axis=0, initial=0.0)[None, :]).reshape(-1) for m in matrices]


def beyond_scale(
    got_blocks: Sequence[np.ndarray],
    want_blocks: Sequence[np.ndarray],
    bad: list[np.ndarray | None],
    fd_rtol: float,
    out_size: int,
) -> tuple[list[np.ndarray | None], list[np.ndarray]]:
    """`bad` (AD paths against each other, entry by entry) split into the entries that differ beyond
    the rounding the dtype allows the Jacobian there as a whole, and those within it: an
    ill-conditioned linear-algebra Jacobian's small entries, rounded in forward mode to their
    column's largest and in reverse mode to their row's, part by more than their own size allows,
    by millionths of the whole. Within it: the difference is at most the square root of the dtype's
    epsilon (what a computation of condition up to 1/sqrt(eps) rounds to) times the entry's row and
    column scale (`row_and_column_scale`), a bound finite differences' own absolute tolerance
    (4 sqrt(eps)) is looser than; or at most that times the Jacobian's largest entry while no more
    than finite differences' relative tolerance of the entry itself (a difference they could never
    resolve: a wrong factor, sign or zero is not)."""
    if all(indices is None or not indices.size for indices in bad):
        return bad, []
    condition = math.sqrt(rounding(np.asarray(want_blocks[0]).dtype))
    with np.errstate(invalid="ignore", over="ignore"):
        magnitudes = [np.abs(np.asarray(b, dtype=np.float64)) for b in want_blocks]
        largest = max((float(np.max(m, initial=0.0, where=np.isfinite(m))) for m in magnitudes), default=0.0)
        gaps = [
            np.abs(
                np.asarray(got_blocks[k], dtype=np.float64).reshape(-1)[i]
                - np.asarray(want_blocks[k], dtype=np.float64).reshape(-1)[i]
            )
            for k, i in enumerate(bad)
            if i is not None and i.size
        ]
    if not any(np.any(g <= condition * largest) for g in gaps):  # every gap beyond any scale the Jacobian has
        return bad, []
    scale = row_and_column_scale(want_blocks, out_size)
    if scale is None:
        return bad, []
    conditioned = condition * max((float(s.max(initial=0.0)) for s in scale), default=0.0)
    kept, within = [], []
    for block, indices in enumerate(bad):
        if indices is None or not indices.size:
            kept.append(indices)
            within.append(np.zeros(0, dtype=np.intp))
            continue
        got = np.asarray(got_blocks[block], dtype=np.float64).reshape(-1)[indices]
        want = np.asarray(want_blocks[block], dtype=np.float64).reshape(-1)[indices]
        with np.errstate(invalid="ignore", over="ignore"):
            gap = np.abs(got - want)
            small = (gap <= conditioned) & (gap <= fd_rtol * np.maximum(np.abs(got), np.abs(want)))
            rounded = np.isfinite(got) & np.isfinite(want) & ((gap <= condition * scale[block][indices]) | small)
        kept.append(indices[~rounded])
        within.append(indices[rounded])
    return kept, within
