"""Full Jacobians as jax.jacfwd and jax.jacrev compute them, with the standard basis built in numpy.

`jax.jacfwd` is `vmap` of `jvp` over the standard basis of the inputs and `jax.jacrev` is `vmap` of
the `vjp` pullback over the standard basis of the output (jax/_src/api.py); these do the same, so
the same JVP, transpose and batching rules run. Only the basis differs: a numpy constant instead of
an `eye` computed inside the program, which XLA folds, and which alone made jacfwd the most costly
part of a compile (bench/: about 2x the rest).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import numpy as np


def _basis(size: int, dtype) -> np.ndarray:
    return np.eye(size).astype(dtype)


def forward_rows(fn: Callable, args: Sequence) -> jax.Array:
    """d fn / d (all args flattened and joined), one row per input element: shape (inputs, *output)."""
    sizes = [int(np.prod(arg.shape, dtype=np.int64)) for arg in args]
    basis = _basis(sum(sizes), np.result_type(*(arg.dtype for arg in args)))
    starts = np.cumsum([0, *sizes])
    tangents = [basis[:, starts[i] : starts[i + 1]].reshape((len(basis), *arg.shape)) for i, arg in enumerate(args)]
    return jax.vmap(lambda *t: jax.jvp(fn, tuple(args), t)[1])(*tangents)


def reverse_rows(fn: Callable, args: Sequence) -> tuple[jax.Array, ...]:
    """Per argument, d fn / d arg with one row per output element: shapes (outputs, *arg.shape)."""
    out, pullback = jax.vjp(fn, *args)
    size = int(np.prod(out.shape, dtype=np.int64))
    # A plain function for vmap: given the pullback object itself, JAX formats it (arrays and all)
    # to name it, slowly enough that a Ctrl-C landing there was swallowed by JAX's bare except.
    return jax.vmap(lambda cotangent: pullback(cotangent))(_basis(size, out.dtype).reshape((size, *out.shape)))


def jacfwd_blocks(rows, out_shape: tuple, arg_shapes: Sequence[tuple]) -> tuple[np.ndarray, ...]:
    """forward_rows' answer laid out as jax.jacfwd's: one block per argument, shaped out_shape + arg shape."""
    rows = np.asarray(rows)
    out_size = int(np.prod(out_shape, dtype=np.int64))
    blocks, start = [], 0
    for shape in arg_shapes:
        size = int(np.prod(shape, dtype=np.int64))
        blocks.append(rows[start : start + size].reshape(size, out_size).T.reshape(tuple(out_shape) + tuple(shape)))
        start += size
    return tuple(blocks)


def jacrev_blocks(rows, out_shape: tuple, arg_shapes: Sequence[tuple]) -> tuple[np.ndarray, ...]:
    """reverse_rows' answer laid out as jax.jacrev's: one block per argument, shaped out_shape + arg shape."""
    return tuple(np.asarray(r).reshape(tuple(out_shape) + tuple(shape)) for r, shape in zip(rows, arg_shapes, strict=True))
