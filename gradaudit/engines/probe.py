"""More evidence at one entry, asked for by the judge where an AD path seems wrong: finite
differences at steps far below and above the usual one, and along the diagonal of tied inputs.

The usual estimates use one step h (and h/2, 0.7 h). Two things they cannot see: a function whose
steps or periods are far finer than h (floor_divide by a tiny divisor looks like a line of slope
1/divisor at h; fmod by a subnormal looks flat), and a point where coordinate slopes exist but no
derivative does (sort at [0, 0, 0]: moving any one input leaves the middle output where it is,
moving all three together moves it at slope 1). A probe evaluates the function at those points
(compiled, as finite differences are) and returns the numbers; the judge (`judging.classes`)
decides what they mean.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from gradaudit.engines.base import compiled_or_eager
from gradaudit.jaxenv import again_if_stale, x64_for
from gradaudit.model import dtypes
from gradaudit.model.computed import MOVED_ELEMENTS, Backward, Convention, Flip, Moved, Probe, Prober
from gradaudit.model.scenario import Scenario
from gradaudit.numerics.finite_differences import moved, step_size
from gradaudit.targets.base import Target
from gradaudit.targets.triggers import conventional_column, traced

SCALES = (8, 4, 0, -4, -8, -12, -16, -20, -24, -28, -32, -40, -48, -56, -64, -80, -96, -112, -128, -140)
"""Steps as h times 2 to these powers: up to 256 h, down to where a step no longer moves x."""

KEPT_OUTPUTS = 1 << 16
"""Outputs up to which a probed element's evaluations (about 40 vectors of them) are kept for the entries of
its other outputs; a larger function's are evaluated again for each entry asked."""
TIED = 0.0
"""Inputs tie when they are equal: the relative gap at which two elements count as one value."""
FLIP_SPAN = 12
"""A sign flip: an output is its own value negated at every step from the usual one h down to
h / 2 ** FLIP_SPAN (a slope's or a kink's change shrinks 4096-fold over that span) ..."""
FLIP_CLOSE = 0.25
"""... within this share of its value (a saturating or rounding output moves to another value, not to
its own negation; 1 / x at 1e-38, whose steps outreach x, to 1 / step) ..."""
FLIP_SHARE = 1e-3
"""... and its value is at least this share of the output's largest magnitude (and 64 of its dtype's
epsilons of it): rounding noise, a structural zero's included, is far smaller."""


def prober(target: Target, scenario: Scenario) -> Prober:
    """The probe of `target`'s function at its inputs, with the scenario's eps (None: its dtypes')
    and x64 as its paths had it (so the function compiled for them serves). Each input element is
    evaluated once: its steps give every output's slopes, so the entries of one column cost one probe."""
    columns: dict[tuple[int, int], _Column | None] = {}
    jaxpr = functools.cache(lambda: traced(target))  # traced once, for every column's conventional derivative

    def probe(argument: int, element: int, output: int) -> Probe | None:
        if (argument, element) in columns:
            column = columns[argument, element]
        else:
            try:
                with x64_for(scenario):
                    column = again_if_stale(lambda: _column(target, scenario.eps, argument, element, jaxpr))
            # a function that cannot be evaluated here gives no more evidence, which the judge says
            except Exception:  # noqa: BLE001
                column = None
            if column is None or column.base.size <= KEPT_OUTPUTS:
                columns[argument, element] = column
        return None if column is None else column.at(output)

    return probe


@dataclass(frozen=True)
class _Steps:
    """The function's outputs at one input element moved up and down by each of some steps."""

    steps: tuple[float, ...]
    plus: tuple[np.ndarray, ...]
    minus: tuple[np.ndarray, ...]
    moves: tuple[tuple[float, float], ...]

    def slopes(self, base: float, output: int) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
        """Per step, out[output]'s central difference and its one-sided slopes from the left and the right."""
        central, left, right = [], [], []
        for f_plus, f_minus, (up, down) in zip(self.plus, self.minus, self.moves, strict=True):
            plus, minus = float(f_plus[output]), float(f_minus[output])
            central.append((plus - minus) / (up - down))
            right.append((plus - base) / up)
            left.append((base - minus) / -down)
        return tuple(central), tuple(left), tuple(right)


@dataclass(frozen=True)
class _Column:
    """The function's outputs at one input element moved by each probe step (and its ties moved together)."""

    step: float
    base: np.ndarray
    usual: _Steps
    tied: tuple[tuple[int, int], ...]
    along: tuple[np.ndarray, np.ndarray, float] | None
    scaled: _Steps | None = None
    """At steps relative to the argument's scale (`_relative_steps`), where it has them."""
    flip: Flip | None = None
    x: float = np.nan
    """The input element's value."""
    convention: tuple[np.ndarray, frozenset[str]] | None = None
    """Every output's derivative by this element with conventional derivatives replaced, and which
    (`targets.triggers.conventional_column`); None where the function meets none."""

    def at(self, output: int) -> Probe:
        base = float(self.base[output])
        along = None
        if self.along is not None:
            f_plus, f_minus, span = self.along
            along = (float(f_plus[output]) - float(f_minus[output])) / span
        scaled = None
        if self.scaled is not None:
            scaled = Probe(self.step, self.scaled.steps, *self.scaled.slopes(base, output))
        slopes = self.usual.slopes(base, output)
        convention = None
        if self.convention is not None:
            column, replaced = self.convention
            convention = Convention(float(column[output]), tuple(sorted(replaced)))
        return Probe(self.step, self.usual.steps, *slopes, self.tied, along, scaled, self.flip, self.x, convention)


def _column(target: Target, eps: float | None, argument: int, element: int, jaxpr=None) -> _Column:
    args = [np.asarray(a) for a in target.args]
    compiled = compiled_or_eager(target.fn, [*args, *target.fixed])

    size: list[int] = []

    def at(points: list[np.ndarray]) -> np.ndarray:
        out = np.asarray(compiled(*points, *target.fixed), dtype=np.float64).reshape(-1)
        size.append(out.size)
        if out.size != size[0]:
            # run eagerly, a function whose output's shape follows its values (jnp.unique without size=)
            # may give more or fewer elements at a moved input: no slope there, as at a NaN
            return np.full(size[0], np.nan)
        return out

    x = args[argument].reshape(-1)
    dtype = x.dtype
    h = float(
        step_size(
            np.asarray(x[element], dtype=np.float64), eps if eps is not None else dtypes.default_eps(dtype.name), dtype
        )
    )

    def moved_to(delta: float, where: tuple[tuple[int, int], ...]) -> tuple[list[np.ndarray], float]:
        points = [a.copy() for a in args]
        made = 0.0
        for k, j in where:
            flat = points[k].reshape(-1)
            flat[j] = moved(flat[j], delta)
            if (k, j) == (argument, element):
                made = float(np.float64(flat[j]) - np.float64(x[element]))
        return points, made

    base = at(args)
    here = ((argument, element),)

    def stepped(candidates) -> _Steps:
        steps, plus_values, minus_values, moves = [], [], [], []
        for step in candidates:
            plus, up = moved_to(step, here)
            minus, down = moved_to(-step, here)
            if (
                up == 0
                or down == 0
                or not np.isfinite(up)
                or not np.isfinite(down)
                or _subnormal(plus[argument].reshape(-1)[element])
                or _subnormal(minus[argument].reshape(-1)[element])
            ):
                continue
            steps.append(step)
            plus_values.append(at(plus))
            minus_values.append(at(minus))
            moves.append((up, down))
        return _Steps(tuple(steps), tuple(plus_values), tuple(minus_values), tuple(moves))

    usual = stepped(h * 2.0**power for power in SCALES)
    value = np.float64(x[element])
    tied = tuple(
        (k, j)
        for k, a in enumerate(args)
        if a.dtype == dtype
        for j, v in enumerate(a.reshape(-1))
        if np.isfinite(value) and abs(np.float64(v) - value) <= TIED * abs(value)
    )
    along = None
    if len(tied) > 1:
        plus, up = moved_to(h, tied)
        minus, down = moved_to(-h, tied)
        if up != 0 and down != 0:
            along = (at(plus), at(minus), up - down)
    relative = _relative_steps(x, h, eps)
    # where the usual step outreaches the input every output moves at every step: no flip is read there
    flip = None if relative else _flip(base, usual, h, dtype)
    convention = conventional_column(target, argument, element, h, jaxpr)
    if convention is not None and convention[0].size != base.size:
        convention = None  # an output whose shape follows its values: no entry to read
    scaled = stepped(relative) if relative else None
    return _Column(h, base, usual, tied, along, scaled, flip, float(value), convention)


def _flip(base: np.ndarray, usual: _Steps, h: float, dtype: np.dtype) -> Flip | None:
    """The output element whose sign flips as the input element moves (`Flip`): on one side, at every
    step from h down to h / 2 ** FLIP_SPAN, it is within FLIP_CLOSE of its own value negated, a value
    of at least FLIP_SHARE of the output's largest magnitude. The largest such; None: none flips."""
    finite = np.abs(base[np.isfinite(base)])
    scale = float(finite.max(initial=0.0))
    within = [k for k, step in enumerate(usual.steps) if h * 2.0**-FLIP_SPAN <= step <= h]
    if not (scale and within and usual.steps[within[0]] == h and usual.steps[within[-1]] <= h * 2.0**-FLIP_SPAN):
        return None
    floor = max(FLIP_SHARE, 64 * dtypes.machine_epsilon(dtype.name)) * scale
    for side in (usual.plus, usual.minus):
        with np.errstate(invalid="ignore", over="ignore"):
            reached = np.stack([side[k] for k in within])
            apart = np.abs(reached + base).max(axis=0)
            flips = np.isfinite(apart) & (np.abs(base) >= floor) & (apart <= FLIP_CLOSE * np.abs(base))
        if flips.any():
            output = int(np.flatnonzero(flips)[np.argmax(np.abs(base)[flips])])
            return Flip(output, float(base[output]), float(side[within[0]][output]), usual.steps[within[-1]])
    return None


def _relative_steps(x: np.ndarray, h: float, eps: float | None) -> tuple[float, ...]:
    """eps m and eps m / 2, m the argument's largest finite magnitude, where the usual step h outreaches
    every element (m < h): an argument of small numbers (a matrix of 1e-36) gets the absolute step eps,
    which then measures the function somewhere else (eigh of A + h e_ij, h far larger than A, is
    h e_ij's). Empty elsewhere (an input of ordinary size, or of zeros)."""
    with np.errstate(invalid="ignore", over="ignore"):
        magnitudes = np.abs(np.asarray(x)).astype(np.float64)  # a complex element's modulus
    finite = magnitudes[np.isfinite(magnitudes)]
    largest = float(finite.max(initial=0.0))
    own_eps = eps if eps is not None else dtypes.default_eps(x.dtype.name)
    step = float(step_size(np.ones((), np.float64), own_eps, x.dtype)) * largest
    return (step, step / 2) if 0.0 < largest < h else ()


def _subnormal(value) -> bool:
    """Whether a point is a nonzero number below its dtype's smallest normal one: XLA on CPU flushes
    those to zero (an input there is not the input the step meant), so no probe steps to one."""
    array = np.asarray(value)
    tiny = float(ml_dtypes.finfo(array.dtype).smallest_normal)
    magnitude = abs(float(np.float64(array)))
    return 0.0 < magnitude < tiny


def moved_jacobians(wide: Scenario, narrow: str, timeout: float | None) -> Moved | None:
    """float64's Jacobian, by jax.jit(jax.jacfwd) as the float64 run computed it, at the widened
    scenario's inputs and at each input element moved up and down by the `narrow` dtype's epsilon times
    its size, and by a quarter of that (`model.computed.Moved`); None where the inputs hold more than
    MOVED_ELEMENTS elements."""
    import jax

    from gradaudit.engines.group import FORWARD, computations
    from gradaudit.engines.literal import time_limit
    from gradaudit.targets import build_targets

    target = build_targets(wide)[0]
    if sum(np.size(a) for a in target.args) > MOVED_ELEMENTS:
        return None
    epsilon, smallest = dtypes.machine_epsilon(narrow), dtypes.smallest_normal(narrow)
    with x64_for(wide), time_limit(timeout):
        jacobian = jax.jit(computations(target.fn, len(target.args))[FORWARD])

        def at(args: list) -> tuple[np.ndarray, ...]:
            return tuple(np.asarray(b, np.float64) for b in jax.device_get(jacobian(*args, *target.fixed)))

        sizes = tuple(epsilon * np.maximum(np.abs(np.asarray(a, dtype=np.float64)), smallest) for a in target.args)

        def pairs(share: float) -> tuple:
            found = []
            for position, arg in enumerate(target.args):
                for element in range(np.size(arg)):
                    pair = []
                    for sign in (1.0, -1.0):
                        shifted = np.array(arg, dtype=np.float64, copy=True)
                        with np.errstate(invalid="ignore"):  # an infinite element moves to NaN: no smooth move
                            shifted.flat[element] += sign * share * sizes[position].flat[element]
                        pair.append(at([*target.args[:position], shifted, *target.args[position + 1 :]]))
                    found.append((pair[0], pair[1]))
            return tuple(found)

        return Moved(at(list(target.args)), pairs(1.0), pairs(0.25), sizes)


NEWTON_STEPS = 40
"""Most safeguarded Newton steps `backward_points` takes within one crossing's cell."""
SCANNED = 64
"""Cells `backward_points` parts the moves of an input element into, to find where float64's value crosses the
narrow one (a value a turning point or a period away is taken again: each crossing is a point)."""
BACKWARD_AT_MOST = 0.5
"""The largest move `backward_points` makes, as a share of the input element's size (its dtype's smallest normal
at least), unless the first-order move to the narrow value (`FURTHER` times it) is larger."""
FURTHER = 2.0
"""How far past the first-order move to the narrow value (float64's miss over its slope there) `backward_points`
scans: rounding inside moves the point a function is computed at by the spacing of the number it rounds, which
the input's size does not bound (`sin(x + 2e7)` at 0.3 in float32 computes at x - 0.3, twice half of x)."""


def backward_points(
    wide: Scenario, output: int, value: float, within: float, timeout: float | None
) -> list[Backward] | None:
    """For each input element of the widened scenario alone, the moves (at most BACKWARD_AT_MOST of the element's
    size each way, or FURTHER times the first-order move to `value`) at which float64's output element `output` is
    the narrow run's `value` to `within`: each crossing of float64's value over SCANNED cells of moves, settled by
    Newton's method kept within its cell; and float64's Jacobian at each (`model.computed.Backward`, with how many
    crossings the element has; moves where float64's value is not finite take no value). None where the inputs hold
    more than MOVED_ELEMENTS elements."""
    import jax

    from gradaudit.engines.group import FORWARD, VALUE, computations
    from gradaudit.engines.literal import time_limit
    from gradaudit.targets import build_targets

    target = build_targets(wide)[0]
    if sum(np.size(a) for a in target.args) > MOVED_ELEMENTS:
        return None
    found: list[Backward] = []
    with x64_for(wide), time_limit(timeout):
        compute = computations(target.fn, len(target.args))
        evaluate = jax.jit(lambda *args: (compute[VALUE](*args), compute[FORWARD](*args)))
        smallest = dtypes.smallest_normal("float64")
        for position, arg in enumerate(target.args):
            base = np.asarray(arg, dtype=np.float64)
            axes = [0 if k == position else None for k in range(len(target.args) + len(target.fixed))]
            batched = jax.jit(jax.vmap(compute[VALUE], in_axes=axes))

            def moved_by(element: int, moves: np.ndarray, base: np.ndarray = base, position: int = position) -> list:
                stacked = np.repeat(base[None], np.size(moves), axis=0)
                stacked.reshape(np.size(moves), -1)[:, element] += moves
                return [*target.args[:position], stacked, *target.args[position + 1 :], *target.fixed]

            out, blocks = jax.device_get(evaluate(*target.args, *target.fixed))
            misses_here = float(np.asarray(out, np.float64).reshape(-1)[output]) - value
            slopes = np.asarray(blocks[position], np.float64).reshape(-1, base.size)[output]
            for element in range(base.size):
                farthest = BACKWARD_AT_MOST * max(abs(float(base.flat[element])), smallest)
                with np.errstate(divide="ignore", invalid="ignore"):
                    needed = abs(misses_here / slopes[element]) * FURTHER
                if math.isfinite(needed):
                    farthest = max(farthest, needed)
                moves = np.linspace(-farthest, farthest, SCANNED + 1)
                outputs = np.asarray(jax.device_get(batched(*moved_by(element, moves))), np.float64)
                misses = outputs.reshape(moves.size, -1)[:, output] - value
                # a crossing at a scanned move is its left cell's; float64 takes the narrow value nowhere its own is
                # not finite (log's NaN below 0: a scan that reaches past a domain's edge reads the rest)
                with np.errstate(invalid="ignore"):
                    crossing = (np.sign(misses[:-1]) * np.sign(misses[1:]) <= 0) & np.isfinite(misses[:-1] + misses[1:])
                cells = [cell for cell in np.flatnonzero(crossing).tolist() if cell == 0 or misses[cell] != 0]
                points = []
                for cell in cells:
                    low, high, low_miss = moves[cell], moves[cell + 1], misses[cell]
                    move = low if low_miss == 0 else (low + high) / 2
                    for _ in range(NEWTON_STEPS):
                        shifted = base.copy()
                        shifted.flat[element] += move
                        args = [*target.args[:position], shifted, *target.args[position + 1 :], *target.fixed]
                        out, blocks = jax.device_get(evaluate(*args))
                        miss = float(np.asarray(out, np.float64).reshape(-1)[output]) - value
                        jacobian = tuple(np.asarray(b, np.float64) for b in blocks)
                        if abs(miss) <= within:
                            points.append((move, jacobian))
                            break
                        if not math.isfinite(miss):
                            break
                        if np.sign(miss) == np.sign(low_miss):
                            low, low_miss = move, miss
                        else:
                            high = move
                        slope = float(jacobian[position].reshape(-1, base.size)[output, element])
                        step = move - miss / slope if slope != 0 and math.isfinite(slope) else math.nan
                        move = step if min(low, high) < step < max(low, high) else (low + high) / 2
                # every crossing counts, settled or not (a jump's sign change has no point, and names none alone)
                found += [Backward(position, element, move, jacobian, len(cells)) for move, jacobian in points]
    return found
