"""lax.dynamic_slice and dynamic_update_slice with starts outside the operand, in narrow and wide dtypes."""

from jax import lax


def dynamic_slice(x, start):
    """Take 3 elements from `start`; out-of-range starts are clamped so the slice fits."""
    return lax.dynamic_slice(x, (start,), (3,))


def dynamic_slice_2d(x, row, col):
    return lax.dynamic_slice(x, (row, col), (2, 2))


def dynamic_update_slice(x, update, start):
    """Write 3 elements at `start` (clamped so they fit); both the operand and the update are differentiated."""
    return lax.dynamic_update_slice(x, update, (start,))
