"""The group engine: scenarios that share one function, its programs compiled once for them all.

Scenarios that share a program (`targets.group_key`: a select_n family with its selector passed
in, or a user's function with the same input shapes, dtypes and binding) form a group; a binding
with captured constants is computed together for the members that capture the same ones.
The eager paths (`value`, `jacfwd`, `jacrev`) run for the whole group as one eager `jax.vmap`, op
by op as eager calls run (for a binding with captured values, one per part), over a batch padded
to a power of two (`_padded`). The jit paths and the finite-difference points are compiled once per
group: under jax.jit, the function, jax.jacfwd and jax.jacrev of it at one scenario's inputs,
unbatched, and the function mapped over that scenario's centre and points (`jax.lax.map`: called
at each point on its own, as the literal engine's finite differences call it; a vmap over the
points runs every branch of a batched `lax.cond`, and jax.scipy.special.expn on an array holding
an infinite order loops for ever where it returns NaN called on that entry alone); each member
calls them on its own inputs. For a user's function each jit path is a program of its own, as a
user's `jax.jit(jax.jacrev(f))` is: XLA compiled a program holding all three to other answers
than each alone (jnp.ldexp's fused jit(jacrev) read a subnormal input as NaN where its own gives
1). Selections (a `bundled` target: select_n) are one program, which computes them as each
path's own does, in one compilation; so are a search's quick screen's (no eager paths:
screening.py), whose findings are audited again on the literal engine before any is reported. A
member whose function gives another value at its centre within the points program than called on
its own is not yielded (its points would not be its function's). Paths record the binding the
group used (a select_n selector is `traced` here); the service keeps a member's result where its
eager and jit paths tell one story and, for a user's function, it found nothing
(`judging.assess.one_story`), and audits any other again as the user writes it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext

import jax
import jax.numpy as jnp
import numpy as np

from gradaudit import function_caches
from gradaudit.engines.base import FORWARD_, REVERSE_, VALUE_, Recorded, assembled
from gradaudit.engines.literal import ScenarioTimeout, steps, stop_computing, time_limit
from gradaudit.engines.probe import prober
from gradaudit.function_caches import per_function
from gradaudit.jaxenv import as_jax_arrays, device_name, on_host, tracing_context, unfiltered_tracebacks, x64_for
from gradaudit.limits import check_limits
from gradaudit.model.computed import Computed
from gradaudit.model.options import Limits
from gradaudit.model.scenario import Scenario
from gradaudit.numerics.finite_differences import Points, estimates, points, scenario_estimates
from gradaudit.sources import module_state
from gradaudit.targets import captured, group_key, group_targets, kinship, sizes
from gradaudit.targets.base import Target, primitives
from gradaudit.targets.triggers import traced as trace_once
from gradaudit.targets.triggers import triggered

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
        # an exception (sys.exit too) is this path's result, as on the literal engine
        except (Exception, SystemExit) as exc:  # noqa: BLE001
            failures[name] = exc
    return answers


@per_function(maxsize=256)
def _batched(fn: Callable, n: int) -> dict[str, Callable]:
    """A group's computations, vmapped over its scenarios (made once per function)."""
    return {name: jax.vmap(function) for name, function in computations(fn, n).items()}


POINTS = "points"


Call = tuple[tuple[str, ...], Callable[[tuple, tuple], dict]]
"""A compiled program of a group and the computations it answers: called on a member's (inputs,
stacks), it gives those computations' answers by name."""


@per_function(maxsize=256)
def _programs(
    fn: Callable, n: int, signature: tuple, context: tuple, together: bool
) -> tuple[list[Call], dict[str, BaseException]]:
    """One scenario's jit paths and finite-difference points as compiled programs, made once per
    function and shapes so that every member of a group calls them on its own inputs: each its own
    program, or one where `together` (see the module's docstring), which raises where XLA cannot
    build it (each member then goes on alone). A computation that raises while tracing (which sees
    shapes and dtypes only, which members share) is left out and its exception kept, as each
    member's; so is a program of its own that cannot be built, as a user's raises. `signature`:
    (shape, dtype) of each input, then of each point stack; `context`: jaxenv.tracing_context()
    (part of the cache's key only)."""
    shapes = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in signature]
    inputs, stacks = tuple(shapes[: len(signature) - n]), tuple(shapes[len(signature) - n :])
    failures: dict[str, BaseException] = {}
    compute = computations(fn, n)

    def at_points(inputs, stacks):
        fixed = inputs[n:]
        return jax.lax.map(lambda p: fn(*p, *fixed), tuple(stacks))

    if together:

        def program(inputs, stacks):
            answers = _answers(compute, inputs, failures)
            try:
                answers[POINTS] = at_points(inputs, stacks)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - as in _answers
                failures[POINTS] = exc
            return answers

        fused = jax.jit(program).lower(inputs, stacks).compile()
        return [((*compute, POINTS), fused)], failures
    calls: list[Call] = []
    for name, function in {**compute, POINTS: at_points}.items():
        try:
            given = (inputs, stacks) if name == POINTS else inputs
            calls.append(((name,), _answering(name, jax.jit(function).lower(*given).compile())))
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - as in _answers
            failures[name] = exc
    return calls, failures


def _answering(name: str, program: Callable) -> Callable[[tuple, tuple], dict]:
    """A separate program called as a member's computation `name`: the points program on the
    member's inputs and stacks, a jit path on its inputs alone, as the user calls it."""
    if name == POINTS:
        return lambda inputs, stacks: {name: program(inputs, stacks)}
    return lambda inputs, stacks: {name: program(*inputs)}


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


def _member(
    calls: list[Call], failures: dict[str, BaseException], inputs: Sequence, stacks: Sequence
) -> tuple[dict, dict[str, BaseException]]:
    """One member's calls of its group's programs: its answers, and the exception of each computation
    that did not give one (raised while tracing, its program could not be built, or this call raised)."""
    answers: dict = {}
    failed = dict(failures)
    for names, call in calls:
        try:
            answers.update(call(tuple(inputs), tuple(stacks)))
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the call's exception is each of its computations'
            failed.update({name: exc for name in names if name not in failures})
    return on_host(answers), failed


def _group(members: Sequence[Scenario], started: float, device: str | None, with_eager: bool) -> list[Computed | None]:
    """Every first-order path of every member, per binding of their targets (the jit ones alone
    without `with_eager`), computed together for the members whose target of that binding is one
    function (a binding with captured values: the members capturing the same ones); None for a
    member left to another engine (see `_binding`)."""
    targets = [group_targets(m) for m in members]
    # One program for selections, and for a screen (its findings are audited again on the literal engine)
    together = members[0].target.bundled or not with_eager
    paths: list[dict | None] = [{} for _ in members]
    for t in range(len(targets[0])):
        sharing: dict[int, list[int]] = {}
        for b, ts in enumerate(targets):
            sharing.setdefault(id(ts[t].fn), []).append(b)
        rows = (
            1 << (max(map(len, sharing.values())) - 1).bit_length()
        )  # the largest part, to a power of two (`_padded`)
        for part in sharing.values():
            computed = _binding(
                [targets[b][t] for b in part], members[0].eps, with_eager, t == 0, device, rows, together
            )
            for b, found in zip(part, computed, strict=True):
                before = paths[b]
                paths[b] = None if found is None or before is None else {**before, **found}
    share = (time.perf_counter() - started) / len(members)
    # One jaxpr per function of the first binding: members that share it share their shapes, dtypes
    # and binding. (Over a target alone: a closure over `targets` would keep every member's arrays alive.)
    traced: dict[int, Callable] = {}
    jaxprs: dict[int, Callable] = {}
    for ts in targets:
        traced.setdefault(id(ts[0].fn), functools.cache(functools.partial(primitives, ts[0])))
        jaxprs.setdefault(id(ts[0].fn), functools.cache(functools.partial(trace_once, ts[0])))
    return [
        None
        if mine is None
        else Computed(
            paths=mine,
            arg_names=ts[0].arg_names,
            inputs=ts[0].args,
            bindings=tuple(target.binding for target in ts),
            seconds=share,
            engine="group",
            primitives=traced[id(ts[0].fn)],
            triggers=functools.partial(triggered, ts[0], jaxpr=jaxprs[id(ts[0].fn)]),
            probe=prober(ts[0], member),
        )
        for mine, ts, member in zip(paths, targets, members, strict=True)
    ]


def _binding(
    targets: Sequence[Target],
    eps: float | None,
    with_eager: bool,
    with_value: bool,
    device: str | None,
    rows: int,
    together: bool,
) -> list[dict | None]:
    """One binding's first-order paths for members whose targets share one function: per member its
    paths, or None where its function gave another value at its centre within the program than
    called on its own (the points would not be its function's), or its points could not be evaluated, or the
    program could not be built (the function alone, point by point, might do). The eager paths run
    over at least `rows` members (`_padded`); the jit paths are one program where `together`, else
    each its own (`_programs`)."""
    first = targets[0]
    n = len(first.args)
    args = [np.stack([target.args[i] for target in targets]) for i in range(n)]
    fixed = [np.stack([target.fixed[i] for target in targets]) for i in range(len(first.fixed))]
    where = points(args, steps(first, eps))
    eager_failures: dict[str, BaseException] = {}
    eager = (
        jax.device_get(_answers(_batched(first.fn, n), as_jax_arrays(_padded((*args, *fixed), rows)), eager_failures))
        if with_eager
        else {}
    )  # JAX arrays, as ad_blocks
    # Each member's points, its centre first: (1 + points, *shape) per argument.
    stacks = [
        np.concatenate([arg[:, None], stack.swapaxes(0, 1)], axis=1)
        for arg, stack in zip(args, where.stacks, strict=True)
    ]
    signature = tuple((a.shape[1:], a.dtype) for a in (*args, *fixed, *stacks))
    try:
        calls, traced_failures = _programs(first.fn, n, signature, tracing_context(), together)
    except Exception:  # noqa: BLE001 - the program could not be built: each member goes on alone
        return [None] * len(targets)
    answers = [
        _member(calls, traced_failures, (*target.args, *target.fixed), [stack[b] for stack in stacks])
        for b, target in enumerate(targets)
    ]
    usable = [
        b
        for b, (mine, _) in enumerate(answers)
        if POINTS in mine and VALUE in mine and _same(mine[POINTS][0], mine[VALUE])
    ]
    found: list[dict | None] = [None] * len(targets)
    if not usable:
        return found
    centre = np.stack([answers[b][0][POINTS][0] for b in usable])
    at_points = np.stack([answers[b][0][POINTS][1:] for b in usable], axis=1)
    blocks = estimates([centre], [at_points], _taking(where, usable), [a[usable] for a in args])
    for row, b in enumerate(usable):
        mine, mine_failed = answers[b]
        reference = scenario_estimates(blocks, row, [(0, j) for j in range(n)])
        # Copies, so a member's result does not keep its whole group's arrays alive.
        eager_b = {
            name: np.array(answer[b]) if name == VALUE else tuple(np.array(block[b]) for block in answer)
            for name, answer in eager.items()
        }
        found[b] = assembled(
            eager_b,
            eager_failures,
            mine,
            mine_failed,
            reference,
            Recorded("group", first.bound, first.binding, with_value, device),
        )
    return found


def _padded(batch: Sequence[np.ndarray], rows: int) -> list[np.ndarray]:
    """A batch's arrays with its first member repeated up to `rows` members (`_group` asks for its
    largest part, rounded up to a power of two); the copies' answers are not read. Eager
    operations compile per shape, so every batch size compiled every eager operation again: a
    binding with captured values splits a group into parts of many sizes, and groups of a grid
    differ in size by a member or two (docs/performance.md, "Measurements behind the settings").
    A power of two also lets a rerun whose groups grew by a scenario find its eager programs in
    the compilation cache."""
    return [a if len(a) >= rows else np.concatenate([a, np.repeat(a[:1], rows - len(a), axis=0)]) for a in batch]


def _taking(where: Points, members: Sequence[int]) -> Points:
    """The points of some members of a batch only."""
    return Points([stack[:, members] for stack in where.stacks], where.labels, where.moves[:, members])


SPLIT_VALUES = 64
"""Captured values each worker takes of one batch before it is split between workers: a program
each on one side; on the other, each worker compiles the group's eager programs again. A batch of
tens of values is cheaper whole, one of hundreds split (docs/performance.md, "Measurements behind
the settings")."""


RELEASE_EVERY = 200
"""Groups after which an engine lets go of compiled programs (`release_programs`): a process keeps
its groups' programs, which no later group of other shapes uses, and letting go costs lowering
again every eager program that later groups share; every 200 groups bounds what a worker's
programs hold whatever the run's length (docs/performance.md, "Measurements behind the settings")."""


def release_programs() -> None:
    """Let go of every compiled program this process holds (the group engine's and JAX's, eager
    ops' included; JAX's persistent cache on disk stays): a run of many groups then needs memory
    for a few groups' programs, not all of them. Only an engine that has run RELEASE_EVERY groups
    does it, so a small audit never touches the caches of the process it runs in."""
    function_caches.clear()
    jax.clear_caches()


class GroupEngine:
    """Scenarios sharing a program, vmapped: see the module's docstring."""

    name = "group"

    def __init__(
        self,
        min_size: int = 1,
        devices: Sequence = (),
        eager: bool = True,
        timeout: float | None = None,
        limits: Limits | None = None,
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

    @staticmethod
    def queued(scenarios: Sequence[Scenario], batches: Sequence[list[int]], workers: int) -> list[list[int]]:
        """`batches` (positions in `scenarios`) in the order `workers` worker processes should take
        them, each from a stretch of its own (`isolation._stretch`: the first from the front, the
        last from the back). A group compiles a program for each value its members capture
        (`targets.captured`), so a batch of many values is split between the workers (values whole,
        SPLIT_VALUES or more a worker) and the costly batches go to the ends, the costliest first,
        where the workers start; the others keep kin next to each other (`targets.kinship`), so
        that one worker lowers the eager programs they share."""
        pieces: list[tuple[int, list[int]]] = []  # (values it captures, positions)
        for batch in batches:
            values: dict[tuple, list[int]] = {}
            for index in batch:
                values.setdefault(captured(scenarios[index]), []).append(index)
            members = list(values.values())
            parts = max(1, min(workers, len(members) // SPLIT_VALUES))
            pieces += (
                [(len(members), batch)]
                if parts == 1
                else [
                    (len(members[part::parts]), [i for value in members[part::parts] for i in value])
                    for part in range(parts)
                ]
            )
        pieces.sort(key=lambda piece: (-piece[0], kinship(scenarios[piece[1][0]])))
        costly = [batch for cost, batch in pieces if cost > 1]
        return costly[0::2] + [batch for cost, batch in pieces if cost <= 1] + costly[1::2][::-1]

    def groups(self, scenarios: Sequence[Scenario]) -> list[list[int]]:
        """`keyed` groups in batches small enough for one call (a function is traced, unevaluated,
        to learn its output's size, under the timeout: tracing runs the user's Python)."""
        batches = []
        for indices in self.keyed(scenarios):
            try:
                with time_limit(self.timeout), x64_for(scenarios[indices[0]]):
                    size = batch_size(scenarios[indices[0]])
            # a function that cannot even be traced (in time): the literal engine will say why
            except (Exception, SystemExit, ScenarioTimeout):  # noqa: BLE001
                continue
            if size:
                batches += [indices[start : start + size] for start in range(0, len(indices), size)]
        return batches

    def run(self, scenarios: Sequence[Scenario]) -> Iterator[list[tuple[int, Computed]]]:
        for indices in self.groups(scenarios):
            self.done += 1
            if self.done % RELEASE_EVERY == 0:
                release_programs()
            members = [scenarios[i] for i in indices]
            module_state.fresh()
            started = time.perf_counter()
            placed = jax.default_device(self.devices[0]) if self.devices else nullcontext()
            try:
                with time_limit(self.timeout), x64_for(members[0]), placed, unfiltered_tracebacks():
                    if self.limits is not None and check_limits(members[:1], self.limits):
                        continue
                    computed = _group(
                        members, started, device_name(self.devices[0]) if self.devices else None, self.eager
                    )
            # a group that fails as a whole settles nothing: the next engine takes its scenarios
            except (Exception, SystemExit, ScenarioTimeout):  # noqa: BLE001
                if stop_computing():
                    return  # a worker whose XLA still runs the group given up: the rest wait for a fresh one
                continue
            done = [(index, c) for index, c in zip(indices, computed, strict=True) if c is not None]
            if done:
                yield done
