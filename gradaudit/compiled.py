"""The compiled literal path: many select_n scenarios, each exactly as a user writes it, in one program.

Every scenario keeps its own function with its selector captured as a constant (the literal
path's target); only the compilation is shared: the jit paths of a whole bundle of scenarios are
traced into one program and XLA compiles it once. jit(value), the Jacobians by forward and by
reverse mode (jacobians.py: what `jax.jacfwd` and `jax.jacrev` do) and the function at every
finite-difference point are computed for each scenario. With the selector a constant XLA folds most of the derivative arithmetic, so a
scenario adds little to the compile. The eager paths share the compiled answers (`--literal` runs
every path on its own); an exception while tracing one path is that path's result.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import jax
import numpy as np

from gradaudit import dtypes
from gradaudit.batched import finite_difference_blocks, finite_difference_points, scenario_estimates, shared_paths
from gradaudit.jacobians import forward_rows, jacfwd_blocks, jacrev_blocks, reverse_rows
from gradaudit.judge import Tolerances, judge
from gradaudit.paths import unfiltered_tracebacks
from gradaudit.scenario import Scenario
from gradaudit.targets.select_n import build

VALUE, FORWARD, REVERSE, POINTS = "value", "forward", "reverse", "points"


def _traced(fn, args: tuple, points: list, failures: dict[str, BaseException]) -> dict:
    """The compiled answers of one scenario (`args` and `points` traced, as a user's arguments are), traced
    inside the bundle; a path that raises is left out and its exception kept in `failures`."""
    computations = {
        VALUE: lambda: fn(*args),
        FORWARD: lambda: forward_rows(fn, args),
        REVERSE: lambda: reverse_rows(fn, args),
        POINTS: lambda: jax.vmap(fn)(*points),
    }
    answers = {}
    for name, compute in computations.items():
        try:
            answers[name] = compute()
        except Exception as exc:  # noqa: BLE001 - an exception is this path's result, as on the literal path
            failures[name] = exc
    return answers


def audit_bundle(scenarios: Sequence[Scenario], tolerances: Sequence[Tolerances]) -> list[tuple]:
    """(results, verdict, argument names, inputs, judge seconds) of every scenario, from one compiled
    program; raises if the program as a whole cannot be compiled or run (the caller then audits
    each scenario on its own)."""
    targets = [build(scenario) for scenario in scenarios]
    stepped = [
        finite_difference_points([arg[None] for arg in t.args], s.eps or dtypes.default_eps(s.target.dtype))
        for s, t in zip(scenarios, targets, strict=True)
    ]
    failures: list[dict[str, BaseException]] = [{} for _ in scenarios]

    def program(all_args, all_points):
        return [
            _traced(target.fn, tuple(args), points, failed)
            for target, args, points, failed in zip(targets, all_args, all_points, failures, strict=True)
        ]

    points = [[stack[:, 0] for stack in perturbed] for perturbed, _, _ in stepped]
    with unfiltered_tracebacks():
        everything = jax.device_get(jax.jit(program)([t.args for t in targets], points))
    outcomes = []
    for scenario, target, answers, failed, (_, labels, moves), tolerance in zip(
        scenarios, targets, everything, failures, stepped, tolerances, strict=True
    ):
        value = answers.get(VALUE)
        out_shape = np.shape(value) if value is not None else ()
        shapes = [arg.shape for arg in target.args]
        forward = jacfwd_blocks(answers[FORWARD], out_shape, shapes) if FORWARD in answers else failed[FORWARD]
        reverse = jacrev_blocks(answers[REVERSE], out_shape, shapes) if REVERSE in answers else failed[REVERSE]
        if POINTS in answers and value is not None:
            cases = [arg[None] for arg in target.args]
            blocks = finite_difference_blocks(np.asarray(value)[None], np.asarray(answers[POINTS])[:, None], labels, moves, cases)
            estimates = scenario_estimates(blocks, 0, out_shape, target.args[0].shape)
        else:
            estimates = failed.get(POINTS) or failed[VALUE]
        results = shared_paths(
            (np.asarray(value),) if value is not None else failed[VALUE],
            forward,
            reverse,
            estimates,
        )
        judging = time.perf_counter()
        verdict = judge(results, target.arg_names, tolerance)
        outcomes.append((results, verdict, target.arg_names, target.args, time.perf_counter() - judging))
    return outcomes
