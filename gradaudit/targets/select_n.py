"""`lax.select_n` with a constant selector: the family in which the seed's defect lives."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from gradaudit.model import dtypes
from gradaudit.model import scenario as scenario_module
from gradaudit.model.scenario import Scenario
from gradaudit.targets.base import Target


def case_values(scenario: Scenario) -> tuple[np.ndarray, ...]:
    """The cases' values: the scenario's own, or 1, 2, 3, ... shuffled by the seed.

    Generated values are pairwise distinct across cases and elements (exactly so up to 2048
    elements in float16 and 256 in bfloat16), so an output value names the case that supplied it.
    """
    spec = scenario.target
    assert spec.kind == "select_n", "a select_n scenario's cases"
    dtype = dtypes.numpy_dtype(spec.dtype)
    if spec.values is not None:
        return tuple(np.asarray(value, dtype=np.float64).astype(dtype) for value in spec.values)
    size = int(np.prod(spec.shape, dtype=np.int64))
    order = np.random.default_rng(scenario.seed).permutation(spec.cases * size)
    values = (1.0 + order).reshape((spec.cases, *spec.shape)).astype(dtype)
    return tuple(values[i] for i in range(spec.cases))


OUTPUTS: dict[str, Callable[[jax.Array], jax.Array]] = {
    # gradaudit's own fixed expressions, so a reproducer script writes the same text
    name: eval(f"lambda y: {expression}", {"jnp": jnp})  # noqa: S307
    for name, expression in scenario_module.OUTPUT_EXPRESSIONS.items()
}
"""What is applied to the selected value; nonlinear outputs give second derivatives something to check."""


@functools.lru_cache(maxsize=1024)
def _select(which: tuple[bytes, str, tuple[int, ...]] | None, output: str) -> Callable:
    """`output(lax.select_n(which, *cases))`, with `which` (its bytes, dtype and shape) captured as a
    numpy constant; with `which` None, passed as the last argument. Made once per selector and
    output, so scenarios that share them share a function, and JAX's caches serve them all."""
    apply = OUTPUTS[output]
    if which is None:

        def select_traced(*inputs):
            return apply(lax.select_n(inputs[-1], *inputs[:-1]))

        return select_traced
    data, dtype, shape = which
    selector = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape)

    def select(*cases):
        return apply(lax.select_n(selector, *cases))

    return select


def build(scenario: Scenario, traced: bool = False) -> Target:
    """The function as JAX's own testSelectNGrad writes it: the selector a numpy array captured as a
    constant; with `traced`, the selector passed as the last argument instead (so scenarios that
    differ only in their selector share one program)."""
    spec = scenario.target
    assert spec.kind == "select_n", "build_targets and group_targets send only select_n scenarios here"
    which = spec.selector.array()
    names = tuple(f"case {i}" for i in range(spec.cases))
    if traced:
        return Target(fn=_select(None, spec.output), args=case_values(scenario), arg_names=names, fixed=(which,))
    key = (which.tobytes(), which.dtype.str, which.shape)
    return Target(fn=_select(key, spec.output), args=case_values(scenario), arg_names=names, captured=True)
