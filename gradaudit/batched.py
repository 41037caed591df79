"""The fast path: select_n scenarios that share a compiled program are audited together.

Scenarios with the same selector dtype and shape, case count, case shape and dtype, output and
step form a group. The selector becomes an argument, so one compiled program (value, jacfwd and
jacrev, vmapped over the group) serves the whole group, and finite differences evaluate one
compiled forward program on the whole group at once. A scenario the fast path finds consistent is
reported from it; any other is audited again with its selector captured as a constant, as a user
writes it (compiled.py, or the literal path), which is what its report shows. A test over a grid
proves the fast path and the literal path give the same verdict scenario by scenario.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from gradaudit import dtypes
from gradaudit.finite_differences import ESTIMATES, MOVES, moved, quotients, rounding, step_size
from gradaudit.jacobians import forward_rows, jacfwd_blocks, jacrev_blocks, reverse_rows
from gradaudit.judge import CONSISTENT, Tolerances, judge
from gradaudit.paths import (
    FINITE_DIFFERENCE,
    JACFWD,
    JACREV,
    JIT_JACFWD,
    JIT_JACREV,
    JIT_VALUE,
    VALUE,
    PathResult,
    run_path,
)
from gradaudit.scenario import Scenario
from gradaudit.targets.select_n import OUTPUTS, case_values

GroupKey = tuple
"""What scenarios sharing a compiled program have in common."""

MAX_ELEMENTS = 4_000_000
"""Array elements one batched call may hold (finite-difference points and Jacobians); larger groups
are split, and a scenario that alone would exceed it takes the literal path."""


def batch_size(scenario: Scenario) -> int:
    """How many scenarios like this one fit in one batched call; 0 when even one does not."""
    spec = scenario.target
    size = int(np.prod(spec.shape, dtype=np.int64))
    per_scenario = 4 * spec.cases**2 * size**2 + 2 * spec.cases * size**2 + 1
    return MAX_ELEMENTS // per_scenario


def group_key(scenario: Scenario) -> GroupKey | None:
    """The group of a scenario the fast path can take; None for one it cannot (functions, order 2)."""
    spec = scenario.target
    if spec.kind != "select_n" or scenario.order != 1 or batch_size(scenario) == 0 or 0 in spec.shape:
        return None
    return (spec.selector.dtype, np.shape(spec.selector.value), spec.cases, spec.shape, spec.dtype, spec.output, scenario.eps)


@functools.lru_cache(maxsize=None)
def _program(output: str, cases: int):
    """One compiled program per group: value, jacfwd and jacrev of every scenario, and the function
    at every finite-difference point of every scenario (perturbed cases carry a leading axis)."""
    apply = OUTPUTS[output]

    def value(which, *case_arrays):
        return apply(lax.select_n(which, *case_arrays))

    def derivatives(which, *case_arrays):
        fn = functools.partial(value, which)
        return fn(*case_arrays), forward_rows(fn, case_arrays), reverse_rows(fn, case_arrays)

    def everything(which, case_arrays, perturbed):
        at_points = jax.vmap(lambda *points: jax.vmap(value)(which, *points))(*perturbed)
        return (*jax.vmap(derivatives)(which, *case_arrays), at_points)

    return jax.jit(everything)


def finite_difference_points(cases: list[np.ndarray], eps: float) -> tuple[list[np.ndarray], list[tuple[int, int, str]], np.ndarray]:
    """Every finite-difference point of every scenario: per case, arrays (P, B, ...); what each point is; the moves (P, B)."""
    batch = cases[0].shape[0]
    stacks: list[list[np.ndarray]] = [[] for _ in cases]
    labels: list[tuple[int, int, str]] = []
    moves = []
    for index, case in enumerate(cases):
        flat = case.reshape(batch, -1)
        for element in range(flat.shape[1]):
            x = flat[:, element].astype(np.float64)
            step = step_size(x, eps, flat.dtype)
            for label, multiple in MOVES:
                point = flat.copy()
                point[:, element] = moved(flat[:, element], multiple * step)
                for other, stack in enumerate(stacks):
                    stack.append(point.reshape(case.shape) if other == index else cases[other])
                labels.append((index, element, label))
                moves.append(point[:, element].astype(np.float64) - x)
    return [np.stack(stack) for stack in stacks], labels, np.stack(moves)


def finite_difference_blocks(f0, at_points, labels, moves, cases: list[np.ndarray]) -> dict[str, list[np.ndarray]]:
    """Every estimate for every scenario of the group: name -> per case, arrays (B, outputs, case elements)."""
    batch = cases[0].shape[0]
    out_rounding = rounding(np.asarray(f0).dtype)
    f0 = np.asarray(f0, dtype=np.float64).reshape(batch, -1)
    at_points = np.asarray(at_points, dtype=np.float64).reshape(len(labels), batch, -1)
    position = {key: p for p, key in enumerate(labels)}
    columns: dict[str, list[np.ndarray]] = {name: [] for name in ESTIMATES}
    for index, case in enumerate(cases):
        flat = case.reshape(batch, -1)
        blocks = {name: np.zeros((batch, f0.shape[1], flat.shape[1])) for name in ESTIMATES}
        for element in range(flat.shape[1]):
            at = {label: at_points[position[index, element, label]] for label, _ in MOVES}
            move = {label: moves[position[index, element, label]][:, None] for label, _ in MOVES}
            estimates = quotients(f0, at, move, out_rounding)
            estimates["undefined"] = estimates["undefined"] | ~np.isfinite(flat[:, element].astype(np.float64))[:, None]
            for name in ESTIMATES:
                blocks[name][:, :, element] = estimates[name]
        for name in ESTIMATES:
            columns[name].append(blocks[name])
    return columns


def scenario_estimates(fd: dict[str, list[np.ndarray]], b: int, out_shape: tuple, shape: tuple) -> dict[str, tuple[np.ndarray, ...]]:
    """Scenario `b`'s finite-difference estimates, one block per case shaped like jacfwd's (out_shape + shape)."""
    estimates = {name: tuple(block[b].reshape(out_shape + shape) for block in fd[name]) for name in ESTIMATES}
    estimates["undefined"] = tuple(m.astype(bool) for m in estimates["undefined"])
    return estimates


def shared_paths(value, forward, reverse, estimates: dict[str, tuple[np.ndarray, ...]]) -> dict[str, PathResult]:
    """Every first-order path from one compiled computation: the eager paths share the jit paths'
    answers (each argument a tuple of arrays, or the exception its path raised)."""

    def result(name: str, answer, twin: str | None = None) -> PathResult:
        if isinstance(answer, BaseException):
            computed = run_path(name, functools.partial(_raise, answer))
        elif name == FINITE_DIFFERENCE:
            computed = PathResult(name, answer["extrapolated"], estimates=answer)
        else:
            computed = PathResult(name, answer)
        return replace(computed, shared_with=twin)

    return {
        VALUE: result(VALUE, value, JIT_VALUE),
        JIT_VALUE: result(JIT_VALUE, value),
        JACFWD: result(JACFWD, forward, JIT_JACFWD),
        JIT_JACFWD: result(JIT_JACFWD, forward),
        JACREV: result(JACREV, reverse, JIT_JACREV),
        JIT_JACREV: result(JIT_JACREV, reverse),
        FINITE_DIFFERENCE: result(FINITE_DIFFERENCE, estimates),
    }


def _raise(exception: BaseException):
    raise exception


def audit_group(scenarios: Sequence[Scenario], tolerances: Sequence[Tolerances], keep_findings: bool = False) -> list[tuple | None]:
    """(results, verdict, …) per scenario where the fast path finds it consistent (any verdict with
    `keep_findings`); None where it must go literal."""
    spec = scenarios[0].target
    which = np.stack([s.target.selector.array() for s in scenarios])
    values = [case_values(s) for s in scenarios]
    cases = [np.stack([v[i] for v in values]) for i in range(spec.cases)]
    perturbed, labels, moves = finite_difference_points(cases, scenarios[0].eps or dtypes.default_eps(spec.dtype))
    try:
        program = _program(spec.output, spec.cases)
        value, forward_answers, reverse_answers, at_points = jax.device_get(program(jnp.asarray(which), cases, perturbed))
        fd = finite_difference_blocks(value, at_points, labels, moves, cases)
    except Exception:  # noqa: BLE001 - whatever went wrong, the literal path will say it scenario by scenario
        return [None] * len(scenarios)
    out_shape = np.shape(value)[1:]
    shapes = [spec.shape] * spec.cases
    names = tuple(f"case {i}" for i in range(spec.cases))
    outcomes: list[tuple | None] = []
    for b, (scenario, tolerance) in enumerate(zip(scenarios, tolerances, strict=True)):
        fwd = jacfwd_blocks(forward_answers[b], out_shape, shapes)
        rev = jacrev_blocks([rows[b] for rows in reverse_answers], out_shape, shapes)
        results = shared_paths(
            (np.asarray(value[b]),), fwd, rev, scenario_estimates(fd, b, out_shape, spec.shape)
        )
        judging = time.perf_counter()
        verdict = judge(results, names, tolerance)
        judged = time.perf_counter() - judging
        keep = verdict.status == CONSISTENT or keep_findings
        outcomes.append((results, verdict, names, values[b], judged) if keep else None)
    return outcomes
