"""Ten smooth functions of the kind JAX users write, none of them in the catalog or bench/functions:
the function grid `bench/unseen_grid.py` times, so that the function-grid row is not only the bench's own."""

import jax
import jax.numpy as jnp


def tanh_sum(x):
    return jnp.sum(jnp.tanh(x) * x)


def log_sum_exp(x):
    return jax.nn.logsumexp(x)


def gated(x, y):
    return jnp.sum(jax.nn.sigmoid(x) * y)


def norm2(x):
    return jnp.sqrt(jnp.sum(x**2) + 1.0)


def soft_dot(x, y):
    return jnp.dot(jax.nn.softmax(x), y)


def gelu_sum(x):
    return jnp.sum(jax.nn.gelu(x))


def poly(x):
    return jnp.polyval(jnp.array([0.5, -1.0, 2.0, 0.3]), x)


def cosh_ratio(x):
    return jnp.sum(jnp.cosh(x) / (1.0 + x**2))


def erf_mix(x, y):
    return jnp.sum(jax.scipy.special.erf(x) * jnp.exp(-(y**2)))


def atan_pair(x, y):
    return jnp.sum(jnp.arctan2(x, y + 3.0))
