"""The derivative paths as data: their names, how reports label them, which answer which question,
and what one path gave (its arrays, the exception it raised, or why it does not apply).

No JAX here: the transforms that compute paths live in `engines/`.
"""

from __future__ import annotations

import functools
import os
import sysconfig
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

DEVICE_SEPARATOR = "@"
"""A path run on a further device is named `jacrev@cpu:1`."""

VALUE = "value"
JIT_VALUE = "jit_value"
JACFWD = "jacfwd"
JACREV = "jacrev"
JIT_JACREV = "jit_jacrev"
JIT_JACFWD = "jit_jacfwd"
FINITE_DIFFERENCE = "finite_difference"
JIT_HESSIAN_FWD_REV = "jit_jacfwd_jacrev"
HESSIAN_FWD_REV = "jacfwd_jacrev"
HESSIAN_REV_REV = "jacrev_jacrev"
JIT_HESSIAN_FWD_FWD = "jit_jacfwd_jacfwd"
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
    JIT_HESSIAN_FWD_REV: "jit(jacfwd(jacrev))",
    HESSIAN_FWD_REV: "jacfwd(jacrev)",
    HESSIAN_REV_REV: "jacrev(jacrev)",
    JIT_HESSIAN_FWD_FWD: "jit(jacfwd(jacfwd))",
    HESSIAN_FWD_FWD: "jacfwd(jacfwd)",
    JIT_HESSIAN_REV_REV: "jit(jacrev(jacrev))",
    HESSIAN_FINITE_DIFFERENCE: "finite differences of the Jacobian",
}
"""How reports name each path."""

MODES_NEEDED: dict[str, frozenset[str]] = {
    JACFWD: frozenset({"fwd"}),
    JIT_JACFWD: frozenset({"fwd"}),
    JACREV: frozenset({"rev"}),
    JIT_JACREV: frozenset({"rev"}),
    JIT_HESSIAN_FWD_REV: frozenset({"fwd", "rev"}),
    HESSIAN_FWD_REV: frozenset({"fwd", "rev"}),
    HESSIAN_REV_REV: frozenset({"rev"}),
    JIT_HESSIAN_FWD_FWD: frozenset({"fwd"}),
    HESSIAN_FWD_FWD: frozenset({"fwd"}),
    JIT_HESSIAN_REV_REV: frozenset({"rev"}),
}
"""The AD modes each derivative path uses (values and finite differences use none)."""


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
        # (file, line, function) of each frame; not traceback.extract_tb, which reads every frame's
        # source line (a JAX traceback is deep: most of the cost of judging a failed path).
        frames = [
            (frame.f_code.co_filename, line, frame.f_code.co_name)
            for frame, line in traceback.walk_tb(exc.__traceback__)
        ]
        where = "{}:{} in {}".format(*frames[-1]) if frames else ""
        mine = [f for f in frames if is_user_file(f[0])]
        user_where = f"{_shown(mine[-1][0])}:{mine[-1][1]} in {mine[-1][2]}" if mine else ""
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return cls(type=type(exc).__name__, message=message, where=where, user_where=user_where)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type

    def located(self) -> str:
        """The exception with the user's line that raised it, where there is one: what a user reads first."""
        return f"{self} (at {self.user_where})" if self.user_where else str(self)


_LIBRARY_FOLDERS = tuple(
    str(Path(folder).resolve()) + os.sep
    for folder in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"], str(Path(__file__).parents[1])}
)


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    """Whether a traceback frame is the user's own code: not the standard library, an installed
    package or gradaudit (remembered per file: a deep JAX traceback names the same files often)."""
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
    only: frozenset[str] = frozenset()
    """Only for these paths (base names); empty: for any."""
    tells: bool = False
    """The exception's message is evidence (what a step away gave): the reason quotes it."""
    qualified: str = ""
    """The exception as a script names it; empty: `jax.errors.<type>`."""

    @property
    def exception_name(self) -> str:
        return self.qualified or f"jax.errors.{self.type}"

    def why(self, exc: BaseException) -> str:
        return f"{self.reason} ({exc})" if self.tells else self.reason

    def matches(self, path: str, exc: BaseException) -> bool:
        return (
            type(exc).__name__ == self.type
            and self.fragment in str(exc)
            and (not self.compiled_only or base_name(path) in COMPILED)
            and (not self.only or base_name(path) in self.only)
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
    Inapplicable(
        "IndexError",
        "Slice entries must be static integers",
        "jit cannot compile a slice whose bounds are traced inputs (`x[:n]` with n an argument)",
        compiled_only=True,
        qualified="IndexError",
    ),
    Inapplicable(
        "OutputShapeChanges",
        "",
        "the output's shape changes when an input moves by a step (its values decide its size): no finite "
        "difference, and no derivative, spans that",
        only=frozenset({FINITE_DIFFERENCE, HESSIAN_FINITE_DIFFERENCE}),
        tells=True,
    ),
    Inapplicable(
        "RaisesNearby",
        "",
        "the function raises a step away from the point, though not at it: no finite difference spans that",
        only=frozenset({FINITE_DIFFERENCE, HESSIAN_FINITE_DIFFERENCE}),
        tells=True,
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
    engine: str = "literal"
    """What computed it: `literal` (this scenario alone, by jax.jacfwd, jax.jacrev and jax.jit),
    `bundle` (jit paths of many scenarios' functions in one program; eager paths one scenario at a
    time) or `group` (scenarios that share a program: the eager paths one eager vmap of them, the jit paths
    compiled once and called by each on its own inputs, a user's function's each its own program)."""
    binding: str = "none"
    """How the scenario's discrete inputs (a select_n selector, a function's integer and boolean
    inputs) reached the function: `constant` (captured, as a user writes it), `traced` (passed as
    arguments, as a vmapped group must) or `none` (it has none)."""

    @property
    def ok(self) -> bool:
        return self.arrays is not None

    @property
    def ok_arrays(self) -> tuple[np.ndarray, ...]:
        """`arrays` of a path known to be ok (checked, or only ok paths reach the caller): the type
        checker cannot see through `ok`."""
        assert self.arrays is not None, f"{self.name} has no arrays: it did not run"
        return self.arrays

    @property
    def status(self) -> str:
        return "ok" if self.ok else ("not_applicable" if self.not_applicable else "error")

    @property
    def scalars(self) -> tuple[float, ...] | None:
        """Its blocks as numbers when they are a few scalars (one per case of a scalar select_n, as
        the terminal's table shows them); None otherwise."""
        if not self.arrays or len(self.arrays) > SHOWN_SCALARS or any(np.size(block) != 1 for block in self.arrays):
            return None
        return tuple(float(np.asarray(block).reshape(-1)[0]) for block in self.arrays)

    def lightened(self) -> PathResult:
        """This path with what no report of a consistent scenario shows dropped: finite-difference
        estimates, and arrays past KEPT_ELEMENTS numbers (`arrays` is then empty: ok, not kept)."""
        if not self.ok or sum(np.size(block) for block in self.ok_arrays) <= KEPT_ELEMENTS:
            return self if self.estimates is None else replace(self, estimates=None)
        return replace(self, arrays=(), estimates=None)


SHOWN_SCALARS = 3
"""Most scalar blocks a table shows as numbers, as the seed's table shows a scalar select_n's
gradient tuple; past it, a path shows its routes."""

KEPT_ELEMENTS = SHOWN_SCALARS**2
"""Numbers a lightened path keeps: what the terminal shows (a few scalar cases, the diagonal of a
Hessian of as many scalar arguments)."""


CONSTANT_SUFFIX = ":const"
"""Path names of a scenario bound both ways carry this suffix for the captured-constant binding."""


def path_name(base: str, binding: str) -> str:
    return base + CONSTANT_SUFFIX if binding == "constant" else base


JIT_PREFIX = "jit_"
"""What a compiled path's name adds to its eager twin's (`jit_jacrev`, `jit_jacfwd_jacrev`)."""


def transform_of(name: str) -> str:
    """The transform a path computes, eager or compiled, binding and device aside: `jacrev` for
    `jit_jacrev:const@cpu:1`. A path and its eager/jit twin share it."""
    return base_name(name).removeprefix(JIT_PREFIX)


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


FIRST_ORDER_PATHS: tuple[str, ...] = (JACFWD, JIT_JACFWD, JACREV, JIT_JACREV)
SECOND_ORDER_PATHS: tuple[str, ...] = (
    JIT_HESSIAN_FWD_REV,
    HESSIAN_FWD_FWD,
    JIT_HESSIAN_FWD_FWD,
    JIT_HESSIAN_REV_REV,
    HESSIAN_FWD_REV,
    HESSIAN_REV_REV,
)
EAGER_TWINS: dict[str, str] = {JIT_HESSIAN_FWD_REV: HESSIAN_FWD_REV, JIT_HESSIAN_REV_REV: HESSIAN_REV_REV}
"""Compiled Hessians whose eager form is computed only where the compiled one disagrees (each eager
Hessian compiles a program per primitive; forward over forward, the cheapest, is always computed
eagerly too): then the judge can tell an eager/jit split from a wrong rule."""


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
    PathFamily(order=1, ad_paths=FIRST_ORDER_PATHS, reference=FINITE_DIFFERENCE),
    PathFamily(order=2, ad_paths=SECOND_ORDER_PATHS, reference=HESSIAN_FINITE_DIFFERENCE),
)
AD_PATHS: tuple[str, ...] = FAMILIES[0].ad_paths
"""First-order AD paths: the ones whose routing provenance checks."""
ORDERS: dict[str, int] = {
    VALUE: 0,
    JIT_VALUE: 0,
    **{p: 1 for p in FIRST_ORDER_PATHS},
    **{p: 2 for p in SECOND_ORDER_PATHS},
    FINITE_DIFFERENCE: 1,
    HESSIAN_FINITE_DIFFERENCE: 2,
}
"""What each path differentiates to: 0 for the function's value, 1 for Jacobians, 2 for Hessians."""
COMPILED = frozenset({JIT_VALUE, JIT_JACFWD, JIT_JACREV, JIT_HESSIAN_FWD_REV, JIT_HESSIAN_FWD_FWD, JIT_HESSIAN_REV_REV})
"""Paths that run under jit."""


def block_names(arg_names: tuple[str, ...], order: int) -> tuple[str, ...]:
    """Names of a path's derivative blocks: one per argument, or per ordered pair for a Hessian."""
    if order == 1:
        return arg_names
    return tuple(f"{first} d {second}" for first in arg_names for second in arg_names)
