"""flax models, linen and nnx, as their users audit them: variables as nested dicts, nnx state split from its graph."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import gradaudit
from gradaudit.model.findings import CONSISTENT, MISMATCH
from tests.ecosystem.conftest import library

flax = library("flax")


def test_a_linen_model_passes_and_a_planted_wrong_rule_is_named_by_its_variable_path():
    from flax import linen as nn

    class Model(nn.Module):
        activation: object = nn.tanh

        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(self.activation(nn.Dense(4)(x)))

    x = jax.random.normal(jax.random.key(0), (3, 5))
    variables = Model().init(jax.random.key(1), x)
    assert gradaudit.audit(lambda v: jnp.sum(Model().apply(v, x) ** 2), variables).status == CONSISTENT

    @jax.custom_jvp
    def wrong_tanh(z):
        return jnp.tanh(z)

    wrong_tanh.defjvp(lambda p, t: (jnp.tanh(p[0]), t[0] * (1.0 - jnp.tanh(p[0]))))  # 1 - tanh, not 1 - tanh**2
    result = gradaudit.audit(lambda v: jnp.sum(Model(wrong_tanh).apply(v, x) ** 2), variables)
    assert result.status == MISMATCH
    located = {f.location for f in result.findings if f.location}
    # the first layer is Dense_1: Python makes nn.Dense(2) before the nn.Dense(4) in its argument
    assert located and any("['params']['Dense_1']['kernel']" in where for where in located), located


def test_an_nnx_model_split_into_graph_and_state_with_its_rngs_keys_passes():
    from flax import nnx

    model = nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(0)), nnx.gelu, nnx.Linear(4, 1, rngs=nnx.Rngs(1)))
    graph, params, rest = nnx.split(model, nnx.Param, ...)
    x = jax.random.normal(jax.random.key(2), (6, 3))

    def loss(params, rest):
        return jnp.mean(nnx.merge(graph, params, rest)(x) ** 2)

    assert gradaudit.audit(loss, params, rest).status == CONSISTENT

    dropout = nnx.Dropout(0.25, rngs=nnx.Rngs(dropout=3))
    dgraph, dstate = nnx.split(dropout)  # holds typed PRNG keys

    def dropped(v, state):
        return jnp.sum(jnp.sin(nnx.merge(dgraph, state)(v)))

    assert gradaudit.audit(dropped, jnp.linspace(-1.0, 1.0, 8), dstate).status == CONSISTENT
