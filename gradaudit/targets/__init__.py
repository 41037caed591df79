"""What gets differentiated: each scenario family builds Targets, a function and its inputs.

Paths only see Targets, so a new family needs a builder here and nothing else. A scenario yields
one Target per binding of its fixed inputs (traced arguments, captured constants).
"""

from __future__ import annotations

from gradaudit.scenario import Scenario
from gradaudit.targets import function, select_n
from gradaudit.targets.base import Target

__all__ = ["Target", "build_targets"]


def build_targets(scenario: Scenario) -> tuple[Target, ...]:
    """The Targets a scenario describes, one per binding."""
    if scenario.target.kind == "function":
        return function.build(scenario)
    return (select_n.build(scenario),)
