"""Edge values, one table per dtype, shared by every surveyed function: where rules go wrong.

Floating: zeros of both signs, ±1, the smallest normal and a subnormal, the largest finite, ±inf,
NaN. Ties come from drawing the same value twice. Indices and selectors: every integer dtype, with
values below, at and above the valid range (given by the array or the cases), up to the dtype's
own limits. Nothing here knows which function it feeds.
"""

from __future__ import annotations

import functools
import math

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


@functools.cache
def float_edges(dtype: str) -> tuple[float, ...]:
    """The edge values of a floating dtype, as Python floats a scenario file can hold."""
    info = ml_dtypes.finfo(dtypes.numpy_dtype(dtype))
    tiny, largest = float(info.tiny), float(info.max)
    subnormal = float(np.asarray(info.tiny, dtype=dtypes.numpy_dtype(dtype)) / 2)
    return (0.0, -0.0, 1.0, -1.0, tiny, -tiny, subnormal, largest, -largest, float("inf"), float("-inf"), float("nan"))


@functools.cache
def index_edges(dtype: str, size: int) -> tuple[int, ...]:
    """Values of an integer dtype around a valid range 0..size-1: in it, just outside it on both
    sides, at minus the size (a negative index's wrap), and at the dtype's limits; only those the
    dtype holds."""
    low, high = dtypes.integer_range(dtype)
    candidates = (0, size - 1, size, size + 1, -1, -size, -size - 1, low, high, low + 1, high - 1, 2 * size)
    return tuple(dict.fromkeys(v for v in candidates if low <= v <= high))


DECADE_STEPS: dict[str, int] = {"float32": 1, "float16": 1, "float64": 16}
"""Every how many decades a dtype's range is swept: float32's every decade (JAX's default dtype, where
users' values live), float16's few, float64's every 16th; bfloat16 shares float32's range and is
left to the edges and the draws."""


def decades(dtype: str) -> tuple[float, ...]:
    """Powers of ten of both signs from the dtype's smallest normal to its largest finite value,
    every DECADE_STEPS-th; none for a dtype DECADE_STEPS does not name."""
    if dtype not in DECADE_STEPS:
        return ()
    info = ml_dtypes.finfo(dtypes.numpy_dtype(dtype))
    low, high = math.ceil(math.log10(float(info.tiny))), math.floor(math.log10(float(info.max)))
    powers = [10.0**k for k in range(low, high + 1, DECADE_STEPS[dtype])]
    return (*powers, *(-p for p in powers))


def near_integers(dtype: str) -> tuple[float, ...]:
    """Integers and half-integers from -4 to 4 (poles of the gamma family, branch points, zeros of
    sin), each with neighbours 2^-9 of it either side, rounded to the dtype (distinct values only)."""
    numpy_dtype = dtypes.numpy_dtype(dtype)
    found: list[float] = []
    for point in (k / 2 for k in range(-8, 9)):
        for offset in (-(2.0**-9), 0.0, 2.0**-9):
            value = float(np.asarray(point + offset * max(1.0, abs(point)), dtype=numpy_dtype))
            if value not in found:
                found.append(value)
    return tuple(found)


def with_zeros(values: list[float]) -> list[float]:
    """`values` with every other element an exact zero: weights and masks that are zero among nonzeros."""
    return [0.0 if k % 2 else v for k, v in enumerate(values)]


def scales(dtype: str) -> tuple[float, ...]:
    """Factors that carry a plain matrix across its dtype's range: a few decades either way, within it."""
    info = ml_dtypes.finfo(dtypes.numpy_dtype(dtype))
    low, top = math.ceil(math.log10(float(info.tiny))) + 1, math.floor(math.log10(float(info.max))) - 1
    return tuple(10.0**k for k in sorted({low, low // 2, -5, 5, top // 2, top}) if low <= k <= top)
