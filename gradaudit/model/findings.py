"""What judging finds, as data: statuses, findings, notes and provenance (no JAX)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from gradaudit.model.paths import PathResult

VALUE_RAISED = "evaluating the function raised"
"""How the finding begins when the plain value raised: nothing else could be checked."""


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


class FindingClass(StrEnum):
    """What kind of wrong a finding is, decided entry by entry from the evidence there
    (`judging.classes`; docs/judging.md, "Classes"). Listed in the order reports rank them."""

    CRASHED = "crashed"
    TIMED_OUT = "timed-out"
    RAISED = "raised"
    WRONG = "wrong"
    """A derivative that disagrees where the function is smooth and every number around it finite."""
    EAGER_JIT = "eager-jit"
    """The same transform answers differently eagerly and under jit, or per binding of an integer."""
    LEAK = "leak"
    """NaN or inf at an entry whose own input and output are finite, from a non-finite value elsewhere."""
    NON_FINITE = "non-finite"
    """Confined to entries whose own input or output is not finite, or whose derivative overflows."""
    NON_DIFFERENTIABLE = "non-differentiable"
    """At a kink, jump, tie or staircase: the paths pick different one-sided derivatives."""
    UNJUDGED = "unjudged"
    """A narrow dtype's AD strays from float64's where the narrow dtype computes the function elsewhere (it rounds
    inside), and float64's evidence fits a rule's error and the function's own rounding alike: gradaudit cannot
    tell which, and says so (`judging.referee`)."""


CLASSES: tuple[FindingClass, ...] = tuple(FindingClass)
"""Every class, most severe first: how reports and the survey rank findings."""
FAIL_ON_DEFAULT: tuple[FindingClass, ...] = (
    FindingClass.CRASHED,
    FindingClass.TIMED_OUT,
    FindingClass.RAISED,
    FindingClass.WRONG,
    FindingClass.EAGER_JIT,
    FindingClass.LEAK,
)
"""The classes that fail the gate unless `fail_on` says otherwise: each has something to fix."""
CRASH_TYPES = {"WorkerCrash": FindingClass.CRASHED, "TimeoutError": FindingClass.TIMED_OUT}
"""Exception types of a scenario its engine could not finish: a worker that died, or a hang."""


def raised_class(error_type: str | None) -> FindingClass:
    """The class of a `raised` finding: crashed and timed-out runs apart from exceptions paths raised."""
    return CRASH_TYPES.get(error_type or "", FindingClass.RAISED)


def without_class(fingerprint: str) -> str:
    """A fingerprint as reports before classes wrote it (form 2): for baselines and diffs across forms."""
    head, _, rest = fingerprint.partition(":")
    # `raised` is a class and a kind: a class is stripped only where a kind follows it.
    return rest if head in CLASSES and rest.partition(":")[0] in tuple(Kind) else fingerprint


Sources = tuple[int, ...]
"""The arguments an output element depends on, by index (empty: none)."""


def _index_text(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]" if index else ""


def location_text(out: tuple[int, ...], order: int = 0, name: str = "", at: tuple[int, ...] = ()) -> str:
    """How findings name an entry: `out[i]` (a value), `d out[i]/d x[j]` (a first derivative),
    `d2 out[i]/d x d y[j, k]` (a second); `parse_location` reads it back."""
    if order == 0:
        return f"out{_index_text(out)}"
    symbol = "d" if order == 1 else f"d{order}"
    return f"{symbol} out{_index_text(out)}/d {name}{_index_text(at)}"


def parse_location(location: str, names: tuple[str, ...]) -> tuple[int, tuple[int, ...], str, tuple[int, ...]] | None:
    """(order, output index, block name, index within the block) of a `location_text`, the block
    name one of `names` (the longest that fits: a pytree leaf's name may hold brackets); None where
    it is not one."""

    def index(text: str) -> tuple[int, ...] | None:
        if not text:
            return ()
        if not (text.startswith("[") and text.endswith("]")):
            return None
        try:
            return tuple(int(part) for part in text[1:-1].split(","))
        except ValueError:
            return None

    if location.startswith("out"):
        out = index(location[3:])
        return None if out is None else (0, out, "", ())
    head, _, rest = location.partition(" out")
    order = 1 if head == "d" else int(head[1:]) if head[1:].isdigit() else 0
    out_text, slash, block = rest.partition("/d ")
    out = index(out_text)
    if not order or not slash or out is None:
        return None
    for name in sorted(names, key=len, reverse=True):
        at = index(block[len(name) :]) if block.startswith(name) else None
        if at is not None:
            return order, out, name, at
    return None


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
    """The form of the wrong value (see `wrong_class`): zero, nan, inf, a constant ratio, or value."""
    entries: str = ""
    """A stable summary of which entries (or output elements) are affected: `count/of#hash`."""
    finding_class: FindingClass = FindingClass.WRONG
    """What kind of wrong it is (JSON key `class`), decided from the evidence at its entries."""
    reason: str = ""
    """Why it has its class, in words with the numbers that decided it (inputs, output and finite
    differences at the entry)."""
    evidence: dict[str, float] = field(default_factory=dict)
    """The numbers that decided the class, by name: `input`, `output`, finite-difference estimates."""

    @property
    def signature(self) -> str:
        """The kind and the paths (and the exception's type): what a search calls one kind of disagreement."""
        key = f"{self.kind}:{'+'.join(sorted(self.paths))}"
        return f"{key}:{self.error_type}" if self.error_type else key

    @property
    def fingerprint(self) -> str:
        """How a baseline and `diff` recognise a finding: its signature, the class of the wrong value
        and which entries, never line numbers or the values themselves. Two findings are the same
        when all agree (see docs/judging.md, "What makes two findings the same")."""
        return f"{self.finding_class}:" + "|".join(part for part in (self.signature, self.wrong, self.entries) if part)

    @property
    def labelled(self) -> str:
        """`[class] message`: how every plain-text output leads with what kind of wrong it is."""
        return f"[{self.finding_class}] {self.message}"

    @property
    def rank(self) -> int:
        """Its class's place among CLASSES: lower is more severe."""
        return CLASSES.index(self.finding_class)

    @property
    def fails_by_default(self) -> bool:
        return self.finding_class in FAIL_ON_DEFAULT

    def to_dict(self) -> dict:
        """As reports keep it; `entries` lives in the fingerprint, and a field with nothing to say
        (no location, no values, no form of wrong value, no evidence) is left out."""
        return {
            "fingerprint": self.fingerprint,
            "kind": self.kind,
            "class": str(self.finding_class),
            **_described(self),
            **({"wrong": self.wrong} if self.wrong else {}),
            **({"reason": self.reason} if self.reason else {}),
            **({"evidence": self.evidence} if self.evidence else {}),
        }


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


@dataclass(frozen=True, eq=False)
class Compared:
    """What the judge compared one family's AD paths with, for the outputs that draw it (the HTML
    pictures), so that they show the judge's comparison and not one of their own."""

    order: int
    """1: the Jacobians, 2: the Hessians."""
    reference: PathResult | None
    """The reference the judge trusted (finite differences, refined by probes where it refined them);
    None: no reference ran, and AD paths were compared with each other."""
    rtol: float
    atol: float
    """The tolerance of the comparison with the reference (or between AD paths), the run's options in it."""
    excluded: tuple[np.ndarray, ...] = ()
    """Per block, a boolean mask of entries not compared with the reference (a kink, no finite estimate)."""
    allowance: tuple[np.ndarray, ...] = ()
    """Per block, the rounding a difference quotient can hide at each entry, which the comparison allowed beside the
    tolerance (empty: none). Where it is more than the tolerance the estimate resolves no slope closely
    (`loose`)."""

    @property
    def loose(self) -> tuple[np.ndarray, ...]:
        """Per block, the compared entries whose allowance is more than the tolerance there (empty: none known)."""
        if self.reference is None or not self.reference.ok or len(self.allowance) != len(self.excluded):
            return ()
        masks = []
        for estimate, allowance, excluded in zip(self.reference.ok_arrays, self.allowance, self.excluded, strict=True):
            estimate = np.asarray(estimate, dtype=np.float64)
            if np.shape(allowance) != estimate.shape or np.shape(excluded) != estimate.shape:
                return ()
            with np.errstate(invalid="ignore", over="ignore"):
                masks.append((allowance > self.atol + self.rtol * np.abs(estimate)) & ~np.asarray(excluded, bool))
        return tuple(masks)


@dataclass(frozen=True)
class Verdict:
    status: str
    findings: tuple[Finding, ...]
    provenance: Provenance | None
    notes: tuple[Note, ...] = ()
    unchecked: tuple[int, int] = (0, 0)
    """(entries finite differences could not check: kinks, no estimate, a step lost in rounding;
    first-order entries in all): a consistent verdict with every entry unchecked says so."""
    absolute_only: int = 0
    """First-order entries an AD path passed only within the absolute tolerance where finite differences
    resolve them (`fd_trust.passed_by_absolute`): a finer dtype checks them more closely."""
    unresolved: bool = False
    """Finite differences left entries a finer dtype may resolve (`judge._unresolved`): the referee checks them."""
    compared: tuple[Compared, ...] = ()
    """Each family's comparison (`Compared`)."""
    misrouted: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Per AD path, the output elements whose derivative a routing finding says it sends elsewhere."""
