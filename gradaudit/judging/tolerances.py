"""How close two paths must be: the tolerances a scenario is judged by."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gradaudit.judging.scale import largest_finite
from gradaudit.model import dtypes
from gradaudit.model.findings import Note
from gradaudit.model.paths import PathResult
from gradaudit.model.scenario import Scenario


@dataclass(frozen=True)
class Tolerances:
    """How close two paths must be: |a - b| <= atol + rtol * |b| (plus the rounding noise of finite differences)."""

    fd_rtol: float
    fd_atol: float
    ad_rtol: float
    ad_atol: float


COARSE = 0.05
"""A relative tolerance against finite differences from which a rule wrong by a few percent passes
(float16's default is 0.125, bfloat16's 0.35): a note says so, where the user may not know."""


def coarse_notes(tolerances: Tolerances, inputs: Sequence[np.ndarray]) -> list[Note]:
    """A note where derivatives are checked against finite differences only coarsely (`COARSE`), saying how
    coarsely: the absolute part too (a bfloat16 rule twice softplus's slope of 0.85 passes within 0.98)."""
    if tolerances.fd_rtol < COARSE:
        return []
    names = sorted({np.asarray(x).dtype.name for x in inputs})
    narrow = [name for name in names if dtypes.machine_epsilon(name) > dtypes.machine_epsilon("float32")]
    why = (
        f"{', '.join(narrow)}: 4 sqrt(eps) unless rtol is set); a rule wrong by less passes: audit the function in "
        "float32 too to check it more closely"
        if narrow
        else "the rtol set); a rule wrong by less passes"
    )
    return [
        Note(
            message=(
                f"finite differences check these derivatives only within {tolerances.fd_rtol:.3g} relative, plus "
                f"{tolerances.fd_atol:.3g} absolute and the rounding of the steps ({why}"
            ),
            values={"rtol": tolerances.fd_rtol, "atol": tolerances.fd_atol},
        )
    ]


def function_scale(paths: Mapping[str, PathResult], cap: float = math.inf) -> float:
    """The largest finite |entry| of any path that ran, values and derivatives (AD or finite
    differences) alike; 0 where none. Once one reaches `cap`, that one (the rest cannot matter)."""
    largest = 0.0
    for path in paths.values():
        if path.ok:
            largest = max(largest, largest_finite(path.ok_arrays))
            if largest >= cap:
                break
    return largest


def atol_given(scenario: Scenario, default: tuple[float | None, ...] = ()) -> bool:
    """Whether the absolute tolerance against finite differences is the user's (the scenario's own, or the
    run's --atol), not the dtype's taken at the function's scale (`tolerances_for`)."""
    return scenario.tolerance is not None or (len(default) > 1 and default[1] is not None)


def tolerances_for(
    scenario: Scenario, default: tuple[float | None, ...] = (), paths: Mapping[str, PathResult] | None = None
) -> Tolerances:
    """The scenario's own tolerance, else the run's default (`Options.tolerance`: --rtol/--atol,
    then --ad-rtol/--ad-atol), else its dtype's. AD against AD: the user's, else the dtype's
    rounding scaled by the square root of the reduction's length.

    The dtype's absolute tolerance against finite differences is scaled down to the function's own
    size where its value and every derivative are smaller than 1 (`paths`, `function_scale`):
    4 sqrt(eps) absolute would check nothing of a function whose numbers are all below it (a loss
    divided by its batch size: a gradient of 1e-4 twice what it should be). The value counts too:
    a derivative of 0 reached by cancelling terms (a logistic map at its critical point) carries
    AD's rounding of those terms, which a value of ordinary size bounds and a zero Jacobian does not.
    Finite differences' rounding is allowed for separately (`numerics.finite_differences`)."""
    given = (*default, None, None, None, None)[:4]
    fd_rtol, fd_atol = dtypes.default_tolerance(scenario.precision_dtype)
    if paths is not None and given[1] is None and scenario.tolerance is None:
        fd_atol *= min(1.0, function_scale(paths, cap=1.0))
    fd_rtol = fd_rtol if given[0] is None else given[0]
    fd_atol = fd_atol if given[1] is None else given[1]
    if scenario.tolerance is not None:
        fd_rtol, fd_atol = scenario.tolerance.rtol, scenario.tolerance.atol
    ad_rtol, ad_atol = (tol * math.sqrt(scenario.reduction) for tol in dtypes.ad_tolerance(scenario.precision_dtype))
    ad_rtol = ad_rtol if given[2] is None else given[2]
    ad_atol = ad_atol if given[3] is None else given[3]
    return Tolerances(fd_rtol=fd_rtol, fd_atol=fd_atol, ad_rtol=ad_rtol, ad_atol=ad_atol)
