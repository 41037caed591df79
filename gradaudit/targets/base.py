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
    """Where the target's function rounds a float64 number to a narrower floating dtype inside (a cast, or
    `reduce_precision` to fewer bits), a few words naming the first such equation and the dtypes; '' where
    it never does. Its finite differences in float64 are then no finer than that dtype's where it rounds
    (a solver whose state is a float32 constant, a layer computed in float32), sub-jaxprs and functions
    with their own rules included: their insides are what the function computes."""
    import jax

    closed = jax.make_jaxpr(target.fn)(*target.args, *target.fixed)
    return next(_narrowings(closed.jaxpr), "")


def _narrowings(jaxpr) -> Iterator[str]:
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name in ("convert_element_type", "reduce_precision") and eqn.invars and eqn.outvars:
            was, now = (np.dtype(getattr(v.aval, "dtype", np.int8)) for v in (eqn.invars[0], eqn.outvars[0]))
            fewer = name == "reduce_precision" and eqn.params.get("mantissa_bits", 52) < np.finfo(was).nmant
            if was == np.float64 and fewer:
                yield f"{name} of float64 to {eqn.params['mantissa_bits']} mantissa bits"
            elif was == np.float64 and now.name in FLOAT_DTYPES and now.itemsize < was.itemsize:
                yield f"{name} from float64 to {now.name}"
        for value in eqn.params.values():
            for inner in value if isinstance(value, tuple | list) else (value,):
                sub = getattr(inner, "jaxpr", inner)
                if hasattr(sub, "eqns"):
                    yield from _narrowings(sub)


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
        for value in eqn.params.values():
            for inner in value if isinstance(value, tuple | list) else (value,):
                sub = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr holds its Jaxpr
                if hasattr(sub, "eqns"):
                    _walk(sub, found)
