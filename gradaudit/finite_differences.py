"""Finite differences that know kinks: central and one-sided differences at two step sizes.

Only evaluations of the function are used, never JAX's AD, so these are an oracle independent of
the rules under audit. Raw estimates are returned; `judge.py` decides where the function is smooth
(the one-sided estimates close up as the step halves), where it has a kink or a jump (they do not),
and where nothing can be said (non-finite inputs or outputs, or a step that leaves the dtype's range).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

ESTIMATES = ("extrapolated", "central", "central_half", "left", "right", "left_half", "right_half", "noise", "undefined")
"""Arrays per (output, argument) block: the Richardson extrapolation (4 c(h/2) - c(h)) / 3 of the
central differences, which cancels their h^2 error; central differences at steps h and h/2;
one-sided differences at h and h/2; the rounding noise expected in a difference quotient; and
where inputs or outputs are non-finite."""


@dataclass(frozen=True)
class Differences:
    """For each output k and argument j, every estimate of d out_k / d arg_j, shaped out_k.shape + arg_j.shape."""

    blocks: dict[str, list[list[np.ndarray]]]

    def estimate(self, name: str, output: int, arg: int) -> np.ndarray:
        return self.blocks[name][output][arg]


def _rounding(dtype: np.dtype) -> float:
    return float(ml_dtypes.finfo(dtype).eps) if np.issubdtype(dtype, np.inexact) or dtype.kind == "V" else 0.0


MOVES: tuple[tuple[str, float], ...] = (("plus", 1.0), ("minus", -1.0), ("plus_half", 0.5), ("minus_half", -0.5))
"""Where the function is evaluated, as multiples of the step h."""


def _quotient(difference: np.ndarray, move) -> np.ndarray:
    move = np.asarray(move, dtype=np.float64)
    return np.where(move != 0, difference / np.where(move != 0, move, 1.0), np.nan)


def quotients(f0: np.ndarray, at: dict[str, np.ndarray], move: dict[str, object], rounding: float) -> dict[str, np.ndarray]:
    """Every estimate from the function's values at x (`f0`) and at x + move (`at`, labelled as MOVES).

    Arrays may carry leading axes (scenarios in a batch); each move broadcasts against them.
    """
    with np.errstate(all="ignore"):
        central = _quotient(at["plus"] - at["minus"], np.subtract(move["plus"], move["minus"]))
        central_half = _quotient(at["plus_half"] - at["minus_half"], np.subtract(move["plus_half"], move["minus_half"]))
        smallest = np.minimum(np.abs(move["plus_half"]), np.abs(move["minus_half"]))
        scale = np.maximum.reduce([np.abs(at["plus"]), np.abs(at["minus"]), np.abs(f0)])
        estimates = {
            "extrapolated": (4 * central_half - central) / 3,
            "central": central,
            "central_half": central_half,
            "right": _quotient(at["plus"] - f0, move["plus"]),
            "left": _quotient(f0 - at["minus"], np.negative(move["minus"])),
            "right_half": _quotient(at["plus_half"] - f0, move["plus_half"]),
            "left_half": _quotient(f0 - at["minus_half"], np.negative(move["minus_half"])),
            "noise": 4.0 * rounding * scale / np.where(smallest > 0, smallest, np.inf),
        }
    # A point that did not move (x non-finite) or left the dtype's range (x + h overflowed) gives no estimate there.
    unusable = np.logical_or.reduce([~np.isfinite(np.asarray(m, dtype=np.float64)) | (np.asarray(m) == 0) for m in move.values()])
    estimates["undefined"] = ~(np.isfinite(f0) & np.logical_and.reduce([np.isfinite(v) for v in at.values()])) | unusable
    return estimates


def rounding(dtype: np.dtype) -> float:
    """The spacing of a dtype's numbers near 1; 0 for integers."""
    return float(ml_dtypes.finfo(dtype).eps) if np.issubdtype(dtype, np.inexact) or dtype.kind == "V" else 0.0


def step_size(x: np.ndarray, eps: float, dtype) -> np.ndarray:
    """The step h at x: eps * max(1, |x|), with eps never below the square root of the dtype's machine
    epsilon. A smaller step cannot tell a wrong derivative from rounding noise (the quotient's noise,
    about epsilon * |f| / h, outgrows the tolerance, 4 * sqrt(epsilon)), or moves nothing at all: a
    small `eps` meant for a float32 input, applied to a bfloat16 one, would pass any derivative."""
    floor = math.sqrt(float(ml_dtypes.finfo(dtype).eps))
    return max(eps, floor) * np.maximum(1.0, np.abs(np.asarray(x, dtype=np.float64)))


def moved(x: np.ndarray, delta) -> np.ndarray:
    """x + delta rounded once to x's dtype: the exact sum, not x plus a delta already rounded to a
    half-precision dtype (which can make a move of zero). Every finite-difference point is made here."""
    x = np.asarray(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return (x.astype(np.float64) + delta).astype(x.dtype)


def perturbed(flat: np.ndarray, element: int, delta: float) -> tuple[np.ndarray, float]:
    """`flat` with one element moved by `delta` (rounded to its dtype), and the move actually made."""
    result = flat.copy()
    result[element] = moved(flat[element], delta)
    return result, float(result[element]) - float(flat[element])


def differences(forward: Callable[..., Sequence[object]], args: Sequence[np.ndarray], steps: Sequence[float]) -> Differences:
    """Estimates of d forward(*args)[k] / d args[j], one input element at a time.

    The step for an element x of argument j is `step_size(x, steps[j], its dtype)`; each quotient divides by
    the move actually made in the input's dtype, so rounding of `x + h` does not bias it.
    """
    base = [np.asarray(o) for o in forward(*args)]
    base64 = [np.asarray(o, dtype=np.float64).reshape(-1) for o in base]
    blocks: dict[str, list[list[np.ndarray]]] = {name: [[] for _ in base] for name in ESTIMATES}
    for index, arg in enumerate(args):
        flat = np.asarray(arg).reshape(-1)
        columns = {name: [np.zeros((o.size, flat.size)) for o in base] for name in ESTIMATES}
        for element in range(flat.size):
            x = float(flat[element])
            if not np.isfinite(x):
                for k in range(len(base)):
                    columns["undefined"][k][:, element] = 1.0
                continue
            h = float(step_size(np.asarray(x), steps[index], np.asarray(arg).dtype))
            values = {}
            for label, multiple in MOVES:
                moved, taken = perturbed(flat, element, multiple * h)
                call = list(args)
                call[index] = moved.reshape(np.shape(arg))
                values[label] = ([np.asarray(o, dtype=np.float64).reshape(-1) for o in forward(*call)], taken)
            for k, f0 in enumerate(base64):
                at = {label: outputs[k] for label, (outputs, _) in values.items()}
                move = {label: taken for label, (_, taken) in values.items()}
                for name, estimate in quotients(f0, at, move, rounding(base[k].dtype)).items():
                    columns[name][k][:, element] = estimate
        for name in ESTIMATES:
            for k, output in enumerate(base):
                block = columns[name][k].reshape(output.shape + np.shape(arg))
                blocks[name][k].append(block.astype(bool) if name == "undefined" else block)
    return Differences(blocks=blocks)
