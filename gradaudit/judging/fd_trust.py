"""Trust in finite differences: what their estimates at several steps can say at each entry.

The rules (docs/judging.md, "Finite differences that know kinks") read only numbers: the central
differences at h, h/2 and CHECK h, the one-sided slopes at h and h/2, the extrapolated estimate,
the value's rounding noise and the rounding the function's larger terms can hide. They work on
flat float64 arrays (one row per case, one column per entry: many cases at once), so a test can
hand them a kink, a pole or an absorbed step directly; the judge (`judge._against`) stacks a
batch's estimates and cuts the masks back into blocks (`Trust`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gradaudit.judging.tolerances import COARSE
from gradaudit.numerics import finite_differences
from gradaudit.numerics.finite_differences import CHECK

Masks = tuple[np.ndarray, ...]
"""One boolean array per derivative block."""

ESTIMATES = tuple(name for name in finite_differences.ESTIMATES if name != "undefined")
"""The estimates the rules read (numerics.finite_differences makes them)."""
SPREAD_ESTIMATES = ("extrapolated", "central", "central_half")
"""The estimates whose spread bounds the derivative where the central estimate moves with the step."""


SETTLED = 0.1
"""A one-sided slope has settled when halving the step changes it by at most this fraction of itself."""
CONVERGING = 0.05
"""A moving central estimate can still be judged when halving the step changes it by at most this
fraction of itself: near a pole a smooth function's estimate moves by a fraction of a percent, where
a step longer than the function's period (aliasing) moves it by tens of percent."""
CANCELLED = 4.0
"""The function's larger terms count in the rounding allowed (`_rounding_of_terms`) where they are
this many times its value's own noise: they cancel to a smaller value, whose noise does not show them."""
UNCHECKED = 10.0
"""Finite differences cannot check an entry whose rounding allowance is this many times the
derivative there (plus the absolute tolerance): a wrong derivative would vanish in it."""
DROWNED = 1.0
"""Finite differences cannot check a function whose rounding allowance is this many times every derivative
it has (plus the absolute tolerance): a rule of zero, or of twice the derivative, would pass within it
(1e4 + x in float32: 2.44 against 1)."""
CHECK_WEIGHT = CHECK**2 * 4 / 3
"""c(CHECK h) = extrapolated + CHECK_WEIGHT (c(h) - c(h/2)) where c(s) = f' + C s^2, as a smooth
function's central differences are."""


@dataclass(frozen=True)
class Trust:
    """Per block, what finite differences can say at each entry.

    kink: the one-sided slopes disagree beyond the tolerance and do not close up as the step halves
    (|right/2 - left/2| > slack and > 0.75 |right - left|): a kink or a jump; or the central
    differences at h, h/2 and CHECK * h do not follow a smooth function's c(s) = f' + C s^2 (the
    third misses what the first two predict by more than the tolerance): a period the steps alias,
    a pole or cusp they reach. Not compared.
    moving: not a kink, but the central estimate moves by more than the tolerance when the step
    halves (near a pole, or strong curvature). Where both one-sided slopes have settled (halving
    the step changes each by at most SETTLED of itself, beyond the tolerance) and the central
    estimate converges (it moved by at most CONVERGING of itself), the point is smooth enough to
    judge: compared, with the tolerance widened by `spread`, the range of the central, half-step
    central and extrapolated estimates (the smooth model c(s) = f' + C s^2 they follow; the one-sided
    slopes' first-order error would let a rule several percent wrong pass), so only AD paths outside
    what every estimate says are findings (an infinite AD value there is not compared: finite
    differences cannot confirm a vertical tangent). Where they have not (a jump or a pole the step
    straddles, a slope that grows as the step shrinks, a period shorter than the step), the entry
    is a kink: not compared.
    undefined: no finite estimate (non-finite inputs or outputs, or a step past the dtype's range).
    absorbed: the function's larger terms cancel there (`_rounding_of_terms` over CANCELLED times
    the value's own noise), and the rounding a difference quotient can hide is UNCHECKED times the
    derivative itself (plus the absolute tolerance), so finite differences cannot tell it from
    zero: the step is lost in them (an FFT of [0, 0, 3e38, 3e38] moves not at all
    when x[0] moves by 0.004), so finite differences cannot check the entry; or that rounding is
    DROWNED times every derivative the AD paths and finite differences give (`drowned_in_rounding`: the value itself
    rounds more than a step moves it). Compared within that rounding, and noted.
    """

    kink: Masks
    moving: Masks
    spread: Masks
    undefined: Masks
    absorbed: Masks = ()
    loose: Masks = ()
    """Compared, but within rounding above COARSE of the derivative there (`loosely_checked`)."""

    @property
    def skipped(self) -> Masks:
        return tuple(k | u for k, u in zip(self.kink, self.undefined, strict=True))


@dataclass(frozen=True)
class Read:
    """Per entry (flat, as the estimates were given): what the rules make of the estimates."""

    kink: np.ndarray
    moves: np.ndarray
    spread: np.ndarray
    noise: np.ndarray
    """The value's rounding noise, plus the larger terms' rounding where it counts (`larger`)."""
    larger: np.ndarray
    """Where the function's larger terms outweigh the value's own noise (they cancel)."""


def read_estimates(
    estimates: Mapping[str, np.ndarray],
    undefined: np.ndarray,
    rtol: np.ndarray | float,
    atol: np.ndarray | float,
    hidden: np.ndarray | None = None,
) -> Read:
    """Kinks, moving estimates, their spread and the noise allowed, from `estimates` (ESTIMATES by
    name, arrays of one shape) where `undefined` is False; `hidden`: the rounding the function's
    larger terms can hide from a difference quotient (None: nothing to add). See `Trust`."""
    e = estimates
    noise = e["noise"]
    larger = np.zeros(noise.shape, dtype=bool) if hidden is None else hidden > CANCELLED * noise
    if hidden is not None:
        noise = noise + np.where(larger, hidden, 0.0)
    defined = ~undefined
    with np.errstate(invalid="ignore", over="ignore"):
        left, right, left_half, right_half = e["left"], e["right"], e["left_half"], e["right_half"]
        central, central_half, central_check = e["central"], e["central_half"], e["central_check"]
        gap = np.abs(right - left)
        gap_half = np.abs(right_half - left_half)
        slack = atol + rtol * np.maximum(np.abs(left), np.abs(right)) + 4 * noise
        kink = (gap_half > slack) & (gap_half > 0.75 * gap)
        scale = np.maximum(np.maximum(np.abs(central), np.abs(central_half)), np.abs(central_check))
        predicted = e["extrapolated"] + CHECK_WEIGHT * (central - central_half)
        kink |= np.abs(central_check - predicted) > atol + rtol * scale + 4 * noise
        moved = np.abs(central_half - central)
        moves = moved > atol + rtol * scale
        settled = (np.abs(left - left_half) <= SETTLED * np.abs(left_half) + slack) & (
            np.abs(right - right_half) <= SETTLED * np.abs(right_half) + slack
        )
        converging = moved <= CONVERGING * np.abs(central_half)
        # A central estimate that moves by no more than rounding shows no pole or jump: one-sided slopes
        # that have not settled there are a smooth function's curvature, strong for the step.
        beyond_rounding = moved > atol + rtol * scale + noise
        kink = (kink | (moves & beyond_rounding & ~(settled & converging))) & defined
        moves = moves & ~kink & defined
        spreading = [e[name] for name in SPREAD_ESTIMATES]
        spread = np.nan_to_num(
            functools.reduce(np.maximum, spreading) - functools.reduce(np.minimum, spreading),
            nan=np.inf,
            posinf=np.inf,
        )
    return Read(kink=kink, moves=moves, spread=spread, noise=noise, larger=larger)


def absorbed_by_rounding(
    larger: np.ndarray, allowance: np.ndarray, largest: np.ndarray, atol: np.ndarray | float
) -> np.ndarray:
    """Where the rounding a difference quotient can hide (`allowance`, with the larger terms'
    rounding counted: `larger`) is UNCHECKED times the derivative itself (`largest`: any path's or
    the reference's, NaN where none is finite) and the absolute tolerance: finite differences
    cannot tell a wrong derivative there from zero."""
    with np.errstate(invalid="ignore", over="ignore"):
        return larger & (allowance > UNCHECKED * (atol + np.nan_to_num(largest, nan=0.0)))


def drowned_in_rounding(allowance: np.ndarray, derivatives: np.ndarray, atol: np.ndarray | float) -> np.ndarray:
    """Where the rounding a difference quotient can hide (`allowance`) is DROWNED times every
    derivative the AD paths and finite differences give (`derivatives`: their largest finite |entry|, a
    column per case)
    and the absolute tolerance: the function's value rounds more than its steps move it (1000 +
    1e-4 sin x in float32), so finite differences cannot tell any of its derivatives from zero."""
    with np.errstate(invalid="ignore", over="ignore"):
        return allowance > DROWNED * (atol + derivatives)


def loosely_checked(
    allowance: np.ndarray, largest: np.ndarray, rtol: np.ndarray | float, atol: np.ndarray | float
) -> np.ndarray:
    """Where the rounding a difference quotient can hide (`allowance`) is more than COARSE of the derivative
    (`largest`: any path's or the reference's |entry|, NaN where none is finite) plus the absolute tolerance,
    under a relative tolerance below COARSE: the tolerance says a few percent, the rounding lets more pass
    (1e7 + 3000 relu(x) in float32: 2,441 on a slope of 3,000), and nothing else says so. An entry every
    path and finite differences give as 0 is not: a wrong rule there, or a derivative rounding hides, shows
    as a number on some side."""
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.nan_to_num(largest, nan=0.0)
        return (np.asarray(rtol) < COARSE) & (scale > 0) & (allowance > COARSE * scale + atol)


def hidden_by_tolerance(
    allowance: np.ndarray, largest: np.ndarray, rtol: np.ndarray | float, rounded: np.ndarray | float
) -> np.ndarray:
    """Where the rounding a difference quotient can hide (`allowance`) is more than COARSE of the derivative
    (`largest`, as `loosely_checked`'s) though within the absolute tolerance, at an entry above AD's rounding
    there (`rounded`): a rule a few percent off the slope of an entry 1e-4 the size of a scalar loss hides in
    float32's rounding of the loss (7.2e-5 on a slope of 8e-5) and nothing said so. Noted as loosely checked
    (a finer dtype can check it); an entry near 0 (AD's rounding of terms that cancel) is left to the absolute
    tolerance."""
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.nan_to_num(largest, nan=0.0)
        return (np.asarray(rtol) < COARSE) & (scale > rounded) & (allowance > COARSE * scale)


def passed_by_absolute(
    paths: Sequence[np.ndarray],
    reference: np.ndarray,
    error: np.ndarray,
    excluded: np.ndarray,
    rtol: np.ndarray | float,
    atol: np.ndarray | float,
    rounded: np.ndarray | float,
) -> np.ndarray:
    """Per case (a row of cases alike, entries flat: `paths`, each an AD path's, and `reference`, finite
    differences'), how many first-order entries some AD path agrees with finite differences at only by the
    absolute tolerance: its gap from them more than the relative tolerance of the entry plus their own
    `error` there and more than `rounded` (AD's rounding: `scale.RESOLUTION` epsilons of the function's scale; an exact
    0 of poly at 1e9 reads 1e-12), at entries not `excluded` (kinks, no estimate, a step lost in rounding).
    The absolute tolerance is taken at the function's scale (AD's rounding of terms that cancel), which
    lets a rule twice the slope of an entry 1e-4 the size of the rest pass; a finer dtype can check them."""
    passed = np.zeros(reference.shape, dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        relative = rtol * np.abs(reference)
        beyond = np.maximum(relative + error, rounded)
        for got in paths:
            gap = np.abs(got - reference)
            passed |= (gap <= atol + relative) & (gap > beyond) & ~excluded
    return np.count_nonzero(passed, axis=1)
