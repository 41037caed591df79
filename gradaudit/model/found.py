"""What a search found: each kind of disagreement, its minimal scenario and how it was found, and
the search's counts (`gradaudit search`, `gradaudit survey`). Data only: `search` makes them,
`render` and `survey` read them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gradaudit.model.results import ScenarioResult

FoundKind = tuple[str, tuple[str, ...]]
"""A kind of disagreement: a status and its findings' signatures, independent of values and entries."""


def kind_of(result: ScenarioResult) -> FoundKind:
    """What a disagreement is, independent of the values and entries: its status and its findings' signatures."""
    return result.status, tuple(sorted({f.signature for f in result.findings}))


HANGS_PER_ARGUMENT = 3
"""Audits that may time out with their furthest-out value (`search.explore.outermost`) in one input, on
one side of 1, before a search audits none whose furthest-out value lies there as far out or further.
Each costs a timeout and a fresh worker, and a function that loops for ever once an argument is large
enough hangs on every value past that, in every dtype and shape: its sweep of decades alone would spend
an hour. A search audits the scenarios it has nearest to ordinary values first, so those it leaves out
lie further out than that many that hung; the outcome counts them (`SearchOutcome.not_audited`). A
count, not seconds: the same seed leaves out the same scenarios on any machine where the same audits
time out. Here, not in the search, because reports say it too."""


@dataclass
class Found:
    kind: FoundKind
    entry: dict
    result: ScenarioResult
    shrunk: bool = True
    """False when hypothesis could not find the kind again to shrink it (the first example is kept),
    or the first example was a sweep's (minimal as it stands: the plainest case, one edge changed)."""
    swept: bool = False
    audits: int = 0
    """New audits its shrinking made."""
    spent: bool = False
    """Whether its shrinking spent all it may (`search.explore.SHRINK_COST`) and stopped there, perhaps
    short of the minimal."""


@dataclass
class SearchOutcome:
    tried: int = 0
    """Scenarios drawn while exploring, repeats and invalid ones included."""
    audited: int = 0
    """Distinct scenarios audited (drawn, valid, within the limits): the budget counts these."""
    shrinking: int = 0
    """Scenarios tried while shrinking."""
    skipped: Counter = field(default_factory=Counter)
    found: list[Found] = field(default_factory=list)
    problem: str | None = None
    """Why the search stopped early (e.g. every drawn scenario was invalid), or None."""
    unconfirmed: list[Found] = field(default_factory=list)
    """Kinds the literal path did not confirm (it found the minimal scenario consistent): not reported."""
    timed_out: int = 0
    """Audits that timed out, exploring and shrinking: each cost a whole timeout and a fresh worker."""
    not_audited: Counter = field(default_factory=Counter)
    """Drawn scenarios not audited, by the input their furthest-out value lies in and its side of 1
    (`input 1, large`), where audits with theirs there, nearer in, timed out too often
    (`HANGS_PER_ARGUMENT`)."""
    phases: dict[str, float] = field(default_factory=dict)
    """Wall time by phase (`explore`, `shrink`; a survey adds `confirm`): where a slow search spent it."""
