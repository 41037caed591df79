"""Limits checked before anything is allocated: an oversized scenario is bad input (exit 2), not an out-of-memory.

Sizes come from the scenario alone, and for a user's function from `jax.eval_shape`, which traces
without computing, so the check takes well under a second.
"""

from __future__ import annotations

from collections.abc import Sequence

from gradaudit.model.errors import InputError
from gradaudit.model.options import Limits
from gradaudit.model.scenario import Scenario


def _sizes(scenario: Scenario, trace: bool) -> tuple[list[int], int]:
    """(sizes of the differentiated inputs, size of the output; 0 when a function is not traced)."""
    if not trace:
        return scenario.target.untraced_sizes()
    from gradaudit.targets import sizes

    return sizes(scenario)


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
        problems = spec.over_limits(limits.cases)
        try:
            inputs, out = _sizes(scenario, trace)
        except (Exception, SystemExit):  # noqa: BLE001 - a function that cannot even be traced is the audit's to report
            inputs, out = [], 0
        if inputs and max(inputs) > limits.elements:
            problems.append(
                f"an input of {max(inputs):,} elements exceeds the limit of {limits.elements:,} (limits.elements)"
            )
        entries = out * sum(inputs)
        if scenario.order >= 2:
            entries += out * sum(inputs) ** 2
        bindings = spec.bindings()
        entries *= bindings
        if entries > limits.jacobian:
            problems.append(
                f"its derivatives have {entries:,} entries, over the limit of {limits.jacobian:,} (limits.jacobian)"
            )
        elif sum(inputs) ** 2 > limits.jacobian:
            # jax.jacfwd pushes one tangent per input element: an identity as large as the inputs squared,
            # even for a scalar output (whose Jacobian is small) and before the function is called.
            problems.append(
                f"jacfwd's tangents have {sum(inputs) ** 2:,} elements (one per input element, each as large as the "
                "inputs), "
                f"over the limit of {limits.jacobian:,} (limits.jacobian; the Python API compares such a function "
                "along directions)"
            )
        evaluations = 4 * sum(inputs) * bindings * (2 if scenario.order >= 2 else 1)
        if evaluations > limits.evaluations:
            problems.append(
                f"finite differences need {evaluations:,} evaluations, over the limit of {limits.evaluations:,} "
                "(limits.evaluations)"
            )
        total += entries
        for problem in problems:
            errors.append(InputError(scenario.source, f"scenario '{scenario.name}' is too large: {problem}"))
    if total > limits.work and not errors:
        first = scenarios[0].source
        errors.append(
            InputError(
                first,
                f"the run's derivatives have {total:,} entries in all, over the limit of {limits.work:,} (limits.work)",
            )
        )
    return errors
