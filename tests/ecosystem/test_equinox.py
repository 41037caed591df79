"""equinox models as their users audit them: a Module split into its arrays and the rest."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import gradaudit
from gradaudit.model.findings import CONSISTENT, MISMATCH
from tests.ecosystem.conftest import library

eqx = library("equinox")


def _split(model):
    return eqx.partition(model, eqx.is_inexact_array)


def _loss_of(static, x, y):
    def loss(params):
        model = eqx.combine(params, static)
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    return loss


def test_an_mlp_loss_passes_split_with_partition_or_passed_whole():
    model = eqx.nn.MLP(3, 2, width_size=8, depth=2, key=jax.random.key(0))
    x, y = jax.random.normal(jax.random.key(1), (5, 3)), jax.random.normal(jax.random.key(2), (5, 2))
    params, static = _split(model)
    split = gradaudit.audit(_loss_of(static, x, y), params)
    assert split.status == CONSISTENT, str(split)
    whole = gradaudit.audit(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2), model)
    assert whole.status == CONSISTENT, str(whole)
    assert any(n.message.startswith("held fixed, not arrays: m.activation") for n in whole.notes), whole.notes
    np.testing.assert_allclose(whole.paths["jacrev"].arrays[0], split.paths["jacrev"].arrays[0], rtol=1e-6)


class _Scaled(eqx.Module):
    """A layer whose custom_jvp rule forgets the factor 2 of its derivative."""

    weight: jax.Array

    def __call__(self, x):
        return _double_tanh(self.weight * x)


@jax.custom_jvp
def _double_tanh(x):
    return 2.0 * jnp.tanh(x)


_double_tanh.defjvp(lambda p, t: (_double_tanh(p[0]), t[0] / jnp.cosh(p[0]) ** 2))


def test_a_wrong_rule_inside_a_module_is_found_and_named_by_its_field():
    model = _Scaled(weight=jnp.array([0.3, -0.7, 1.1]))
    result = gradaudit.audit(lambda m: jnp.sum(m(jnp.array([1.0, 2.0, 0.5]))), model)
    assert result.status == MISMATCH
    located = {f.location for f in result.findings if f.location}
    assert located and all(".weight[" in where for where in located), located


@pytest.mark.slow
def test_a_million_parameter_model_is_compared_along_directions_in_its_own_time():
    model = eqx.nn.MLP(1000, 10, width_size=1000, depth=1, key=jax.random.key(0))
    params, static = _split(model)
    count = sum(leaf.size for leaf in jax.tree_util.tree_leaves(params))
    assert count > 1_000_000
    x, y = jax.random.normal(jax.random.key(1), (4, 1000)), jax.random.normal(jax.random.key(2), (4, 10))
    result = gradaudit.audit(_loss_of(static, x, y), params)
    assert result.directions is not None and result.status == CONSISTENT, str(result)
    # the directions are real ones: jacfwd along each is jax.jvp's answer
    leaves, treedef = jax.tree_util.tree_flatten(params)
    tangent = jax.tree_util.tree_unflatten(treedef, list(result.directions.tangents[0]))
    _, forward = jax.jvp(_loss_of(static, x, y), (params,), (tangent,))
    np.testing.assert_allclose(result.paths["jacfwd"].arrays[0], forward, rtol=1e-4, atol=1e-6)


def test_the_fixture_audits_a_module_with_a_typed_key_argument(gradaudit):
    model = eqx.nn.Dropout(p=0.5)
    params = {"x": jnp.array([0.4, -1.2, 2.0, 0.1])}

    def loss(p, key):
        return jnp.sum(jnp.sin(model(p["x"], key=key)))

    result = gradaudit.assert_consistent(loss, params, jax.random.key(3))
    assert result.status == CONSISTENT
