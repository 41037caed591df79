"""What judging finds, as data: statuses, findings, notes and provenance (no JAX)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

VALUE_RAISED = "evaluating the function raised"
"""How the finding begins when the plain value raised: nothing else could be checked."""
IEEE_NAN = "NaN against a number only, where something is not finite"
"""What a note says of a disagreement set aside as IEEE arithmetic (0 × inf) between modes: one a
path's jit twin may still show to be real."""


class Status(StrEnum):
    """A scenario's verdict."""

    CONSISTENT = "consistent"
    MISMATCH = "mismatch"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    """A Ctrl-C stopped it before it finished (counted in summaries only when present)."""


CONSISTENT, MISMATCH, ERROR, INTERRUPTED = Status.CONSISTENT, Status.MISMATCH, Status.ERROR, Status.INTERRUPTED
STATUSES: tuple[Status, ...] = (CONSISTENT, MISMATCH, ERROR)
"""The statuses of a finished scenario, in the order summaries count them."""


class Kind(StrEnum):
    """What a finding says: a derivative sent to the wrong input, blocks that differ, an exception."""

    ROUTING = "routing"
    DISAGREEMENT = "disagreement"
    RAISED = "raised"


ROUTING, DISAGREEMENT, RAISED = Kind.ROUTING, Kind.DISAGREEMENT, Kind.RAISED

Sources = tuple[int, ...]
"""The arguments an output element depends on, by index (empty: none)."""


@dataclass(frozen=True)
class Finding:
    """One disagreement (or note): which paths, where, and what each said."""

    kind: Kind
    paths: tuple[str, ...]
    message: str
    count: int = 1
    """How many output elements (routing) or derivative entries (disagreement, note) are affected."""
    of: int = 1
    """Out of how many."""
    location: str | None = None
    """The first affected entry, as `d out[i]/d case k[j]`, or output element for routing."""
    values: dict[str, float] = field(default_factory=dict)
    """What each path gave at that entry."""
    error_type: str | None = None
    """For `raised`: the exception's type."""
    magnitude: float = 0.0
    """How many times its tolerance the largest difference among the affected entries is (inf where
    only one side is finite): how the terminal picks a scenario's largest disagreement."""
    wrong: str = ""
    """The class of the wrong value (see `wrong_class`): zero, nan, inf, a constant ratio, or value."""
    entries: str = ""
    """A stable summary of which entries (or output elements) are affected: `count/of#hash`."""

    @property
    def signature(self) -> str:
        """The kind and the paths (and the exception's type): what a search calls one kind of disagreement."""
        key = f"{self.kind}:{'+'.join(sorted(self.paths))}"
        return f"{key}:{self.error_type}" if self.error_type else key

    @property
    def fingerprint(self) -> str:
        """How a baseline and `diff` recognise a finding: its signature, the class of the wrong value
        and which entries, never line numbers or the values themselves. Two findings are the same
        when all three agree (see docs/judging.md, "What makes two findings the same")."""
        return "|".join(part for part in (self.signature, self.wrong, self.entries) if part)

    def to_dict(self) -> dict:
        """As reports keep it; `entries` lives in the fingerprint, and a field with nothing to say
        (no location, no values, no class of wrong value) is left out."""
        return {"fingerprint": self.fingerprint, "kind": self.kind, **_described(self), **({"wrong": self.wrong} if self.wrong else {})}


@dataclass(frozen=True)
class Note:
    """What the audit saw but did not count against a scenario: a kink, a path that does not apply,
    an entry without a finite-difference estimate, a retried worker."""

    message: str
    paths: tuple[str, ...] = ()
    count: int = 1
    of: int = 1
    location: str | None = None
    values: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"kind": "note", **_described(self)}


def _described(said: Finding | Note) -> dict:
    """What findings and notes both say, as reports keep it."""
    described = {"paths": list(said.paths), "message": said.message, "count": said.count, "of": said.of}
    if said.location is not None:
        described["location"] = said.location
    if said.values:
        described["values"] = said.values
    return described


@dataclass(frozen=True)
class Provenance:
    """Per output element: which argument supplied the value, and where each AD path sends its derivative."""

    output_shape: tuple[int, ...]
    value_from: tuple[Sources, ...]
    routes: dict[str, tuple[Sources, ...]]

    def to_list(self, arg_names: tuple[str, ...]) -> list[dict]:
        entries = []
        for flat, sources in enumerate(self.value_from):
            entry = {
                "element": [int(i) for i in np.unravel_index(flat, self.output_shape)] if self.output_shape else [],
                "value_from": [arg_names[i] for i in sources],
            }
            for path, routes in self.routes.items():
                entry[path] = [arg_names[i] for i in routes[flat]]
            entries.append(entry)
        return entries


@dataclass(frozen=True)
class Verdict:
    status: str
    findings: tuple[Finding, ...]
    provenance: Provenance | None
    notes: tuple[Note, ...] = ()
