"""The derivative paths: each asks the same question of a Target in its own way.

Every path returns a PathResult holding either its arrays or the exception it raised, so one
failing path never hides what the others say. Finite differences use only evaluations of the
function, never JAX's AD, so they are an oracle independent of the rules under audit.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass

import jax
import numpy as np

from gradaudit.targets.base import Target

VALUE = "value"
JACFWD = "jacfwd"
JACREV = "jacrev"
JIT_JACREV = "jit_jacrev"
FINITE_DIFFERENCE = "finite_difference"



@dataclass(frozen=True)
class PathError:
    """An exception a path raised, kept as data."""

    type: str
    message: str
    where: str
    """The innermost frame, 'file:line in function', to tell a JAX rule from a user's code."""

    @classmethod
    def from_exception(cls, exc: BaseException) -> PathError:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return cls(type=type(exc).__name__, message=message, where=where)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True, eq=False)
class PathResult:
    """What one path gave: for `value` the output, for the others one Jacobian per argument."""

    name: str
    arrays: tuple[np.ndarray, ...] | None
    error: PathError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


Transform = Callable[[Callable[..., object], tuple[int, ...]], Callable[..., object]]
"""Maps (function, argnums) to a function returning one Jacobian per argument."""

AD_TRANSFORMS: dict[str, Transform] = {
    JACFWD: lambda fn, argnums: jax.jacfwd(fn, argnums=argnums),
    JACREV: lambda fn, argnums: jax.jacrev(fn, argnums=argnums),
    JIT_JACREV: lambda fn, argnums: jax.jit(jax.jacrev(fn, argnums=argnums)),
}
AD_PATHS: tuple[str, ...] = tuple(AD_TRANSFORMS)
"""Paths that use JAX's automatic differentiation; they must agree with each other to rounding."""
ALL_PATHS: tuple[str, ...] = (VALUE, *AD_PATHS, FINITE_DIFFERENCE)


def ad_jacobians(target: Target, transform: Transform) -> tuple[np.ndarray, ...]:
    """The Jacobians of the target's output with respect to each argument, by one AD transform."""
    argnums = tuple(range(len(target.args)))
    result = transform(target.fn, argnums)(*target.args)
    return tuple(np.asarray(result[i]) for i in argnums)  # type: ignore[index]


def finite_difference_jacobians(target: Target, eps: float) -> tuple[np.ndarray, ...]:
    """Central differences, one input element at a time, the other inputs held fixed.

    The step is `eps * max(1, |x|)`; the denominator is the step actually taken in the input's
    dtype, so rounding of `x +- h` does not bias the quotient. Results are float64.
    """
    forward = jax.jit(target.fn)
    out_shape = np.shape(forward(*target.args))
    jacobians = []
    for index, arg in enumerate(target.args):
        flat = np.asarray(arg).reshape(-1)
        jac = np.zeros((int(np.prod(out_shape, dtype=np.int64)), flat.size), dtype=np.float64)
        for element in range(flat.size):
            x = flat[element]
            step = eps * max(1.0, abs(float(x)))
            plus, minus = flat.copy(), flat.copy()
            plus[element] = x + step
            minus[element] = x - step
            taken = float(plus[element]) - float(minus[element])
            args_plus = list(target.args)
            args_minus = list(target.args)
            args_plus[index] = plus.reshape(np.shape(arg))
            args_minus[index] = minus.reshape(np.shape(arg))
            high = np.asarray(forward(*args_plus), dtype=np.float64).reshape(-1)
            low = np.asarray(forward(*args_minus), dtype=np.float64).reshape(-1)
            jac[:, element] = (high - low) / taken if taken else np.nan
        jacobians.append(jac.reshape(out_shape + np.shape(arg)))
    return tuple(jacobians)


def run_path(name: str, compute: Callable[[], tuple[np.ndarray, ...]]) -> PathResult:
    """Run one path, turning any exception it raises into data."""
    try:
        return PathResult(name=name, arrays=compute())
    except Exception as exc:  # noqa: BLE001 - an exception is a result here, not a failure
        return PathResult(name=name, arrays=None, error=PathError.from_exception(exc))


def run_paths(target: Target, eps: float) -> dict[str, PathResult]:
    """Every path of a first-order audit, in the order reports show them."""
    results = {VALUE: run_path(VALUE, lambda: (np.asarray(target.fn(*target.args)),))}
    for name, transform in AD_TRANSFORMS.items():
        results[name] = run_path(name, lambda transform=transform: ad_jacobians(target, transform))
    results[FINITE_DIFFERENCE] = run_path(FINITE_DIFFERENCE, lambda: finite_difference_jacobians(target, eps))
    return results
