"""Python's cyclic garbage collector while a run builds what lives until it ends.

Loading a large scenario file and gathering its results make millions of objects that live until
the run ends. Python's collector counts them as they are made and now and then traverses every
one of them looking for cycles, a noticeable share of a large run's main process (docs/performance.md,
"Measurements behind the settings"). Within `long_lived()` no full collection runs; the young
generations still do, so a short-lived cycle is still freed, and the first full collection after
it (the thresholds put back) frees whatever cycles the run left behind. Where this process
computes paths itself, `collecting()` lets full collections run again (`service.audit` with no
worker processes).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

NEVER = 2**30
"""A threshold the oldest generation's count never reaches in one run."""

PYTHON = gc.get_threshold()
"""The thresholds this process started with (Python's, unless its user set others first)."""


@contextmanager
def long_lived() -> Iterator[None]:
    """No full collection within: see the module's docstring."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], NEVER)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


@contextmanager
def collecting() -> Iterator[None]:
    """Full collections as usual within, inside `long_lived` too: for a stretch that computes paths
    in this process (an audit with no worker processes), where an exception a path raised keeps
    its frames, and so the group's arrays, in a cycle only a full collection frees."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], PYTHON[2])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
