"""`lax.select_n` with a constant selector: the family in which the seed's defect lives."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from gradaudit import dtypes
from gradaudit import scenario as scenario_module
from gradaudit.scenario import Scenario
from gradaudit.targets.base import Target


def case_values(scenario: Scenario) -> tuple[np.ndarray, ...]:
    """The cases' values: the scenario's own, or 1, 2, 3, ... shuffled by the seed.

    Generated values are pairwise distinct across cases and elements (exactly so up to 2048
    elements in float16 and 256 in bfloat16), so an output value names the case that supplied it.
    """
    spec = scenario.target
    dtype = dtypes.numpy_dtype(spec.dtype)
    if spec.values is not None:
        return tuple(np.asarray(value, dtype=np.float64).astype(dtype) for value in spec.values)
    size = int(np.prod(spec.shape, dtype=np.int64))
    order = np.random.default_rng(scenario.seed).permutation(spec.cases * size)
    values = (1.0 + order).reshape((spec.cases, *spec.shape)).astype(dtype)
    return tuple(values[i] for i in range(spec.cases))


OUTPUTS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "identity": lambda y: y,
    "square": lambda y: y * y,
    "sum_of_squares": lambda y: jnp.sum(y * y),
}
"""What is applied to the selected value; nonlinear outputs give second derivatives something to check."""
assert set(OUTPUTS) == set(scenario_module.OUTPUTS)


def build(scenario: Scenario) -> Target:
    """The function as JAX's own testSelectNGrad writes it: the selector a numpy array captured as a constant."""
    spec = scenario.target
    which = spec.selector.array()
    output = OUTPUTS[spec.output]

    def select(*cases):
        return output(lax.select_n(which, *cases))

    return Target(
        fn=select,
        args=case_values(scenario),
        arg_names=tuple(f"case {i}" for i in range(spec.cases)),
    )
