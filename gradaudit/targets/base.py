"""The Target: a function and the inputs it is differentiated at."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Target:
    """A function to differentiate with respect to each of `args`; `fixed` follow them undifferentiated.

    Called as `fn(*args, *fixed)`. Fixed inputs passed this way are traced under jit; a target
    that captures them as constants has `fixed == ()`.
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
        return "traced" if self.fixed else ("constant" if self.captured else "none")


def primitives(target: Target) -> frozenset[str]:
    """The primitives the target's function binds, in every sub-jaxpr (cond branches, loops, custom
    rules' calls); a select_n whose selector is an integer is also named `select_n:integer`.
    A diagnosis that blames a primitive checks it is here."""
    import jax

    closed = jax.make_jaxpr(target.fn)(*target.args, *target.fixed)
    found: set[str] = set()
    _walk(closed.jaxpr, found)
    return frozenset(found)


def _walk(jaxpr, found: set[str]) -> None:
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        found.add(name)
        if name == "select_n" and np.issubdtype(np.dtype(eqn.invars[0].aval.dtype), np.integer):
            found.add("select_n:integer")
        for value in eqn.params.values():
            for inner in value if isinstance(value, tuple | list) else (value,):
                sub = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr holds its Jaxpr
                if hasattr(sub, "eqns"):
                    _walk(sub, found)
