"""numerics.finite_differences: the oracle independent of AD, checked against derivatives known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradaudit.numerics.finite_differences import ESTIMATES, differences, step_size


def test_a_smooth_function_s_extrapolated_estimate_is_its_derivative():
    x = np.array([0.3, -1.1, 2.0])
    found = differences(lambda v: (np.sin(v) * v,), [x], [1e-3])
    assert set(found) == set(ESTIMATES)
    (jacobian,) = found["extrapolated"]
    np.testing.assert_allclose(jacobian, np.diag(np.cos(x) * x + np.sin(x)), rtol=1e-9, atol=1e-12)
    (central,) = found["central"]  # h^2 error the extrapolation cancels
    assert np.max(np.abs(central - jacobian)) > np.max(np.abs(jacobian - np.diag(np.cos(x) * x + np.sin(x))))


def test_blocks_follow_outputs_then_arguments_and_their_shapes():
    a, b = np.array([1.0, 2.0]), np.array([[0.5, -0.5, 1.5]])
    found = differences(lambda u, v: (u.sum() * v, u * 3.0), [a, b], [1e-4, 1e-4])
    shapes = [block.shape for block in found["extrapolated"]]
    assert shapes == [(1, 3, 2), (1, 3, 1, 3), (2, 2), (2, 1, 3)]  # (out0, a), (out0, b), (out1, a), (out1, b)
    np.testing.assert_allclose(found["extrapolated"][2], 3.0 * np.eye(2), rtol=1e-9)


def test_a_kink_shows_as_one_sided_slopes_that_disagree():
    found = differences(lambda v: (np.abs(v),), [np.array([0.0])], [1e-3])
    left, right = found["left"][0].item(), found["right"][0].item()
    assert (left, right) == (-1.0, 1.0) and found["central"][0].item() == 0.0


def test_non_finite_inputs_or_outputs_are_marked_undefined():
    with np.errstate(invalid="ignore"):  # log of a negative number: NaN, as the function gives it
        found = differences(lambda v: (np.log(v),), [np.array([-1.0, 1.0])], [1e-3])
    undefined = found["undefined"][0]
    assert bool(undefined[0, 0]) and not bool(undefined[1, 1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_a_step_is_never_below_the_square_root_of_its_dtypes_epsilon(dtype):
    import ml_dtypes

    eps = float(ml_dtypes.finfo(np.dtype(dtype) if dtype != "bfloat16" else ml_dtypes.bfloat16).eps)
    h = step_size(np.array([0.5, 100.0]), 1e-12, dtype)
    assert h[0] >= math.sqrt(eps) * 0.999 and h[1] >= 100 * math.sqrt(eps) * 0.999


def test_no_finite_difference_where_the_output_changes_shape_or_the_function_raises_a_step_away():
    from gradaudit.engines.base import run_path
    from gradaudit.model.paths import FINITE_DIFFERENCE, JACREV

    def unique(x):  # its values decide its size: a tie at the point, none a step away
        return (np.unique(x),)

    def only_here(x):  # defined at the point alone
        if x[0] != np.float32(0.5):
            raise TypeError("not at this value")
        return (x * 2,)

    tie, half = np.array([0.62, 0.62, 0.25], np.float32), np.array([0.5], np.float32)
    for function, x, says in ((unique, tie, "shape [3] a step away, [2] at the point"), (only_here, half, "TypeError")):
        result = run_path(FINITE_DIFFERENCE, lambda f=function, a=x: differences(f, [a], [1e-3], eager=True))
        assert result.not_applicable and says in result.not_applicable and result.error is None
        # any other path raising is its error, not a path that does not apply
        other = run_path(JACREV, lambda f=function, a=x: differences(f, [a], [1e-3]))
        assert other.error is not None and not other.not_applicable


def test_an_audit_of_a_function_whose_size_its_values_decide_says_finite_differences_do_not_apply_at_a_tie():
    import jax.numpy as jnp

    import gradaudit

    audit = gradaudit.audit(jnp.unique, np.array([0.62, 0.62, 0.25], np.float32))
    assert audit.status == "consistent", audit.failure_text()
    assert any("finite differences does not apply: the output's shape changes" in n.message for n in audit.notes)


def test_a_compiled_function_s_error_a_step_away_stays_an_error():
    from gradaudit.engines.base import run_path
    from gradaudit.model.paths import FINITE_DIFFERENCE

    def checked(error):  # a runtime check failing a step away (a callback's error, debug_nans)
        def function(x):
            if x[0] != np.float32(0.5):
                raise error("not at this value")
            return (x * 2,)

        return function

    half = [np.array([0.5], np.float32)]
    for error, eager in ((TypeError, False), (FloatingPointError, True)):
        result = run_path(FINITE_DIFFERENCE, lambda e=error, g=eager: differences(checked(e), half, [1e-3], eager=g))
        assert result.error is not None and not result.not_applicable, error
