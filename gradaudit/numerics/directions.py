"""Directional checks: a function too large for whole Jacobians, asked the same question along directions.

For tangent directions v_i (random, seeded, of the point's norm over every differentiated element,
plus a probe per element a user names: that element alone, by its own size) and cotangent
directions u_j (the output's own basis when it is small, random unit vectors otherwise), the
reduced function

    G(s)_j = u_j · f(x + Σ_i s_i v_i)

has the Jacobian dG_j/ds_i = u_j · (J v_i) at s = 0. Every path audits G as it would any function:
jax.jacfwd of G pushes each v_i forward (J v_i, forward mode), jax.jacrev pulls each u_j back
(u_jᵀ J, reverse mode), finite differences step along each v_i; so forward `u · (J v)` meets
reverse `(uᵀ J) · v`, eagerly and under jit, and both meet finite differences, at a cost of a few
evaluations of f whatever its size. A tangent as long as the point makes a step in s a step
relative to x, as finite differences take it elementwise (a unit step spread over a million
elements would move each by less than float32 can see in a sum). The point, the directions and the
cotangents are inputs of G (traced, never captured: a model's parameters are not compiled into a
program).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gradaudit.function_caches import per_function

PROBE = re.compile(r"^(?P<leaf>.*?)(?P<index>(\[\s*-?\d+\s*(,\s*-?\d+\s*)*\])?)$")


@dataclass(frozen=True, eq=False)
class Directions:
    """What a directional audit compared along, so that a finding reproduces: `tangents[i]` is the
    direction named `names[i]` (one array per differentiated input), `cotangents` the rows u_j."""

    seed: int
    names: tuple[str, ...]
    tangents: tuple[tuple[np.ndarray, ...], ...]
    cotangents: np.ndarray
    cotangent_basis: bool
    """Whether the cotangents are the output's own basis (each output element exactly) or random."""

    def describe(self) -> str:
        random = sum(1 for name in self.names if not name.startswith("e("))
        probes = [name for name in self.names if name.startswith("e(")]
        rows = "the output's basis" if self.cotangent_basis else f"{len(self.cotangents)} random unit cotangents"
        probed = f" and probes {', '.join(probes)}" if probes else ""
        return (
            f"compared along {random} random tangent direction{'s' if random != 1 else ''} as long as the point (seed "
            f"{self.seed}){probed}, "
            f"against {rows}: d out[j]/d v_i is u_j · (J v_i) (Audit.directions holds them)"
        )


def probe_index(probe: str, names: Sequence[str], shapes: Sequence[tuple[int, ...]]) -> tuple[int, int]:
    """(input, flat element) a probe such as `params['w'][2, 0]` names; ValueError saying what is allowed."""
    match = PROBE.fullmatch(probe.strip())
    if match is None:
        raise ValueError(
            f"probe {probe!r} is not an input's name followed by an index (allowed: {', '.join(names)}, e.g. "
            f"{names[0]}[0])"
        )
    leaf, index = match["leaf"], match["index"]
    if leaf not in names:
        raise ValueError(
            f"probe {probe!r} names no differentiated input (allowed: {', '.join(names)}, each followed by an index)"
        )
    position = list(names).index(leaf)
    shape = shapes[position]
    element = tuple(int(i) for i in index.strip("[]").split(",")) if index else ()
    if len(element) != len(shape) or any(not -n <= i < n for i, n in zip(element, shape, strict=True)):
        raise ValueError(
            f"probe {probe!r}: {leaf} has shape {tuple(shape)}, so an index of {len(shape)} number(s) within it"
        )
    return position, int(
        np.ravel_multi_index(tuple(i % n for i, n in zip(element, shape, strict=True)), shape)
    ) if shape else 0


def seeded_directions(
    points: Sequence[np.ndarray],
    names: Sequence[str],
    n_out: int,
    out_dtype: np.dtype,
    count: int,
    seed: int,
    probes: Sequence[str] = (),
) -> Directions:
    """`count` random tangents over all of `points` (one per differentiated input), each as long as
    the point (at least 1), a tangent per probe (its element alone, max(1, |x|) long), and the
    cotangents: the output's basis when it has at most `count` elements, else `count` random unit
    vectors. Seeded: the same seed gives the same directions."""
    rng = np.random.default_rng(seed)
    sizes = [int(np.size(p)) for p in points]
    flat_point = np.concatenate([np.ravel(p).astype(np.float64) for p in points])
    length = max(1.0, float(np.linalg.norm(flat_point)))
    tangents, labels = [], []
    for i in range(count):
        flat = rng.standard_normal(sum(sizes))
        flat *= length / (np.linalg.norm(flat) or 1.0)
        tangents.append(_split(flat, points))
        labels.append(f"v{i}")
    for probe in probes:
        position, element = probe_index(probe, names, [np.shape(p) for p in points])
        flat = np.zeros(sum(sizes))
        where = sum(sizes[:position]) + element
        flat[where] = max(1.0, abs(flat_point[where]))
        tangents.append(_split(flat, points))
        labels.append(f"e({probe.strip()})")
    basis = n_out <= count
    rows = np.eye(n_out) if basis else rng.standard_normal((count, n_out))
    if not basis:
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return Directions(seed, tuple(labels), tuple(tangents), rows.astype(out_dtype), basis)


def _split(flat: np.ndarray, points: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    parts, start = [], 0
    for point in points:
        size = int(np.size(point))
        parts.append(flat[start : start + size].reshape(np.shape(point)).astype(np.asarray(point).dtype))
        start += size
    return tuple(parts)


def stacked(directions: Directions) -> tuple[np.ndarray, ...]:
    """Per differentiated input, its component of every tangent, stacked: shape (tangents, *input)."""
    return tuple(np.stack(components) for components in zip(*directions.tangents, strict=True))


@per_function(maxsize=256)
def reduced(fn: Callable, pattern: tuple[bool, ...], tangents: int, scalar_out: bool) -> Callable:
    """G for `fn` (whose output is one floating array): called as G(s_0, …, s_{k-1}, *points,
    *stacked tangents, cotangents, *discrete inputs); `pattern` says which of fn's positional
    arguments are differentiated (True) or discrete. With `scalar_out` (one cotangent, the
    output's basis) G returns a scalar."""
    import jax.numpy as jnp

    n_points = sum(pattern)

    def along_directions(*inputs):
        coefficients = jnp.stack(inputs[:tangents])
        rest = inputs[tangents:]
        points, stacks, rows, discrete = (
            rest[:n_points],
            rest[n_points : 2 * n_points],
            rest[2 * n_points],
            rest[2 * n_points + 1 :],
        )
        moved = iter(
            [x + jnp.tensordot(coefficients.astype(x.dtype), v, axes=1) for x, v in zip(points, stacks, strict=True)]
        )
        fixed = iter(discrete)
        out = jnp.ravel(fn(*[next(moved) if d else next(fixed) for d in pattern]))
        projected = rows @ out.astype(rows.dtype)
        return projected[0] if scalar_out else projected

    along_directions.__qualname__ = f"along_directions({getattr(fn, '__qualname__', 'fn')})"
    return along_directions
