"""How a report writes numbers and names what kind of wrong a value is, for a few entries and for many."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from gradaudit.judging.judge import wrong_class
from gradaudit.render.json_report import array_to_json

SMALL = 16
"""Arrays this small and larger ones must be written alike."""


@pytest.mark.parametrize(
    ("array", "written"),
    [
        (np.float32(2.5), 2.5),
        (np.array(3.0), 3),
        (np.array(-0.0), -0.0),
        (np.eye(2, dtype=np.float32), [[1, 0], [0, 1]]),
        (np.array([[1.0, -0.0], [2.0, 3.0]]), [[1.0, -0.0], [2.0, 3.0]]),
        (np.array([np.nan, np.inf, -np.inf, 1.5]), ["nan", "inf", "-inf", 1.5]),
        (np.array([2.0**53, 1.0]), [2.0**53, 1.0]),
        (np.zeros((0, 3)), []),
        (np.array([1.0, 2.0], dtype=ml_dtypes.bfloat16), [1, 2]),
        (np.array([[[1.0, 2.5]]]), [[[1.0, 2.5]]]),
    ],
)
def test_numbers_are_written_as_json_reads_them_whatever_the_arrays_size(array, written):
    small = array_to_json(array)
    large = array_to_json(np.tile(array.reshape(-1), SMALL + 1)) if np.size(array) else []
    assert json.dumps(small) == json.dumps(written)
    # The same numbers repeated past SMALL (the NumPy path) are written the same way, element by element.
    assert json.dumps(large) == json.dumps(np.tile(np.asarray(written, dtype=object).reshape(-1), SMALL + 1).tolist())


@pytest.mark.parametrize(
    ("got", "want", "kind"),
    [
        ([0.0, 0.0], [1.0, 2.0], "zero"),
        ([2.0, 4.0], [1.0, 2.0], "x2"),
        ([-1.0, -3.0], [1.0, 3.0], "x-1"),
        ([np.nan, 1.0], [1.0, 1.0], "nan"),
        ([np.inf, 1.0], [1.0, 1.0], "inf"),
        ([1.0, 5.0], [1.0, 2.0], "value"),
        ([1e308, 1.0], [1e-300, 1.0], "value"),
    ],
)
def test_what_kind_of_wrong_a_few_entries_and_many_are_alike(got, want, kind):
    assert wrong_class(np.array(got), np.array(want)) == kind
    many = 40  # past the few entries read in Python
    assert wrong_class(np.tile(got, many), np.tile(want, many)) == kind
