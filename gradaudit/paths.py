"""The derivative paths: each asks the same question of a Target in its own way.

Every path returns a PathResult holding either its arrays or the exception it raised, so one
failing path never hides what the others say. Finite differences use only evaluations of the
function, never JAX's AD, so they are an oracle independent of the rules under audit.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from gradaudit import dtypes
from gradaudit.devices import DEVICE_SEPARATOR, device_name
from gradaudit.finite_differences import ESTIMATES, Differences, differences
from gradaudit.targets.base import Target

VALUE = "value"
JIT_VALUE = "jit_value"
JACFWD = "jacfwd"
JACREV = "jacrev"
JIT_JACREV = "jit_jacrev"
JIT_JACFWD = "jit_jacfwd"
FINITE_DIFFERENCE = "finite_difference"
HESSIAN_FWD_REV = "jacfwd_jacrev"
HESSIAN_REV_REV = "jacrev_jacrev"
HESSIAN_FWD_FWD = "jacfwd_jacfwd"
JIT_HESSIAN_REV_REV = "jit_jacrev_jacrev"
HESSIAN_FINITE_DIFFERENCE = "finite_difference_jacobian"

PATH_LABELS: dict[str, str] = {
    VALUE: "value",
    JIT_VALUE: "jit(value)",
    JACFWD: "jacfwd",
    JACREV: "jacrev",
    JIT_JACREV: "jit(jacrev)",
    JIT_JACFWD: "jit(jacfwd)",
    FINITE_DIFFERENCE: "finite differences",
    HESSIAN_FWD_REV: "jacfwd(jacrev)",
    HESSIAN_REV_REV: "jacrev(jacrev)",
    HESSIAN_FWD_FWD: "jacfwd(jacfwd)",
    JIT_HESSIAN_REV_REV: "jit(jacrev(jacrev))",
    HESSIAN_FINITE_DIFFERENCE: "finite differences of the Jacobian",
}
"""How reports name each path."""


@dataclass(frozen=True)
class PathError:
    """An exception a path raised, kept as data."""

    type: str
    message: str
    where: str
    """The innermost frame, 'file:line in function', to tell a JAX rule from a user's code."""
    user_where: str = ""
    """The innermost frame of the user's own code (outside the standard library, installed packages
    and gradaudit), relative to the working folder when inside it; '' when none took part."""

    @classmethod
    def from_exception(cls, exc: BaseException) -> PathError:
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
        mine = [f for f in frames if _is_user_file(f.filename)]
        user_where = f"{_shown(mine[-1].filename)}:{mine[-1].lineno} in {mine[-1].name}" if mine else ""
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return cls(type=type(exc).__name__, message=message, where=where, user_where=user_where)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type

    def located(self) -> str:
        """The exception with the user's line that raised it, where there is one: what a user reads first."""
        return f"{self} (at {self.user_where})" if self.user_where else str(self)


_LIBRARY_FOLDERS = tuple(
    str(Path(folder).resolve()) + os.sep
    for folder in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], str(Path(__file__).parent)}
)


def _is_user_file(filename: str) -> bool:
    """Whether a traceback frame is the user's own code: not the standard library, an installed package or gradaudit."""
    if filename.startswith("<"):
        return False
    resolved = str(Path(filename).resolve())
    parts = Path(resolved).parts
    return not resolved.startswith(_LIBRARY_FOLDERS) and "site-packages" not in parts and "dist-packages" not in parts


def _shown(filename: str) -> str:
    """A file as a user would type it: relative to the working folder when inside it."""
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative


@dataclass(frozen=True)
class Inapplicable:
    """An exception that means a path does not apply to the function, not that the path failed."""

    type: str
    fragment: str
    reason: str
    compiled_only: bool = False
    """Only for jit-compiled paths: the same exception eagerly is a real error."""

    def matches(self, path: str, exc: BaseException) -> bool:
        return (
            type(exc).__name__ == self.type
            and self.fragment in str(exc)
            and (not self.compiled_only or base_name(path) in COMPILED)
        )


NOT_APPLICABLE: tuple[Inapplicable, ...] = (
    Inapplicable(
        "TypeError",
        "can't apply forward-mode autodiff (jvp) to a custom_vjp function",
        "forward mode cannot differentiate a custom_vjp function: it defines only a reverse rule",
    ),
    Inapplicable(
        "TracerBoolConversionError",
        "",
        "jit cannot compile Python control flow on a traced value (an `if` on an input)",
        compiled_only=True,
    ),
    Inapplicable(
        "ConcretizationTypeError",
        "",
        "jit cannot compile code that needs an input's concrete value",
        compiled_only=True,
    ),
    Inapplicable(
        "TracerIntegerConversionError",
        "",
        "jit cannot compile code that converts a traced value to a Python int",
        compiled_only=True,
    ),
)


@dataclass(frozen=True, eq=False)
class PathResult:
    """What one path gave: for `value` the output, for the others one derivative block per argument.

    Exactly one of `arrays`, `error` and `not_applicable` is set.
    """

    name: str
    arrays: tuple[np.ndarray, ...] | None
    error: PathError | None = None
    not_applicable: str | None = None
    """Why this path cannot apply to the function (e.g. jacfwd of a custom_vjp function)."""
    estimates: dict[str, tuple[np.ndarray, ...]] | None = None
    """Finite-difference paths only: every estimate per block (see finite_differences.ESTIMATES)."""
    device: str | None = None
    """Where it ran (`cpu:0`), when the run chose devices; None: JAX's default device."""
    shared_with: str | None = None
    """The path whose answer this one repeats, not having run on its own: an eager path on the fast
    path and the compiled literal path, which run only its jit twin. None: it ran."""

    @property
    def ok(self) -> bool:
        return self.arrays is not None

    @property
    def status(self) -> str:
        return "ok" if self.ok else ("not_applicable" if self.not_applicable else "error")


CONSTANT_SUFFIX = ":const"
"""Path names of a scenario bound both ways carry this suffix for the captured-constant binding."""


def path_name(base: str, binding: str) -> str:
    return base + CONSTANT_SUFFIX if binding == "constant" else base


def base_name(name: str) -> str:
    """The path without its binding and device: `jacrev` for `jacrev:const@cpu:1`."""
    return primary_name(name).removesuffix(CONSTANT_SUFFIX)


def primary_name(name: str) -> str:
    """The same path on the first device: `jacrev:const` for `jacrev:const@cpu:1`."""
    return name.split(DEVICE_SEPARATOR, 1)[0]


def label(name: str) -> str:
    """How reports name a path: 'jit(jacrev)', 'jit(jacrev) with constants' for the constant binding,
    'jit(jacrev) on cpu:1' on a further device."""
    primary = primary_name(name)
    text = PATH_LABELS[base_name(name)]
    text = text + " with constants" if primary.endswith(CONSTANT_SUFFIX) else text
    return text if primary == name else f"{text} on {name.split(DEVICE_SEPARATOR, 1)[1]}"


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

    def bound(self, bindings: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(AD path names, reference names) for a scenario run under `bindings`."""
        return (
            tuple(path_name(p, b) for b in bindings for p in self.ad_paths),
            tuple(path_name(self.reference, b) for b in bindings),
        )


FAMILIES: tuple[PathFamily, ...] = (
    PathFamily(order=1, ad_paths=tuple(FIRST_ORDER), reference=FINITE_DIFFERENCE),
    PathFamily(order=2, ad_paths=tuple(SECOND_ORDER), reference=HESSIAN_FINITE_DIFFERENCE),
)
AD_PATHS: tuple[str, ...] = FAMILIES[0].ad_paths
"""First-order AD paths: the ones whose routing provenance checks."""
ORDERS: dict[str, int] = {
    VALUE: 0,
    JIT_VALUE: 0,
    **{p: 1 for p in FIRST_ORDER},
    **{p: 2 for p in SECOND_ORDER},
    FINITE_DIFFERENCE: 1,
    HESSIAN_FINITE_DIFFERENCE: 2,
}
"""What each path differentiates to: 0 for the function's value, 1 for Jacobians, 2 for Hessians."""
COMPILED = frozenset({JIT_VALUE, JIT_JACFWD, JIT_JACREV, JIT_HESSIAN_REV_REV})
"""Paths that run under jit."""


def block_names(arg_names: tuple[str, ...], order: int) -> tuple[str, ...]:
    """Names of a path's derivative blocks: one per argument, or per ordered pair for a Hessian."""
    if order == 1:
        return arg_names
    return tuple(f"{first} d {second}" for first in arg_names for second in arg_names)


def ad_blocks(target: Target, transform: Transform, order: int) -> tuple[np.ndarray, ...]:
    """Derivative blocks by one AD transform: Jacobians per argument, or Hessian blocks [i][j] row-major."""
    argnums = tuple(range(len(target.args)))
    result = transform(target.fn, argnums)(*target.args, *target.fixed)
    if order == 1:
        return tuple(np.asarray(result[i]) for i in argnums)  # type: ignore[index]
    return tuple(np.asarray(result[i][j]) for i in argnums for j in argnums)  # type: ignore[index]


def _steps(target: Target, eps: float | None) -> list[float]:
    return [eps if eps is not None else dtypes.default_eps(np.dtype(arg.dtype).name) for arg in target.args]


def _estimates(diffs: Differences, pairs: Sequence[tuple[int, int]]) -> dict[str, tuple[np.ndarray, ...]]:
    return {name: tuple(diffs.estimate(name, k, j) for k, j in pairs) for name in ESTIMATES}


def _compiled_or_eager(fn: Callable, args: Sequence, compiled: Callable | None = None) -> Callable:
    """`jit(fn)` (or `compiled`, the jit of fn another path made), or `fn` itself when jit cannot
    compile it (Python control flow on inputs)."""
    compiled = compiled or jax.jit(fn)
    try:
        compiled(*args)
    except Exception as exc:  # noqa: BLE001 - only the inapplicable kinds fall back; others propagate
        if not any(rule.compiled_only and rule.matches(JIT_VALUE, exc) for rule in NOT_APPLICABLE):
            raise
        return fn
    return compiled


def finite_difference_jacobians(target: Target, eps: float | None, compiled: Callable | None = None) -> dict[str, tuple[np.ndarray, ...]]:
    """Jacobians from evaluations of the function alone (compiled where jit can): the oracle independent of AD.

    `compiled` is jit(target.fn) when the jit_value path made it already: one compilation serves both.
    """
    fixed = target.fixed
    forward = _compiled_or_eager(target.fn, (*target.args, *fixed), compiled)
    diffs = differences(lambda *a: (forward(*a, *fixed),), target.args, _steps(target, eps))
    return _estimates(diffs, [(0, j) for j in range(len(target.args))])


def finite_difference_hessian(target: Target, eps: float | None) -> dict[str, tuple[np.ndarray, ...]]:
    """Hessian blocks [i][j] as finite differences of the Jacobian.

    The Jacobian comes from jacfwd, which never uses a transpose rule; where forward mode does not
    apply (a custom_vjp function), from jacrev, whose first-order answer is checked on its own.
    """
    argnums = tuple(range(len(target.args)))
    fixed = target.fixed
    jacobian = jax.jit(jax.jacfwd(target.fn, argnums=argnums))
    try:
        jacobian(*target.args, *fixed)
    except TypeError as exc:
        if not NOT_APPLICABLE[0].matches(JACFWD, exc):
            raise
        jacobian = jax.jit(jax.jacrev(target.fn, argnums=argnums))
    diffs = differences(lambda *a: tuple(jacobian(*a, *fixed)), target.args, _steps(target, eps))
    return _estimates(diffs, [(i, j) for i in argnums for j in argnums])


def run_path(
    name: str, compute: Callable[[], tuple[np.ndarray, ...] | dict[str, tuple[np.ndarray, ...]]], device: str | None = None
) -> PathResult:
    """Run one path, turning an exception into data: not applicable when it says so, else an error."""
    try:
        computed = compute()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - an exception (sys.exit too) is a result here, not a failure
        error = PathError.from_exception(exc)
        for inapplicable in NOT_APPLICABLE:
            if inapplicable.matches(name, exc):
                return PathResult(name=name, arrays=None, not_applicable=inapplicable.reason, device=device)
        return PathResult(name=name, arrays=None, error=error, device=device)
    if isinstance(computed, dict):
        return PathResult(name=name, arrays=computed["extrapolated"], estimates=computed, device=device)
    return PathResult(name=name, arrays=computed, device=device)


@contextmanager
def unfiltered_tracebacks() -> Iterator[None]:
    """JAX hides its own frames from tracebacks; a diagnosis needs the innermost frame, JAX's included."""
    previous = jax.config.jax_traceback_filtering
    jax.config.update("jax_traceback_filtering", "off")
    try:
        yield
    finally:
        jax.config.update("jax_traceback_filtering", previous)


def run_paths(targets: Sequence[Target], eps: float | None, order: int = 1, devices: Sequence = ()) -> dict[str, PathResult]:
    """Every path up to `order` for each binding of the target, in the order reports show them.

    With devices, every path runs on the first; value and the AD paths run again on each further
    device, named `path@device` (finite differences are the oracle and need running only once).
    """
    with unfiltered_tracebacks():
        if not devices:
            return {name: run_path(name, compute) for name, compute in _paths(targets, eps, order)}
        results = {}
        for index, device in enumerate(devices):
            where = device_name(device)
            suffix = "" if index == 0 else DEVICE_SEPARATOR + where
            with jax.default_device(device):
                for name, compute in _paths(targets, eps, order, references=index == 0):
                    results[name + suffix] = run_path(name + suffix, compute, where)
        return results


def _paths(targets: Sequence[Target], eps: float | None, order: int, references: bool = True) -> Iterator[tuple[str, Callable]]:
    """(name, compute) of every path, in report order; finite differences only with `references`.

    `value` is the function called eagerly on JAX arrays, as a user would, once; `jit_value` per binding.
    """
    first = targets[0]
    yield VALUE, lambda: (np.asarray(first.fn(*map(jnp.asarray, (*first.args, *first.fixed)))),)
    for target in targets:
        binding = target.binding
        compiled = jax.jit(target.fn)
        yield path_name(JIT_VALUE, binding), lambda tg=target, c=compiled: (np.asarray(c(*tg.args, *tg.fixed)),)
        for base, transform in FIRST_ORDER.items():
            yield path_name(base, binding), lambda t=transform, tg=target: ad_blocks(tg, t, 1)
        if references:
            yield path_name(FINITE_DIFFERENCE, binding), lambda tg=target, c=compiled: finite_difference_jacobians(tg, eps, c)
        if order >= 2:
            for base, transform in SECOND_ORDER.items():
                yield path_name(base, binding), lambda t=transform, tg=target: ad_blocks(tg, t, 2)
            if references:
                yield path_name(HESSIAN_FINITE_DIFFERENCE, binding), lambda tg=target: finite_difference_hessian(tg, eps)
