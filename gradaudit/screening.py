"""A search's quick screen: jit paths only where that settles the draw, every path where it may not.

Exploring thousands of draws, a search cannot afford every eager path of each; the group engine's
jit paths settle most draws. But some classes of finding the gate lets pass (`non-finite`,
`non-differentiable`) hide what an eager path and its jit twin tell apart: `jacrev` NaN where
`jit(jacrev)` is 0 is an `eager-jit` or `leak` finding. So a draw whose quick verdict holds such a
finding is computed again on the literal engine, every path as a user calls it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gradaudit.engines.group import GroupEngine
from gradaudit.engines.literal import LiteralEngine
from gradaudit.judging.assess import assess
from gradaudit.model.computed import Computed
from gradaudit.model.scenario import Scenario


class ScreenEngine:
    """The group engine's jit paths, or the literal engine's every path where they do not apply or
    the quick verdict holds a finding the gate lets pass by default."""

    name = "screen"

    def __init__(self, literal: LiteralEngine, tolerance: tuple[float | None, ...] = ()):
        self.literal, self.tolerance = literal, tolerance
        self.quick = GroupEngine(devices=literal.devices, eager=False, timeout=literal.timeout, limits=literal.limits)
        """Under the literal engine's timeout and limits: a draw over them is left to it, which says so."""

    def run(self, scenarios: Sequence[Scenario]) -> Iterator[list[tuple[int, Computed]]]:
        for position, scenario in enumerate(scenarios):
            computed = next((c for batch in self.quick.run([scenario]) for _, c in batch), None)
            if computed is None or any(
                not f.fails_by_default for f in assess(scenario, computed, self.tolerance).findings
            ):
                computed = next(c for batch in self.literal.run([scenario]) for _, c in batch)
            yield [(position, computed)]
