"""Limits checked before anything is allocated: an oversized scenario is bad input (exit 2), not an out-of-memory.

Sizes come from the scenario alone, and for a user's function from `jax.eval_shape`, which traces
without computing, so the check takes well under a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np

from gradaudit.scenario import Scenario
from gradaudit.yaml_nodes import InputError


@dataclass(frozen=True)
class Limits:
    """Per scenario and per run; [tool.gradaudit] `limits = {…}` changes them."""

    elements: int = 1_000_000
    """Elements of one input or case."""
    cases: int = 1_024
    """Cases of one select_n."""
    jacobian: int = 50_000_000
    """Entries of one scenario's derivative blocks (Jacobians, and Hessians at order 2)."""
    evaluations: int = 2_000_000
    """Function evaluations finite differences need for one scenario."""
    work: int = 2_000_000_000
    """Derivative entries over the whole run."""


LIMIT_NAMES = tuple(Limits.__dataclass_fields__)


def _sizes(scenario: Scenario, trace: bool) -> tuple[list[int], int]:
    """(sizes of the differentiated inputs, size of the output; 0 when the function is not traced)."""
    spec = scenario.target
    if spec.kind == "select_n":
        size = int(np.prod(spec.shape, dtype=np.int64))
        return [size] * spec.cases, 1 if spec.output == "sum_of_squares" else size
    if not trace:
        return [int(np.prod(s.shape if s.value is None else np.shape(s.value), dtype=np.int64)) for s in spec.inputs if s.differentiable], 0
    from gradaudit.targets import build_targets

    target = build_targets(scenario)[0]
    shapes = [jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in (*target.args, *target.fixed)]
    out = jax.eval_shape(target.fn, *shapes)
    return [int(np.size(a)) for a in target.args], int(np.prod(np.shape(out), dtype=np.int64))


LIMIT_EXCEEDED = "LimitExceeded"
"""The error type of a scenario a worker found too large (an input error once the run ends)."""


def check_limits(scenarios: Sequence[Scenario], limits: Limits, trace: bool = True) -> list[InputError]:
    """Every scenario that would exceed a limit, as an input error naming the limit.

    `trace=False` leaves users' functions untraced (their code then runs only in worker processes),
    so their output size, and with it the Jacobian limit, is not checked before the run.
    """
    errors = []
    total = 0
    for scenario in scenarios:
        spec = scenario.target
        problems = []
        if spec.kind == "select_n" and spec.cases > limits.cases:
            problems.append(f"{spec.cases} cases exceed the limit of {limits.cases:,} (limits.cases)")
        try:
            inputs, out = _sizes(scenario, trace)
        except (Exception, SystemExit):  # noqa: BLE001 - a function that cannot even be traced is the audit's to report
            inputs, out = [], 0
        if inputs and max(inputs) > limits.elements:
            problems.append(f"an input of {max(inputs):,} elements exceeds the limit of {limits.elements:,} (limits.elements)")
        entries = out * sum(inputs)
        if scenario.order >= 2:
            entries += out * sum(inputs) ** 2
        bindings = 2 if spec.kind == "function" and spec.bind == "both" and any(not s.differentiable for s in spec.inputs) else 1
        entries *= bindings
        if entries > limits.jacobian:
            problems.append(f"its derivatives have {entries:,} entries, over the limit of {limits.jacobian:,} (limits.jacobian)")
        evaluations = 4 * sum(inputs) * bindings * (2 if scenario.order >= 2 else 1)
        if evaluations > limits.evaluations:
            problems.append(
                f"finite differences need {evaluations:,} evaluations, over the limit of {limits.evaluations:,} (limits.evaluations)"
            )
        total += entries
        for problem in problems:
            errors.append(InputError(scenario.source, f"scenario '{scenario.name}' is too large: {problem}"))
    if total > limits.work and not errors:
        first = scenarios[0].source
        errors.append(InputError(first, f"the run's derivatives have {total:,} entries in all, over the limit of {limits.work:,} (limits.work)"))
    return errors
