"""The Target: a function and the inputs it is differentiated at."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from gradaudit.model.dtypes import FLOAT_DTYPES


@dataclass(frozen=True, eq=False)
class Target:
    """A function to differentiate with respect to each of `args`; `fixed` follow them undifferentiated.

    Called as `fn(*args, *fixed)`. Fixed inputs passed this way are traced under jit; a target
    that captures its discrete inputs as constants has only held floating inputs in `fixed`.
    """

    fn: Callable[..., object]
    args: tuple[np.ndarray, ...]
    """The differentiable inputs, in order."""
    arg_names: tuple[str, ...]
    """How findings name each argument ("case 1", "x")."""
    fixed: tuple[np.ndarray, ...] = ()
    binding: str = ""
    """'traced' or 'constant' when a scenario runs both ways (its path names say which); '' when it runs one way."""
    captured: bool = False
    """Whether `fn` captures discrete inputs as constants (a select_n selector, a function's integer inputs)."""

    @property
    def bound(self) -> str:
        """How the discrete inputs reach `fn`, as paths record it: `traced` (passed in `fixed`),
        `constant` (captured) or `none` (there are none)."""
        return "constant" if self.captured else ("traced" if self.fixed else "none")


CUSTOM_RULES = ("custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr")
"""Primitives that call a function with a hand-written derivative rule."""


def primitives(target: Target) -> frozenset[str]:
    """The primitives AD differentiates in the target's function, sub-jaxprs included (cond
    branches, loops), but not inside a function with its own derivative rule, whose insides AD
    never differentiates; such a call is also named `<primitive>:user` when the function is the
    user's own code (not an installed library's: jax.nn.relu is a custom_jvp too). Which of them
    misbehave at the scenario's inputs is `triggers.triggered`'s to say."""
    import jax

    closed = jax.make_jaxpr(target.fn)(*target.args, *target.fixed)
    found: set[str] = set()
    _walk(closed.jaxpr, found)
    return frozenset(found)


def narrowing(target: Target) -> str:
    """Where the target's function rounds a float64 number to a narrower floating dtype on the way to its
    outputs (a cast, or `reduce_precision` to fewer bits), a few words naming the first such equation and the
    dtypes; '' where it never does. Its finite differences in float64 are then no finer than that dtype's
    (a solver whose state is a float32 constant, a layer computed in float32). Sub-jaxprs and functions with
    their own rules count (their insides are what the function computes); a cast whose numbers reach the
    outputs only as booleans (a mask) or not at all (a debug callback) does not."""
    import jax

    closed = jax.make_jaxpr(target.fn)(*target.args, *target.fixed)
    return next(iter(_narrowings(closed.jaxpr)), "")


def _narrowings(jaxpr) -> list[str]:
    """`narrowing`'s words for each narrowing equation whose floating result reaches a floating output of
    `jaxpr` through floating numbers (walked backwards from the outputs), sub-jaxprs of such equations
    taken whole."""
    from jax.extend.core import Var

    def floating(var) -> bool:  # complex numbers carry their parts' rounding
        return isinstance(var, Var) and _inexact(np.dtype(getattr(var.aval, "dtype", np.int8)))

    live = {v for v in jaxpr.outvars if floating(v)}
    found: list[str] = []
    for eqn in reversed(jaxpr.eqns):
        if not any(v in live for v in eqn.outvars):
            continue
        found += _narrowed(eqn)
        for sub in sub_jaxprs(eqn):
            found += _narrowings(sub)
        live |= {v for v in eqn.invars if floating(v)}
    return found


def _narrowed(eqn) -> list[str]:
    """`narrowing`'s words where `eqn` itself rounds a float64 number to fewer bits."""
    name = eqn.primitive.name
    if name not in ("convert_element_type", "reduce_precision") or not eqn.invars or not eqn.outvars:
        return []
    was, now = (np.dtype(getattr(v.aval, "dtype", np.int8)) for v in (eqn.invars[0], eqn.outvars[0]))
    if was.name not in ("float64", "complex128"):
        return []
    if name == "reduce_precision":
        bits = eqn.params.get("mantissa_bits", 52)
        return [f"{name} of {was.name} to {bits} mantissa bits"] if bits < np.finfo(was).nmant else []
    # a complex128 number's parts are float64s: complex64 holds float32s
    narrower = now.itemsize < (8 if was.name == "float64" else 16)
    return [f"{name} from {was.name} to {now.name}"] if _inexact(now) and narrower else []


def _inexact(dtype: np.dtype) -> bool:
    return dtype.name in FLOAT_DTYPES or dtype.kind == "c"


def _walk(jaxpr, found: set[str]) -> None:
    from gradaudit.model.paths import is_user_file

    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        found.add(name)
        if name in CUSTOM_RULES:
            called = eqn.params.get("call_jaxpr") or eqn.params.get("fun_jaxpr")
            info = getattr(getattr(called, "jaxpr", called), "debug_info", None)
            source = getattr(info, "func_src_info", "") or ""
            if " at " in source and is_user_file(source.rsplit(" at ", 1)[1].rsplit(":", 1)[0]):
                found.add(f"{name}:user")
            continue
        for sub in sub_jaxprs(eqn):
            _walk(sub, found)


def sub_jaxprs(eqn) -> Iterator:
    """The jaxprs an equation calls (cond branches, loop bodies, a jit's or a custom rule's function)."""
    for value in eqn.params.values():
        for inner in value if isinstance(value, tuple | list) else (value,):
            sub = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr holds its Jaxpr
            if hasattr(sub, "eqns"):
                yield sub
