"""A run keeps what it builds alive until it ends: no full garbage collection meanwhile, \
the collector as it was after."""

from __future__ import annotations

import gc

from gradaudit.collector import long_lived


def _full_collections(build) -> int:
    """How many full collections Python ran while `build` made many objects that stay alive."""
    full = []

    def seen(phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            full.append(info)

    gc.collect()
    gc.callbacks.append(seen)
    try:
        build()
    finally:
        gc.callbacks.remove(seen)
    return len(full)


def _many_long_lived_objects() -> None:
    kept = [[index] for index in range(400_000)]
    assert len(kept) == 400_000


def test_no_full_collection_within_long_lived_and_the_thresholds_come_back():
    before = gc.get_threshold()
    assert _full_collections(_many_long_lived_objects) > 0  # Python's defaults collect all of them, again and again

    def within() -> None:
        with long_lived():
            _many_long_lived_objects()

    assert _full_collections(within) == 0
    assert gc.get_threshold() == before


def test_collecting_brings_full_collections_back_within_long_lived():
    # An audit that computes paths in this process makes cycles holding arrays (an exception keeps
    # its frames): full collections must go on there, and stop again after it.
    from gradaudit.collector import collecting

    def computing_within() -> None:
        with long_lived(), collecting():
            _many_long_lived_objects()

    def after() -> None:
        with long_lived():
            with collecting():
                pass
            _many_long_lived_objects()

    assert _full_collections(computing_within) > 0
    assert _full_collections(after) == 0
