"""jnp.where, whose gradient multiplies the unselected branch's derivative by zero."""

import jax.numpy as jnp


def safe_log(x):
    """The trap: log of the values where() discards is -inf or NaN, and 0 * NaN is NaN."""
    return jnp.where(x > 0, jnp.log(x), 0.0)


def safe_log_double_where(x):
    """The fix: make the discarded branch's input harmless before the function sees it."""
    positive = x > 0
    safe = jnp.where(positive, x, 1.0)
    return jnp.where(positive, jnp.log(safe), 0.0)


def reciprocal_or_zero(x):
    return jnp.where(x != 0, 1.0 / x, 0.0)


def sqrt_or_zero(x):
    return jnp.where(x >= 0, jnp.sqrt(x), 0.0)


def where_with_mask(mask, x, y):
    """A plain two-input where with a fixed boolean mask: a control."""
    return jnp.where(mask, x * y, x - y)
