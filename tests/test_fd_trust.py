"""Trust in finite differences (judging/fd_trust.py) on hand-made estimates: kinks, poles, aliasing
and steps lost in larger terms, without JAX."""

from __future__ import annotations

import numpy as np

from gradaudit.judging.fd_trust import CHECK_WEIGHT, ESTIMATES, absorbed_by_rounding, read_estimates
from gradaudit.numerics.finite_differences import CHECK

TOL = 1e-3


def smooth(slope: float, curvature: float = 0.0, h: float = 0.01, noise: float = 0.0) -> dict[str, float]:
    """The estimates a smooth function f' + C s^2 gives at step h: every rule should trust them."""

    def c(s):
        return slope + curvature * s * s

    return {
        "central": c(h),
        "central_half": c(h / 2),
        "central_check": c(CHECK * h),
        "extrapolated": c(h) + (c(h / 2) - c(h)) * 4 / 3,
        "left": slope,
        "right": slope,
        "left_half": slope,
        "right_half": slope,
        "noise": noise,
    }


def read(*entries: dict[str, float], hidden=None):
    stacked = {name: np.array([[e[name] for e in entries]]) for name in ESTIMATES}
    undefined = np.zeros((1, len(entries)), dtype=bool)
    return read_estimates(stacked, undefined, TOL, TOL, None if hidden is None else np.array([hidden]))


def test_smooth_entries_are_trusted_and_the_extrapolation_matches_the_check_step():
    found = read(smooth(2.0), smooth(-3.0, curvature=1.0))
    assert not found.kink.any() and not found.moves.any()
    # The check step's prediction is exact for c(s) = f' + C s^2.
    e = smooth(-3.0, curvature=1.0)
    assert abs(e["extrapolated"] + CHECK_WEIGHT * (e["central"] - e["central_half"]) - e["central_check"]) < 1e-12


def test_one_sided_slopes_that_part_and_stay_apart_are_a_kink():
    relu = {**smooth(0.5), "left": 0.0, "right": 1.0, "left_half": 0.0, "right_half": 1.0}
    found = read(relu, smooth(1.0))
    assert found.kink.tolist() == [[True, False]]


def test_slopes_that_close_as_the_step_halves_are_curvature_not_a_kink():
    closing = {**smooth(1.0), "left": 0.9, "right": 1.1, "left_half": 0.999, "right_half": 1.001}
    assert not read(closing).kink.any()


def test_a_pole_moves_the_central_estimate_and_is_judged_within_the_spread_if_it_converges():
    # Near 1/x at 0.1 with h = 0.01: the central estimate moves a little as the step halves, both
    # one-sided slopes settle: moving, compared within the spread of the estimates.
    near_pole = {
        **smooth(-100.0),
        "central": -101.0,
        "central_half": -100.25,
        "central_check": -100.4,
        "extrapolated": -100.0,
        "left": -111.0,
        "right": -91.0,
        "left_half": -105.3,
        "right_half": -95.2,
    }
    found = read(near_pole)
    assert found.moves.tolist() == [[True]] and not found.kink.any()
    assert found.spread[0, 0] >= 1.0
    # A period shorter than the step (aliasing) moves it by tens of percent: a kink, not compared.
    aliased = {**near_pole, "central": -60.0, "central_half": -140.0, "central_check": -90.0}
    assert read(aliased).kink.tolist() == [[True]]


def test_rounding_of_larger_terms_counts_only_where_it_outweighs_the_values_own_noise():
    e = smooth(1.0, noise=1e-6)
    assert not read(e, hidden=[1e-6]).larger.any()
    found = read(e, hidden=[1e3])
    assert found.larger.tolist() == [[True]] and found.noise[0, 0] > 1e3
    # Lost in them: the rounding is many times the derivative, so finite differences cannot check it.
    lost = absorbed_by_rounding(found.larger, found.noise, np.array([[1.0]]), TOL)
    assert lost.tolist() == [[True]]
    kept = absorbed_by_rounding(found.larger, found.noise, np.array([[1e6]]), TOL)
    assert kept.tolist() == [[False]]


def test_undefined_entries_are_never_kinks_or_moving():
    relu = {**smooth(0.5), "left": 0.0, "right": 1.0, "left_half": 0.0, "right_half": 1.0}
    stacked = {name: np.array([[relu[name]]]) for name in ESTIMATES}
    found = read_estimates(stacked, np.array([[True]]), TOL, TOL)
    assert not found.kink.any() and not found.moves.any()
