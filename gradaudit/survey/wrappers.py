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
