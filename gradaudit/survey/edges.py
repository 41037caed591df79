"""Edge values, one table per dtype, shared by every surveyed function: where rules go wrong.

Floating: zeros of both signs, ±1, the smallest normal and a subnormal, the largest finite, ±inf,
NaN. Ties come from drawing the same value twice. Indices and selectors: every integer dtype, with
values below, at and above the valid range (given by the array or the cases), up to the dtype's
own limits. Nothing here knows which function it feeds.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from gradaudit.model import dtypes

SURVEY_FLOATS: tuple[str, ...] = ("float32", "float16", "bfloat16", "float64")
"""Floating dtypes drawn (shrinking toward float32)."""
SURVEY_INDICES: tuple[str, ...] = ("int32", "int8", "uint8", "int16", "uint16", "uint32", "int64", "uint64")
"""Integer dtypes drawn for indices, starts, segment ids and selectors (shrinking toward int32)."""


LONG_AXIS = 300
"""A leading axis longer than int8 and uint8 can address (past 127 and 255), drawn for functions
that take an index: the narrow dtypes then meet their limits from inside the valid range."""


def float_edges(dtype: str) -> tuple[float, ...]:
    """The edge values of a floating dtype, as Python floats a scenario file can hold."""
    info = ml_dtypes.finfo(dtypes.numpy_dtype(dtype))
    tiny, largest = float(info.tiny), float(info.max)
    subnormal = float(np.asarray(info.tiny, dtype=dtypes.numpy_dtype(dtype)) / 2)
    return (0.0, -0.0, 1.0, -1.0, tiny, -tiny, subnormal, largest, -largest, float("inf"), float("-inf"), float("nan"))


def index_edges(dtype: str, size: int) -> tuple[int, ...]:
    """Values of an integer dtype around a valid range 0..size-1: in it, just outside it on both
    sides, at minus the size (a negative index's wrap), and at the dtype's limits; only those the
    dtype holds."""
    low, high = dtypes.integer_range(dtype)
    candidates = (0, size - 1, size, size + 1, -1, -size, -size - 1, low, high, low + 1, high - 1, 2 * size)
    return tuple(dict.fromkeys(v for v in candidates if low <= v <= high))
