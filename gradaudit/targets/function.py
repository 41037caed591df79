"""A user's function: floating inputs are differentiated, integer and boolean inputs held fixed.

Fixed inputs reach the function as traced arguments, as captured constants, or both ways (each
its own Target), since some disagreements appear under one binding only. Outputs may be any
pytree: its floating leaves are flattened into one vector so every path answers the same question.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from gradaudit.model.scenario import FunctionCall, Scenario
from gradaudit.targets.base import Target
from gradaudit.sources.user_modules import resolve


class NoFloatingOutput(TypeError):
    """The user's function returned nothing that can be differentiated."""


@functools.lru_cache(maxsize=1024)
def _flat_output(fn: Callable[..., object]) -> Callable[..., object]:
    """`fn` with a pytree output turned into one vector of its floating leaves (an array stays as it is)."""

    def flat(*args):
        out = fn(*args)
        all_leaves = jax.tree_util.tree_leaves(out)
        leaves = [leaf for leaf in all_leaves if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact)]
        if not leaves:
            kinds = ", ".join(str(jnp.result_type(leaf)) for leaf in all_leaves) or "nothing"
            raise NoFloatingOutput(f"the function returned no floating-point output to differentiate (it returned {kinds})")
        if len(all_leaves) == 1 and len(leaves) == 1:
            return out if not isinstance(out, list | tuple | dict) else leaves[0]
        return jnp.concatenate([jnp.ravel(leaf) for leaf in leaves]) if len(leaves) > 1 else jnp.ravel(leaves[0])

    return flat


def _interleave(pattern: tuple[bool, ...], differentiated: tuple, fixed: tuple) -> list:
    """The user's positional arguments, rebuilt from the differentiated and fixed inputs in their own
    order (`pattern`: which positions are differentiated)."""
    remaining_d, remaining_f = iter(differentiated), iter(fixed)
    return [next(remaining_d) if differentiable else next(remaining_f) for differentiable in pattern]


# The functions below are made once per user function, argument pattern and captured values, so
# every scenario of one function calls the same Python function, as a user's code does: JAX's
# caches of traced and compiled programs (jit's, and the engines' transforms) then serve them all.


@functools.lru_cache(maxsize=1024)
def _traced(fn: Callable, pattern: tuple[bool, ...]) -> Callable:
    n = sum(pattern)

    def traced(*inputs):
        return fn(*_interleave(pattern, inputs[:n], inputs[n:]))

    return traced


@functools.lru_cache(maxsize=1024)
def _captured(fn: Callable, pattern: tuple[bool, ...], values: tuple[tuple[bytes, str, tuple[int, ...]], ...]) -> Callable:
    constants = tuple(jnp.asarray(np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape)) for data, dtype, shape in values)

    def captured(*inputs):
        return fn(*_interleave(pattern, inputs, constants))

    return captured


def build(scenario: Scenario) -> tuple[Target, ...]:
    spec: FunctionCall = scenario.target
    fn = _flat_output(resolve(spec.fn, spec.root))
    arrays = [s.array() for s in spec.inputs]
    pattern = tuple(s.differentiable for s in spec.inputs)
    args = tuple(a for a, s in zip(arrays, spec.inputs, strict=True) if s.differentiable)
    fixed = tuple(a for a, s in zip(arrays, spec.inputs, strict=True) if not s.differentiable)
    names = tuple(f"x{i}" for i, s in enumerate(spec.inputs) if s.differentiable)
    traced = _traced(fn, pattern)
    if not fixed:
        return (Target(fn=traced, args=args, arg_names=names),)
    captured = _captured(fn, pattern, tuple((a.tobytes(), a.dtype.str, a.shape) for a in fixed))
    by_binding = {
        "traced": Target(fn=traced, args=args, arg_names=names, fixed=fixed, binding="traced"),
        "constant": Target(fn=captured, args=args, arg_names=names, binding="constant", captured=True),
    }
    if spec.bind == "both":
        return tuple(by_binding.values())
    only = by_binding[spec.bind]
    return (Target(fn=only.fn, args=only.args, arg_names=names, fixed=only.fixed, captured=only.captured),)
