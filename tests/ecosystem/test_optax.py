"""optax losses and an optimizer step, differentiated as meta-learning code differentiates them."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import gradaudit
from gradaudit.model.findings import CONSISTENT
from tests.ecosystem.conftest import library

optax = library("optax")


def test_optax_losses_pass_at_ordinary_points_to_second_order():
    logits = jnp.array([[1.2, -0.3, 0.5], [0.1, 2.0, -1.0]])
    labels = jnp.array([0, 2])
    ce = gradaudit.audit(
        lambda z: jnp.mean(optax.softmax_cross_entropy_with_integer_labels(z, labels)), logits, order=2
    )
    assert ce.status == CONSISTENT, str(ce)
    huber = gradaudit.audit(
        lambda p: jnp.sum(optax.huber_loss(p, jnp.zeros(3), delta=1.0)), jnp.array([0.3, -2.0, 1.5])
    )
    assert huber.status == CONSISTENT, str(huber)


def test_an_adam_step_differentiated_through_its_learning_rate_passes():
    params = {"w": jnp.array([0.5, -1.5, 2.0])}

    def after_one_step(lr):
        optimizer = optax.adam(lr)
        grads = jax.grad(lambda p: jnp.sum(jnp.sin(p["w"]) ** 2))(params)
        updates, _ = optimizer.update(grads, optimizer.init(params), params)
        return jnp.sum(optax.apply_updates(params, updates)["w"] ** 2)

    result = gradaudit.audit(after_one_step, jnp.array(0.1))
    assert result.status == CONSISTENT, str(result)


def test_check_grads_written_for_jax_drops_in_on_an_optax_loss():
    def loss(logits):
        return jnp.mean(optax.sigmoid_binary_cross_entropy(logits, jnp.array([1.0, 0.0, 1.0])))

    logits = jnp.array([0.3, -1.2, 2.5])
    from jax.test_util import check_grads

    check_grads(loss, (logits,), 2, ["fwd", "rev"], 1e-2, 1e-2, 1e-3)
    gradaudit.check_grads(loss, (logits,), 2, ["fwd", "rev"], 1e-2, 1e-2, 1e-3)
