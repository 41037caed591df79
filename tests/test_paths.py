"""Paths on real JAX: the seed's example, finite differences, and case values."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from gradaudit.engines.literal import finite_difference_jacobians, run_paths
from gradaudit.jaxenv import LEGACY, select_n_rule
from gradaudit.model.findings import CONSISTENT, ERROR, MISMATCH
from gradaudit.model.paths import FINITE_DIFFERENCE, JACFWD, JACREV, JIT_JACFWD, JIT_JACREV, VALUE
from gradaudit.model.scenario import Scenario
from gradaudit.service import audit_one
from gradaudit.targets.base import Target
from gradaudit.targets.select_n import case_values
from tests.helpers import make_scenario


def scenario(dtype="int32", value=0, cases=2, shape=(), values=None, seed=0) -> Scenario:
    return make_scenario(selector_dtype=dtype, value=value, cases=cases, shape=shape, values=values, seed=seed)


def scalars(result, path):
    return tuple(float(a) for a in result.paths[path].arrays)


def test_seed_example_value_five_forward_routes_reverse_loses_it():
    with select_n_rule(LEGACY):
        result = audit_one(scenario(value=2, values=(2.0, 5.0)))
    assert float(result.paths[VALUE].arrays[0]) == 5.0
    assert scalars(result, JACFWD) == (0.0, 1.0)
    assert scalars(result, JIT_JACFWD) == (0.0, 1.0)
    assert scalars(result, JACREV) == (0.0, 0.0)
    assert scalars(result, JIT_JACREV) == (0.0, 0.0)
    assert scalars(result, FINITE_DIFFERENCE) == (0.0, 1.0)
    assert result.status == MISMATCH
    assert result.provenance.value_from == ((1,),)
    assert result.provenance.routes[JACREV] == ((),)


def test_single_case_boolean_selector_raises_index_error_in_reverse_only():
    with select_n_rule(LEGACY):
        result = audit_one(scenario(dtype="bool", value=False, cases=1))
    assert result.status == ERROR
    assert result.paths[JACREV].error.type == "IndexError"
    assert result.paths[JIT_JACREV].error.type == "IndexError"
    assert scalars(result, JACFWD) == (1.0,)
    assert scalars(result, FINITE_DIFFERENCE) == (1.0,)


def test_per_element_selector_provenance_names_each_element():
    with select_n_rule(LEGACY):
        result = audit_one(scenario(value=[-1, 0, 2], shape=(3,)))
    assert result.provenance.value_from == ((0,), (0,), (1,))
    assert result.provenance.routes[JACFWD] == ((0,), (0,), (1,))
    assert result.provenance.routes[JACREV] == ((), (0,), ())


@pytest.mark.parametrize(
    "selector",
    [("int32", 1, 2), ("uint8", 0, 1), ("bool", True, 2), ("uint32", 5, 6), ("int8", [[0, 1, 2], [2, 1, 0]], 3)],
)
def test_in_range_selectors_are_consistent(selector):
    dtype, value, cases = selector
    shape = (2, 3) if isinstance(value, list) else ()
    result = audit_one(scenario(dtype=dtype, value=value, cases=cases, shape=shape))
    assert result.status == CONSISTENT, [f.message for f in result.findings]
    for path in (JACFWD, JIT_JACFWD, JACREV, JIT_JACREV, FINITE_DIFFERENCE):
        total = sum(np.asarray(j, dtype=np.float64) for j in result.paths[path].arrays)
        # Exactly one case receives each output's derivative, with weight one.
        assert np.allclose(total.reshape(int(np.prod(shape)), -1), np.eye(int(np.prod(shape))))


def test_finite_differences_match_a_known_derivative_without_ad():
    x = np.array([0.5, -1.25, 3.0], dtype=np.float32)
    y = np.float32(2.0)
    target = Target(fn=lambda a, b: jnp.sin(a) * b, args=(x, y), arg_names=("a", "b"))
    d_a, d_b = finite_difference_jacobians(target, eps=2.0**-8)["central"]
    assert d_a.shape == (3, 3) and d_b.shape == (3,)
    assert np.allclose(d_a, np.diag(np.cos(x) * 2.0), atol=2e-3)
    assert np.allclose(d_b, np.sin(x), atol=2e-3)


def test_a_raising_path_is_recorded_not_propagated():
    def broken(a):
        raise ValueError("no")

    results = run_paths([Target(fn=broken, args=(np.float32(1.0),), arg_names=("a",))], eps=0.01)
    assert all(not r.ok for r in results.values())
    assert results[VALUE].error.type == "ValueError" and results[VALUE].error.message == "no"
    assert "in broken" in results[VALUE].error.where


def test_generated_case_values_are_deterministic_and_pairwise_distinct():
    first = case_values(scenario(cases=6, shape=(2, 3), seed=3))
    again = case_values(scenario(cases=6, shape=(2, 3), seed=3))
    other = case_values(scenario(cases=6, shape=(2, 3), seed=4))
    stacked = np.stack(first)
    assert stacked.dtype == np.float32 and stacked.shape == (6, 2, 3)
    assert len(np.unique(stacked)) == stacked.size
    assert np.array_equal(stacked, np.stack(again))
    assert not np.array_equal(stacked, np.stack(other))
    assert case_values(scenario(values=(2.0, 5.0))) == (np.float32(2.0), np.float32(5.0))
