"""Strict JAX flags for every test: implicit rank promotion is a bug in our code, not a feature."""

import jax

jax.config.update("jax_numpy_rank_promotion", "raise")
