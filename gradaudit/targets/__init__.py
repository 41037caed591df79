"""What gets differentiated: each scenario family builds a Target, a function and its inputs.

Paths only see Targets, so a new family (a user's function, another primitive) needs a builder
here and nothing else.
"""

from __future__ import annotations

from gradaudit.scenario import Scenario
from gradaudit.targets import select_n
from gradaudit.targets.base import Target

__all__ = ["Target", "build_target"]


def build_target(scenario: Scenario) -> Target:
    """The Target a scenario describes."""
    return select_n.build(scenario)
