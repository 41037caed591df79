"""Gathers: jnp.take in every mode and x[idx] indexing, with indices in and out of range."""

import jax.numpy as jnp


def take_clip(x, idx):
    return jnp.take(x, idx, mode="clip")


def take_wrap(x, idx):
    return jnp.take(x, idx, mode="wrap")


def take_fill(x, idx):
    return jnp.take(x, idx, mode="fill", fill_value=-7.0)


def get_promise_in_bounds(x, idx):
    return x.at[idx].get(mode="promise_in_bounds")


def take_default(x, idx):
    return jnp.take(x, idx)


def index(x, idx):
    return x[idx]


def index_at_get_drop(x, idx):
    return x.at[idx].get(mode="drop", fill_value=0.0)
