"""Which failure mechanisms (`model.mechanisms`) a function meets at its inputs: primitives evaluated
with the operands that trigger them.

A diagnosis that blames a primitive must see it misbehave, not merely appear in the jaxpr: jnp.piecewise
binds clamp and select_n in every call, with bounds in order and selectors in range. So the function's
jaxpr is evaluated one equation at a time at the target's inputs, following only the branch a `cond`
takes, and each primitive a diagnosis names is checked on the operands it actually gets:

- `clamp:inverted`: lax.clamp with lo > hi at some element;
- `select_n:out-of-range`: an integer selector below 0 or past the last case;
- `read:out-of-range`: gather or dynamic_slice at a start index outside the operand (before JAX clamps it),
  or with an index dtype too narrow for the operand's every start (int8 into 300 elements: JAX's
  normalisation of the index, and its reverse rule's, wrap around in that dtype);
- `select_n:non-finite-unselected` (with tangents): an unselected case whose tangent is inf or NaN, what
  0 × inf turns into a NaN derivative. Tangents are pushed forward from a tangent of ones on every
  differentiated input, equation by equation, by each primitive's JVP rule as JAX's own jvp calls
  it (a constant's or an integer's tangent a symbolic zero, which no product turns into NaN);
- `inside:non-finite` (with tangents, which evaluates every equation): an equation that gives inf or
  NaN from finite operands, recorded with the first one's primitive (`mechanisms.non_finite_inside`).

Like `base.primitives`, it does not look inside a function with its own derivative rule (custom_jvp,
custom_vjp), whose insides AD never differentiates, nor inside loops (while, scan), which it evaluates
whole: a mechanism met there goes undiagnosed, which is better than a wrong diagnosis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from gradaudit.model.mechanisms import (
    CLAMP_INVERTED,
    CONVENTIONS,
    NON_FINITE_INSIDE,
    NON_FINITE_UNSELECTED,
    PRIMITIVES,
    READ_OUT_OF_RANGE,
    SELECT_OUT_OF_RANGE,
)
from gradaudit.targets.base import Target

T = TypeVar("T")

CALLS = {
    "jit": "jaxpr",
    "pjit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "checkpoint": "jaxpr",
    "remat": "jaxpr",
}
"""Call-like primitives, evaluated inside, and the parameter that holds each one's body."""


def traced(target: Target):
    """The target's function as a ClosedJaxpr at its inputs' shapes and dtypes (what `triggered` evaluates)."""
    import jax

    return jax.make_jaxpr(target.fn)(*target.args, *target.fixed)


CHECKED = frozenset().union(*PRIMITIVES.values())
"""The primitives `_check` reads the operands of."""


def triggered(
    target: Target,
    tangents: bool = False,
    jaxpr: Callable[[], Any] | None = None,
    checked: frozenset[str] = CHECKED,
) -> frozenset[str]:
    """The triggers the target's function meets at its inputs (see the module's docstring); empty where
    it cannot be evaluated equation by equation. `jaxpr`: the function traced once for targets
    that share it and their shapes (a group's members), else traced here. Without tangents, only
    the primitives in `checked` are checked, and only what feeds them is evaluated (a diagnosis asks
    about one mechanism: where it needs clamp's bounds, a function's every select_n is not its concern);
    with tangents, every equation is evaluated and every checked primitive checked."""

    def met() -> frozenset[str]:
        found: set[str] = set()
        closed = jaxpr() if jaxpr is not None else traced(target)
        seeds = [np.ones_like(a) for a in target.args] + [None] * len(target.fixed)
        _evaluate(
            closed.jaxpr,
            closed.consts,
            [*target.args, *target.fixed],
            seeds if tangents else None,
            found,
            outputs_needed=False,
            checked=CHECKED if tangents else checked,
        )
        return frozenset(found)

    # a function that cannot be evaluated this way triggers nothing a diagnosis may name
    return _evaluated(target, met, frozenset())


def _evaluated(target: Target, compute: Callable[[], T], otherwise: T) -> T:
    """`compute()` (an evaluation of the target's jaxpr) at the x64 width its inputs need, once more on
    cleared caches where it met a buffer of the other width (`again_if_stale`); `otherwise` where it raises."""
    import jax

    from gradaudit.jaxenv import again_if_stale, x64

    wide = any(np.asarray(a).dtype.itemsize == 8 for a in (*target.args, *target.fixed))
    try:
        # Config defines each flag at run time
        with x64(wide or bool(jax.config.jax_enable_x64)):  # type: ignore[attr-defined]
            return again_if_stale(compute)
    except Exception:  # noqa: BLE001 - a function that cannot be evaluated equation by equation gives no evidence
        return otherwise


ZEROING = frozenset({"reduce_precision", "rem"})
"""Conventions whose float derivative is 0: a tangent they zero says nothing more of what fed it, so they are
replaced only where every tangent reaching them is the differentiated input's own seed (nothing upstream, a
wrong rule included, is hidden by the zero)."""


def _float_tangent(eqn, ins: list, tins: list, outs: list, touts: list, seed, step: float):
    """The tangent the float function itself gives an equation of a primitive of CONVENTIONS, where it differs
    from JAX's (`touts`); None where it does not: for reduce_precision to fewer mantissa bits than its dtype's
    (a staircase) zero where its steps are wider than twice `step` (finite differences' at the input); for
    floor, ceil and round the operand's where every float near it is an integer (at least 2 ** the dtype's
    mantissa bits); for rem zero where the quotient is (its sawtooth is then finer than the float grid). A
    ZEROING one only where every nonzero tangent reaching it is `seed` itself."""
    import jax.numpy as jnp

    name = eqn.primitive.name
    operand = np.asarray(ins[0])
    moving = [t for t in tins if t is not None and not _zero(t)]
    if not _differentiable(operand) or np.iscomplexobj(operand) or not moving:
        return None
    if name in ZEROING and any(t is not seed for t in moving):
        return None
    digits = jnp.finfo(operand.dtype).nmant
    if name == "reduce_precision":
        # flat only between its steps: where they are wider than twice the finite-difference step, which then
        # reads 0 (a step spanning many of them reads their average slope, 1, as JAX's rule gives)
        stair = np.ldexp(1.0, np.frexp(operand.astype(np.float64))[1] - 1 - eqn.params["mantissa_bits"])
        flat = (eqn.params["mantissa_bits"] < digits) & (stair > 2 * step)
        return np.where(flat, 0, np.asarray(dense(touts[0], outs[0]))).astype(operand.dtype) if flat.any() else None
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        size = operand.astype(np.float64)
        if name == "rem":
            size = size / np.asarray(ins[1]).astype(np.float64)
        integral = np.abs(size) >= 2.0**digits
    if not integral.any():
        return None
    jaxs = np.asarray(dense(touts[0], outs[0]))
    own = np.zeros_like(jaxs) if name == "rem" else np.broadcast_to(np.asarray(dense(tins[0], operand)), jaxs.shape)
    return np.where(integral, own, jaxs)


@dataclass
class Conventions:
    """What `conventional_column`'s evaluation carries: the differentiated input's seed tangent, and the
    primitives given the float function's own derivative so far."""

    seed: object
    step: float
    """Finite differences' usual step at the differentiated element (a ZEROING convention's operand is that input)."""
    replaced: set[str] = field(default_factory=set)


def conventional_column(
    target: Target, argument: int, element: int, step: float, jaxpr: Callable[[], Any] | None = None
) -> tuple[np.ndarray, frozenset[str]] | None:
    """d out / d x_argument[element] for every output element (flat), as jax.jvp would give it with each
    conventional derivative the function meets at its inputs (CONVENTIONS) replaced by the float function's
    own, and which were replaced; None where none is met, or the function cannot be evaluated equation by
    equation. Like `triggered`, it does not look inside custom rules or loops: a convention there is JAX's.
    `jaxpr`: the function traced once for every element a probe asks about, else traced here."""

    def column() -> tuple[np.ndarray, frozenset[str]] | None:
        closed = jaxpr() if jaxpr is not None else traced(target)
        named = frozenset(CONVENTIONS)
        if not any(e.primitive.name in named or _holds_checked(e, named) for e in closed.jaxpr.eqns):
            return None
        # the other inputs' tangents symbolic zeros: a partial derivative, with no 0 x inf from their terms
        seeds: list[np.ndarray | None] = [None] * len(target.args)
        seed = np.zeros_like(np.asarray(target.args[argument]))
        seed.reshape(-1)[element] = 1
        seeds[argument] = seed
        conventions = Conventions(seed, step)
        outs, touts = _evaluate(
            closed.jaxpr,
            closed.consts,
            [*target.args, *target.fixed],
            [*seeds, *[None] * len(target.fixed)],
            set(),
            conventions=conventions,
        )
        if not conventions.replaced or touts is None:
            return None
        flat = [np.asarray(dense(t, o), dtype=np.float64).reshape(-1) for o, t in zip(outs, touts, strict=True)]
        return np.concatenate(flat), frozenset(conventions.replaced)

    return _evaluated(target, column, None)


def _holds_checked(eqn, checked: frozenset[str]) -> bool:
    """Whether a call or cond evaluates a checked primitive inside (so it is evaluated, not skipped)."""
    bodies = (
        [eqn.params[CALLS[eqn.primitive.name]]]
        if eqn.primitive.name in CALLS and CALLS[eqn.primitive.name] in eqn.params
        else []
    )
    bodies += list(eqn.params.get("branches", ())) if eqn.primitive.name == "cond" else []
    return any(
        e.primitive.name in checked or _holds_checked(e, checked)
        for body in bodies
        for e in getattr(body, "jaxpr", body).eqns
    )


SKIP, CHECK, RUN = 0, 1, 2
"""What evaluating values alone does with an equation: nothing, check its operands, or run it."""


def _needed(jaxpr, outputs_needed: bool, checked: frozenset[str]) -> list[int]:
    """Per equation, SKIP, CHECK (a checked primitive whose result nothing needs) or RUN (it feeds a
    checked primitive, holds one, or with `outputs_needed` feeds the jaxpr's outputs). Most of a
    function is skipped: a select_n's selector and cases are usually inputs already."""
    from jax.extend.core import Literal

    wanted = {v for v in jaxpr.outvars if not isinstance(v, Literal)} if outputs_needed else set()
    flags = [SKIP] * len(jaxpr.eqns)
    for i in reversed(range(len(jaxpr.eqns))):
        eqn = jaxpr.eqns[i]
        feeds = any(v in wanted for v in eqn.outvars)
        holds = _holds_checked(eqn, checked)
        if feeds or holds or eqn.primitive.name in checked:
            flags[i] = RUN if feeds or holds else CHECK
            wanted.update(v for v in eqn.invars if not isinstance(v, Literal))
    return flags


def _evaluate(
    jaxpr,
    consts: Sequence,
    primals: Sequence,
    tangents: Sequence | None,
    found: set[str],
    outputs_needed: bool = True,
    checked: frozenset[str] = CHECKED,
    conventions: Conventions | None = None,
) -> tuple[list, list | None]:
    """The jaxpr's outputs at `primals` (and their tangents, where `tangents` is given), its constants
    bound to `consts`, recording in `found` the triggers of the `checked` primitives (and with tangents,
    `NON_FINITE_INSIDE`). Without tangents only what a check needs is evaluated (`_needed`); outputs
    not needed are then None. With `conventions` (with tangents), each primitive of CONVENTIONS takes the
    float function's own tangent (`_float_tangent`) and is named in `conventions.replaced` where that differs."""
    from jax.extend.core import Literal

    values: dict = {}
    slopes: dict = {}

    def read(var):
        return var.val if isinstance(var, Literal) else values[var]

    def slope(var):
        return None if isinstance(var, Literal) else slopes.get(var)

    for var, value in zip(jaxpr.constvars, consts, strict=True):
        values[var] = value
    for var, value, tangent in zip(jaxpr.invars, primals, tangents or [None] * len(primals), strict=True):
        values[var], slopes[var] = value, tangent
    needed = _needed(jaxpr, outputs_needed, checked) if tangents is None else [RUN] * len(jaxpr.eqns)
    for eqn, action in zip(jaxpr.eqns, needed, strict=True):
        if action == SKIP:
            continue
        ins = [read(v) for v in eqn.invars]
        if action == CHECK:
            _check(eqn, ins, None, found)
            continue
        tins = [slope(v) for v in eqn.invars] if tangents is not None else None
        outs, touts = _equation(eqn, ins, tins, found, checked, conventions)
        for i, var in enumerate(eqn.outvars):
            values[var] = outs[i]
            slopes[var] = None if touts is None else touts[i]
    outs = [values.get(v) if not isinstance(v, Literal) else v.val for v in jaxpr.outvars]
    return outs, ([slope(v) for v in jaxpr.outvars] if tangents is not None else None)


def _equation(
    eqn, ins: list, tins: list | None, found: set[str], checked: frozenset[str], conventions: Conventions | None = None
) -> tuple[list, list | None]:
    name = eqn.primitive.name
    body = eqn.params.get(CALLS.get(name, ""))
    if body is not None:
        inside, consts = getattr(body, "jaxpr", body), getattr(body, "consts", ())
        return _evaluate(inside, consts, ins, tins, found, checked=checked, conventions=conventions)
    if name == "cond":
        branches = eqn.params["branches"]
        taken = branches[int(np.clip(np.asarray(ins[0]), 0, len(branches) - 1))]
        rest = None if tins is None else tins[1:]
        return _evaluate(taken.jaxpr, taken.consts, ins[1:], rest, found, checked=checked, conventions=conventions)
    if name in checked:
        _check(eqn, ins, tins, found)
    outs, touts = _bind(eqn, ins, tins)
    if conventions is not None and name in CONVENTIONS and tins is not None and touts is not None:
        own = _float_tangent(eqn, ins, tins, outs, touts, conventions.seed, conventions.step)
        if own is not None:
            conventions.replaced.add(name)
            touts = [own]
    first = not any(m.startswith(NON_FINITE_INSIDE + ":") for m in found)
    if tins is not None and first and _turns_non_finite(ins, outs):
        found.update({NON_FINITE_INSIDE, f"{NON_FINITE_INSIDE}:{name}"})
    return outs, touts


def _turns_non_finite(ins: list, outs: list) -> bool:
    """Whether an equation gives inf or NaN from operands that are all finite (where a NaN is born)."""

    def finite(values: list) -> bool:
        with np.errstate(invalid="ignore"):
            return all(bool(np.all(_finite(x))) for x in values if _differentiable(x))

    return finite(ins) and not finite(outs)


def _bind(eqn, ins: list, tins: list | None) -> tuple[list, list | None]:
    import jax

    params = eqn.primitive.get_bind_params(
        eqn.params
    )  # as jax.core.eval_jaxpr binds it (custom rules' functions included)

    def call(*args):
        out = eqn.primitive.bind(*args, **params)
        return list(out) if eqn.primitive.multiple_results else [out]

    if tins is None:
        return call(*ins), None
    try:
        outs, touts = _by_rule(eqn.primitive, params, ins, tins, call)
    except Exception:  # noqa: BLE001 - a rule that wants JAX's own tracing (or another JAX's internals): jax.jvp
        seeds = [dense(t, x) if _differentiable(x) else _zero_tangent(x) for x, t in zip(ins, tins, strict=True)]
        outs, touts = jax.jvp(call, tuple(ins), tuple(seeds))
    return outs, [t if _differentiable(o) else None for o, t in zip(outs, touts, strict=True)]


def _by_rule(primitive, params: dict, ins: list, tins: list, call: Callable) -> tuple[list, list]:
    """`jax.jvp` of one equation as JAX's JVP trace computes it inside the whole function: its rule
    called on the operands, a missing tangent (a constant, an integer operand) a symbolic zero, no
    rule where every tangent is zero, and symbolic zeros passed on, so that 0 x inf is no NaN where
    JAX skips that product. Without building a trace around each equation (most of the time)."""
    from jax._src import ad_util
    from jax._src.interpreters import ad

    tangents = [_symbolic_zero(x) if t is None or not _differentiable(x) else t for x, t in zip(ins, tins, strict=True)]
    if all(type(t) is ad_util.Zero for t in tangents):
        outs = call(*ins)
        return outs, [_symbolic_zero(o) for o in outs]
    outs, touts = ad.primitive_jvps[primitive](list(ins), tangents, **params)
    return (list(outs), list(touts)) if primitive.multiple_results else ([outs], [touts])


def _symbolic_zero(value):
    from jax._src import ad_util, core

    typeof = getattr(core, "typeof", None) or getattr(core, "get_aval")  # noqa: B009 - `get_aval` before JAX 0.6
    return ad_util.Zero(typeof(value).to_tangent_aval())


def _zero(tangent) -> bool:
    """Whether a tangent is JAX's symbolic zero."""
    return type(tangent).__name__ == "Zero"


def dense(tangent, value):
    """A tangent as an array: a symbolic zero (or none) as zeros of `value`'s tangent type."""
    return _zero_tangent(value) if tangent is None or _zero(tangent) else tangent


def _finite(value) -> np.ndarray:
    """Element by element, whether a value is finite: both parts of a complex one (a cast to float64 would
    drop its imaginary part, and an inf born there), any float dtype widened first (bfloat16 included)."""
    array = np.asarray(value)
    return np.isfinite(array.astype(np.complex128 if np.iscomplexobj(array) else np.float64))


def _differentiable(value) -> bool:
    return np.issubdtype(np.asarray(value).dtype, np.inexact) or np.asarray(value).dtype.kind == "V"


def _zero_tangent(value):
    import jax

    array = np.asarray(value)
    return np.zeros(array.shape, array.dtype) if _differentiable(array) else np.zeros(array.shape, jax.dtypes.float0)


def _check(eqn, ins: list, tins: list | None, found: set[str]) -> None:
    """Record the triggers this equation meets with these operands."""
    name = eqn.primitive.name
    if name == "clamp" and np.any(np.asarray(ins[0]) > np.asarray(ins[2])):
        found.add(CLAMP_INVERTED)
    elif name == "select_n":
        which, cases = np.asarray(ins[0]), ins[1:]
        if np.issubdtype(which.dtype, np.integer) and np.any((which < 0) | (which >= len(cases))):
            found.add(SELECT_OUT_OF_RANGE)
        if tins is not None:
            chosen = np.clip(which.astype(np.int64), 0, len(cases) - 1)
            for i, tangent in enumerate(tins[1:]):
                if tangent is None or not _differentiable(tangent):
                    continue
                with np.errstate(invalid="ignore"):
                    bad = ~_finite(tangent)
                if np.any(bad & np.broadcast_to(chosen != i, bad.shape)):
                    found.add(NON_FINITE_UNSELECTED)
    elif name == "dynamic_slice":
        shape, sizes = np.shape(ins[0]), eqn.params["slice_sizes"]
        if any(_outside(np.asarray(s), d - z) for s, d, z in zip(ins[1:], shape, sizes, strict=False)):
            found.add(READ_OUT_OF_RANGE)
    elif name == "gather":
        shape, sizes = np.shape(ins[0]), eqn.params["slice_sizes"]
        indices = np.asarray(ins[1])
        for k, dim in enumerate(eqn.params["dimension_numbers"].start_index_map):
            if _outside(indices[..., k] if indices.ndim else indices, shape[dim] - sizes[dim]):
                found.add(READ_OUT_OF_RANGE)


def _outside(starts: np.ndarray, last: int) -> bool:
    """Whether a start index is below 0 or past `last`, the last start that fits, or its integer
    dtype cannot hold `last`."""
    wide = starts.astype(np.int64)
    narrow = np.issubdtype(starts.dtype, np.integer) and np.iinfo(starts.dtype).max < last
    return bool(narrow or np.any((wide < 0) | (wide > last)))
