"""`lax.select_n` with a constant selector: the family in which the seed's defect lives."""

from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=1024)
def literal_function(selector_dtype: str, selector_bytes: bytes, selector_shape: tuple[int, ...], output: str) -> Callable:
    """`output(select_n(which, *cases))` with `which` captured, the same function object for the same selector.

    Scenarios that differ only in their case values then share JAX's compiled programs, which are
    cached by function, while each still runs the function exactly as a user would write it.
    """
    which = jnp.asarray(np.frombuffer(selector_bytes, dtype=dtypes.numpy_dtype(selector_dtype)).reshape(selector_shape))
    apply = OUTPUTS[output]

    def select(*cases):
        return apply(lax.select_n(which, *cases))

    return select


def build(scenario: Scenario) -> Target:
    spec = scenario.target
    which = spec.selector.array()
    return Target(
        fn=literal_function(spec.selector.dtype, which.tobytes(), which.shape, spec.output),
        args=case_values(scenario),
        arg_names=tuple(f"case {i}" for i in range(spec.cases)),
    )
