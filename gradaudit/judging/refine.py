"""Finite differences refined where the usual step saw a kink, before the judge gives up on an entry.

A step can straddle what it should resolve: a layer norm at constant input is smooth, but its
variance term grows like the step squared and reaches the epsilon under the square root within the
usual float32 step, so the one-sided slopes part and every entry looks like a kink; a custom rule
3% wrong there would pass unchecked. For such entries of up to PROBED input elements the judge asks the probe
(`engines/probe.py`) for the slopes at finer steps; where, at two successive finer steps, the
central and both one-sided slopes agree within the tolerance (plus the rounding a difference
quotient at that step can hide) and the central slope holds, that slope is the entry's estimate
and the entry is compared like any other. A smooth function whose curvature is strong for the step
(logsumexp at logits near 1000, where the usual step is relative to the input's size) parts its
one-sided slopes by about f'' h at every step, a gap that shrinks with the step; a kink's holds. So
where the gap shrinks from one finer step to the next (`SHRINKS`), toward nothing when drawn out to a
step of 0, and the central slopes of the two agree, the larger step's central slope is the estimate
too, its rounding smaller than at finer steps. A kink or jump never converges so: it stays a kink.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from gradaudit.model.computed import Probe, Prober
from gradaudit.model.paths import PathResult

PROBED = 16
"""Most input elements probed to refine one scenario's kink entries, and to settle one comparison's `wrong`
ones (`judge`): a probe evaluates the function about 40 times at one element, which gives the slopes of
every output there (the entries of one column; a 3 x 3 matrix has 9 elements)."""
HELD = 0.25
"""A kink's one-sided slopes hold from one finer step to the next within this share of their gap (a jump's
grow like 1 / step, so they change by half of it)."""
ESTIMATES = ("extrapolated", "central", "central_half")
"""Finite-difference estimates an entry's refined central slope replaces."""
RESOLVES = 4.0
"""A step settles nothing where the rounding a difference quotient there can hide is more than this many
times the tolerance: a kink's slopes (truncnorm's cdf at its upper bound: 0.57 and 0) agree within it."""
SHRINKS = 0.5
"""A smooth function's one-sided slopes part by about f'' h, a kink's by the same gap at every step: between
two steps a ratio r apart, a gap that shrinks to at most r ** SHRINKS of itself (the geometric middle of
the two) is read as smooth."""


@dataclass(frozen=True)
class Converged:
    """The slopes at the finer step where they agree and hold."""

    step: float
    usual: float
    central: float
    left: float
    right: float
    spread: float = 0.0
    """How far the central slope at the next finer step is from `central`: what truncation may hide."""
    finer_step: float = 0.0
    finer_gap: float = 0.0
    """The next finer step and how far its one-sided slopes part there."""
    shrinking: bool = False
    """Whether the one-sided slopes part at `step`, by a gap that shrinks with the step (else they agree)."""
    hidden: float = 0.0
    """The rounding a difference quotient at `step` can hide."""


def converged(
    probe: Probe, rtol: float, atol: float, noise: Callable[[float], float], unit: float = 0.0
) -> Converged | None:
    """The largest step below the usual one where the central and one-sided slopes agree, or part by a
    gap that shrinks as a smooth function's does (`SHRINKS`), and the central slope holds at the next
    finer step; `noise(step)`: the rounding a difference quotient at that step can hide; `unit`: the
    value's rounding unit (`rounding_unit`, `rounded_away`). None where no such step
    exists (a kink, a jump)."""
    finer = [i for i, step in enumerate(probe.steps) if step < probe.step]

    def allowed(k: int, centre: float) -> float:
        return atol + rtol * abs(centre) + noise(probe.steps[k])

    def agree(k: int, centre: float) -> bool:
        slopes = (probe.central[k], probe.left[k], probe.right[k])
        if not all(math.isfinite(s) for s in slopes):
            return False
        return max(abs(s - centre) for s in slopes) <= allowed(k, centre)

    def shrinks(i: int, j: int) -> bool:
        slopes = (probe.left[i], probe.right[i], probe.left[j], probe.right[j], probe.central[j])
        if not all(math.isfinite(s) for s in slopes):
            return False
        gap_i, gap_j = abs(probe.right[i] - probe.left[i]), abs(probe.right[j] - probe.left[j])
        ratio = probe.steps[j] / probe.steps[i]
        held = abs(probe.central[j] - probe.central[i]) <= allowed(j, probe.central[i])
        # The gap a step of 0 would leave, were it linear in the step: a smooth function's is 0, a kink's
        # its slopes' parting, even where something nearby parted them more at the larger step.
        at_zero = (gap_j - ratio * gap_i) / (1.0 - ratio)
        return held and gap_j <= ratio**SHRINKS * gap_i and at_zero <= allowed(j, probe.central[i])

    def resolves(k: int) -> bool:
        return noise(probe.steps[k]) <= RESOLVES * (atol + rtol * abs(probe.central[k]))

    for i, j in zip(finer, finer[1:], strict=False):
        if not math.isfinite(probe.central[i]) or not resolves(i):
            continue
        settles = agree(i, probe.central[i]) and agree(j, probe.central[i])
        if not (settles or shrinks(i, j)):
            continue
        flat = [k for k in (i, j) if probe.left[k] == probe.right[k] == 0.0]
        if flat and (
            _kink_held(probe, finer[: finer.index(flat[0])], agree) or rounded_away(probe, probe.steps[flat[0]], unit)
        ):
            return None  # flat only where the function stops resolving the step: the kink above stands
        return Converged(
            probe.steps[i],
            probe.step,
            probe.central[i],
            probe.left[i],
            probe.right[i],
            spread=abs(probe.central[j] - probe.central[i]),
            finer_step=probe.steps[j],
            finer_gap=abs(probe.right[j] - probe.left[j]),
            shrinking=not settles,
            hidden=noise(probe.steps[i]),
        )
    return None


def _kink_held(probe: Probe, coarser: list[int], agree: Callable[[int, float], bool]) -> bool:
    """Whether at two successive steps of `coarser` the one-sided slopes parted and held their values (a
    kink's do as the step shrinks, `abs` at 0 or a norm at the origin; a jump's grow like 1 / step): a
    function flat only at finer steps then rounds the step away (a norm's squares underflow) rather
    than being flat there."""
    for a, b in zip(coarser, coarser[1:], strict=False):
        left, right = (probe.left[a], probe.left[b]), (probe.right[a], probe.right[b])
        if not all(math.isfinite(v) for v in (*left, *right)) or agree(a, probe.central[a]):
            continue
        tolerance = HELD * abs(probe.right[a] - probe.left[a])
        if abs(left[0] - left[1]) <= tolerance and abs(right[0] - right[1]) <= tolerance:
            return True
    return False


ROUNDED = 16
"""The most rounding units (`rounded_away`) the last move before a flat reading may span and still mark the
flat reading as rounding."""


def rounded_away(probe: Probe, flat: float, unit: float) -> bool:
    """Whether the function stopped moving at step `flat` because its moves fell below its rounding: at the
    finest coarser step where it moved, it moved by a whole number (up to ROUNDED) of `unit`, the spacing of
    the floats just below the larger of 1 and the value: a value computed through a number of that size
    (log(1 - P) with P below epsilon moves by 2**-24 in float32) cannot show smaller moves. A jump's last
    move is the jump, a staircase's 0 its derivative, and a function truly flat nearby (relu(x)**2 left
    of 0, whose last move is 1.96e-7) moves by no whole number of units."""
    if unit <= 0.0:
        return False
    moves = [
        max(abs(probe.left[k]), abs(probe.right[k])) * step
        for k, step in enumerate(probe.steps)
        if step > flat and math.isfinite(probe.left[k]) and math.isfinite(probe.right[k])
    ]
    moved = [m for m in moves if m > 0.0]  # the steps run largest first: the last is the finest
    if not moved:
        return False
    units = moved[-1] / unit
    return 0.5 <= units <= ROUNDED + 0.5 and abs(units - round(units)) <= 1e-3


def rounding_unit(epsilon: float, value: float) -> float:
    """The spacing of the floats just below max(1, |value|) in a dtype of `epsilon` (`rounded_away`)."""
    if not math.isfinite(value):
        return 0.0
    return epsilon / 2.0 * 2.0 ** math.floor(math.log2(max(1.0, abs(value))))


def with_relative_steps(probe: Probe) -> Probe | None:
    """The probe's steps above its steps relative to the input's size (`Probe.scaled`), then those: a
    small input's slopes can settle only there, where the usual step outreaches it (eigh of a matrix of
    1e-36), and the coarser steps still show a kink that held above a flat finer region (rounding).
    None where the probe has no relative steps."""
    own = probe.scaled
    if own is None or not own.steps:
        return None
    keep = [k for k, step in enumerate(probe.steps) if step > own.steps[0]]

    def joined(coarser: tuple[float, ...], relative: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(coarser[k] for k in keep) + relative

    return Probe(
        probe.step,
        joined(probe.steps, own.steps),
        joined(probe.central, own.central),
        joined(probe.left, own.left),
        joined(probe.right, own.right),
    )


def _quotient_noise(hidden: float, step: float) -> float:
    return hidden / step


def _side(name: str, slopes: Converged, was: float) -> float:
    return float(getattr(slopes, name))


@dataclass(frozen=True)
class Refined:
    """A reference with refined entries: its arrays and estimates there replaced, kinks cleared."""

    reference: PathResult
    kink: tuple[np.ndarray, ...]
    noise: tuple[np.ndarray, ...] | None
    entries: dict[tuple[int, int], Converged]
    """(block, flat index) -> the slopes that replaced the usual estimate."""
    rtol: float = 0.0
    atol: float = 0.0

    def tolerance(self, slopes: Converged) -> float:
        """The tolerance an entry's refined slope is compared with, rounding apart."""
        return self.atol + self.rtol * abs(slopes.central)


def refined(
    reference: PathResult,
    kink: tuple[np.ndarray, ...],
    noise: tuple[np.ndarray, ...] | None,
    locate: Callable[[int, int], tuple[int, int, int] | None],
    probe: Prober,
    rtol: float,
    atol: float,
    rounding: Callable[[int], float],
    unit: Callable[[int], float] = lambda out: 0.0,
) -> Refined | None:
    """`reference` refined at the kink entries of its first PROBED input elements that converge at a finer step;
    `locate(block, flat)`: the (argument, element, output) the entry differentiates, None where
    the block's layout does not say; `rounding(output)`: the value's rounding there (a difference
    quotient at step s hides up to 4 rounding / s); `unit(output)`: the value's rounding unit there
    (`rounding_unit`), what a value computed through a number of size 1 moves by at least. None where nothing
    converged."""
    entries: dict[tuple[int, int], Converged] = {}
    kinks = [(b, int(f)) for b, mask in enumerate(kink) for f in np.flatnonzero(np.asarray(mask).reshape(-1))]
    elements: set[tuple[int, int]] = set()
    for block, flat in kinks:
        where = locate(block, flat)
        if where is None or (where[:2] not in elements and len(elements) >= PROBED):
            continue
        elements.add(where[:2])
        found = probe(*where)
        if found is None:
            continue
        hidden = 4.0 * rounding(where[2])
        hides = functools.partial(_quotient_noise, hidden)
        relative = with_relative_steps(found)
        slopes = converged(found, rtol, atol, hides, unit(where[2])) or (
            converged(relative, rtol, atol, hides, unit(where[2])) if relative is not None else None
        )
        if slopes is not None:
            entries[block, flat] = slopes
    if not entries:
        return None

    def put(blocks: tuple[np.ndarray, ...], pick: Callable[[Converged, float], float]) -> tuple[np.ndarray, ...]:
        copies = [np.array(b, dtype=np.float64, copy=True) for b in blocks]
        for (block, flat), slopes in entries.items():
            view = copies[block].reshape(-1)
            view[flat] = pick(slopes, float(view[flat]))
        return tuple(copies)

    arrays = put(reference.ok_arrays, lambda s, _: s.central)
    estimates = None
    if reference.estimates is not None:
        estimates = dict(reference.estimates)
        for name in ESTIMATES:
            if name in estimates:
                estimates[name] = put(estimates[name], lambda s, _: s.central)
        for name, side in (("left_half", "left"), ("right_half", "right")):
            if name in estimates:
                estimates[name] = put(estimates[name], functools.partial(_side, side))
    cleared = [np.array(m, dtype=bool, copy=True) for m in kink]
    for block, flat in entries:
        cleared[block].reshape(-1)[flat] = False
    quiet = noise if noise is not None else tuple(np.zeros(np.shape(b)) for b in reference.ok_arrays)
    # A refined entry's noise is what the probe measured at its step: the rounding a quotient there can
    # hide and the spread to the next finer step. The usual step's noise scaled up to the finer step
    # would carry what that step read across the kink (its slope, in the terms' rounding) into the
    # allowance: a rule 114% off beside a bump of height 1e4 passed within 39 on a slope of 0.88.
    louder = put(quiet, lambda s, _: s.hidden + s.spread)
    return Refined(
        reference=replace(reference, arrays=arrays, estimates=estimates),
        kink=tuple(cleared),
        noise=louder,
        entries=entries,
        rtol=rtol,
        atol=atol,
    )
