"""What gets differentiated: each scenario family builds Targets, a function and its inputs.

Engines only see Targets, so a new family needs a builder here and nothing else. A scenario yields
one Target per binding of its fixed inputs (traced arguments, captured constants). The builders
(and JAX) are imported when a target is built, so reading scenario files needs no JAX.
"""

from __future__ import annotations

import numpy as np

from gradaudit.model.scenario import Scenario, SelectN
from gradaudit.targets.base import Target

__all__ = ["Target", "build_targets", "captured", "group_key", "group_targets", "kinship", "sizes"]


def build_targets(scenario: Scenario) -> tuple[Target, ...]:
    """The Targets a scenario describes, one per binding, exactly as a user writes the function."""
    from gradaudit.targets import function, select_n

    if isinstance(scenario.target, SelectN):
        return (select_n.build(scenario),)
    return function.build(scenario)


def group_targets(scenario: Scenario) -> tuple[Target, ...]:
    """The Targets a vmapped group runs: a select_n with its selector passed in (so scenarios that
    differ only in their selector share a program), a function as it is."""
    from gradaudit.targets import function, select_n

    if isinstance(scenario.target, SelectN):
        return (select_n.build(scenario, traced=True),)
    return function.build(scenario)


def group_key(scenario: Scenario) -> tuple | None:
    """What scenarios a group can take together have in common, or None for one no group can take
    (second order). Input values are not part of the key, captured or traced: a group computes
    each binding for the members whose function for it is one (captured values alike) together."""
    if scenario.order != 1 or len(scenario.modes) != 2:
        return None
    spec = scenario.target
    if isinstance(spec, SelectN):
        if 0 in spec.shape:
            return None
        return (
            "select_n",
            spec.selector.dtype,
            np.shape(spec.selector.value),
            spec.cases,
            spec.shape,
            spec.dtype,
            spec.output,
            scenario.eps,
        )
    return ("function", spec.fn, spec.root, spec.kwargs, _input_kinds(spec), spec.bind, scenario.eps)


def _input_kinds(spec) -> tuple:
    """A function scenario's inputs as (dtype, shape) each."""
    return tuple((s.dtype, np.shape(s.array())) for s in spec.inputs)


def kinship(scenario: Scenario) -> tuple:
    """A sort key that puts next to each other the groups (of one kind) whose eager computations
    share programs: select_n groups by case shape and dtype, then selector (jax.jacfwd's basis, the
    selector's broadcasts), functions by function, then input shapes and dtypes."""
    spec = scenario.target
    if isinstance(spec, SelectN):
        return (
            tuple(spec.shape),
            spec.dtype,
            spec.selector.dtype,
            np.shape(spec.selector.value),
            spec.cases,
            spec.output,
        )
    return (spec.fn, _input_kinds(spec))


def captured(scenario: Scenario) -> tuple[bytes, ...]:
    """The values a scenario's `constant` binding captures (a function's discrete inputs, unless
    they are bound as traced only); () where it has none. Members of one group that capture other
    values compile programs of their own, as a user's jax.jit does for each."""
    spec = scenario.target
    if isinstance(spec, SelectN) or spec.bind == "traced":
        return ()
    return tuple(s.array().tobytes() for s in spec.fixed)


def sizes(scenario: Scenario) -> tuple[list[int], int]:
    """(elements of each differentiated input, elements of the output); a function is traced
    (`jax.eval_shape`, nothing computed) to learn its output's size."""
    spec = scenario.target
    if isinstance(spec, SelectN):
        return spec.sizes()
    import jax

    target = build_targets(scenario)[0]
    shapes = [jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in (*target.args, *target.fixed)]
    out = jax.eval_shape(target.fn, *shapes)
    return [int(np.size(a)) for a in target.args], int(np.prod(np.shape(out), dtype=np.int64))
