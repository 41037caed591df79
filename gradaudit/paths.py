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
JIT_JACFWD = "jit_jacfwd"
FINITE_DIFFERENCE = "finite_difference"
HESSIAN_FWD_REV = "jacfwd_jacrev"
HESSIAN_REV_REV = "jacrev_jacrev"
HESSIAN_FWD_FWD = "jacfwd_jacfwd"
JIT_HESSIAN_REV_REV = "jit_jacrev_jacrev"
HESSIAN_FINITE_DIFFERENCE = "finite_difference_jacfwd"

PATH_LABELS: dict[str, str] = {
    VALUE: "value",
    JACFWD: "jacfwd",
    JACREV: "jacrev",
    JIT_JACREV: "jit(jacrev)",
    JIT_JACFWD: "jit(jacfwd)",
    FINITE_DIFFERENCE: "finite differences",
    HESSIAN_FWD_REV: "jacfwd(jacrev)",
    HESSIAN_REV_REV: "jacrev(jacrev)",
    HESSIAN_FWD_FWD: "jacfwd(jacfwd)",
    JIT_HESSIAN_REV_REV: "jit(jacrev(jacrev))",
    HESSIAN_FINITE_DIFFERENCE: "finite differences of jacfwd",
}
"""How reports name each path."""


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
"""Maps (function, argnums) to a function returning its derivative blocks, nested per argnum."""

FIRST_ORDER: dict[str, Transform] = {
    JACFWD: lambda fn, argnums: jax.jacfwd(fn, argnums=argnums),
    JIT_JACFWD: lambda fn, argnums: jax.jit(jax.jacfwd(fn, argnums=argnums)),
    JACREV: lambda fn, argnums: jax.jacrev(fn, argnums=argnums),
    JIT_JACREV: lambda fn, argnums: jax.jit(jax.jacrev(fn, argnums=argnums)),
}
SECOND_ORDER: dict[str, Transform] = {
    HESSIAN_FWD_REV: lambda fn, argnums: jax.jacfwd(jax.jacrev(fn, argnums=argnums), argnums=argnums),
    HESSIAN_REV_REV: lambda fn, argnums: jax.jacrev(jax.jacrev(fn, argnums=argnums), argnums=argnums),
    HESSIAN_FWD_FWD: lambda fn, argnums: jax.jacfwd(jax.jacfwd(fn, argnums=argnums), argnums=argnums),
    JIT_HESSIAN_REV_REV: lambda fn, argnums: jax.jit(jax.jacrev(jax.jacrev(fn, argnums=argnums), argnums=argnums)),
}


@dataclass(frozen=True)
class PathFamily:
    """Paths that answer the same question: AD paths agree to rounding, and with the reference to tolerance."""

    order: int
    ad_paths: tuple[str, ...]
    reference: str
    """The finite-difference path of this order."""


FAMILIES: tuple[PathFamily, ...] = (
    PathFamily(order=1, ad_paths=tuple(FIRST_ORDER), reference=FINITE_DIFFERENCE),
    PathFamily(order=2, ad_paths=tuple(SECOND_ORDER), reference=HESSIAN_FINITE_DIFFERENCE),
)
AD_PATHS: tuple[str, ...] = FAMILIES[0].ad_paths
"""First-order AD paths: the ones whose routing provenance checks."""


def block_names(arg_names: tuple[str, ...], order: int) -> tuple[str, ...]:
    """Names of a path's derivative blocks: one per argument, or per ordered pair for a Hessian."""
    if order == 1:
        return arg_names
    return tuple(f"{first} d {second}" for first in arg_names for second in arg_names)


def ad_blocks(target: Target, transform: Transform, order: int) -> tuple[np.ndarray, ...]:
    """Derivative blocks by one AD transform: Jacobians per argument, or Hessian blocks [i][j] row-major."""
    argnums = tuple(range(len(target.args)))
    result = transform(target.fn, argnums)(*target.args)
    if order == 1:
        return tuple(np.asarray(result[i]) for i in argnums)  # type: ignore[index]
    return tuple(np.asarray(result[i][j]) for i in argnums for j in argnums)  # type: ignore[index]


def central_differences(forward: Callable[..., tuple], args: tuple[np.ndarray, ...], eps: float) -> list[list[np.ndarray]]:
    """d forward()[k] / d args[j] by central differences, one input element at a time: result[k][j].

    The step is `eps * max(1, |x|)`; the denominator is the step actually taken in the input's
    dtype, so rounding of `x +- h` does not bias the quotient. Results are float64.
    """
    outputs = [np.asarray(o) for o in forward(*args)]
    result: list[list[np.ndarray]] = [[] for _ in outputs]
    for index, arg in enumerate(args):
        flat = np.asarray(arg).reshape(-1)
        columns = [np.zeros((o.size, flat.size), dtype=np.float64) for o in outputs]
        for element in range(flat.size):
            x = flat[element]
            step = eps * max(1.0, abs(float(x)))
            plus, minus = flat.copy(), flat.copy()
            plus[element] = x + step
            minus[element] = x - step
            taken = float(plus[element]) - float(minus[element])
            args_plus, args_minus = list(args), list(args)
            args_plus[index] = plus.reshape(np.shape(arg))
            args_minus[index] = minus.reshape(np.shape(arg))
            highs, lows = forward(*args_plus), forward(*args_minus)
            for k, (high, low) in enumerate(zip(highs, lows, strict=True)):
                difference = np.asarray(high, dtype=np.float64).reshape(-1) - np.asarray(low, dtype=np.float64).reshape(-1)
                columns[k][:, element] = difference / taken if taken else np.nan
        for k, output in enumerate(outputs):
            result[k].append(columns[k].reshape(output.shape + np.shape(arg)))
    return result


def finite_difference_jacobians(target: Target, eps: float) -> tuple[np.ndarray, ...]:
    """Jacobians from evaluations of the function alone: the oracle independent of AD."""
    forward = jax.jit(target.fn)
    (jacobians,) = central_differences(lambda *a: (forward(*a),), target.args, eps)
    return tuple(jacobians)


def finite_difference_hessian(target: Target, eps: float) -> tuple[np.ndarray, ...]:
    """Hessian blocks [i][j] as central differences of jacfwd, which never uses a transpose rule."""
    argnums = tuple(range(len(target.args)))
    jacobian = jax.jit(jax.jacfwd(target.fn, argnums=argnums))
    blocks = central_differences(lambda *a: tuple(jacobian(*a)), target.args, eps)
    return tuple(blocks[i][j] for i in argnums for j in argnums)


def run_path(name: str, compute: Callable[[], tuple[np.ndarray, ...]]) -> PathResult:
    """Run one path, turning any exception it raises into data."""
    try:
        return PathResult(name=name, arrays=compute())
    except Exception as exc:  # noqa: BLE001 - an exception is a result here, not a failure
        return PathResult(name=name, arrays=None, error=PathError.from_exception(exc))


def run_paths(target: Target, eps: float, order: int = 1) -> dict[str, PathResult]:
    """Every path up to `order`, in the order reports show them."""
    results = {VALUE: run_path(VALUE, lambda: (np.asarray(target.fn(*target.args)),))}
    for name, transform in FIRST_ORDER.items():
        results[name] = run_path(name, lambda transform=transform: ad_blocks(target, transform, 1))
    results[FINITE_DIFFERENCE] = run_path(FINITE_DIFFERENCE, lambda: finite_difference_jacobians(target, eps))
    if order >= 2:
        for name, transform in SECOND_ORDER.items():
            results[name] = run_path(name, lambda transform=transform: ad_blocks(target, transform, 2))
        results[HESSIAN_FINITE_DIFFERENCE] = run_path(HESSIAN_FINITE_DIFFERENCE, lambda: finite_difference_hessian(target, eps))
    return results
