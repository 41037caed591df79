"""The Target: a function and the inputs it is differentiated at."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Target:
    """A function to differentiate with respect to every one of its (floating) arguments."""

    fn: Callable[..., object]
    """The function exactly as a user would call it; discrete inputs are captured constants."""
    args: tuple[np.ndarray, ...]
    """The differentiable inputs, in order."""
    arg_names: tuple[str, ...]
    """How findings name each argument ("case 1")."""
