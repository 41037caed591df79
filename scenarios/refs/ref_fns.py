"""Mutable array references (jax.new_ref) inside differentiated code: passed in, allocated inside, closed over."""

import jax
import jax.numpy as jnp


def _write_twice(x, ref):
    ref[...] = x * 2.0
    ref[...] += jnp.sin(x)
    return ref[...]


def allocated_inside(x):
    """The ref lives inside the differentiated function: JAX threads tangents through it."""
    return _write_twice(x, jax.new_ref(jnp.zeros_like(x)))


def passed_in(x):
    """A ref created here and passed to a helper that writes it: still inside the traced region."""
    ref = jax.new_ref(jnp.zeros_like(x))
    out = _write_twice(x, ref)
    return out + ref[...]


_GLOBAL = jax.new_ref(jnp.zeros(3))


def closed_over(x):
    """The ref is captured from module scope: writing a differentiated value into it cannot be differentiated."""
    _GLOBAL[...] = x * 2.0
    return _GLOBAL[...] + 1.0


def read_only_closed_over(x):
    """Reading a captured ref without writing differentiated values into it is fine."""
    return x * _GLOBAL[...] + x
