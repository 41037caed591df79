"""A search's quick screen: jit paths only where that settles the draw, every path where it may not.

Exploring thousands of draws, a search cannot afford every eager path of each; the group engine's
jit paths settle most draws. But the judge sets some differences aside as notes (NaN against a
number where IEEE arithmetic alone can part the modes, no finite estimate, a kink) that an eager
path and its jit twin tell apart: `jacrev` NaN where `jit(jacrev)` is 0 is a finding. So a draw whose
quick verdict holds a note is computed again on the literal engine, every path as a user calls it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from gradaudit.engines.group import GroupEngine
from gradaudit.engines.literal import LiteralEngine
from gradaudit.judging.assess import assess
from gradaudit.model.computed import Computed
from gradaudit.model.findings import IEEE_NAN
from gradaudit.model.scenario import Scenario


class ScreenEngine:
    """The group engine's jit paths, or the literal engine's every path where they do not apply or
    the quick verdict set a disagreement aside as IEEE arithmetic."""

    name = "screen"

    def __init__(self, literal: LiteralEngine, tolerance: tuple[float | None, float | None] = (None, None)):
        self.literal, self.tolerance = literal, tolerance
        self.quick = GroupEngine(devices=literal.devices, eager=False, timeout=literal.timeout, limits=literal.limits)
        """Under the literal engine's timeout and limits: a draw over them is left to it, which says so."""

    def run(self, scenarios: Sequence[Scenario]) -> Iterator[list[tuple[int, Computed]]]:
        for position, scenario in enumerate(scenarios):
            computed = next((c for batch in self.quick.run([scenario]) for _, c in batch), None)
            if computed is None or any(IEEE_NAN in note.message for note in assess(scenario, computed, self.tolerance).notes):
                computed = next(c for batch in self.literal.run([scenario]) for _, c in batch)
            yield [(position, computed)]
