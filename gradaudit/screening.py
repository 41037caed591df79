"""A search's quick screen: jit paths only where that settles the draw, every path where it may not.

Exploring thousands of draws, a search cannot afford every eager path of each; the group engine's
jit paths settle most draws. But some classes of finding the gate lets pass (`non-finite`,
`non-differentiable`) hide what an eager path and its jit twin tell apart: `jacrev` NaN where
`jit(jacrev)` is 0 is an `eager-jit` or `leak` finding. So a draw whose quick verdict holds such a
finding gets its eager paths on the literal engine, each as a user calls it; its compiled paths and
finite differences stay those the group program computed at its inputs (each path records its
engine), which the literal engine would only compile and compute again. The group program holds all
the jit paths of a draw's function in one compilation (each alone, as a run's group compiles a user's
function, made a survey slower: docs/performance.md), so its answers may differ from
a user's own programs: a kind a search reports is confirmed on the literal engine alone
(`search.confirm`), and a draw one program calls consistent where a user's own would not is a miss
this screen can make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from gradaudit.engines.group import GroupEngine
from gradaudit.engines.literal import LiteralEngine, stop_computing
from gradaudit.judging.assess import assess
from gradaudit.model.computed import Computed
from gradaudit.model.paths import COMPILED, FINITE_DIFFERENCE, base_name
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import Scenario


class ScreenEngine:
    """The group engine's jit paths; the literal engine's every path where they do not apply, and its
    eager paths beside them where the quick verdict holds a finding the gate lets pass by default;
    each scenario judged."""

    name = "screen"

    def __init__(self, literal: LiteralEngine, tolerance: tuple[float | None, ...] = ()):
        self.literal, self.tolerance = literal, tolerance
        self.quick = GroupEngine(devices=literal.devices, eager=False, timeout=literal.timeout, limits=literal.limits)
        """Under the literal engine's timeout and limits: a draw over them is left to it, which says so."""
        self.starting: Callable[[int], None] = lambda position: None
        """Told each scenario's position as its literal paths start (a worker tells its parent so:
        `isolation.STARTING`)."""

    def screen(self, scenarios: Sequence[Scenario]) -> Iterator[tuple[int, ScenarioResult]]:
        """Each scenario's verdict with its position, as soon as it is settled: SCREEN_BATCH at a
        time, the quick ones of a group together (one program for the group, each member called on
        its own inputs, so a member's verdict is what it would be alone), then those the group
        engine left."""
        for start in range(0, len(scenarios), SCREEN_BATCH):
            chunk = scenarios[start : start + SCREEN_BATCH]
            settled: set[int] = set()
            for batch in self.quick.run(chunk):
                for position, computed in batch:
                    settled.add(position)
                    if stop_computing():
                        return
                    yield start + position, self._judged(chunk[position], computed, start + position)
            for position, scenario in enumerate(chunk):
                if stop_computing():
                    return  # a time limit fired in this worker: the rest are screened in a fresh one
                if position not in settled:
                    yield start + position, self._judged(scenario, None, start + position)

    def _judged(self, scenario: Scenario, quick: Computed | None, position: int) -> ScenarioResult:
        """The quick verdict, or the literal engine's where there is none or it holds a finding the
        gate lets pass by default (which may hide an eager/jit split): then its paths the quick
        one lacks (the eager ones) are computed, the others taken from it (`QUICK_PATHS`)."""
        given = {}
        if quick is not None:
            verdict = assess(scenario, quick, self.tolerance)
            if all(f.fails_by_default for f in verdict.findings):
                return verdict
            given = {name: path for name, path in quick.paths.items() if base_name(name) in QUICK_PATHS}
        self.starting(position)
        return assess(scenario, self.literal.completed(scenario, given), self.tolerance)


QUICK_PATHS = COMPILED | {FINITE_DIFFERENCE}
"""The quick verdict's paths a draw sent on to the literal engine keeps: the group program's jit paths
and finite differences, computed at the draw's inputs by the transforms they are named after."""

SCREEN_BATCH = 16
"""Scenarios screened at a time: a group's program serves them all (and the next batch's, compiled
once), and a batch's first verdict comes within a draw's timeout of its start, as a lone draw's
would (a survey's sweep of a few hundred values of one function is a single group)."""
