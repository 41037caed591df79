"""Row-wise losses whose Hessian couples no two rows: every off-row entry is exactly zero.

examples/hessian_rows.yaml audits them at second order. On jaxlib 0.10.2 (CPU) forward-over-forward
Hessians of the 16-row inputs are wrong off the rows (docs/found.md); jaxlib 0.9.0.1 to 0.10.1 get them right.
"""

import jax
import jax.numpy as jnp


def squared_row_sums(logits):
    """sum_i (sum_j exp(logits[i, j]))^2."""
    return jnp.sum(jnp.sum(jnp.exp(logits), axis=-1) ** 2)


def log_softmax_sum(logits):
    """Every entry of a row-wise log-softmax, summed."""
    return jnp.sum(jax.nn.log_softmax(logits))
