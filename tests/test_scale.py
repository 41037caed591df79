"""Rounding at the Jacobian's scale (judging/scale.py) on hand-made Jacobians, without JAX."""

from __future__ import annotations

import numpy as np

from gradaudit.judging.scale import below_resolution, beyond_scale, row_and_column_scale

F32 = np.float32


def test_each_entrys_scale_is_the_largest_finite_entry_of_its_row_or_column():
    jacobian = np.array([[1.0, 1e6], [1e-3, 2.0], [np.nan, 5.0]], dtype=F32)
    (scale,) = row_and_column_scale([jacobian], out_size=3)
    assert scale.reshape(3, 2).tolist() == [[1e6, 1e6], [2.0, 1e6], [5.0, 1e6]]
    assert row_and_column_scale([np.zeros(5, dtype=F32)], out_size=2) is None


def test_a_small_entry_parting_by_rounding_of_its_row_is_within_scale_and_a_wrong_factor_is_not():
    # Forward mode rounds d out[0]/d x[0] = 1e-3 to its row's 1e4: it may part by sqrt(eps32) x 1e4.
    want = np.array([[1e-3, 1e4], [3.0, 4.0]], dtype=F32)
    rounded = want.copy()
    rounded[0, 0] = 1e-3 + 0.5  # 0.5 < sqrt(6e-8) x 1e4 = 2.4
    kept, within = beyond_scale([rounded], [want], [np.array([0])], fd_rtol=1.4e-3, out_size=2)
    assert kept[0].tolist() == [] and within[0].tolist() == [0]
    # A wrong factor on an ordinary entry of a well-scaled row: kept.
    wrong = want.copy()
    wrong[1, 0] = 3.09
    kept, within = beyond_scale([wrong], [want], [np.array([2])], fd_rtol=1.4e-3, out_size=2)
    assert kept[0].tolist() == [2] and within[0].tolist() == []


def test_a_non_finite_side_is_never_rounding():
    want = np.array([[1e-3, 1e4], [3.0, 4.0]], dtype=F32)
    got = want.copy()
    got[0, 0] = np.nan
    kept, within = beyond_scale([got], [want], [np.array([0])], fd_rtol=1.4e-3, out_size=2)
    assert kept[0].tolist() == [0]


def test_an_ad_entry_against_finite_differences_is_below_resolution_only_under_both_its_row_and_column():
    # A solve whose inverse holds 3e12 (float64): its rows and columns of 1e12 leave an exact 1e-11
    # derivative rounded to 1e-4, under 4 eps x 1e12 = 9e-4.
    ad = np.array([[3.3e12, 1e-4], [3.8e12, 5e12]])
    reference = ad.copy()
    reference[0, 1] = 1e-11
    kept, within = below_resolution([ad], [reference], [np.array([1])], out_size=2)
    assert kept[0].tolist() == [] and within[0].tolist() == [1]
    # x + 1e10 y elementwise (float32, blocks for x and y): d out/d x wrong (0 against 1) under a row
    # holding 1e10, but its column holds 1 alone: kept.
    d_x = np.array([[0.0, 0.0], [0.0, 1.0]], dtype=F32)
    d_y = np.array([[1e10, 0.0], [0.0, 1e10]], dtype=F32)
    kept, within = below_resolution(
        [d_x, d_y], [np.eye(2, dtype=F32), d_y], [np.array([0]), np.array([], dtype=np.intp)], out_size=2
    )
    assert kept[0].tolist() == [0] and within[0].tolist() == []
    # Not finite on either side: never.
    nan = ad.copy()
    nan[0, 1] = np.nan
    kept, within = below_resolution([nan], [reference], [np.array([1])], out_size=2)
    assert kept[0].tolist() == [1]
