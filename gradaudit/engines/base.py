"""The engine protocol: a batch of scenarios in, every path of each out, however it was batched.

An engine takes scenarios and yields, per scenario it could take, a `Computed`: the PathResult of
every path (each saying which engine computed it and how the discrete inputs were bound), or the
failure that stopped the scenario. It neither judges nor decides what to report: the service
(`service.py`, through `judging.assess`) judges every Computed the same way, whichever engine
made it. Engines differ only in how they batch: one scenario at a time (literal), many
scenarios' functions in one program (bundle), or one function vmapped over many scenarios'
inputs (group).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from gradaudit.model.computed import Computed
from gradaudit.model.paths import (
    FINITE_DIFFERENCE,
    JACFWD,
    JACREV,
    JIT_JACFWD,
    JIT_JACREV,
    JIT_VALUE,
    NOT_APPLICABLE,
    VALUE,
    PathError,
    PathResult,
    path_name,
)
from gradaudit.model.scenario import Scenario


class Engine(Protocol):
    """Computes every path of the scenarios it can take."""

    name: str

    def run(self, scenarios: Sequence[Scenario]) -> Iterator[list[tuple[int, Computed]]]:
        """(position in `scenarios`, its paths) for each scenario this engine takes, a batch of
        those computed together (a group's members, a bundle's; one scenario on the literal engine)
        as each batch is done, so the service judges them together; scenarios it does not yield
        are left to another engine."""


def run_path(
    name: str,
    compute: Callable[[], tuple[np.ndarray, ...] | dict[str, tuple[np.ndarray, ...]]],
    device: str | None = None,
) -> PathResult:
    """Run one path, turning an exception into data (see `failed_path`); one that met a constant placed
    at the other x64 width runs again on cleared caches (`again_if_stale`)."""
    from gradaudit.jaxenv import again_if_stale

    try:
        computed = again_if_stale(compute)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - an exception (sys.exit too) is a result here, not a failure
        return failed_path(name, exc, device)
    except BaseException as stopped:  # a timeout or an interrupt: it says which path it stopped
        stopped.path = getattr(stopped, "path", name)  # type: ignore[attr-defined]
        raise
    if isinstance(computed, dict):
        return PathResult(name=name, arrays=computed["extrapolated"], estimates=computed, device=device)
    return PathResult(name=name, arrays=computed, device=device)


def compiled_or_eager(fn: Callable, args: Sequence, compiled: Callable | None = None) -> Callable:
    """`jit(fn)` (or `compiled`, the jit of fn another path made), or `fn` itself when jit cannot
    compile it (Python control flow on inputs, an input's concrete value needed: `jnp.roots`)."""
    import jax

    compiled = compiled or jax.jit(fn)
    try:
        compiled(*args)
    except Exception as exc:  # noqa: BLE001 - only the inapplicable kinds fall back; others propagate
        if not any(rule.compiled_only and rule.matches(JIT_VALUE, exc) for rule in NOT_APPLICABLE):
            raise
        return fn
    return compiled


def failed_path(name: str, exc: BaseException, device: str | None = None) -> PathResult:
    """A path that raised `exc`: not applicable when the exception says so, else an error."""
    for inapplicable in NOT_APPLICABLE:
        if inapplicable.matches(name, exc):
            return PathResult(name=name, arrays=None, not_applicable=inapplicable.why(exc), device=device)
    return PathResult(name=name, arrays=None, error=PathError.from_exception(exc), device=device)


@dataclass(frozen=True)
class Recorded:
    """What each path of one scenario's binding records: the engine that computed it, its binding,
    the binding its name carries (`label`, see path_name), whether the eager `value` belongs to it
    (computed once per scenario, with its first binding) and the device it ran on."""

    engine: str
    binding: str
    label: str = ""
    with_value: bool = True
    device: str | None = None


def first_order_paths(answers: dict[str, object], recorded: Recorded) -> dict[str, PathResult]:
    """The first-order paths of one scenario from what an engine computed, by path (VALUE, JIT_VALUE,
    JACFWD, ..., FINITE_DIFFERENCE): each answer a tuple of arrays (the estimates dict for finite
    differences), the exception its path raised, or None for a path the engine did not compute."""
    engine, binding, device = recorded.engine, recorded.binding, recorded.device

    def result(base: str, answer) -> PathResult:
        name = path_name(base, recorded.label)
        if isinstance(answer, BaseException):
            return replace(failed_path(name, answer), engine=engine, binding=binding, device=device)
        if base == FINITE_DIFFERENCE:
            return PathResult(
                name, answer["extrapolated"], estimates=answer, engine=engine, binding=binding, device=device
            )
        return PathResult(name, tuple(np.asarray(a) for a in answer), engine=engine, binding=binding, device=device)

    return {
        path_name(base, recorded.label): result(base, answer)
        for base, answer in answers.items()
        if answer is not None and (base != VALUE or recorded.with_value)
    }


VALUE_, FORWARD_, REVERSE_ = "value", "forward", "reverse"
"""What engines compute for each scenario (computations keyed so): its value, jax.jacfwd's and jax.jacrev's blocks."""


def assembled(
    eager: dict,
    eager_failures: dict,
    compiled: dict,
    compiled_failures: dict,
    reference,
    recorded: Recorded,
) -> dict[str, PathResult]:
    """One scenario's first-order paths from an engine's eager and compiled answers (computations
    keyed VALUE_, FORWARD_, REVERSE_) and its finite-difference estimates (or the exception that
    stopped them), each path recording `recorded`."""

    def pick(answers: dict, failures: dict, name: str):
        if name not in answers:
            return failures.get(name) or failures.get(VALUE_)  # None where nothing was computed
        answer = answers[name]
        if name == VALUE_:
            return (answer,)
        return tuple(answer)

    answers = {
        VALUE: pick(eager, eager_failures, VALUE_),
        JIT_VALUE: pick(compiled, compiled_failures, VALUE_),
        JACFWD: pick(eager, eager_failures, FORWARD_),
        JIT_JACFWD: pick(compiled, compiled_failures, FORWARD_),
        JACREV: pick(eager, eager_failures, REVERSE_),
        JIT_JACREV: pick(compiled, compiled_failures, REVERSE_),
        FINITE_DIFFERENCE: reference,
    }
    return first_order_paths(answers, recorded)
