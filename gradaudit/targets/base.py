"""The Target: a function and the inputs it is differentiated at."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Target:
    """A function to differentiate with respect to each of `args`; `fixed` follow them undifferentiated.

    Called as `fn(*args, *fixed)`. Fixed inputs passed this way are traced under jit; a target
    that captures them as constants has `fixed == ()`.
    """

    fn: Callable[..., object]
    args: tuple[np.ndarray, ...]
    """The differentiable inputs, in order."""
    arg_names: tuple[str, ...]
    """How findings name each argument ("case 1", "x")."""
    fixed: tuple[np.ndarray, ...] = ()
    binding: str = ""
    """'traced' or 'constant' when a scenario runs both ways; '' when it runs one way."""
