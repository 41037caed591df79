"""Calls the survey makes that no signature can say: an index expression, a window, a mask, a branch.

Each is the plainest way a user writes it; the survey's table names them by this module's path,
and a reproducer file imports them from the installed gradaudit.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax


def getitem(x, i):
    """`x[i]`: NumPy-style indexing, negative indices counted from the end."""
    return x[i]


def at_get(x, i, mode="promise_in_bounds"):
    """`x.at[i].get(mode=...)`."""
    return x.at[i].get(mode=mode)


def at_set(x, i, y):
    """`x.at[i].set(y[0])`: a scattered write of a differentiated value."""
    return x.at[i].set(y[0])


def at_add(x, i, y):
    """`x.at[i].add(y[0])`."""
    return x.at[i].add(y[0])


def window_max(x):
    """A max pool of width 2, stride 1, as lax.reduce_window writes it."""
    return lax.reduce_window(x, -jnp.inf, lax.max, (2,), (1,), "VALID")


def window_sum(x):
    """A sum pool of width 2, stride 1."""
    return lax.reduce_window(x, 0.0, lax.add, (2,), (1,), "VALID")


def masked_max(x, mask):
    """The largest element where `mask` holds (-inf where it holds nowhere)."""
    return jnp.max(x, where=mask, initial=-jnp.inf)


def masked_sum(x, mask):
    """The sum of the elements where `mask` holds."""
    return jnp.sum(x, where=mask)


def choose(which, a, b, mode="clip"):
    """`jnp.choose` among two arrays (its choices are one sequence argument, so the table cannot pass them as roles)."""
    return jnp.choose(which, [a, b], mode=mode)


def cond_branch(which, a, b):
    """`lax.cond` on a selector: the first branch when it is true (or nonzero)."""
    return lax.cond(jnp.any(which != 0), lambda: jnp.sin(a), lambda: b * 2.0)


def switch_branch(which, a, b, c):
    """`lax.switch` on an integer selector, scalar or the first element (lax.switch clamps it)."""
    index = jnp.ravel(jnp.asarray(which, jnp.int32))[0]
    return lax.switch(index, [lambda: a, lambda: b * 2.0, lambda: jnp.sin(c)])


def top_k_values(x):
    """The two largest values."""
    return lax.top_k(x, 2)[0]


def argmax_value(x):
    """The element at the argmax, read back by index."""
    return jnp.ravel(x)[jnp.argmax(x)]


# The scatter family and gather, with the dimension numbers `x.at[i]` uses on a vector.
_SCATTER = lax.ScatterDimensionNumbers(
    update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
)
_GATHER = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))


def _scattering(op):
    """`op` (a lax.scatter_*) of `y`'s leading elements at indices `i` of a vector, under its own name."""

    def scattered(x, i, y, mode=None):
        indices = jnp.reshape(jnp.asarray(i), (-1, 1))
        updates = jnp.resize(y, (indices.shape[0],))
        return op(x, indices, updates, _SCATTER, mode=mode)

    scattered.__name__ = scattered.__qualname__ = op.__name__
    scattered.__doc__ = f"`lax.{op.__name__}` of `y`'s leading elements at indices `i` of a vector."
    return scattered


scatter = _scattering(lax.scatter)
scatter_add = _scattering(lax.scatter_add)
scatter_sub = _scattering(lax.scatter_sub)
scatter_mul = _scattering(lax.scatter_mul)
scatter_min = _scattering(lax.scatter_min)
scatter_max = _scattering(lax.scatter_max)


def gather(x, i, mode=None):
    """`lax.gather` of single elements of a vector at indices `i`."""
    indices = jnp.reshape(jnp.asarray(i), (-1, 1))
    return lax.gather(x, indices, _GATHER, (1,), mode=mode)


def pad(x, fill, low=1, high=1, interior=0):
    """`lax.pad` of a vector with `fill[0]` (differentiated too), negative widths cropping."""
    return lax.pad(x, fill[0], [(low, high, interior)])


def concatenate(a, b):
    """`lax.concatenate` of two arrays along the leading axis."""
    return lax.concatenate([a, b], 0)


def conv(x, w, padding="VALID"):
    """`lax.conv` of a vector with a kernel, one batch and one channel."""
    return lax.conv(x[None, None, :], w[None, None, :2], (1,), padding)[0, 0]


def conv_transpose(x, w, padding="VALID"):
    """`lax.conv_transpose` of a vector with a kernel (1-D, one channel)."""
    return lax.conv_transpose(
        x[None, :, None], w[:2, None, None], (1,), padding, dimension_numbers=("NWC", "WIO", "NWC")
    )[0, :, 0]


def einsum(a, b):
    """`jnp.einsum('ij,jk->ik')`: a matrix product written as subscripts."""
    return jnp.einsum("ij,jk->ik", a, b)


def scan(x):
    """`lax.scan` carrying a running product through a vector."""
    return lax.scan(lambda carry, v: (carry * v + jnp.sin(v), carry), jnp.ones((), x.dtype), x)[1]


def fori_loop(x):
    """`lax.fori_loop`: three steps of x -> sin(x) * x."""
    return lax.fori_loop(0, 3, lambda _, v: jnp.sin(v) * v, x)


def map_rows(x):
    """`lax.map` over the leading axis."""
    return lax.map(lambda row: jnp.sum(jnp.exp(row)), x)


def associative_scan(x):
    """`lax.associative_scan` of max: a running maximum."""
    return lax.associative_scan(jnp.maximum, x)


def cho_solve(a, b, lower=False):
    """`jax.scipy.linalg.cho_solve` with the Cholesky factor of `a @ a.T + 3 I` (positive definite)."""
    import jax.scipy.linalg as linalg

    spd = a @ a.T + 3.0 * jnp.eye(a.shape[0], dtype=a.dtype)
    return linalg.cho_solve(linalg.cho_factor(spd, lower=lower), b)


def lu_solve(a, b, trans=0):
    """`jax.scipy.linalg.lu_solve` with `lu_factor(a)`."""
    import jax.scipy.linalg as linalg

    return linalg.lu_solve(linalg.lu_factor(a), b, trans=trans)


def custom_linear_solve(a, b):
    """`lax.custom_linear_solve` of `a x = b` with a dense solve as the solver (and its transpose)."""
    return lax.custom_linear_solve(
        lambda x: a @ x,
        b,
        lambda matvec, rhs: jnp.linalg.solve(a, rhs),
        transpose_solve=lambda vecmat, rhs: jnp.linalg.solve(a.T, rhs),
    )


def custom_root(x):
    """`lax.custom_root` of `v**3 - x` (the real cube root of x), found by Newton steps from cbrt(x) (from 1
    they do not converge within 30 steps at 1e13, and the implicit derivative is then of another value);
    the tangent solve divides by 3 v**2 (v = cbrt(x): `x ** (2 / 3)` is NaN at negative x), unguarded: the
    derivative is infinite at 0, and a guard added to the divisor (1e-3 once) made it 1000 there and wrong for
    every small x (1000 against 1.5e22 at x = 1e-33), a wrong derivative of this wrapper's, not of JAX's."""

    def newton(f, guess):
        return lax.fori_loop(0, 30, lambda _, v: jnp.where(v == 0, v, v - f(v) / (3 * v**2)), guess)

    root = jnp.cbrt(x)
    return lax.custom_root(lambda v: v**3 - x, root, newton, lambda g, y: y / (3 * root**2))
