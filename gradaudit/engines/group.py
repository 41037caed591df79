"""The group engine: scenarios that share one function, its programs compiled once for them all.

Scenarios that share a program (`targets.group_key`: a select_n family with its selector passed
in, or a user's function with the same input shapes, dtypes and captured constants) form a group.
The eager paths (`value`, `jacfwd`, `jacrev`) run for the whole group as one eager `jax.vmap`, op
by op as eager calls run; the jit paths are `jax.jit` of the function, of `jax.jacfwd` and of
`jax.jacrev`, compiled once and called for each scenario on its own inputs, exactly as a user
calls them; finite differences come from the function vmapped over every point of every
scenario, compiled once. A member whose vmapped value differs from its own jit value is not
yielded (its batched points would not be its function's). Paths record the binding the group used
(a select_n selector is `traced` here); the service keeps a member's result where its eager and
jit paths tell one story, and audits any other again as the user writes it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext

import jax
import jax.numpy as jnp
import numpy as np

from gradaudit.model.computed import Computed

from gradaudit.engines.base import FORWARD_, REVERSE_, VALUE_, assembled
from gradaudit.engines.literal import ScenarioTimeout, steps, time_limit
from gradaudit.jaxenv import device_name, unfiltered_tracebacks, x64_for
from gradaudit.limits import check_limits
from gradaudit.model.options import Limits
from gradaudit.model.scenario import Scenario
from gradaudit.numerics.finite_differences import estimates, points, scenario_estimates
from gradaudit.targets import group_key, group_targets, sizes
from gradaudit.targets.base import primitives

MAX_ELEMENTS = 4_000_000
"""Array elements one group may hold (function values at every finite-difference point, Jacobian
rows, estimates); larger groups are split, and a scenario that alone would exceed it is left to
another engine."""

VALUE, FORWARD, REVERSE = VALUE_, FORWARD_, REVERSE_


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
    """Each computation's answer; one that raises is left out, its exception kept."""
    answers = {}
    for name, function in compute.items():
        try:
            answers[name] = function(*inputs)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - an exception (sys.exit too) is this path's result, as on the literal engine
            failures[name] = exc
    return answers


@functools.lru_cache(maxsize=256)
def _batched(fn: Callable, n: int) -> dict[str, Callable]:
    """A group's computations, vmapped over its scenarios (made once per function)."""
    return {name: jax.vmap(function) for name, function in computations(fn, n).items()}


@functools.lru_cache(maxsize=256)
def _compiled(fn: Callable, n: int) -> dict[str, Callable]:
    """jax.jit of each of one scenario's computations (unbatched): the jit paths as a user calls
    them, made once per function, so the scenarios of a group share each compiled program."""
    return {name: jax.jit(function) for name, function in computations(fn, n).items()}


@functools.lru_cache(maxsize=256)
def _at_points(fn: Callable, points_of: int, signature: tuple) -> Callable:
    """The function, vmapped over a group, at its inputs and at every finite-difference point, as
    one compiled program made once per function and shape of its inputs."""
    batched = jax.vmap(fn)

    def program(inputs, point_stacks):
        fixed = inputs[points_of:]
        return batched(*inputs), jax.vmap(lambda *p: batched(*p, *fixed))(*point_stacks)

    return jax.jit(program)


def _each(compiled: dict[str, Callable], inputs: Sequence, untraceable: dict[str, BaseException]) -> tuple[dict, dict[str, BaseException]]:
    """One member's jit paths, unbatched: each compiled computation called on its own inputs. A
    computation whose tracing raised for an earlier member (`untraceable`: tracing sees shapes and
    dtypes, which members share, never values) raises the same for this one without tracing again;
    a computation that raises here and whose tracing raises too joins `untraceable`."""
    failures = {name: exc for name, exc in untraceable.items() if name in compiled}
    answers = _answers({name: fn for name, fn in compiled.items() if name not in failures}, inputs, failures)
    for name in set(failures) - set(untraceable):
        try:
            compiled[name].trace(*inputs)
        except (Exception, SystemExit):  # noqa: BLE001 - raised while tracing: so it will for every member
            untraceable[name] = failures[name]
    return jax.device_get(answers), failures


def _same(a, b) -> bool:
    """Whether two evaluations of the function agree to a few roundings of its dtype (NaN with NaN;
    bfloat16 and float8 included, which numpy does not count as floating)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        return bool(np.array_equal(a, b))
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    return bool(np.allclose(wide_a, wide_b, rtol=8 * float(jnp.finfo(a.dtype).eps), atol=0.0, equal_nan=True))


def _group(members: Sequence[Scenario], started: float, device: str | None, with_eager: bool) -> list[Computed | None]:
    """Every first-order path of every member, per binding of their targets (the jit ones alone
    without `with_eager`); None for a member whose function gave another value vmapped than called
    on its own (the batched finite differences would not be its own), and for every member when
    the batched finite differences failed (the function alone might not)."""
    targets = [group_targets(m) for m in members]
    paths: list[dict] = [{} for _ in members]
    unlike = [False] * len(members)
    for t, first in enumerate(targets[0]):
        n = len(first.args)
        args = [np.stack([ts[t].args[i] for ts in targets]) for i in range(n)]
        fixed = [np.stack([ts[t].fixed[i] for ts in targets]) for i in range(len(first.fixed))]
        where = points(args, steps(first, members[0].eps))
        eager_failures: dict[str, BaseException] = {}
        eager = jax.device_get(_answers(_batched(first.fn, n), (*args, *fixed), eager_failures)) if with_eager else {}
        signature = tuple((a.shape, a.dtype.str) for a in (*args, *fixed, *where.stacks))
        try:
            centre, at_points = jax.device_get(_at_points(first.fn, n, signature)((*args, *fixed), where.stacks))
            blocks = estimates([centre], [at_points], where, args)
        except Exception:  # noqa: BLE001 - only the batched program failed, perhaps: each member goes on alone
            return [None] * len(members)
        compiled, untraceable = _compiled(first.fn, n), {}
        for b, ts in enumerate(targets):
            mine, mine_failed = _each(compiled, (*ts[t].args, *ts[t].fixed), untraceable)
            if VALUE in mine and not _same(centre[b], mine[VALUE]):
                unlike[b] = True
            reference = scenario_estimates(blocks, b, [(0, j) for j in range(n)])
            # Copies, so a member's result does not keep its whole group's arrays alive.
            eager_b = {name: np.array(answer[b]) if name == VALUE else tuple(np.array(block[b]) for block in answer) for name, answer in eager.items()}
            paths[b].update(
                assembled(
                    eager_b, eager_failures, mine, mine_failed, reference,
                    engine="group", binding=first.bound, label=first.binding, with_value=t == 0, device=device,
                )
            )
    share = (time.perf_counter() - started) / len(members)
    return [
        None
        if unlike[b]
        else Computed(
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


RELEASE_EVERY = 20
"""Groups after which an engine lets go of compiled programs (`release_programs`): a process keeps
its groups' programs, about a megabyte each on CPU, which no later group of other shapes uses. On
the 10,000-scenario grid (90 groups, two workers) the largest worker peaked at 0.99 GB never
releasing, 0.52 GB releasing every 10 groups and 0.67 GB every 20, the last costing least time."""


def release_programs() -> None:
    """Let go of every compiled program this process holds (the group engine's and JAX's, eager
    ops' included; JAX's persistent cache on disk stays): a run of many groups then needs memory
    for a few groups' programs, not all of them. Only an engine that has run RELEASE_EVERY groups
    does it, so a small audit never touches the caches of the process it runs in."""
    for cache in (_compiled, _at_points, _batched):
        cache.cache_clear()
    jax.clear_caches()


class GroupEngine:
    """Scenarios sharing a program, vmapped: see the module's docstring."""

    name = "group"

    def __init__(
        self, min_size: int = 1, devices: Sequence = (), eager: bool = True, timeout: float | None = None, limits: Limits | None = None
    ):
        self.min_size = min_size
        self.devices = tuple(devices)
        self.eager = eager
        """Whether to compute the eager paths: a quick screen (a search exploring) may leave them out,
        its findings being confirmed on the literal engine; what the service reports has them all."""
        self.timeout = timeout
        """Seconds a group may take, as one scenario may: a group that runs past it is given up (its
        members go on to the next engine, each under its own timeout)."""
        self.limits = limits
        """With limits, a group whose first member (its shapes are every member's) exceeds them, its
        function traced, is left to the literal engine, which refuses each member saying why."""
        self.done = 0
        """Groups this engine has run, over all its calls (a worker's engine gets a group a call)."""

    def keyed(self, scenarios: Sequence[Scenario]) -> list[list[int]]:
        """Positions of the scenarios that share a program, by `group_key` alone (no user code is
        traced): groups of at least `min_size`, not yet split to fit one call."""
        found: dict[tuple, list[int]] = {}
        for index, scenario in enumerate(scenarios):
            key = group_key(scenario)
            if key is not None:
                found.setdefault(key, []).append(index)
        return [indices for indices in found.values() if len(indices) >= self.min_size]

    def groups(self, scenarios: Sequence[Scenario]) -> list[list[int]]:
        """`keyed` groups in batches small enough for one call (a function is traced, unevaluated,
        to learn its output's size)."""
        batches = []
        for indices in self.keyed(scenarios):
            with x64_for(scenarios[indices[0]]):
                try:
                    size = batch_size(scenarios[indices[0]])
                except (Exception, SystemExit):  # noqa: BLE001 - a function that cannot even be traced: the literal engine will say why
                    continue
            if size:
                batches += [indices[start : start + size] for start in range(0, len(indices), size)]
        return batches

    def run(self, scenarios: Sequence[Scenario]) -> Iterator[tuple[int, Computed]]:
        for indices in self.groups(scenarios):
            self.done += 1
            if self.done % RELEASE_EVERY == 0:
                release_programs()
            members = [scenarios[i] for i in indices]
            started = time.perf_counter()
            placed = jax.default_device(self.devices[0]) if self.devices else nullcontext()
            try:
                with time_limit(self.timeout), x64_for(members[0]), placed, unfiltered_tracebacks():
                    if self.limits is not None and check_limits(members[:1], self.limits):
                        continue
                    computed = _group(members, started, device_name(self.devices[0]) if self.devices else None, self.eager)
            except (Exception, SystemExit, ScenarioTimeout):  # noqa: BLE001 - a group that fails as a whole settles nothing: the next engine takes its scenarios
                continue
            yield from ((index, c) for index, c in zip(indices, computed, strict=True) if c is not None)
