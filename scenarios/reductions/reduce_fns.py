"""max and min reductions with ties and NaN, and reduce_window max."""

import jax.numpy as jnp
from jax import lax


def max_all(x):
    return jnp.max(x)


def min_rows(x):
    return jnp.min(x, axis=1)


def argmax_value(x):
    """The value at the argmax, through a gather: ties resolve to the first index."""
    return x[jnp.argmax(x)]


def window_max(x):
    """Max over windows of 2 with stride 1."""
    return lax.reduce_window(x, -jnp.inf, lax.max, (2,), (1,), "VALID")


def nanmax(x):
    return jnp.nanmax(x)
