"""numerics.directions: a large function's Jacobian asked along seeded directions, G(s) = U f(x + Σ s_i v_i)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gradaudit.numerics.directions import probe_index, reduced, seeded_directions, stacked


def _f(a, b):
    return jnp.concatenate([jnp.sin(a) * b[0], jnp.cos(a) ** 2])


def test_the_reduced_functions_jacobian_is_u_j_dot_j_v_i():
    a, b = np.array([0.3, -0.8, 1.2], dtype=np.float32), np.array([2.0, 0.5], dtype=np.float32)
    chosen = seeded_directions([a, b], ["a", "b"], n_out=6, out_dtype=np.dtype("float32"), count=3, seed=7)
    assert chosen.names == ("v0", "v1", "v2") and not chosen.cotangent_basis and chosen.cotangents.shape == (3, 6)
    g = reduced(_f, (True, True), 3, False)
    zeros = [np.float32(0.0)] * 3
    got = np.stack(jax.jacfwd(g, argnums=(0, 1, 2))(*zeros, a, b, *stacked(chosen), chosen.cotangents), axis=1)
    for i, (va, vb) in enumerate(chosen.tangents):
        _, jv = jax.jvp(_f, (a, b), (va, vb))
        np.testing.assert_allclose(got[:, i], chosen.cotangents @ np.asarray(jv), rtol=2e-5, atol=1e-6)


def test_directions_are_seeded_as_long_as_the_point_and_probes_are_one_element():
    point = np.full((4, 5), 3.0)
    one = seeded_directions([point], ["w"], 2, np.dtype("float32"), 2, seed=1, probes=["w[2, 3]"])
    again = seeded_directions([point], ["w"], 2, np.dtype("float32"), 2, seed=1, probes=["w[2, 3]"])
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(one.tangents, again.tangents, strict=True))
    assert np.linalg.norm(one.tangents[0][0]) == pytest.approx(np.linalg.norm(point), rel=1e-6)
    probe = one.tangents[-1][0]
    assert one.names[-1] == "e(w[2, 3])" and np.count_nonzero(probe) == 1 and probe[2, 3] == 3.0
    assert one.cotangent_basis and np.array_equal(one.cotangents, np.eye(2))  # small outputs: their own basis
    assert probe_index("w[-1, 0]", ["w"], [(4, 5)]) == (0, 15)
