"""Finite differences that know kinks: central and one-sided differences at two step sizes.

Only evaluations of the function are used, never JAX's AD, so these are an oracle independent of
the rules under audit. Every engine makes its points with `points` and turns the function's
values there into estimates with `estimates`, for a batch of scenarios at once (a literal run is
a batch of one). Raw estimates are returned; the judge (`judging.fd_trust.Trust`) decides where the function is
smooth, where it has a kink or a jump, and where nothing can be said.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

ESTIMATES = (
    "extrapolated",
    "central",
    "central_half",
    "central_check",
    "left",
    "right",
    "left_half",
    "right_half",
    "noise",
    "undefined",
)
"""Arrays per (output, argument) block: the Richardson extrapolation (4 c(h/2) - c(h)) / 3 of the
central differences, which cancels their h^2 error; central differences at steps h, h/2 and, to
check that they converge as a smooth function's do, CHECK * h; one-sided differences at h and h/2;
the rounding noise expected in a difference quotient; and where inputs or outputs are non-finite."""

CHECK = 0.7
"""The third step, as a multiple of h: no power of two, so a period that h and h/2 both span a whole
number of times (where both central differences vanish, whatever the derivative) does not fit it."""

MOVES: tuple[tuple[str, float], ...] = (
    ("plus", 1.0),
    ("minus", -1.0),
    ("plus_half", 0.5),
    ("minus_half", -0.5),
    ("plus_check", CHECK),
    ("minus_check", -CHECK),
)
"""Where the function is evaluated, as multiples of the step h."""


def rounding(dtype: np.dtype) -> float:
    """The spacing of a dtype's numbers near 1; 0 for integers."""
    return float(ml_dtypes.finfo(dtype).eps) if np.issubdtype(dtype, np.inexact) or dtype.kind == "V" else 0.0


def step_size(x: np.ndarray, eps: float | np.ndarray, dtype) -> np.ndarray:
    """The step h at x: eps * max(1, |x|), with eps never below the square root of the dtype's machine
    epsilon. A smaller step cannot tell a wrong derivative from rounding noise (the quotient's noise,
    about epsilon * |f| / h, outgrows the tolerance, 4 * sqrt(epsilon)), or moves nothing at all: a
    small `eps` meant for a float32 input, applied to a bfloat16 one, would pass any derivative."""
    floor = math.sqrt(float(ml_dtypes.finfo(dtype).eps))
    return np.maximum(eps, floor) * np.maximum(1.0, np.abs(np.asarray(x, dtype=np.float64)))


def moved(x: np.ndarray, delta) -> np.ndarray:
    """x + delta rounded once to x's dtype: the exact sum, not x plus a delta already rounded to a
    half-precision dtype (which can make a move of zero). Every finite-difference point is made here."""
    x = np.asarray(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return (x.astype(np.float64) + delta).astype(x.dtype)


@dataclass(frozen=True)
class Points:
    """Every finite-difference point of a batch: for each argument element and each move, all the
    arguments with that one element moved."""

    stacks: list[np.ndarray]
    """Per argument, its values at every point: (points, batch, *shape)."""
    labels: list[tuple[int, int, str]]
    """What each point is: (argument, element, move)."""
    moves: np.ndarray
    """The move actually made in the argument's dtype: (points, batch)."""


def points(args: Sequence[np.ndarray], steps: Sequence[float]) -> Points:
    """The points for `args`, each with a leading batch axis; `steps[j]` is argument j's eps.

    A non-finite element does not move (its estimates are undefined), and each quotient later
    divides by the move actually made, so rounding of `x + h` does not bias it.
    """
    batch = args[0].shape[0]
    stacks: list[list[np.ndarray]] = [[] for _ in args]
    labels: list[tuple[int, int, str]] = []
    moves = []
    for index, arg in enumerate(args):
        flat = arg.reshape(batch, -1)
        for element in range(flat.shape[1]):
            x = flat[:, element].astype(np.float64)
            step = np.where(np.isfinite(x), step_size(np.nan_to_num(x), steps[index], flat.dtype), 0.0)
            for label, multiple in MOVES:
                point = flat.copy()
                point[:, element] = moved(flat[:, element], multiple * step)
                for other, stack in enumerate(stacks):
                    stack.append(point.reshape(arg.shape) if other == index else args[other])
                labels.append((index, element, label))
                with np.errstate(invalid="ignore"):
                    moves.append(point[:, element].astype(np.float64) - x)
    if not labels:  # no element to move (zero-size arguments)
        return Points([np.zeros((0, *arg.shape), arg.dtype) for arg in args], labels, np.zeros((0, batch)))
    return Points([np.stack(stack) for stack in stacks], labels, np.stack(moves))


def quotients(
    f0: np.ndarray, at: dict[str, np.ndarray], move: dict[str, np.ndarray], rounding: float
) -> dict[str, np.ndarray]:
    """Every estimate from the function's values at x (`f0`) and at x + move (`at`, labelled as MOVES).

    Arrays may carry leading axes (scenarios in a batch); each move broadcasts against them.
    """

    def quotient(difference, step):
        step = np.asarray(step, dtype=np.float64)
        return np.where(step != 0, difference / np.where(step != 0, step, 1.0), np.nan)

    with np.errstate(all="ignore"):
        central = quotient(at["plus"] - at["minus"], np.subtract(move["plus"], move["minus"]))
        central_half = quotient(at["plus_half"] - at["minus_half"], np.subtract(move["plus_half"], move["minus_half"]))
        central_check = quotient(
            at["plus_check"] - at["minus_check"], np.subtract(move["plus_check"], move["minus_check"])
        )
        smallest = np.minimum(np.abs(move["plus_half"]), np.abs(move["minus_half"]))
        scale = np.maximum.reduce([np.abs(at["plus"]), np.abs(at["minus"]), np.abs(f0)])
        estimates = {
            "extrapolated": (4 * central_half - central) / 3,
            "central": central,
            "central_half": central_half,
            "central_check": central_check,
            "right": quotient(at["plus"] - f0, move["plus"]),
            "left": quotient(f0 - at["minus"], np.negative(move["minus"])),
            "right_half": quotient(at["plus_half"] - f0, move["plus_half"]),
            "left_half": quotient(f0 - at["minus_half"], np.negative(move["minus_half"])),
            "noise": 4.0 * rounding * scale / np.where(smallest > 0, smallest, np.inf),
        }
    # A point that did not move (x non-finite) or left the dtype's range (x + h overflowed) gives no estimate there.
    unusable = np.logical_or.reduce(
        [~np.isfinite(np.asarray(m, dtype=np.float64)) | (np.asarray(m) == 0) for m in move.values()]
    )
    estimates["undefined"] = (
        ~(np.isfinite(f0) & np.logical_and.reduce([np.isfinite(v) for v in at.values()])) | unusable
    )
    return estimates


Blocks = dict[str, list[list[np.ndarray]]]
"""name -> [output k][argument j] -> (batch, *output_k.shape, *argument_j.shape)."""


def estimates(
    f0: Sequence[np.ndarray], at_points: Sequence[np.ndarray], where: Points, args: Sequence[np.ndarray]
) -> Blocks:
    """Every estimate of d output_k / d argument_j for the whole batch, from the outputs at x
    (`f0[k]`: (batch, *shape)) and at every point (`at_points[k]`: (points, batch, *shape))."""
    batch = args[0].shape[0]
    position = {key: p for p, key in enumerate(where.labels)}
    blocks: Blocks = {name: [[] for _ in f0] for name in ESTIMATES}
    for k, (base, values) in enumerate(zip(f0, at_points, strict=True)):
        out_shape = np.shape(base)[1:]
        out_rounding = rounding(np.asarray(base).dtype)
        out_size = int(np.prod(out_shape, dtype=np.int64))
        base64 = np.asarray(base, dtype=np.float64).reshape(batch, out_size)
        values64 = np.asarray(values, dtype=np.float64).reshape(len(where.labels), batch, out_size)
        for index, arg in enumerate(args):
            flat = arg.reshape(batch, -1)
            columns = {name: np.zeros((batch, base64.shape[1], flat.shape[1])) for name in ESTIMATES}
            for element in range(flat.shape[1]):
                at = {label: values64[position[index, element, label]] for label, _ in MOVES}
                move = {label: where.moves[position[index, element, label]][:, None] for label, _ in MOVES}
                for name, estimate in quotients(base64, at, move, out_rounding).items():
                    columns[name][:, :, element] = estimate
            for name in ESTIMATES:
                block = columns[name].reshape((batch, *out_shape, *arg.shape[1:]))
                blocks[name][k].append(block.astype(bool) if name == "undefined" else block)
    return blocks


def scenario_estimates(blocks: Blocks, b: int, pairs: Sequence[tuple[int, int]]) -> dict[str, tuple[np.ndarray, ...]]:
    """Scenario `b`'s estimates for the (output, argument) `pairs`, one block each, as a path keeps
    them: copies, so a scenario's result does not keep its whole group's arrays alive."""
    return {name: tuple(np.array(blocks[name][k][j][b]) for k, j in pairs) for name in ESTIMATES}


class OutputShapeChanges(ValueError):
    """The function's output has another shape a step away from the point (its values decide its
    size: `jnp.unique` at a tie): no difference quotient exists, so finite differences do not apply."""


class RaisesNearby(ValueError):
    """The function raises a step away from the point though not at it (`jnp.repeat` with float
    repeats summing to zero): no difference quotient exists, so finite differences do not apply."""


def differences(
    forward: Callable[..., Sequence[object]], args: Sequence[np.ndarray], steps: Sequence[float], eager: bool = False
) -> dict[str, tuple[np.ndarray, ...]]:
    """Estimates of d forward(*args)[k] / d args[j] for one scenario, evaluating `forward` point by
    point; blocks in (k, j) order, each shaped out_k.shape + args[j].shape. With `eager` (forward runs
    the function's Python on concrete values: jit cannot compile it), an exception a step away
    though not at the point is where the function stops being defined (RaisesNearby); a compiled
    forward's errors (runtime errors, NaN checks, callbacks) stay errors."""
    batched = [np.asarray(a)[None] for a in args]
    where = points(batched, steps)
    base = [np.asarray(o)[None] for o in forward(*args)]
    at_points: list[list[np.ndarray]] = [[] for _ in base]
    for p in range(len(where.labels)):
        try:
            outputs = forward(*(stack[p, 0] for stack in where.stacks))
        except (MemoryError, FloatingPointError):
            raise
        except Exception as exc:  # noqa: BLE001 - the function is defined at the point, not a step away
            if not eager or type(exc).__name__ == "JaxRuntimeError":
                raise
            raise RaisesNearby(f"{type(exc).__name__} a step away from the point: {exc}") from exc
        for k, output in enumerate(outputs):
            moved = np.asarray(output)
            if moved.shape != base[k].shape[1:]:
                raise OutputShapeChanges(
                    f"output {k} has shape {list(moved.shape)} a step away, {list(base[k].shape[1:])} at the point"
                )
            at_points[k].append(moved[None])
    stacked = [
        np.stack(values) if values else np.zeros((0, *b.shape)) for values, b in zip(at_points, base, strict=True)
    ]
    blocks = estimates(base, stacked, where, batched)
    return scenario_estimates(blocks, 0, [(k, j) for k in range(len(base)) for j in range(len(args))])
