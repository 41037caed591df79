"""The group engine: one function vmapped over many scenarios' inputs, eagerly and under jit.

Scenarios that share a program (`targets.group_key`: a select_n family with its selector passed
in, or a user's function with the same input shapes, dtypes and captured constants) form a group.
Every path runs for the whole group at once: `value`, `jacfwd` and `jacrev` as an eager
`jax.vmap` (op by op, as eager calls run), `jit_value`, `jit_jacfwd` and `jit_jacrev` as the same
under `jax.jit`, and finite differences from the compiled function at every point of every
scenario. A group's paths are recorded with the binding its program used (a select_n
selector is `traced` here); the service reports a scenario from its group only where every path
agrees, and audits any other again as the user writes it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext

import jax
import numpy as np

from gradaudit.model.computed import Computed

from gradaudit.engines.base import FORWARD_, REVERSE_, VALUE_, assembled
from gradaudit.engines.literal import steps
from gradaudit.jaxenv import device_name, unfiltered_tracebacks, x64_for
from gradaudit.model.scenario import Scenario
from gradaudit.numerics.finite_differences import estimates, points, scenario_estimates
from gradaudit.targets import group_key, group_targets, sizes
from gradaudit.targets.base import primitives

MAX_ELEMENTS = 4_000_000
"""Array elements one group may hold (function values at every finite-difference point, Jacobian
rows, estimates); larger groups are split, and a scenario that alone would exceed it is left to
another engine."""

VALUE, FORWARD, REVERSE, POINTS = VALUE_, FORWARD_, REVERSE_, "points"


def batch_size(scenario: Scenario) -> int:
    """How many scenarios like this one fit in one group (or bundle); 0 when even one does not."""
    inputs, n_out = sizes(scenario)
    n_in = sum(inputs)
    return MAX_ELEMENTS // (20 * n_in * max(n_out, 1) + n_in + n_out)


def computations(fn: Callable, n: int) -> dict[str, Callable]:
    """One scenario's computations by JAX's own transforms, its n differentiated inputs first and
    its traced fixed inputs after: the value, and one Jacobian block per differentiated input by
    jax.jacfwd and by jax.jacrev."""
    argnums = tuple(range(n))
    return {VALUE: fn, FORWARD: jax.jacfwd(fn, argnums=argnums), REVERSE: jax.jacrev(fn, argnums=argnums)}


def _answers(compute: dict[str, Callable], inputs: Sequence, failures: dict[str, BaseException]) -> dict:
    """Each computation's answer for the group (vmapped); one that raises is left out, its exception kept."""
    answers = {}
    for name, function in compute.items():
        try:
            answers[name] = function(*inputs)
        except Exception as exc:  # noqa: BLE001 - an exception is this path's result, as on the literal engine
            failures[name] = exc
    return answers


@functools.lru_cache(maxsize=256)
def _batched(fn: Callable, n: int) -> dict[str, Callable]:
    """A group's computations, vmapped over its scenarios (made once per function)."""
    return {name: jax.vmap(function) for name, function in computations(fn, n).items()}


@functools.lru_cache(maxsize=256)
def _program(fn: Callable, n: int, points_of: int, signature: tuple) -> tuple[Callable, dict[str, BaseException]]:
    """The jit paths of a group and the function at every finite-difference point, as one compiled
    program, made once per function and shape of its inputs (groups alike in both reuse it); the
    computations that raised while it was traced, which every call of it shares."""
    batched = _batched(fn, n)
    failures: dict[str, BaseException] = {}

    def program(inputs, point_stacks):
        answers = _answers(batched, inputs, failures)
        at_points = {POINTS: lambda: jax.vmap(lambda *p: batched[VALUE](*p, *inputs[points_of:]))(*point_stacks)}
        return {**answers, **_answers(at_points, (), failures)}

    return jax.jit(program), failures


def _group(members: Sequence[Scenario], started: float, device: str | None, with_eager: bool) -> list[Computed]:
    """Every first-order path of every member, per binding of their targets (the jit ones alone
    without `with_eager`)."""
    targets = [group_targets(m) for m in members]
    paths: list[dict] = [{} for _ in members]
    for t, first in enumerate(targets[0]):
        n = len(first.args)
        args = [np.stack([ts[t].args[i] for ts in targets]) for i in range(n)]
        fixed = [np.stack([ts[t].fixed[i] for ts in targets]) for i in range(len(first.fixed))]
        where = points(args, steps(first, members[0].eps))
        batched = _batched(first.fn, n)
        eager_failures: dict[str, BaseException] = {}
        eager = jax.device_get(_answers(batched, (*args, *fixed), eager_failures)) if with_eager else {}
        signature = tuple((a.shape, a.dtype.str) for a in (*args, *fixed, *where.stacks))
        program, jit_failures = _program(first.fn, n, len(args), signature)
        compiled = jax.device_get(program((*args, *fixed), where.stacks))
        blocks = estimates([compiled[VALUE]], [compiled[POINTS]], where, args) if VALUE in compiled and POINTS in compiled else None
        for b in range(len(members)):
            reference = scenario_estimates(blocks, b, [(0, j) for j in range(n)]) if blocks is not None else (
                jit_failures.get(POINTS) or jit_failures.get(VALUE)
            )
            paths[b].update(
                assembled(
                    eager, eager_failures, compiled, jit_failures, reference, member=b,
                    engine="group", binding=first.bound, label=first.binding, with_value=t == 0, device=device,
                )
            )
    share = (time.perf_counter() - started) / len(members)
    return [
        Computed(
            paths=paths[b],
            arg_names=ts[0].arg_names,
            inputs=ts[0].args,
            bindings=tuple(target.binding for target in ts),
            seconds=share,
            engine="group",
            primitives=lambda target=ts[0]: primitives(target),
        )
        for b, ts in enumerate(targets)
    ]


class GroupEngine:
    """Scenarios sharing a program, vmapped: see the module's docstring."""

    name = "group"

    def __init__(self, min_size: int = 1, devices: Sequence = (), eager: bool = True):
        self.min_size = min_size
        self.devices = tuple(devices)
        self.eager = eager
        """Whether to compute the eager paths: a quick screen (a search exploring) may leave them out,
        its findings being confirmed on the literal engine; what the service reports has them all."""

    def groups(self, scenarios: Sequence[Scenario]) -> list[list[int]]:
        """Positions of the scenarios that share a program, in batches small enough for one call;
        only groups of at least `min_size`."""
        found: dict[tuple, list[int]] = {}
        for index, scenario in enumerate(scenarios):
            key = group_key(scenario)
            if key is not None:
                found.setdefault(key, []).append(index)
        batches = []
        for indices in found.values():
            if len(indices) < self.min_size:
                continue
            with x64_for(scenarios[indices[0]]):
                try:
                    size = batch_size(scenarios[indices[0]])
                except Exception:  # noqa: BLE001 - a function that cannot even be traced: the literal engine will say why
                    continue
            if size:
                batches += [indices[start : start + size] for start in range(0, len(indices), size)]
        return batches

    def run(self, scenarios: Sequence[Scenario]) -> Iterator[tuple[int, Computed]]:
        for indices in self.groups(scenarios):
            members = [scenarios[i] for i in indices]
            started = time.perf_counter()
            placed = jax.default_device(self.devices[0]) if self.devices else nullcontext()
            try:
                with x64_for(members[0]), placed, unfiltered_tracebacks():
                    computed = _group(members, started, device_name(self.devices[0]) if self.devices else None, self.eager)
            except Exception:  # noqa: BLE001 - a group that fails as a whole settles nothing: the next engine takes its scenarios
                continue
            yield from zip(indices, computed, strict=True)
