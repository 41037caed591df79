"""How findings name entries, arguments and paths in words."""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

import numpy as np

from gradaudit.model.findings import Sources, location_text
from gradaudit.model.paths import label


def index_text(shape: tuple[int, ...], flat: int) -> str:
    if not shape:
        return ""
    return "[" + ", ".join(str(i) for i in unravel(int(flat), shape)) + "]"


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """`np.unravel_index` for one index, in Python: a message names one entry, and NumPy's call
    costs more than the arithmetic."""
    index = []
    for size in reversed(shape):
        flat, at = divmod(flat, size)
        index.append(at)
    return tuple(reversed(index))


def entry_location(
    block_shape: tuple[int, ...], output_shape: tuple[int, ...], name: str, order: int, flat: int
) -> str:
    """How findings name the entry `flat` of a derivative block of `block_shape` (the output's shape, then the
    input's): `d out[i]/d x[j]`."""
    in_shape = block_shape[len(output_shape) :]
    out_flat, in_flat = divmod(flat, max(1, math.prod(in_shape)))
    return location_text(unravel(out_flat, output_shape), order, name, unravel(in_flat, in_shape))


def and_words(words: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def argument_names(sources: Sources, arg_names: tuple[str, ...]) -> str:
    return and_words([arg_names[i] for i in sources])


def path_labels(paths: Sequence[str]) -> str:
    return _labels(tuple(paths))


@functools.cache  # a run names the same few sets of paths in every finding
def _labels(paths: tuple[str, ...]) -> str:
    return and_words([label(p) for p in paths])


Said = TypeVar("Said", bound=Hashable)


def grouped_by_said(items: Iterable[tuple[str, Said]]) -> dict[Said, list[str]]:
    """Paths grouped by what they said, in path order, so one finding names every path that said it."""
    groups: dict[Said, list[str]] = {}
    for path, said in items:
        groups.setdefault(said, []).append(path)
    return groups


def entries_summary(indices: Sequence[np.ndarray], of: int) -> str:
    """`count/of#hash`: how many entries, and a hash of exactly which (per block), stable across runs and machines."""
    digest = hashlib.sha1()
    for block in indices:
        digest.update(np.asarray(block, dtype="<i8").tobytes() + b";")
    return f"{sum(len(b) for b in indices)}/{of}#{digest.hexdigest()[:8]}"
