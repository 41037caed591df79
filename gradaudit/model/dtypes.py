"""The dtypes a scenario may name, their ranges, and the numerical defaults that follow from them.

One table serves validation (what is allowed, what a value must fit in) and judging (how close
finite differences can get), so the two can never disagree about a dtype.
"""

from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np

SELECTOR_DTYPES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
)
"""Dtypes a `select_n` selector may have: boolean or any integer, as JAX's dtype rule demands."""

FLOAT_DTYPES: tuple[str, ...] = ("bfloat16", "float16", "float32", "float64")
"""Floating dtypes that can be differentiated."""

WIDE_DTYPES: frozenset[str] = frozenset({"int64", "uint64", "float64"})
"""Dtypes that JAX only honours with `jax_enable_x64`; naming one turns x64 on for the run."""


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype for a validated dtype name (bfloat16 comes from ml_dtypes, as in JAX)."""
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def integer_range(name: str) -> tuple[int, int]:
    """Inclusive range of an integer or boolean dtype (bool counts as 0..1)."""
    if name == "bool":
        return 0, 1
    info = np.iinfo(np.dtype(name))
    return int(info.min), int(info.max)


@functools.cache  # pure, and asked once per entry judged
def machine_epsilon(name: str) -> float:
    """Spacing of the dtype's numbers just above 1."""
    return float(ml_dtypes.finfo(numpy_dtype(name)).eps)


@functools.cache  # pure, and asked once per entry judged
def default_eps(name: str) -> float:
    """Finite-difference step: the power of two nearest the cube root of machine epsilon.

    The cube root balances the truncation error of central differences (step squared) against
    rounding (epsilon over step); a power of two keeps `x + eps` exact for moderate `x`.
    """
    return 2.0 ** round(math.log2(machine_epsilon(name) ** (1.0 / 3.0)))


@functools.cache  # pure, and asked once per entry judged
def largest(name: str) -> float:
    """The dtype's largest finite value."""
    return float(ml_dtypes.finfo(numpy_dtype(name)).max)


@functools.cache  # pure, and asked once per entry judged
def smallest_normal(name: str) -> float:
    """The dtype's smallest positive normal value."""
    return float(ml_dtypes.finfo(numpy_dtype(name)).smallest_normal)


def default_tolerance(name: str) -> tuple[float, float]:
    """(rtol, atol) for comparing AD with finite differences at the default step."""
    tol = 4.0 * math.sqrt(machine_epsilon(name))
    return tol, tol


def ad_tolerance(name: str) -> tuple[float, float]:
    """(rtol, atol) for comparing two AD paths: they differ by rounding at most."""
    tol = 16.0 * machine_epsilon(name)
    return tol, tol


INPUT_DTYPES: tuple[str, ...] = FLOAT_DTYPES + SELECTOR_DTYPES
"""Dtypes a function input may have: floating ones are differentiated, the others held fixed."""
