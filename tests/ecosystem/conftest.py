"""The JAX ecosystem's libraries (the `ecosystem` extra): each test skips, saying which, where one is missing."""

from __future__ import annotations

import pytest


def library(name: str):
    """The library `name`, or skip the test saying it is not installed (`pip install -e '.[ecosystem]'`)."""
    return pytest.importorskip(name, reason=f"{name} is not installed: pip install -e '.[ecosystem]'")
