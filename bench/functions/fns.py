"""Ten functions of the catalog's kinds for the function bench grid (bench/function_grid.py)."""

import jax
import jax.numpy as jnp
from jax import lax


def select_scaled(which, a, b):
    return lax.select_n(which, a, b) ** 2


def where_log(x):
    return jnp.where(x > 0.5, jnp.log(x), x)


def clip(x, lo, hi):
    return jnp.clip(x, lo, hi)


def take(x, idx):
    return jnp.take(x, idx, mode="clip")


def window(x, start):
    return lax.dynamic_slice(x, (start,), (2,))


def max_rows(x):
    return jnp.max(x, axis=1)


def softplus(x):
    return jax.nn.softplus(x)


def huber(x, y):
    r = x - y
    return jnp.sum(jnp.where(jnp.abs(r) < 1.0, 0.5 * r**2, jnp.abs(r) - 0.5))


def cumulative(x):
    return jnp.cumsum(x * x)


def sort_square(x):
    return jnp.sort(x) ** 2
