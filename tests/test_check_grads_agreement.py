"""Verdicts agree with JAX's own check_grads (order 2, fwd and rev) on grids the other tests do not use.

check_grads samples one random direction, so where it passes every path must agree; where it
fails (or raises) the audit must report a mismatch or an error.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax
from jax.test_util import check_grads

from gradaudit.model import dtypes
from gradaudit.model.findings import CONSISTENT
from gradaudit.model.scenario import Scenario
from gradaudit.service import audit_one
from gradaudit.targets import build_targets
from tests.helpers import make_scenario

SHAPES = [(), (3,), (2, 3)]


@st.composite
def select_n_scenarios(draw) -> Scenario:
    selector_dtype = draw(st.sampled_from(["bool", "int8", "int32", "uint8", "uint32", "int16"]))
    cases = draw(st.integers(1, 2 if selector_dtype == "bool" else 5))
    shape = draw(st.sampled_from(SHAPES))
    low, high = dtypes.integer_range(selector_dtype)

    def element():
        if selector_dtype == "bool":
            return st.booleans()
        near = st.integers(max(low, -3), min(high, cases + 2))
        return st.one_of(near, st.sampled_from([low, high]))

    if draw(st.booleans()) or not shape:
        value = draw(element())
    else:
        flat = draw(st.lists(element(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
        value = np.asarray(flat, dtype=object).reshape(shape).tolist()
    return make_scenario(
        selector_dtype=selector_dtype,
        value=value,
        cases=cases,
        shape=shape,
        dtype=draw(st.sampled_from(["float32", "float16"])),
        seed=draw(st.integers(0, 1000)),
    )


def check_grads_passes(scenario: Scenario) -> bool:
    (target,) = build_targets(scenario)
    args = tuple(np.asarray(a, dtype=np.float32) for a in target.args)
    which = scenario.target.selector.array()
    try:
        check_grads(lambda *cases: lax.select_n(which, *cases), args, 2, ["fwd", "rev"], eps=1.0)
    except Exception:  # noqa: BLE001 - an assertion or the rule's own exception both mean "disagrees"
        return False
    return True


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(select_n_scenarios())
def test_verdict_agrees_with_check_grads(scenario):
    result = audit_one(scenario)
    assert (result.status == CONSISTENT) == check_grads_passes(scenario), (
        scenario,
        result.status,
        [f.message for f in result.findings],
    )
