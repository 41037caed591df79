"""Caches of what gradaudit makes from a user's function, and when they let go of it.

Scenarios of one function should call the same Python function (its transforms, its output
flattened, its arguments bound), as a user's code does, so that JAX's caches of traced and compiled
programs serve them all; so the makers are cached per function. A cache entry holds the function
and everything it closes over (a loss closing over a dataset), and no weak reference can tell when
the user is done with it while the entry itself holds it. So the caches live for an audit: the
Python API holds them while it audits (`held`) and empties them when its outermost audit returns,
and a long run (a survey's process, a worker) empties them with the compiled programs
(`engines.group.release_programs`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_CACHES: list[Any] = []
_depth = 0


def per_function(maxsize: int) -> Callable[[F], F]:
    """`functools.lru_cache(maxsize)`, emptied by `clear` (and so when an audit that `held` it returns)."""

    def decorate(maker: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize)(maker)
        _CACHES.append(cached)
        return cached  # type: ignore[return-value]

    return decorate


def clear() -> None:
    """Let go of everything every per-function cache holds."""
    for cache in _CACHES:
        cache.cache_clear()


@contextmanager
def held() -> Iterator[None]:
    """The caches kept through the body (audits nested in it share them), emptied when the
    outermost `held` ends: after it, gradaudit holds no reference to a function audited inside."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            clear()
