"""Cases judged together: one scenario's paths each, and their numbers stacked so that cases alike
in paths and shapes (a group's members) have their entry-by-entry work done in one NumPy call."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from gradaudit.judging.fd_trust import Masks
from gradaudit.judging.tolerances import Tolerances
from gradaudit.model.computed import Prober
from gradaudit.model.paths import JIT_VALUE, VALUE, PathResult, path_name


def estimate_of(reference: PathResult, name: str) -> tuple[np.ndarray, ...]:
    """One finite-difference estimate per block; a reference without estimates (given as plain arrays) has only its
    values."""
    if reference.estimates is not None:
        return reference.estimates[name]
    if name == "undefined":
        return tuple(np.zeros(np.shape(a), dtype=bool) for a in reference.ok_arrays)
    if name == "noise":
        return tuple(np.zeros(np.shape(a)) for a in reference.ok_arrays)
    return reference.ok_arrays


def undefined_of(reference: PathResult) -> Masks:
    return tuple(np.asarray(m, dtype=bool) for m in estimate_of(reference, "undefined"))


def unstack_row(flat: np.ndarray, like: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """`flat` (blocks flattened one after another, as a row of `stack_rows`) cut back into blocks of the shapes of
    `like`."""
    blocks, start = [], 0
    for array in like:
        shape = np.shape(array)
        end = start + math.prod(shape)
        blocks.append(flat[start:end].reshape(shape))
        start = end
    return tuple(blocks)


def stack_rows(members: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """Each member's blocks (alike in number and shape) flattened one after another, as the rows of
    one float64 array: elementwise work on every member (and every block) is then one NumPy call."""
    count = len(members)
    if not members[0]:
        return np.zeros((count, 0))
    columns = [
        np.stack([np.asarray(blocks[k]) for blocks in members]).reshape(count, -1).astype(np.float64)
        for k in range(len(members[0]))
    ]
    return columns[0] if len(columns) == 1 else np.concatenate(columns, axis=1)


def per_block(bad: np.ndarray, like: Sequence[np.ndarray]) -> list[list[np.ndarray]]:
    """Per row of `bad` (a member's blocks flattened one after another, as `stack_rows` gives them),
    per block, the flat indices within the block where `bad` is set."""
    sizes = [math.prod(np.shape(a)) for a in like]
    starts = np.cumsum([0, *sizes])
    rows, columns = np.nonzero(bad)
    none = [np.zeros(0, dtype=np.intp) for _ in like]
    found = [none] * len(bad)
    bounds = np.searchsorted(rows, np.arange(len(bad) + 1))
    for row in np.flatnonzero(np.diff(bounds)):
        mine = columns[bounds[row] : bounds[row + 1]]
        cuts = np.searchsorted(mine, starts)
        found[row] = [mine[cuts[k] : cuts[k + 1]] - starts[k] for k in range(len(like))]
    return found


def columns_of(
    paths: Sequence[PathResult], blocks: Callable[[PathResult], Sequence[np.ndarray]] = lambda path: path.ok_arrays
) -> list[np.ndarray]:
    """Per block, the members' blocks stacked (members alike in blocks and shapes)."""
    return [np.stack([np.asarray(blocks(path)[k]) for path in paths]) for k in range(len(blocks(paths[0])))]


def value_of(results: dict[str, PathResult], bindings: Sequence[str]) -> PathResult:
    """The function's value as the paths saw it: eager evaluation, or (where an engine computed no
    eager paths, as a search's quick screen does not) its jit evaluation."""
    return results.get(VALUE) or results[path_name(JIT_VALUE, bindings[0])]


@dataclass(frozen=True)
class Case:
    """One scenario's paths to judge (one set per binding), at `inputs` (the differentiated ones)."""

    results: dict[str, PathResult]
    arg_names: tuple[str, ...]
    tolerances: Tolerances
    bindings: Sequence[str] = ("",)
    inputs: Sequence[np.ndarray] = ()
    eps: float | None = None
    """The scenario's finite-difference eps (None: its dtypes'), to know the steps taken."""
    probe: Prober | None = None
    """More finite-difference evidence at an entry (`engines.probe`), asked where every AD path
    agrees against finite differences; None: none (hand-made results)."""
    triggers: Callable[..., frozenset[str]] | None = None
    """The mechanisms the function meets at its inputs (`Computed.triggers`), asked where a NaN or
    inf meets a number at an entry whose own numbers are finite; None: none (hand-made results)."""


class Stacks:
    """Cases alike's numbers for one path, or one finite-difference estimate of it, stacked once
    (`stack_rows`) for every comparison of the group that reads them: most read the same few."""

    def __init__(self, cases: Sequence[Case]):
        self.cases = cases
        self._known: dict[tuple[str, str | None], np.ndarray] = {}

    def path(self, name: str) -> np.ndarray:
        """Path `name`'s blocks, a row per case (every case's path computed)."""
        if (name, None) not in self._known:
            self._known[name, None] = stack_rows([case.results[name].ok_arrays for case in self.cases])
        return self._known[name, None]

    def estimate(self, name: str, estimate: str) -> np.ndarray:
        """Reference `name`'s finite-difference `estimate` (`estimate_of`), a row per case."""
        if (name, estimate) not in self._known:
            self._known[name, estimate] = stack_rows([estimate_of(case.results[name], estimate) for case in self.cases])
        return self._known[name, estimate]

    def largest(self, name: str) -> np.ndarray:
        """Path `name`'s largest finite |entry|, one per case (0 where none is finite)."""
        if (name, "largest") not in self._known:
            with np.errstate(invalid="ignore"):
                magnitudes = np.abs(self.path(name))
            self._known[name, "largest"] = np.max(magnitudes, axis=1, initial=0.0, where=np.isfinite(magnitudes))
        return self._known[name, "largest"]

    def non_finite(self, name: str) -> np.ndarray:
        """Whether path `name` holds an infinite or NaN entry, one per case."""
        if (name, "non-finite") not in self._known:
            with np.errstate(invalid="ignore"):
                self._known[name, "non-finite"] = ~np.isfinite(self.path(name)).all(axis=1)
        return self._known[name, "non-finite"]
