"""The search: explore a space's sweep and draws, then shrink each kind of disagreement found."""

from __future__ import annotations

import gc
import hashlib
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gradaudit.limits import LIMIT_EXCEEDED, Limits, check_limits
from gradaudit.model.errors import InputError
from gradaudit.model.findings import CONSISTENT, FindingClass
from gradaudit.model.found import HANGS_PER_ARGUMENT, Found, FoundKind, SearchOutcome, kind_of
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import Scenario
from gradaudit.search.drawing import flat, scenario_text
from gradaudit.search.spaces import SearchSpace
from gradaudit.sources.scenario_files import load_text


class InvalidDraw(Exception):
    """Raised by a search's `audit` for a drawn scenario that asks nothing (the function rejects its
    own inputs): skipped and counted, like one the loader rejects."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Disagreement(Exception):
    """A drawn scenario of the kind being shrunk."""

    def __init__(self, entry: dict, result: ScenarioResult):
        super().__init__(f"{result.status}: {', '.join(kind_of(result)[1])}")
        self.entry = entry
        self.result = result


def search(
    space: SearchSpace,
    budget: int,
    seed: int,
    audit: Callable[..., ScenarioResult],
    database: Path | None,
    on_progress: Callable[[str], None] = lambda message: None,
    limits: Limits | None = None,
    storage: Path | None = None,
    audit_all: AuditAll | None = None,
) -> SearchOutcome:
    """Explore, then shrink each kind of disagreement found; `audit(scenario)` judges one scenario
    (or raises InvalidDraw), `audit_all(scenarios, skip)` many at once (several workers), in order,
    None for any that `skip(position, known)` said, when its turn came, not to audit (HANGS_PER_ARGUMENT).

    Exploring audits the space's sweep, then `budget` more distinct valid scenarios drawn by
    hypothesis (fewer only when the space holds fewer), and notes the first of each kind. The
    draws are made first and audited together afterwards: hypothesis sees a draw's outcome
    (valid or not) before it is audited, so any that the audit finds invalid (an InvalidDraw) sends
    hypothesis back to draw again, from the start, with those known; its draws repeat up to there,
    and the search is the one a draw-audit-draw loop makes, however many workers audit. Then, per kind,
    hypothesis runs again with the same seed, so it draws the same scenarios (their audits are
    remembered) until the first of that kind, which fails, and shrinks it while the kind holds.
    Two phases rather than hypothesis's own multiple-bug mode, whose generation stops on a clock
    ten seconds after the first failure: this way the same seed gives the same search.
    Hypothesis keeps its own files in `storage` (under .gradaudit/), not in ./.hypothesis.

    The limits are checked here without tracing users' functions (which could hang, or crash this
    process): `audit` checks those that need tracing, under its timeout (the literal engine with
    limits), and answers a draw over them with a LIMIT_EXCEEDED error, taken as an invalid draw.
    """
    with _hypothesis_home(storage), _fresh_hypothesis():
        audit_all = audit_all or _one_by_one(audit)
        return _Search(space, budget, seed, audit_all, database, on_progress, limits).searched()


Skip = Callable[[int, Mapping[int, object]], bool]
"""Whether the scenario at a position of those being audited is no longer to be audited, given the results
known so far by position, in any order (HANGS_PER_ARGUMENT)."""

AuditAll = Callable[[list[Scenario], Skip], Iterable[ScenarioResult | InvalidDraw | None]]
"""Many scenarios audited at once, results in order: None for each that `skip` said not to audit."""


def _one_by_one(audit: Callable[..., ScenarioResult]) -> AuditAll:
    def audit_all(scenarios: list[Scenario], skip: Skip) -> Iterator[ScenarioResult | InvalidDraw | None]:
        known: dict[int, object] = {}
        for position, scenario in enumerate(scenarios):
            if skip(position, known):
                yield None
                continue
            result: ScenarioResult | InvalidDraw
            try:
                result = audit(scenario)
            except InvalidDraw as exc:
                result = exc
            known[position] = result
            yield result

    return audit_all


@contextmanager
def _hypothesis_home(folder: Path | None) -> Iterator[None]:
    """Hypothesis's home folder set to `folder` for the search only, then restored."""
    from hypothesis import configuration

    if folder is None:
        yield
        return
    previous = configuration.storage_directory(intent_to_write=False).home_directory
    configuration.set_hypothesis_home_dir(folder.resolve())
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)


@contextmanager
def _fresh_hypothesis() -> Iterator[None]:
    """Hypothesis as a fresh process has it, so that one seed gives one search whatever the process
    did before (another function surveyed first, `--jobs 0` importing the engines). Two things of
    its internals carry over otherwise: strategies it caches between tests keep state that changes
    later draws (the same search twice in one process drew differently from its seventh draw on),
    and from 6.131 on it draws now and then a constant found in the source of any "local" module
    imported so far (this package installed editable, a user's project). For the search, its
    strategy cache starts empty and it sees no local constants (its global ones stay). Where its
    internals are not as expected, they are left alone. And its weakly held caches empty when the
    garbage collector runs, which depends on everything the process allocated before (importing a
    module of three functions changed a search's draws): the collector runs before the search and
    not during it (cyclic garbage waits until the search ends)."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.strategies._internal import utils
    except ImportError:
        yield
        return
    clear_strategies = getattr(utils, "clear_strategy_cache", lambda: None)
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        with _without_local_constants(providers):
            clear_strategies()
            try:
                yield
            finally:
                clear_strategies()
    finally:
        if collecting:
            gc.enable()


@contextmanager
def _without_local_constants(providers) -> Iterator[None]:
    """Hypothesis's local constants (see `_fresh_hypothesis`) kept out while this lasts."""
    original = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    constants = getattr(providers, "Constants", None)
    if original is None or constants is None or not isinstance(cache, dict):
        yield
        return
    none = constants()
    providers._get_local_constants = lambda: none
    cache.clear()  # permitted constants per kind of choice, computed with the local ones
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.clear()


class _Search:
    """One search's state (see `search`): what was drawn, loaded and audited, by scenario text."""

    def __init__(self, space: SearchSpace, budget: int, seed: int, audit_all, database, on_progress, limits):
        self.space, self.budget, self.seed = space, budget, seed
        self.audit_all, self.database, self.on_progress, self.limits = audit_all, database, on_progress, limits
        self.outcome = SearchOutcome()
        self.loaded: dict[str, Scenario | None] = {}
        """Each drawn scenario's text: the scenario, or None where it is invalid (or over the limits)."""
        self.judged: dict[str, ScenarioResult | None] = {}
        """Each audited scenario's text: its result, or None where the audit found the draw invalid."""
        self.over: dict[tuple, str] = {}
        """Why draws of each `Scenario.limits_key` are over the limits, once an audit found one that is."""
        self.entries: dict[str, dict] = {}
        """Each drawn scenario's entry, by its text."""
        self.hangs: dict[Place, list[float]] = {}
        """How far out the audits that timed out lay, by where their furthest-out value lies (`outermost`)."""
        self.unaudited: set[str] = set()
        """Drawn scenarios not audited: HANGS_PER_ARGUMENT audits with their furthest-out value at the same
        place (`outermost`), as far out or nearer in, had timed out."""
        self.swept = {scenario_text(entry) for entry in space.sweep()}
        self.total = budget + len(self.swept)
        self.drawn: dict[str, dict] = {}
        """The distinct valid draws of the last pass, in the order drawn."""

    def load(self, text: str) -> Scenario | None:
        if text not in self.loaded:
            errors: Sequence[InputError]
            scenarios, errors = load_text(text, self.space.file)
            if scenarios and not errors and self.limits is not None:
                errors = check_limits(scenarios, self.limits, trace=False)
            key = scenarios[0].limits_key() if scenarios and not errors else None
            known = self.over.get(key) if key is not None else None
            self.loaded[text] = scenarios[0] if scenarios and not errors and known is None else None
            if self.loaded[text] is None:
                reason = known or (_reason(str(errors[0].message)) if errors else "no scenario")
                self.outcome.skipped[reason] += 1
        return self.loaded[text]

    def settle(self, texts: list[str], exploring: bool = True) -> None:
        """Audit `texts` (valid, not yet audited), all at once (while exploring: saying how many are done),
        the nearest to ordinary values first; none further out at a place (`outermost`) than HANGS_PER_ARGUMENT
        audits there that timed out."""
        order = sorted(texts, key=lambda text: outermost(self.entries[text])[0])
        where = [outermost(self.entries[text]) for text in order]

        counted = 0  # positions the account below has taken (their timeouts are in self.hangs)

        def skip(position: int, known: Mapping[int, object]) -> bool:
            """Whether the account below will leave it out for sure: with the timeouts known so far before it
            at its place (in any order), it does whether or not those are audited themselves."""
            place = where[position][1]
            hung = [
                where[j][0] for j, r in known.items() if counted <= j < position and where[j][1] == place and _hung(r)
            ]
            return self.hung(*where[position], hung)

        results = self.audit_all([self.loaded[t] for t in order], skip)
        for number, (text, (distance, place), result) in enumerate(zip(order, where, results, strict=True), 1):
            counted = number
            if self.hung(distance, place):
                self.unaudited.add(text)
                self.outcome.not_audited[f"input {place[0] + 1}, {place[1]}"] += 1
                continue
            assert result is not None, "only a scenario of an argument that hung is left unaudited"
            if (
                isinstance(result, ScenarioResult)
                and result.findings
                and result.findings[0].error_type == LIMIT_EXCEEDED
            ):
                result = InvalidDraw(result.findings[0].message)
                scenario = self.loaded[text]
                assert scenario is not None, "only scenarios that loaded are audited"
                key = scenario.limits_key()
                if key is not None:
                    self.over[key] = _reason(result.message)  # every draw of that key is, too: no more audits of them
            self.judged[text] = None if isinstance(result, InvalidDraw) else result
            if _hung(result):
                self.outcome.timed_out += 1
                self.hangs.setdefault(place, []).append(distance)
            if isinstance(result, InvalidDraw):
                self.outcome.skipped[_reason(result.message)] += 1
            if exploring:
                self.on_progress(f"{number} of {len(texts)} drawn scenarios audited")

    def hung(self, distance: float, place: Place, also: Sequence[float] = ()) -> bool:
        """Whether HANGS_PER_ARGUMENT audits with their furthest-out value at `place`, `distance` or nearer in,
        have timed out (those settled, and `also`: how far out others lay)."""
        return sum(nearer <= distance for nearer in (*self.hangs.get(place, ()), *also)) >= HANGS_PER_ARGUMENT

    def evaluate(self, entry: dict) -> ScenarioResult:
        from hypothesis import reject

        text = scenario_text(entry)
        self.entries.setdefault(text, entry)
        if self.load(text) is not None and text not in self.judged and text not in self.unaudited:
            self.settle([text], exploring=False)
        result = self.judged.get(text) if self.loaded[text] is not None else None
        if result is None:
            reject()
        return result

    def run(self, test: Callable, phases: tuple, folder: Path | None, examples: int | None = None) -> None:
        """`test` under hypothesis with the space's strategy and the search's seed. The sweep is not
        given to hypothesis as explicit examples: it pretty-prints each of those whatever the verbosity
        (slower than noting the entry), and they change nothing it draws."""
        from hypothesis import HealthCheck, Verbosity, given, settings
        from hypothesis import seed as seeded
        from hypothesis.database import DirectoryBasedExampleDatabase

        test = given(self.space.strategy())(test)
        settings(
            max_examples=self.budget if examples is None else examples,
            database=DirectoryBasedExampleDatabase(str(folder)) if folder else None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            phases=phases,
            verbosity=Verbosity.quiet,
            print_blob=False,
        )(seeded(self.seed)(test))()

    def explore(self, entry: dict) -> None:
        """One draw of the exploring pass: noted if valid and new, until the budget is drawn."""
        from hypothesis import reject

        if not self.noted(entry):
            reject()

    def noted(self, entry: dict) -> bool:
        """Note an entry of the exploring pass (swept or drawn); whether it is valid."""
        if len(self.drawn) >= self.total:
            raise BudgetSpent  # hypothesis replays the example that stopped it: it stops there again
        self.outcome.tried += 1
        text = scenario_text(entry)
        if self.load(text) is None or (text in self.judged and self.judged[text] is None):
            return False
        self.drawn.setdefault(text, entry)
        self.entries.setdefault(text, entry)
        self.on_progress(f"{len(self.drawn)} of {self.total} scenarios drawn")
        return True

    def explored(self) -> dict[FoundKind, tuple[dict, ScenarioResult]]:
        """Explore until a pass's draws all audit as valid; the first draw of each kind found."""
        from hypothesis import Phase
        from hypothesis.errors import Unsatisfiable

        while True:
            self.drawn.clear()
            self.outcome.tried = 0
            try:
                # Draws that repeat a scenario, or are invalid, do not count: draw until `budget`
                # distinct ones are audited.
                for entry in self.space.sweep():
                    self.noted(entry)
                self.run(self.explore, (Phase.generate,), None, examples=self.budget * EXPLORE_DRAWS)
            except (Unsatisfiable, BudgetSpent):
                pass
            new = [text for text in self.drawn if text not in self.judged and text not in self.unaudited]
            self.settle(new)
            if all(text in self.unaudited or self.judged[text] is not None for text in new):
                break  # every draw hypothesis took as valid was: the pass stands
            if len(self.judged) >= HOPELESS_AUDITS and all(result is None for result in self.judged.values()):
                self.outcome.audited = 0
                return {}  # the function rejects everything drawn: the space, not the draws, is wrong
        self.outcome.audited = sum(text not in self.unaudited for text in self.drawn)
        first: dict[FoundKind, tuple[dict, ScenarioResult]] = {}
        for text, entry in self.drawn.items():
            if text in self.unaudited:
                continue
            result = self.judged[text]
            assert result is not None, "the last pass drew only scenarios audited as valid"
            if result.status != CONSISTENT:
                first.setdefault(kind_of(result), (entry, result))
        return first

    def shrinker(self, kind: FoundKind, number: int, of: int, spent: _Shrinking, hangs: bool) -> Callable[[dict], None]:
        """Hypothesis's test while shrinking `kind`: each new audit costs 1, or TIMED_OUT_COST where the
        kind `hangs` (timed out); one that times out while shrinking any other kind spends what is left."""
        each = TIMED_OUT_COST if hangs else 1

        def shrink(entry: dict) -> None:
            self.outcome.shrinking += 1
            self.on_progress(f"shrinking kind {number} of {of}: {self.outcome.shrinking} scenarios tried")
            new = scenario_text(entry) not in self.judged
            if new:
                if spent.cost >= SHRINK_COST:
                    return  # spent: only scenarios already audited count now, so hypothesis settles
                spent.audits += 1
                spent.cost += each
            result = self.evaluate(entry)
            if new and not hangs and _timed_out(result):
                spent.cost = SHRINK_COST  # a kind that did not time out has wandered into inputs that hang
            if result.status != CONSISTENT and kind_of(result) == kind:
                raise Disagreement(entry, result)

        return shrink

    def shrunk(self, kind: FoundKind, number: int, of: int, entry: dict, result: ScenarioResult) -> Found:
        """The kind's plainest scenario: as swept, or shrunk by hypothesis within SHRINK_COST (a kind
        that timed out: each of its audits may cost a timeout, so each counts TIMED_OUT_COST)."""
        from hypothesis import Phase

        if scenario_text(entry) in self.swept:
            return Found(kind, entry, result, shrunk=False, swept=True)
        folder = self.database / hashlib.sha256(repr(kind).encode()).hexdigest()[:16] if self.database else None
        spent = _Shrinking()
        try:
            test = self.shrinker(kind, number, of, spent, _timed_out(result))
            self.run(test, (Phase.reuse, Phase.generate, Phase.shrink), folder)
        except Disagreement as minimal:
            return Found(kind, minimal.entry, minimal.result, audits=spent.audits, spent=spent.cost >= SHRINK_COST)
        return Found(kind, entry, result, shrunk=False, audits=spent.audits, spent=spent.cost >= SHRINK_COST)

    def searched(self) -> SearchOutcome:
        started = time.perf_counter()
        first = self.explored()
        outcome = self.outcome
        outcome.phases["explore"] = round(time.perf_counter() - started, 1)
        if not outcome.audited:
            reasons = (
                "; ".join(f"{reason}: {n}" for reason, n in outcome.skipped.most_common(3)) or "none could be drawn"
            )
            outcome.problem = f"no valid scenario could be drawn from this space ({reasons})"
            return outcome
        started = time.perf_counter()
        for number, kind in enumerate(sorted(first), 1):
            outcome.found.append(self.shrunk(kind, number, len(first), *first[kind]))
        outcome.phases["shrink"] = round(time.perf_counter() - started, 1)
        return outcome


SHRINK_COST = 60
"""What shrinking one kind may spend, in audits: past it, hypothesis settles on the smallest scenario
of the kind audited so far. A count, not seconds, so that a loaded machine shrinks as far as an idle
one and the same seed writes the same files."""

TIMED_OUT_COST = 15
"""What each new audit shrinking a kind that timed out counts against SHRINK_COST: it may take a whole
timeout and a fresh worker, where most audits take a fraction of a second; such a kind tries four at
most. Shrinking a kind that did not time out stops at the first new audit that does: past it, its
scenarios hang and each costs a timeout (docs/survey.md, "Isolation")."""


def outermost(entry: dict) -> tuple[float, Place]:
    """How far out an entry's values lie, in decades from 1 (a non-finite value infinitely far), and where
    the furthest lies: its input's position, and which side of 1 (`large` or `small`: a function that
    hangs on large values may be fine on tiny ones)."""
    furthest, place = -1.0, (0, "small")
    for position, spec in enumerate(entry.get("inputs", [])):
        for value in flat(spec.get("value")):
            if _decades(value) > furthest:
                side = "small" if _decades(value) and abs(float(value)) < 1 else "large"
                furthest, place = _decades(value), (position, side)
    return max(furthest, 0.0), place


Place = tuple[int, str]
"""Where in a scenario its furthest-out value lies: its input's position, and `large` or `small`."""


def _decades(value) -> float:
    try:
        size = abs(float(value))
    except (TypeError, ValueError):
        return 0.0
    if not math.isfinite(size):
        return math.inf
    return abs(math.log10(size)) if size else 0.0


HOPELESS_AUDITS = 200
"""Draws the audit found invalid, none valid, after which a search stops exploring: a space whose
function rejects whatever it is given would otherwise draw and audit on for thousands."""


@dataclass
class _Shrinking:
    """What shrinking one kind has spent: new audits, and their cost (SHRINK_COST, TIMED_OUT_COST)."""

    audits: int = 0
    cost: int = 0


def _timed_out(result: ScenarioResult) -> bool:
    return any(f.finding_class == FindingClass.TIMED_OUT for f in result.findings)


def _hung(result: object) -> bool:
    """Whether an audit's answer is a result that timed out."""
    return isinstance(result, ScenarioResult) and _timed_out(result)


class BudgetSpent(Exception):
    """Raised into hypothesis once the budget of distinct scenarios is audited, to stop its drawing."""


EXPLORE_DRAWS = 10
"""Draws hypothesis may make per scenario of the budget, so repeats and invalid draws cannot shorten
the search; a space with fewer distinct valid scenarios ends when hypothesis has drawn them all."""


CONFIRM_PATIENCE = 4.0
"""How many times the timeout a kind that timed out is given when it is confirmed (`confirm`) ..."""
CONFIRM_EXTRA_MOST = 60.0
"""... but at most this many seconds more: a search's default timeout of 600 s gets 660 s, not 40 minutes."""


def patient(timeout: float) -> float:
    """The timeout a kind that timed out is confirmed under."""
    return min(CONFIRM_PATIENCE * timeout, timeout + CONFIRM_EXTRA_MOST)


def _reason(message: str) -> str:
    """A skip reason without the scenario's name, so that equal reasons count together."""
    return re.sub(r"^scenario '[^']*' ", "", message)


def confirm(outcome: SearchOutcome, space: SearchSpace, audit: Callable[..., ScenarioResult], timeout: float) -> None:
    """Each minimal scenario audited again by `audit` (the literal path), whose result is what is
    reported; one the literal path finds consistent is set aside as unconfirmed. A timeout alone cannot
    tell a function that is stuck from one that is slow (compiling every path alone, cold, or on a loaded
    machine), so a kind that timed out is confirmed under a longer `patient` timeout than the search's
    `timeout`, and so is one whose confirmation times out: what that audit finds is reported, a timeout
    only if it times out too."""
    confirmed: list[Found] = []
    longer = patient(timeout)
    for found in outcome.found:
        scenarios, _ = load_text(scenario_text(found.entry), space.file)
        hung = _timed_out(found.result)
        found.result = audit(scenarios[0], timeout=longer) if hung else audit(scenarios[0])
        if _timed_out(found.result) and not hung:
            found.result = audit(scenarios[0], timeout=longer)
        (confirmed if found.result.status != CONSISTENT else outcome.unconfirmed).append(found)
    outcome.found = confirmed
