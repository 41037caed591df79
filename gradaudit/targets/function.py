"""A user's function: floating inputs are differentiated, integer and boolean inputs held fixed.

Fixed inputs reach the function as traced arguments, as captured constants, or both ways (each
its own Target), since some disagreements appear under one binding only. Outputs may be any
pytree: its floating leaves are flattened into one vector so every path answers the same question.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from gradaudit.function_caches import per_function
from gradaudit.model.scenario import FunctionCall, InputSpec, Scenario
from gradaudit.sources.user_modules import resolve
from gradaudit.targets.base import Target


class NoFloatingOutput(TypeError):
    """The user's function returned nothing that can be differentiated."""


@per_function(maxsize=1024)
def flat_output(fn: Callable[..., object]) -> Callable[..., object]:
    """`fn` with a pytree output turned into one vector of its floating leaves (an array stays as it is)."""

    def flat(*args):
        out = fn(*args)
        all_leaves = jax.tree_util.tree_leaves(out)
        # A complex leaf is its real and imaginary parts: two real outputs, which every mode differentiates.
        all_leaves = [
            part
            for leaf in all_leaves
            for part in ((jnp.real(leaf), jnp.imag(leaf)) if jnp.iscomplexobj(leaf) else (leaf,))
        ]
        leaves = [leaf for leaf in all_leaves if jnp.issubdtype(jnp.result_type(leaf), jnp.floating)]
        if not leaves:
            kinds = ", ".join(str(jnp.result_type(leaf)) for leaf in all_leaves) or "nothing"
            raise NoFloatingOutput(
                f"the function returned no floating-point output to differentiate (it returned {kinds})"
            )
        if len(all_leaves) == 1 and len(leaves) == 1:
            return leaves[0]
        return jnp.concatenate([jnp.ravel(leaf) for leaf in leaves]) if len(leaves) > 1 else jnp.ravel(leaves[0])

    return flat


@per_function(maxsize=1024)
def with_kwargs(fn: Callable, kwargs: tuple[tuple[str, object], ...]) -> Callable:
    """`fn` with its static keyword arguments bound (itself when there are none), made once per both."""
    return functools.partial(fn, **dict(kwargs)) if kwargs else fn


DIFFERENTIATED, PASSED, CAPTURED = "d", "p", "c"
"""How each positional argument reaches the user's function: differentiated, passed in undifferentiated
(traced under jit), or captured as a constant."""


def _interleave(pattern: tuple[str, ...], differentiated: tuple, passed: tuple, constants: tuple = ()) -> list:
    """The user's positional arguments, rebuilt in their own order from the differentiated, passed
    and captured inputs (`pattern`: how each position arrives)."""
    sources = {DIFFERENTIATED: iter(differentiated), PASSED: iter(passed), CAPTURED: iter(constants)}
    return [next(sources[kind]) for kind in pattern]


# The functions below are made once per user function, argument pattern and captured values, so
# every scenario of one function calls the same Python function, as a user's code does: JAX's
# caches of traced and compiled programs (jit's, and the engines' transforms) then serve them all.


@per_function(maxsize=1024)
def _traced(fn: Callable, pattern: tuple[str, ...]) -> Callable:
    n = pattern.count(DIFFERENTIATED)

    def traced(*inputs):
        return fn(*_interleave(pattern, inputs[:n], inputs[n:]))

    return traced


@per_function(maxsize=1024)
def _captured(
    fn: Callable, pattern: tuple[str, ...], values: tuple[tuple[bytes, str, tuple[int, ...]], ...], x64: bool
) -> Callable:
    # `x64` is part of the key: a JAX array made while x64 is off holds an int64 value truncated to
    # int32, and a function cached with it would read that truncated value in every later audit.
    constants = tuple(
        jnp.asarray(np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape)) for data, dtype, shape in values
    )
    n = pattern.count(DIFFERENTIATED)

    def captured(*inputs):
        return fn(*_interleave(pattern, inputs[:n], inputs[n:], constants))

    return captured


def along_directions(
    fn: Callable,
    inputs: Sequence[InputSpec],
    n_out: int,
    out_dtype: np.dtype,
    count: int,
    seed: int,
    probes: Sequence[str] = (),
):
    """The inputs and function of `fn` (flat output, `n_out` elements) asked along `count` seeded
    directions and a tangent per probe (`numerics.directions`): one zero coefficient per direction,
    differentiated, then the point, the stacked tangents and the cotangents, held, then the inputs
    that were not differentiated. Returns (inputs, the Directions, G). ValueError for a bad probe."""
    from gradaudit.numerics import directions

    names = [spec.name or f"x{i}" for i, spec in enumerate(inputs)]
    differentiated = [(spec, name) for spec, name in zip(inputs, names, strict=True) if spec.differentiable]
    points = [spec.array() for spec, _ in differentiated]
    point_names = [name for _, name in differentiated]
    chosen = directions.seeded_directions(points, point_names, n_out, out_dtype, count, seed, probes)
    pattern = tuple(spec.differentiable for spec in inputs)
    along = directions.reduced(fn, pattern, len(chosen.names), chosen.cotangent_basis and n_out == 1)
    coefficient = "float64" if any(p.dtype.name == "float64" for p in points) else "float32"

    def held(array: np.ndarray, name: str) -> InputSpec:
        return InputSpec(dtype=array.dtype.name, value=array, shape=array.shape, name=name, held=True)

    specs = (
        *(InputSpec(coefficient, value=np.zeros((), coefficient), name=label) for label in chosen.names),
        *(replace(spec, name=name, held=True) for spec, name in differentiated),
        *(held(t, f"tangents of {n}") for t, n in zip(directions.stacked(chosen), point_names, strict=True)),
        held(chosen.cotangents, "cotangents"),
        *(replace(spec, name=name) for spec, name in zip(inputs, names, strict=True) if not spec.differentiable),
    )
    return specs, chosen, along


def _directional(spec: FunctionCall, seed: int) -> FunctionCall:
    """A scenario file's `directions: N` call as the call along them (traced once for its output)."""
    fn = flat_output(
        with_kwargs(spec.function if spec.function is not None else resolve(spec.fn, spec.root), spec.kwargs)
    )
    shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in (s.array() for s in spec.inputs)]
    out = jax.eval_shape(fn, *shapes)
    n_out = int(np.prod(out.shape, dtype=np.int64))
    specs, _, along = along_directions(fn, spec.inputs, n_out, np.dtype(out.dtype), spec.directions, seed)
    return replace(spec, inputs=specs, function=along, kwargs=(), directions=0)


def build(scenario: Scenario) -> tuple[Target, ...]:
    """One Target per binding of the discrete inputs; held floating inputs are passed in either way."""
    spec = scenario.target
    assert isinstance(spec, FunctionCall), "build_targets and group_targets send only function scenarios here"
    if spec.directions:
        return build(replace(scenario, target=_directional(spec, scenario.seed)))
    fn = flat_output(
        with_kwargs(spec.function if spec.function is not None else resolve(spec.fn, spec.root), spec.kwargs)
    )
    arrays = [s.array() for s in spec.inputs]
    args = tuple(a for a, s in zip(arrays, spec.inputs, strict=True) if s.differentiable)
    passed = tuple(a for a, s in zip(arrays, spec.inputs, strict=True) if not s.differentiable)
    discrete = tuple(a for a, s in zip(arrays, spec.inputs, strict=True) if not s.differentiable and not s.held)
    held = tuple(a for a, s in zip(arrays, spec.inputs, strict=True) if s.held)
    names = tuple(s.name or f"x{i}" for i, s in enumerate(spec.inputs) if s.differentiable)
    traced = _traced(fn, tuple(DIFFERENTIATED if s.differentiable else PASSED for s in spec.inputs))
    if not discrete:
        return (Target(fn=traced, args=args, arg_names=names, fixed=passed),)
    pattern = tuple(DIFFERENTIATED if s.differentiable else PASSED if s.held else CAPTURED for s in spec.inputs)
    # Config defines each flag as an attribute at run time
    x64 = bool(jax.config.jax_enable_x64)  # type: ignore[attr-defined]
    captured = _captured(fn, pattern, tuple((a.tobytes(), a.dtype.str, a.shape) for a in discrete), x64)
    by_binding = {
        "traced": Target(fn=traced, args=args, arg_names=names, fixed=passed, binding="traced"),
        "constant": Target(fn=captured, args=args, arg_names=names, fixed=held, binding="constant", captured=True),
    }
    if spec.bind == "both":
        return tuple(by_binding.values())
    only = by_binding[spec.bind]
    return (Target(fn=only.fn, args=only.args, arg_names=names, fixed=only.fixed, captured=only.captured),)
