"""What kind of wrong a disagreeing entry is, decided at that entry from the evidence there.

The judge finds the entries where two paths disagree; this module says, entry by entry, which class
each belongs to (`FindingClass`), never from the scenario as a whole: one NaN input elsewhere does
not excuse a wrong derivative at an entry whose own numbers are all finite. In order of precedence:

- `non-finite`: the entry's own input or output element is not finite, finite differences put its
  derivative beyond the dtype's range, or a non-finite value meets an entry at the edge of the
  dtype's range (a step past it leaves no finite-difference estimate);
- `leak`: the entry's own input and output are finite, one side is NaN or inf where the other is a
  number, and an input element elsewhere is not finite (a masked `-inf` logit, a NaN row masked out)
  or an equation inside the function gives inf or NaN from finite operands (`sqrt` of a negative
  number that `jnp.where` then discards; not inside a custom rule, evaluated whole);
- `non-finite` again: such a split, at an entry finite differences see no kink at (below) and some AD
  path gives a number at, where another entry of its row or column holds a derivative every AD path finds
  infinite or NaN (0 × inf: `1/x` at `[0, 1]` has jacrev NaN at d out[1]/d x[0], beside d out[0]/d x[0] =
  -inf);
- `non-differentiable`: finite differences see a kink or jump there (one-sided slopes disagree) and
  the AD side lies between the one-sided slopes, as a subgradient does (`between_slopes`): a
  derivative outside them is wrong at a kink too, and a 'kink' that is rounding noise in the
  slopes does not excuse it;
- `eager-jit`: the split is between a path and its own eager/jit or binding twin;
- `wrong`: everything else: a derivative that disagrees where the function is smooth and finite.

Each class comes with its reason in words, with the numbers that decided it (`Evidence.reason`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from gradaudit.judging.refine import rounded_away, rounding_unit, with_relative_steps
from gradaudit.judging.wording import index_text
from gradaudit.model.computed import Probe
from gradaudit.model.findings import FindingClass
from gradaudit.model.mechanisms import CONVENTIONS

WRONG, EAGER_JIT, LEAK = FindingClass.WRONG, FindingClass.EAGER_JIT, FindingClass.LEAK
NON_FINITE, NON_DIFFERENTIABLE = FindingClass.NON_FINITE, FindingClass.NON_DIFFERENTIABLE

SHOWN_INPUT = 8
"""An input of at most this many elements is shown whole in a reason; a larger one by its entry."""


def _number(value: float) -> str:
    return f"{value:.4g}"


@dataclass(frozen=True)
class Surroundings:
    """A case's numbers, for classifying its entries: the differentiated inputs and the value."""

    inputs: tuple[np.ndarray, ...]
    output: np.ndarray
    arg_names: tuple[str, ...]
    largest: float = math.inf
    """The largest finite number of the derivatives' dtype: beyond it a derivative overflows."""
    rounding: float = 0.0
    """The spacing of the output dtype's numbers near 1 (its epsilon)."""
    output_finite: np.ndarray | None = None
    """Where some value path (eager or jit, any binding) gives a finite output: an element only one
    of them finds infinite is an eager/jit split, not a non-finite output. None: `output`'s own."""
    inside_of: Callable[[], str | None] | None = None
    """The primitive of the function's first equation that gives inf or NaN from finite operands
    (`mechanisms.non_finite_inside`), evaluated only when asked; None: not known."""

    @cached_property
    def inside(self) -> str | None:
        """`inside_of`'s answer: where a NaN or inf is born inside the function, or None."""
        return None if self.inside_of is None else self.inside_of()

    @cached_property
    def finite_output(self) -> np.ndarray:
        """Flat: the output elements some value path finds finite."""
        with np.errstate(invalid="ignore"):
            own = np.isfinite(self.output).reshape(-1)
        return own if self.output_finite is None else own | np.asarray(self.output_finite, bool).reshape(-1)

    @cached_property
    def all_finite(self) -> bool:
        """Whether every input and output element is finite: then only the compared numbers decide."""
        with np.errstate(invalid="ignore"):
            return bool(np.isfinite(self.output).all()) and all(
                bool(np.isfinite(np.asarray(a, dtype=np.float64)).all()) for a in self.inputs
            )

    @cached_property
    def elsewhere(self) -> str | None:
        """The first input element that is not finite, named with its value; None: all finite."""
        with np.errstate(invalid="ignore"):
            for name, array in zip(self.arg_names, self.inputs, strict=False):
                hits = np.flatnonzero(~np.isfinite(np.asarray(array, dtype=np.float64)))
                if hits.size:
                    return (
                        f"{name}{index_text(np.shape(array), int(hits[0]))} = "
                        f"{_number(float(np.asarray(array).reshape(-1)[hits[0]]))}"
                    )
        return None

    def own(
        self, block: int, order: int, flat: np.ndarray, block_size: int
    ) -> tuple[np.ndarray, list[tuple[int, np.ndarray]]]:
        """Per entry of a derivative block (flat indices), its output element and its input elements
        as (argument, flat element) pairs; none where the block's layout does not match the inputs."""
        out_size = max(1, int(self.output.size))
        if order == 0:
            return flat, []
        in_size = max(1, block_size // out_size)
        element = flat // in_size
        rest = flat % in_size
        count = len(self.inputs)
        if order == 1 and block < count and np.size(self.inputs[block]) == in_size:
            return element, [(block, rest)]
        if order == 2 and count and block < count * count:
            first, second = divmod(block, count)
            size = np.size(self.inputs[second])
            if np.size(self.inputs[first]) * size == in_size:
                return element, [(first, rest // max(1, size)), (second, rest % max(1, size))]
        return element, []


SUBGRADIENT_MARGIN = 0.25
"""How far outside the one-sided slopes, as a share of their gap, a derivative still counts as between
them: a kink's one-sided estimates at a finite step bend towards each other."""
DIVERGING = 1.5
"""One-sided slopes whose gap grows by more than this factor as the step halves diverge: a jump's or a
crossed pole's gap doubles, a kink's holds and curvature's halves."""
BANDED = 0.25
"""One-sided slopes at a step and at twice it that all share a sign and lie within this share of the
smallest of them bound AD whether or not their gap grew: a jump's or a pole's slopes grow like 1 / step
(at least doubling between the two steps), while noise of the function's own (an iterative solver's
tolerance) parts them by a little that doubles as the step halves, around a slope that holds."""


def between_slopes(got, left, right, coarser=None):
    """Whether `got` lies between the one-sided slopes `left` and `right` (arrays or floats), give or
    take SUBGRADIENT_MARGIN of their gap: at a kink AD may answer any subgradient (relu's 0 at 0,
    abs's 0), but nothing outside them. `coarser`: the one-sided slopes at twice the step; where their
    gap grew as the step halved (DIVERGING), the entry is a jump or a pole the step crossed, whose
    slopes bound nothing (1/x next to 0 is steeper than either), and nothing is excluded, unless all four slopes
    share a sign and lie within BANDED of each other (an iterative solver's noise: optimistix's BFGS argmin reads
    0.684 and 0.688 at the half step, 0.689 and 0.688 at the usual one, and a sign-flipped rule's -0.688 is
    outside them); nor where the slopes are
    equal (the entry was judged a kink for estimates that do not settle) or one is NaN or inf. A NaN or
    infinite `got` between slopes that do bound is outside them: AD has no number at the kink."""
    with np.errstate(invalid="ignore", over="ignore"):
        got, left, right = (np.asarray(v, dtype=np.float64) for v in (got, left, right))
        low, high = np.minimum(left, right), np.maximum(left, right)
        margin = SUBGRADIENT_MARGIN * (high - low)
        inside = (got >= low - margin) & (got <= high + margin)
        gap = high - low
        bounded = np.isfinite(left) & np.isfinite(right) & (gap > 0)
        if coarser is not None:
            wide_left, wide_right = (np.asarray(v, dtype=np.float64) for v in coarser)
            slopes = np.stack(np.broadcast_arrays(left, right, wide_left, wide_right))
            smallest = np.min(np.abs(slopes), axis=0)
            same_sign = np.all(slopes > 0, axis=0) | np.all(slopes < 0, axis=0)
            banded = same_sign & (np.max(slopes, axis=0) - np.min(slopes, axis=0) <= BANDED * smallest)
            bounded &= (gap <= DIVERGING * np.abs(wide_right - wide_left)) | banded
        return inside | ~bounded


@dataclass(frozen=True)
class Reference:
    """What finite differences said at each entry of one family's blocks (the judge's `Trust`)."""

    kink: tuple[np.ndarray, ...]
    undefined: tuple[np.ndarray, ...]
    estimates: dict[str, tuple[np.ndarray, ...]] = field(default_factory=dict)
    """`left_half`, `right_half`, `left`, `right` and `extrapolated` per block, where the reference has them."""

    def between(self, block: int, flat: np.ndarray, got: np.ndarray) -> np.ndarray:
        """Per entry `flat` of `block`, whether `got` lies between the one-sided slopes at half the
        usual step, as they held from the usual step (`between_slopes`); True where the reference has no
        one-sided slopes."""
        named = [self.estimates.get(name) for name in ("left_half", "right_half", "left", "right")]
        if any(arrays is None for arrays in named):
            return np.ones(np.shape(flat), bool)
        left, right, wide_left, wide_right = (
            np.asarray(arrays[block], dtype=np.float64).reshape(-1)[flat] for arrays in named if arrays is not None
        )
        return between_slopes(got, left, right, (wide_left, wide_right))

    def kink_at(self, block: int, flat: np.ndarray, got: np.ndarray, non_finite_too: bool = False) -> np.ndarray:
        """Per entry `flat` of `block`, whether finite differences found a kink there and `got` lies between its
        one-sided slopes (`between`; with `non_finite_too`, or is not finite). The slopes are read only at kinks:
        most comparisons have none."""
        kink = np.asarray(self.kink[block]).reshape(-1)[flat]
        if not kink.any():
            return kink
        at = np.flatnonzero(kink)
        inside = self.between(block, flat[at], got[at])
        if non_finite_too:
            inside = inside | ~np.isfinite(got[at])
        kink[at] = inside
        return kink

    def at(self, name: str, block: int, flat: int) -> float | None:
        arrays = self.estimates.get(name)
        return None if arrays is None else float(np.asarray(arrays[block], dtype=np.float64).reshape(-1)[flat])


@dataclass(frozen=True)
class Entries:
    """The disagreeing entries of one comparison in one block, and their classes."""

    flat: np.ndarray
    classes: np.ndarray
    """One `FindingClass` value (a str) per entry."""


def classify(
    surroundings: Surroundings,
    reference: Reference | None,
    block: int,
    order: int,
    block_size: int,
    flat: np.ndarray,
    got: np.ndarray,
    want: np.ndarray,
    twins: bool | np.ndarray,
    crossing: np.ndarray | None = None,
) -> np.ndarray:
    """The class of each disagreeing entry `flat` of `block`, where one side gave `got` and the
    other `want` (float64, one value per entry); `twins`: the sides are a path and its own eager/jit
    or binding twin (per entry, where a twin gives another number there); `crossing`: the block's entries
    whose row or column holds a derivative every AD path finds non-finite (`crossing_non_finite`). See the
    module's docstring for the order of precedence."""
    flat = np.asarray(flat, dtype=np.intp)
    if surroundings.all_finite:
        # Nothing non-finite around the entries: a non-finite or out-of-range number compared is all that can make one
        # non-finite.
        with np.errstate(invalid="ignore", over="ignore"):
            plain = bool(
                np.isfinite(got).all()
                and np.isfinite(want).all()
                and (np.abs(got) <= surroundings.largest).all()
                and (np.abs(want) <= surroundings.largest).all()
            )
        if plain:
            classes = np.full(flat.shape, WRONG.value, dtype=object)
            classes[twins] = EAGER_JIT.value
            if reference is not None:
                undefined = np.asarray(reference.undefined[block]).reshape(-1)[flat]
                kink = reference.kink_at(block, flat, got)
                classes[kink] = NON_DIFFERENTIABLE.value
                extrapolated = reference.estimates.get("extrapolated")
                if extrapolated is not None:
                    estimate = np.asarray(extrapolated[block], dtype=np.float64).reshape(-1)[flat]
                    with np.errstate(invalid="ignore", over="ignore"):
                        classes[~undefined & np.isfinite(estimate) & (np.abs(estimate) > surroundings.largest)] = (
                            NON_FINITE.value
                        )
            return classes
    element, own_inputs = surroundings.own(block, order, flat, block_size)
    with np.errstate(invalid="ignore", over="ignore"):
        own_finite = surroundings.finite_output[element] if surroundings.output.size else np.ones(flat.shape, bool)
        for argument, elements in own_inputs:
            own_finite &= np.isfinite(np.asarray(surroundings.inputs[argument], dtype=np.float64).reshape(-1)[elements])
        one_sided = np.isfinite(got) != np.isfinite(want)
        beyond = np.zeros(flat.shape, bool)
        for side in (got, want):
            beyond |= np.isfinite(side) & (np.abs(side) > surroundings.largest)
        undefined = kink = np.zeros(flat.shape, bool)
        if reference is not None:
            undefined = np.asarray(reference.undefined[block]).reshape(-1)[flat]
            kink = reference.kink_at(block, flat, got, non_finite_too=True)
            extrapolated = reference.estimates.get("extrapolated")
            if extrapolated is not None:
                estimate = np.asarray(extrapolated[block], dtype=np.float64).reshape(-1)[flat]
                beyond |= ~undefined & np.isfinite(estimate) & (np.abs(estimate) > surroundings.largest)
    classes = np.full(flat.shape, WRONG.value, dtype=object)
    classes[twins] = EAGER_JIT.value
    classes[kink] = NON_DIFFERENTIABLE.value
    non_finite = ~own_finite | beyond | (one_sided & undefined)
    if crossing is not None:
        # another entry's non-finite derivative explains no entry whose own slopes show a kink
        non_finite |= one_sided & np.asarray(crossing).reshape(-1)[flat] & ~kink
    leaks = one_sided & ~non_finite
    # A NaN born inside the function in one of a path and its eager/jit twin is that split itself.
    # Where it is asked (the function evaluated equation by equation) only when some entry could be a leak.
    if surroundings.elsewhere is None:
        # entry by entry: only where the sides are not a path and its twin giving two answers
        leaks &= ~np.broadcast_to(np.asarray(twins, dtype=bool), leaks.shape)
    if leaks.any() and (surroundings.elsewhere is not None or surroundings.inside is not None):
        classes[leaks] = LEAK.value
    classes[non_finite] = NON_FINITE.value
    return classes


def crossing_non_finite(blocks: Sequence[Sequence[np.ndarray]], output_size: int) -> tuple[np.ndarray, ...]:
    """Per first-order block (output elements × one input's elements), the entries whose row (the
    same output element, in any block) or column (the same input element) holds, at another entry, a
    derivative every one of the paths `blocks` (each a path's blocks) finds infinite or NaN: where a
    zero tangent or cotangent times it makes NaN in the mode that multiplies it in (0 × inf, 0 × NaN),
    and the other mode gives a number. A non-finite number only some paths give is itself a split, and
    crosses nothing; an entry every path gives as non-finite is crossed by nothing (an infinite or NaN
    rule where finite differences find a number is wrong, and two such entries do not excuse each other)."""
    if not blocks or not blocks[0]:
        return ()
    shapes = [np.shape(b) for b in blocks[0]]
    with np.errstate(invalid="ignore"):
        non_finite = [
            np.ones((output_size, max(1, int(np.prod(shape, dtype=np.int64)) // max(1, output_size))), bool)
            for shape in shapes
        ]
        for path in blocks:
            for k, block in enumerate(path):
                non_finite[k] &= ~np.isfinite(np.asarray(block, dtype=np.float64)).reshape(non_finite[k].shape)
    rows = np.logical_or.reduce([np.any(m, axis=1) for m in non_finite])
    return tuple(
        ((rows[:, None] | np.any(m, axis=0)[None, :]) & ~m).reshape(shape)
        for m, shape in zip(non_finite, shapes, strict=True)
    )


def explain(
    finding_class: FindingClass,
    surroundings: Surroundings,
    reference: Reference | None,
    block: int,
    order: int,
    block_size: int,
    flat: int,
    values: tuple[float, float],
    crossed: bool = False,
) -> tuple[str, dict[str, float]]:
    """Why the entry `flat` of `block` has `finding_class`, in words with its numbers, and those
    numbers by name: the entry's inputs and output, and finite differences' estimates there.
    `values`: what the two sides gave there (the finding's message says which gave what, so the
    reason does not repeat it); `crossed`: a non-finite derivative shares the entry's row or column."""
    element, own_inputs = surroundings.own(block, order, np.asarray([flat]), block_size)
    evidence: dict[str, float] = {}
    shown = []
    seen: set[tuple[int, int]] = set()
    for argument, elements in own_inputs:
        if (argument, int(elements[0])) in seen:
            continue  # a second derivative by the same element twice (a Hessian's diagonal) names it once
        seen.add((argument, int(elements[0])))
        array = np.asarray(surroundings.inputs[argument])
        name = surroundings.arg_names[argument] if argument < len(surroundings.arg_names) else f"x{argument}"
        value = float(array.reshape(-1)[int(elements[0])])
        where = index_text(array.shape, int(elements[0]))
        evidence[f"input {name}{where}"] = value
        whole = (
            f" (all of {name}: [{', '.join(_number(v) for v in array.reshape(-1).tolist())}])"
            if 1 < array.size <= SHOWN_INPUT
            else ""
        )
        shown.append(f"{name}{where} = {_number(value)}{whole}")
    if surroundings.output.size:
        out = int(element[0])
        where, output = index_text(surroundings.output.shape, out), float(surroundings.output.reshape(-1)[out])
        evidence[f"output out{where}"] = output
        shown.append(f"out{where} = {_number(output)}")
    at = "; ".join(shown)
    estimates = ""
    if reference is not None and reference.estimates:
        left, right, extrapolated = (
            reference.at(name, block, flat) for name in ("left_half", "right_half", "extrapolated")
        )
        if extrapolated is not None and left is not None and right is not None:
            evidence.update({"finite_difference": extrapolated, "slope_left": left, "slope_right": right})
            estimates = (
                f"finite differences {_number(extrapolated)} (slope {_number(left)} from the left, {_number(right)} "
                "from the right)"
            )
    if finding_class == NON_FINITE:
        if any(not math.isfinite(v) for k, v in evidence.items() if k.startswith(("input", "output"))):
            why = f"not finite at the entry ({at})"
        elif not all(math.isfinite(v) for v in values) and crossed:
            why = (
                "a derivative every AD path finds infinite or NaN elsewhere in the entry's row or column: a zero "
                f"tangent or cotangent times it is NaN (0 × inf) ({at})"
            )
        elif any(
            math.isfinite(v) and abs(v) > surroundings.largest
            for v in (*values, evidence.get("finite_difference", 0.0))
        ):
            numbers = f"{at}; {estimates}" if estimates else at
            why = f"the derivative is beyond the dtype's largest value {surroundings.largest:.4g} ({numbers})"
        else:
            why = f"at the edge of the dtype's range: a step there leaves it, so no finite difference checks it ({at})"
        return why, evidence
    if finding_class == LEAK:
        born = (
            f"{surroundings.elsewhere} elsewhere"
            if surroundings.elsewhere is not None
            else f"`{surroundings.inside}` inside the function gives inf or NaN from finite operands at these inputs"
        )
        return f"inputs and output finite at the entry ({at}), but {born}", evidence
    if finding_class == NON_DIFFERENTIABLE:
        return f"no derivative at this point ({at}): {estimates or 'the one-sided slopes disagree'}", evidence
    if finding_class == EAGER_JIT:
        return f"one transform, two answers ({at})", evidence
    smooth = f"; {estimates}, both sides agree" if estimates else ""
    return f"inputs and output finite ({at}){smooth}", evidence


def ranked(classes: Sequence[str]) -> list[FindingClass]:
    """The distinct classes among `classes`, most severe first."""
    present = set(classes)
    return [c for c, value in _SEVERITY if value in present]


_SEVERITY = tuple((c, c.value) for c in FindingClass)


FINER_AGREES = "finer-steps-agree"
"""Not a class: an entry finite differences at the usual step cannot judge, where finer steps agree
with the AD paths (its step spans the function's periods or steps). A note, not a finding."""
UNRESOLVED = "unresolved"
"""A `settle` outcome: no step finite differences can take resolves a slope (a note: gradaudit cannot judge)."""
BY_DESIGN = "by-design"
"""A `settle` outcome: the AD paths give a derivative JAX defines by convention (floor's zero), where
finite differences see the float function's own (a note: what the function asks of AD, not a defect)."""
UNRESOLVED_SHARE = 0.01
"""The function changes over one of the three finest steps that move x by at least this share of its
largest change over any step the probe takes (and by more than its rounding), and their slopes
disagree: its variation is finer than the dtype's spacing of x (sin at 1e12 in float32). A smooth
function's change shrinks with the step (the finest steps are many powers of two below the widest),
and a slope the finest steps resolve is the same at each."""

SETTLED_SPREAD = 1e-3
"""Finer steps settle on a slope where two successive ones agree within this share of it (see `_settled`)."""
NOISE_ROUNDING = 64.0
"""Finer steps' noise is rounding where the value it shows (`_settled`) is at most this many epsilons of the
larger of the output and the input times the settled slope: a jump's step is not (floor_divide by 1.2e-38
at 0 changes by 1 where both are 0), nor is a feature of that size, which finite differences judge."""
NOISE_DIP = 0.25
"""Rounding's noise in successive finer slopes: a pair's spread at least this share of the coarser pair's."""

COARSE_AGREES = 0.1
"""A staircase's slope over the largest probed step is within this fraction of the AD paths'."""


@dataclass(frozen=True)
class Settled:
    """What a probe (`model.computed.Probe`) showed at an entry the AD paths agree on against
    finite differences: its outcome (a FindingClass value, or FINER_AGREES) and why, with the numbers."""

    outcome: str
    reason: str


def _crossed_kink(probe: Probe, close: Callable[[float, float, float], bool]) -> tuple[float, float] | None:
    """The one-sided slopes at the usual step where they part there and at the next finer step by at
    least half as much (a kink's or an edge's gap holds or grows as the step shrinks; curvature's
    shrinks with it); None where they agree, shrink, are not finite, or the probe lacks those steps."""
    at = [k for k, step in enumerate(probe.steps) if step == probe.step]
    if not at or at[0] + 1 >= len(probe.steps):
        return None
    usual, finer = at[0], at[0] + 1
    gaps = []
    for k in (usual, finer):
        left, right = probe.left[k], probe.right[k]
        if not (math.isfinite(left) and math.isfinite(right)) or close(left, right, probe.steps[k]):
            return None
        gaps.append(abs(right - left))
    return (probe.left[usual], probe.right[usual]) if gaps[1] >= 0.5 * gaps[0] else None


def _settles_away_from_zero(
    probe: Probe, close: Callable[[float, float, float], bool], resolved: Callable[[float, float], bool]
) -> bool:
    """Whether the one-sided slopes on the side that moves the (nonzero) input away from 0 (its steps
    cross no kink at 0) agree at two successive steps up to the usual one, each slope one its step's
    rounding leaves resolved (`resolved(step, slope)`: the rounding at most half the slope): a slope
    finite differences resolve there (1F1 in a next to a = 0). Slopes whose rounding is their own size
    agree within their noise whatever they are: a power cusp's, growing toward it (gamma.sf at 1e-10),
    settle on nothing. (Rounding within half the tolerance would be too strict: at an output of 1 in
    float32 no step below the usual one passes, and every wrong rule beside a kink at 0 went unjudged.)"""
    side = probe.right if probe.x > 0 else probe.left
    moved = [
        (step, slope)
        for step, slope in zip(probe.steps, side, strict=True)
        if step <= probe.step and math.isfinite(slope) and resolved(step, slope)
    ]
    return any(close(a, b, step) for (_, a), (step, b) in zip(moved, moved[1:], strict=False))


def _settled(finer: Sequence[tuple[float, float]]) -> tuple[int, float, float] | None:
    """Where finer steps' central slopes `finer` ((step, slope), coarsest first) settle: scanning the
    spreads of successive pairs from the finest up, past those that are noise (rounding's noise, also an
    intermediate's that the output's own rounding does not show, sin of pi x at 3.1e6 in sinc at 1e6:
    its spread grows 16-fold a step as the step shrinks, so each is at least NOISE_DIP of the coarser
    pair's, dips included), the first pair whose coarser neighbour parts by more (the step's truncation
    above it), if it is within SETTLED_SPREAD of its slopes: (index of its coarser step, spread, noise),
    noise the largest a finer pair's spread times its finer step shows of the value's rounding (two
    slopes' noise may part by less than each carries: a slope at step s carries about noise / s). None
    where that pair is not: a slope that settles only at coarser steps, beside finer ones converging on
    another, is an average over a finer feature, not the derivative (`settle` also asks that the noise be
    rounding's size)."""
    spreads = [abs(a - b) for (_, a), (_, b) in zip(finer, finer[1:], strict=False)]
    for k in range(len(spreads) - 1, -1, -1):
        if not math.isfinite(spreads[k]):
            return None
        if k == 0 or spreads[k] < NOISE_DIP * spreads[k - 1]:
            size = max(abs(finer[k][1]), abs(finer[k + 1][1]))
            noise = max((spreads[j] * finer[j + 1][0] for j in range(k + 1, len(spreads))), default=0.0)
            return (k, spreads[k], noise) if spreads[k] <= SETTLED_SPREAD * size else None
    return None


def _still(probe: Probe) -> tuple[float, float] | None:
    """(widest, finest) step of the probe where every finite one-sided slope at every step is exactly 0,
    both sides finite at the usual step; None where anything moves."""
    finite = [
        (step, slope)
        for step, left, right in zip(probe.steps, probe.left, probe.right, strict=True)
        for slope in (left, right)
        if math.isfinite(slope)
    ]
    usual = [k for k, step in enumerate(probe.steps) if step == probe.step]
    if not usual or not all(math.isfinite(side[usual[0]]) for side in (probe.left, probe.right)):
        return None
    if any(slope != 0 for _, slope in finite):
        return None
    return max(step for step, _ in finite), min(step for step, _ in finite)


def settle(
    probe: Probe,
    got: float,
    want: float,
    predicted: float | None,
    rtol: float,
    atol: float,
    rounding_at: float,
    followed: float | None = None,
    epsilon: float = 0.0,
    final: bool = True,
) -> Settled | None:
    """The outcome at an entry where every AD path gives `got` and finite differences at the usual
    step `want`, from the `probe` there; None: the probe changes nothing (the entry stays `wrong`).
    `predicted`: the sum of finite differences' partial slopes over the tied inputs (the slope a
    derivative would give along their diagonal); `rounding_at`: 4 eps |out[i]|, the rounding of
    the function's value there, so a step s carries noise rounding_at / s; `followed`: the AD
    side's partial derivatives summed over the tied inputs (None: not known); `epsilon`: the output
    dtype's; `final`: no wider dtype will referee (the judge passes it for float64 only): the two rules
    that leave an entry unjudged because finite differences cannot resolve it apply only then, and
    otherwise the entry stays `wrong` for the float64 referee, whose own judge applies them where float64
    cannot resolve it either (a function that cannot run in float64 keeps it `wrong`, the referee's
    reason saying why). In order:

    - a tie: moving the tied inputs together moves out[i] at a slope their partial slopes do not
      sum to: no derivative exists (sort, median, top_k at equal inputs): `non-differentiable`,
      where the AD side's partials sum to that slope (any of a tie's one-sided choices does);
      where they do not, the AD side is wrong along the tie as well;
    - steps relative to the input's size, where the usual step (absolute for small inputs) outreaches
      every element of it (eigh of a matrix of 1e-36): where the slopes at two of them agree, that
      slope decides: FINER_AGREES where the AD paths give it, else the entry stays `wrong`;
    - where no two of those resolve a slope (the output moves by less than its rounding, or a step leaves
      the normal numbers), the usual step crosses a kink near a nonzero input (a power cusp or a
      support's edge at 0 next to 1e-38: one-sided slopes that part at h and as much at h / 16, where
      curvature's gap shrinks 16-fold), and the steps away from 0 settle on no slope: UNRESOLVED, a note;
    - finer steps settle where the usual step did not (`_settled`: scanning up from the finest past
      rounding's noise, also an intermediate's the output's own rounding does not show) on the AD paths'
      slope, within their spread and the noise the finer steps show: the usual step spans the function's
      periods or features (sinc at 1e6 in float64, period 2; sin(x) + 1e-9 sin(1e9 x)): FINER_AGREES, a note;
    - a jump at a finer step, where finer steps settle on no slope: the one-sided slopes part at the two
      finest steps finite differences can resolve, and do not close up (floor_divide at a multiple of a
      tiny divisor; not the wiggle above, whose settled slope is a derivative);
    - the two finest resolved steps agree with the AD paths: FINER_AGREES, a note (fmod by a subnormal
      divisor);
    - no step resolves a slope (`final` only): the function changes over the finest steps that move the
      input as much as over the usual one (sin at 1e12 in float32, where float64 resolves it: its run
      decides): UNRESOLVED, a note;
    - nothing moves (`final` only): the output is the same at every step the probe takes, from the widest
      to the finest, where the AD paths' slope would move it over the widest by less than `epsilon` times
      the larger of 1 and the input: a value computed through a number of that size (1 - p for a
      probability near 1: beta.logsf at a = 100) cannot show the change, whether or not the function
      makes it: UNRESOLVED, a note;
    - a sign flip along the input: some output element (out[i] or another) is its own value negated at
      every step from the usual one down to a 4096th of it (`model.computed.Flip`: a singular vector
      LAPACK returns with the other sign at x + h), and finite differences give the AD paths' value
      negated: `non-differentiable` (another output's flip or jump alone excuses no entry);
    - a convention: with each primitive whose JAX derivative is a convention (`model.mechanisms.CONVENTIONS`:
      reduce_precision's straight-through 1, floor's zero where it returns its operand, rem's where its
      sawtooth is finer than the float grid) given the float function's own derivative, AD gives finite
      differences' slope (`Probe.convention`): BY_DESIGN, a note naming it. A stop_gradient the function
      itself calls is not one: whether it stops the derivative the user meant it to, numbers cannot tell;
    - a staircase: finite differences 0 at the usual step and every finer one they resolve, the AD
      paths' slope over the largest step: piecewise constant, its derivative a surrogate (a straight-through
      estimator written with stop_gradient): `non-differentiable`."""

    def tolerance(a: float, b: float, step: float) -> float:
        return atol + rtol * max(abs(a), abs(b)) + rounding_at / step

    def close(a: float, b: float, step: float) -> bool:
        return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= tolerance(a, b, step)

    h = probe.step
    if (
        probe.along_tie is not None
        and predicted is not None
        and not close(probe.along_tie, predicted, h)
        and (followed is None or close(probe.along_tie, followed, h))
    ):
        return Settled(
            NON_DIFFERENTIABLE.value,
            f"a tie: {len(probe.tied)} inputs are equal here; moved together they move the output at slope "
            f"{_number(probe.along_tie)}, where their partial slopes sum to {_number(predicted)}: no derivative exists",
        )
    scale = max(abs(got), abs(want), 1.0)

    def resolves(step: float) -> bool:
        return rounding_at / step <= 0.5 * (atol + rtol * scale)

    finer = [
        (s, c, left, right)
        for s, c, left, right in zip(probe.steps, probe.central, probe.left, probe.right, strict=True)
        if s < h / 2 and resolves(s)
    ]

    def staircase() -> Settled | None:
        coarser = [(s, c) for s, c in zip(probe.steps, probe.central, strict=True) if s > 2 * h and math.isfinite(c)]
        flat = abs(want) <= tolerance(want, 0.0, h) and all(abs(c) <= tolerance(c, 0.0, s) for s, c, _, _ in finer)
        if flat and coarser and got != 0 and abs(coarser[0][1] - got) <= COARSE_AGREES * abs(got):
            s, c = coarser[0]
            return Settled(
                NON_DIFFERENTIABLE.value,
                f"piecewise constant here: finite differences 0 at the usual step {h:.3g} and below, {_number(c)} "
                f"over step {s:.3g}, which the AD paths' {_number(got)} follows: a surrogate (straight-through) "
                "derivative of a staircase",
            )
        return None

    def by_design(seen: float, step: float) -> Settled | None:
        """BY_DESIGN where the conventions replaced give `seen`, finite differences' slope at `step`."""
        convention = probe.convention
        if convention is None or not math.isfinite(got) or not close(convention.slope, seen, step):
            return None
        conventions = "; ".join(CONVENTIONS[name] for name in convention.primitives)
        return Settled(
            BY_DESIGN,
            f"by design: the function's derivative here follows {conventions}; with the float function's own "
            f"derivative in its place AD gives {_number(convention.slope)}, as finite differences do "
            f"({_number(seen)} at step {step:.3g}), so the AD paths' {_number(got)} is that convention's",
        )

    own = probe.scaled
    joined = with_relative_steps(probe)
    # A step at which the output does not move at all resolves nothing where its last move before was one
    # rounding unit (`refine.rounded_away`): log(1 - P) = 0 at every step of x = 1e-38's own size.
    unit = rounding_unit(epsilon, rounding_at / (4.0 * epsilon)) if epsilon > 0 else 0.0
    pairs = () if own is None else zip(own.steps, own.central, own.left, own.right, strict=True)
    relative = [
        (s, c)
        for s, c, left, right in pairs
        if resolves(s) and not (left == right == 0.0 and joined is not None and rounded_away(joined, s, unit))
    ]
    if len(relative) == 2 and close(relative[0][1], relative[1][1], relative[1][0]):
        # The slope settles at steps of the input's own size: that is the function's derivative there,
        # unless the function is a staircase whose AD slope is a surrogate.
        (s1, c1), (s2, c2) = relative
        if not (close(c1, got, s1) and close(c2, got, s2)):
            return by_design(c2, s2) or staircase()
        return Settled(
            FINER_AGREES,
            f"the usual step {h:.3g} outreaches the input, every element of which is smaller: finite differences "
            f"give {_number(want)} there, but {_number(c1)} at step {s1:.3g} and {_number(c2)} at {s2:.3g}, "
            f"relative to the input's size, as the AD paths do ({_number(got)})",
        )
    if own is not None and len(relative) < 2:
        # at 0 itself a kink the step sees is the input's own: the rules for a kink there decide
        crossed = _crossed_kink(probe, close) if math.isfinite(probe.x) and probe.x != 0 else None

        def resolved(step: float, slope: float) -> bool:
            flat = slope == 0.0 and joined is not None and rounded_away(joined, step, unit)
            return rounding_at / step <= 0.5 * abs(slope) and not flat

        if crossed is not None and not _settles_away_from_zero(probe, close, resolved):
            left, right = crossed
            return Settled(
                UNRESOLVED,
                f"the usual step {h:.3g} outreaches the input, every element of which is smaller, and crosses a kink "
                f"(slope {_number(left)} from the left, {_number(right)} from the right, against {_number(got)} from "
                "the AD paths); at steps of its own size no two slopes resolve (the output moves by less than its "
                "rounding, or the step leaves its dtype's normal numbers): finite differences cannot judge",
            )
    moving = [(s, c) for s, c in zip(probe.steps, probe.central, strict=True) if s < h / 2 and math.isfinite(c)]
    # Finer steps down to the first whose slope the output's own rounding could fake (more than half of it:
    # 1 + x ** 2 at 1e-3 in float32 reads 0.0039 at 1.5e-5, twice the slope), resolved to the tolerance or
    # not: the spread between two shows their noise, whatever its source.
    readable = list(itertools.takewhile(lambda sc: rounding_at / sc[0] <= 0.5 * abs(sc[1]), moving))
    settled = _settled(readable) if math.isfinite(got) and not close(want, got, h) else None
    if settled is not None:
        k, spread, noise = settled
        (s1, c1), (s2, c2) = readable[k], readable[k + 1]
        allowance = spread + noise / s2
        gaps = {step: abs(right - left) for step, left, right in zip(probe.steps, probe.left, probe.right, strict=True)}
        gap = gaps.get(s2, math.nan)
        # measured noise, not the output's rounding bound over the step (which would pass 1.3 at a slope of 43)
        allowance += atol + rtol * max(abs(c2), abs(got))
        smooth = gap <= allowance or gap <= 0.5 * gaps.get(s1, math.nan)
        # The finer steps' noise is rounding's size (of a value as large as the output or as the input times the
        # slope), and the slope settles where the function is smooth: its one-sided slopes agree, or part as
        # curvature's do, by half as much or less than a step before (a kink's or a jump's hold or grow).
        if not smooth or noise > NOISE_ROUNDING * max(epsilon * abs(probe.x * c2), rounding_at / 4.0):
            settled = None
    if settled is not None:
        # the finer of the two is the closer to the derivative (the coarser carries the truncation both part by)
        if abs(c2 - got) <= allowance:
            return Settled(
                FINER_AGREES,
                f"the usual step {h:.3g} spans the function's periods or steps: finite differences give "
                f"{_number(want)} there, but settle on {_number(c1)} at step {s1:.3g} and {_number(c2)} at "
                f"{s2:.3g}, as the AD paths do ({_number(got)}), within their spread {spread:.3g} and the rounding "
                f"finer steps show ({noise / s2:.3g} at that step; anything finer, of rounding's size, is not judged)",
            )
    if len(finer) >= 2:
        (s1, c1, l1, r1), (s2, c2, l2, r2) = finer[-2], finer[-1]
        parted = (
            all(math.isfinite(v) for v in (l1, r1, l2, r2))
            and abs(r2 - l2) > tolerance(l2, r2, s2)
            and abs(r1 - l1) > tolerance(l1, r1, s1)
        )
        # a slope that settles at finer steps is a derivative there, which a jump at the point would not give
        if parted and settled is None and abs(r2 - l2) >= 0.75 * abs(r1 - l1) and between_slopes(got, l2, r2, (l1, r1)):
            return Settled(
                NON_DIFFERENTIABLE.value,
                f"a jump or kink finer than the usual step {h:.3g}: at step {s2:.3g} the slope is {_number(l2)} from "
                "the left, "
                f"{_number(r2)} from the right (at {s1:.3g}: {_number(l1)} and {_number(r1)})",
            )
        if close(c1, got, s1) and close(c2, got, s2) and not close(want, got, h):
            return Settled(
                FINER_AGREES,
                f"the usual step {h:.3g} spans the function's periods or steps: finite differences give "
                f"{_number(want)} there, "
                f"but {_number(c1)} at step {s1:.3g} and {_number(c2)} at {s2:.3g}, as the AD paths do "
                f"({_number(got)})",
            )
    widest = max((abs(c) * s for s, c in zip(probe.steps, probe.central, strict=True) if math.isfinite(c)), default=0.0)
    finest = moving[-3:]
    # an AD path's NaN or inf at finite numbers is never excused here
    if final and len(finest) == 3 and math.isfinite(got):
        slopes = [c for _, c in finest]
        changes = [abs(c) * s for s, c in finest]
        if (
            max(changes) >= max(UNRESOLVED_SHARE * widest, 8 * rounding_at)
            and max(slopes) - min(slopes) > 0.5 * max(abs(c) for c in slopes)
            and not any(close(c, got, s) for s, c in finest)
        ):
            (s1, c1), (s2, c2) = finest[-2:]
            return Settled(
                UNRESOLVED,
                f"no step resolves a slope here: over the finest steps that move the input ({s1:.3g} and {s2:.3g}) "
                f"the function still changes by {_number(max(changes))} (over the widest, up to {256 * h:.3g}: "
                f"{_number(widest)}), at slopes that disagree ({_number(c1)} and {_number(c2)}, against "
                f"{_number(want)}): it varies faster than its dtype can step the input, so finite differences "
                "cannot judge",
            )
    still = _still(probe)
    if final and still is not None and want == 0 and got != 0 and math.isfinite(got) and math.isfinite(probe.x):
        largest, smallest = still
        floor = epsilon * max(1.0, abs(probe.x))
        if abs(got) * largest < floor:
            return Settled(
                UNRESOLVED,
                f"the output does not move at any step from {largest:.3g} to {smallest:.3g}, where the AD paths' "
                f"slope {_number(got)} would move it by {abs(got) * largest:.3g} over the widest, less than the "
                f"rounding ({floor:.3g}) of a number the size of 1 or of the input: a value computed through such a "
                "number (1 - p for a probability p near 1) cannot show that change, so finite differences cannot judge",
            )
    flip = probe.flip
    if flip is not None and close(want, -got, h):
        return Settled(
            NON_DIFFERENTIABLE.value,
            f"the output flips sign here along this input: out[{flip.output}] is {_number(flip.value)} here, "
            f"{_number(flip.moved)} a step {h:.3g} away and at every step down to {flip.finest:.3g}, and finite "
            f"differences give the AD paths' {_number(got)} negated: they read the other branch, and no derivative "
            "along this input exists",
        )
    return by_design(want, h) or staircase()
