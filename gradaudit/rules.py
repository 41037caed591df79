"""Transpose-rule variants for `lax.select_n` and the context manager that swaps them in and out.

Both variants are written from the seed's description of JAX PR #40814, not taken from JAX:
- `legacy`: case i receives the cotangent where `which == i`; a boolean selector is assumed to
  choose between two cases (so a single case raises IndexError).
- `fixed`: the same, after clamping an integer selector to [0, cases - 1] in its own dtype, and
  with a single case receiving the incoming cotangent directly.

Only the `select_n` entry of JAX's transpose registry is replaced, never an installed file; JAX's
caches are cleared on the way in and out so no compiled program of one rule serves another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import jax
import numpy as np
from jax import lax
from jax._src import ad_util
from jax._src.interpreters import ad
from jax._src.lax import lax as lax_internal

INSTALLED = "installed"
LEGACY = "legacy"
FIXED = "fixed"
RULES: tuple[str, ...] = (INSTALLED, LEGACY, FIXED)

TransposeRule = Callable[..., object]


def _selector_constant(which, value: int):
    """`value` in the selector's own dtype, so unsigned selectors keep their comparison domain."""
    return np.array(value, dtype=np.dtype(which.dtype))


def _transpose_rule(clamp_selector: bool, single_case_shortcut: bool) -> TransposeRule:
    """A select_n transpose rule: the legacy one, or with PR #40814's two changes switched on."""

    def rule(ct, which, *cases):
        if type(ct) is ad_util.Zero:
            return [None] + [ad_util.Zero(c.aval) if ad.is_undefined_primal(c) else None for c in cases]
        if single_case_shortcut and len(cases) == 1:
            return [None, ct if ad.is_undefined_primal(cases[0]) else None]
        zeros = lax.full_like(ct, 0)
        if np.dtype(which.dtype) == np.bool_:
            ct0 = lax.select(which, zeros, ct) if ad.is_undefined_primal(cases[0]) else None
            ct1 = lax.select(which, ct, zeros) if ad.is_undefined_primal(cases[1]) else None
            return [None, ct0, ct1]
        if clamp_selector:
            which = lax.clamp(_selector_constant(which, 0), which, _selector_constant(which, len(cases) - 1))
        return [None] + [
            lax.select(lax.eq(which, _selector_constant(which, i)), ct, zeros) if ad.is_undefined_primal(case) else None
            for i, case in enumerate(cases)
        ]

    return rule


VARIANTS: dict[str, TransposeRule] = {
    LEGACY: _transpose_rule(clamp_selector=False, single_case_shortcut=False),
    FIXED: _transpose_rule(clamp_selector=True, single_case_shortcut=True),
}


def installed_rule() -> TransposeRule:
    """The select_n transpose rule currently in JAX's registry."""
    return ad.primitive_transposes[lax_internal.select_n_p]


@contextmanager
def select_n_rule(rule: str) -> Iterator[None]:
    """Run the body with `rule` as select_n's transpose rule; the original is restored on every exit.

    `installed` changes nothing. For the others, JAX's caches are cleared on entering and on
    leaving, and the registry entry is put back even on exceptions and KeyboardInterrupt.
    """
    if rule == INSTALLED:
        yield
        return
    registry = ad.primitive_transposes
    original = registry[lax_internal.select_n_p]
    jax.clear_caches()
    registry[lax_internal.select_n_p] = VARIANTS[rule]
    try:
        yield
    finally:
        registry[lax_internal.select_n_p] = original
        jax.clear_caches()
