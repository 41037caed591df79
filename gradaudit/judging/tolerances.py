"""How close two paths must be: the tolerances a scenario is judged by."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradaudit.model import dtypes
from gradaudit.model.scenario import Scenario


@dataclass(frozen=True)
class Tolerances:
    """How close two paths must be: |a - b| <= atol + rtol * |b| (plus the rounding noise of finite differences)."""

    fd_rtol: float
    fd_atol: float
    ad_rtol: float
    ad_atol: float


def tolerances_for(scenario: Scenario, default: tuple[float | None, ...] = ()) -> Tolerances:
    """The scenario's own tolerance, else the run's default (`Options.tolerance`: --rtol/--atol,
    then --ad-rtol/--ad-atol), else its dtype's. AD against AD: the user's, else the dtype's
    rounding scaled by the square root of the reduction's length."""
    given = (*default, None, None, None, None)[:4]
    fd_rtol, fd_atol = dtypes.default_tolerance(scenario.precision_dtype)
    fd_rtol = fd_rtol if given[0] is None else given[0]
    fd_atol = fd_atol if given[1] is None else given[1]
    if scenario.tolerance is not None:
        fd_rtol, fd_atol = scenario.tolerance.rtol, scenario.tolerance.atol
    ad_rtol, ad_atol = (tol * math.sqrt(scenario.reduction) for tol in dtypes.ad_tolerance(scenario.precision_dtype))
    ad_rtol = ad_rtol if given[2] is None else given[2]
    ad_atol = ad_atol if given[3] is None else given[3]
    return Tolerances(fd_rtol=fd_rtol, fd_atol=fd_atol, ad_rtol=ad_rtol, ad_atol=ad_atol)
