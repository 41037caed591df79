"""The compiled literal path: many select_n scenarios, each exactly as a user writes it, in one program.

Every scenario keeps its own function with its selector captured as a constant (the literal
path's target); only the compilation is shared: the jit paths of a whole bundle of scenarios are
traced into one program and XLA compiles it once. jit(value), the Jacobians by forward and by
reverse mode (jacobians.py: what `jax.jacfwd` and `jax.jacrev` do) and the function at every
finite-difference point are computed for each scenario. With the selector a constant, XLA folds
most of the derivative arithmetic, so a scenario adds little to the compile. The eager paths
repeat their jit twins' answers (`shared_with`; `--literal` runs every path on its own); an
exception while tracing one path is that path's result.
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


class Bundle:
    """Many scenarios' literal functions in one program: traced and lowered when made, then compiled
    by `compile` (XLA releases the GIL there, so the next bundle can be traced meanwhile) and run by
    `outcomes`. Either may raise if the program as a whole cannot be compiled or run; the caller
    then audits each scenario on its own."""

    def __init__(self, scenarios: Sequence[Scenario]):
        scenarios = list(scenarios)
        self.targets = [build(scenario) for scenario in scenarios]
        self.stepped = [
            finite_difference_points([arg[None] for arg in t.args], s.eps or dtypes.default_eps(s.target.dtype))
            for s, t in zip(scenarios, self.targets, strict=True)
        ]
        self.failures: list[dict[str, BaseException]] = [{} for _ in scenarios]

        def program(all_args, all_points):
            return [
                _traced(target.fn, tuple(args), points, failed)
                for target, args, points, failed in zip(self.targets, all_args, all_points, self.failures, strict=True)
            ]

        self.inputs = ([t.args for t in self.targets], [[stack[:, 0] for stack in perturbed] for perturbed, _, _ in self.stepped])
        with unfiltered_tracebacks():
            self.lowered = jax.jit(program).lower(*self.inputs)
        self.executable = None

    def compile(self) -> None:
        self.executable = self.lowered.compile()

    def outcomes(self, tolerances: Sequence[Tolerances]) -> list[tuple]:
        """(results, verdict, argument names, inputs, judge seconds) of every scenario."""
        everything = jax.device_get(self.executable(*self.inputs))
        outcomes = []
        for target, answers, failed, (_, labels, moves), tolerance in zip(
            self.targets, everything, self.failures, self.stepped, tolerances, strict=True
        ):
            results = _path_results(target, answers, failed, labels, moves)
            judging = time.perf_counter()
            verdict = judge(results, target.arg_names, tolerance)
            outcomes.append((results, verdict, target.arg_names, target.args, time.perf_counter() - judging))
        return outcomes


def _path_results(target, answers: dict, failed: dict[str, BaseException], labels, moves) -> dict:
    """Every first-order path of one scenario from its compiled answers, or the exception a path raised."""
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
    return shared_paths((np.asarray(value),) if value is not None else failed[VALUE], forward, reverse, estimates)
