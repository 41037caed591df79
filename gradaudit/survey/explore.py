"""The survey: every surveyed function explored by `gradaudit search`'s machinery, each kind of
disagreement shrunk to a scenario file, and one report of them all.

A draw whose function rejects its own inputs (the plain value raises) asks nothing and is skipped,
as the loader's rejections are; anything else that is not consistent is a kind: paths disagreeing,
eager against jit, an exception on some paths only, or AD against finite differences where the
function is smooth (the judge's kink-aware comparison keeps documented conventions at kinks out).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gradaudit.merge import disjoint, same_environment
from gradaudit.model.errors import did_you_mean
from gradaudit.model.findings import CONSISTENT, RAISED, STATUSES, VALUE_RAISED
from gradaudit.model.found import SearchOutcome
from gradaudit.model.paths import VALUE
from gradaudit.model.results import ScenarioResult
from gradaudit.search import InvalidDraw, confirm, search, write_found
from gradaudit.search.explore import AuditAll, Skip
from gradaudit.search.found_files import numbered
from gradaudit.sources.saved_reports import ReportError, read_json
from gradaudit.survey import defects, surface
from gradaudit.survey.strategy import SurveySpace
from gradaudit.survey.table import TABLE, Surveyed

SURVEY_SCHEMA = "gradaudit.survey/1"

SURVEY_TIMEOUT = 15.0
"""Seconds a survey's draw may take unless --timeout says otherwise: a draw takes a few at most
(its first compilations), and LAPACK can loop for ever on a matrix holding inf (jnp.linalg.svd on
JAX 0.10.2, CPU), which the edge sweep meets in every function it feeds."""


class UnknownFunction(ValueError):
    """A function name the table does not hold; the message suggests near names."""


def spaces(names: Sequence[str] = ()) -> list[SurveySpace]:
    """The spaces to survey: every entry of the table, or those whose public path (or short name)
    is in `names`. A function with several entries (select_n with one, two and three cases) gets
    names `lax.select_n`, `lax.select_n.2`, …"""
    counted: dict[str, int] = {}
    every = []
    for entry in TABLE:
        counted[entry.short] = counted.get(entry.short, 0) + 1
        number = counted[entry.short]
        every.append(SurveySpace(entry, entry.short if number == 1 else f"{entry.short}.{number}"))
    if not names:
        return every
    wanted = set(table_names(names).values())
    return [space for space in every if space.surveyed.path in wanted or space.surveyed.short in wanted]


def table_names(names: Sequence[str]) -> dict[str, str]:
    """Each name as the table knows it: itself, or the entry that surveys it under another public name
    (a function JAX exports twice, a call written out in wrappers.py), so that `jax.lax.scan` or
    `jax.numpy.tanh` is surveyed as a user names it. A name the survey leaves out raises UnknownFunction
    with the reason it is left out; a name it has never heard of, with the nearest it knows."""
    known = {e.path for e in TABLE} | {e.short for e in TABLE}
    accounted = surface.accounted()
    found = {}
    for name in names:
        seen = [name]
        while seen[-1] not in known:
            path = seen[-1] if seen[-1] in accounted else f"jax.{seen[-1]}"
            reason = accounted.get(path)
            if reason is None:
                # other public names of table entries (one hop: a name resolving to a left-out one leads nowhere)
                aliases = {
                    path
                    for path, why in accounted.items()
                    if any(why.startswith(p) and why[len(p) :] in known for p in SURVEYED_AS)
                }
                hint = did_you_mean(name, sorted(known | aliases), 3, quoted=False)
                hint = hint or " (gradaudit survey --list shows them all)"
                raise UnknownFunction(f"no surveyed function is named '{name}'{hint}")
            other = next((reason[len(p) :] for p in SURVEYED_AS if reason.startswith(p)), None)
            if other is None or other in seen:
                raise UnknownFunction(f"the survey leaves '{name}' out: {reason} (gradaudit survey --left-out)")
            seen.append(other)
        found[name] = seen[-1]
    return found


SURVEYED_AS = ("surveyed as ", "the same function as ")
"""How surface.accounted() says that a public name is surveyed under another."""


def estimated_cost(space: SurveySpace, budget: int) -> int:
    """A function's survey cost in argument-draws: its sweep and budget, times its arguments (each is
    differentiated, drawn and compared); shrinking, which only a survey itself can tell, aside."""
    return (len(space.sweep()) + budget) * len(space.surveyed.signature)


def shard(chosen: Sequence[SurveySpace], k: int, n: int, budget: int) -> list[SurveySpace]:
    """Shard `k` of `n`: the longest surveys first, each to the shard with the least cost so far
    (ties: the lower shard), so that shards are balanced and none is empty while there are at least
    `n` functions; every machine computes the same split. In the table's order."""
    costs = [0] * n
    owner: dict[str, int] = {}
    for space in sorted(chosen, key=lambda space: (-estimated_cost(space, budget), space.name)):
        least = min(range(n), key=lambda index: (costs[index], index))
        costs[least] += estimated_cost(space, budget)
        owner[space.name] = least + 1
    return [space for space in chosen if owner[space.name] == k]


def _invalid(result: ScenarioResult) -> InvalidDraw | None:
    """A draw whose plain value raises (the function rejects its own inputs): skipped, not a kind."""
    first = result.findings[0] if result.findings else None
    if (
        first is not None
        and first.kind == RAISED
        and first.paths == (VALUE,)
        and first.message.startswith(VALUE_RAISED)
    ):
        return InvalidDraw(
            f"the function rejects these inputs: {first.error_type or first.message.split(' raised ')[1].split(':')[0]}"
        )
    return None


def screened(audit: Callable[..., ScenarioResult]) -> Callable[..., ScenarioResult]:
    """`audit`, with a draw whose plain value raises turned into an InvalidDraw (raised)."""

    def judged(scenario) -> ScenarioResult:
        result = audit(scenario)
        invalid = _invalid(result)
        if invalid is not None:
            raise invalid
        return result

    return judged


def screened_all(audit_all: Callable[[list, Skip], Iterable[ScenarioResult | None]]) -> AuditAll:
    """`audit_all`, with each draw whose plain value raises given as an InvalidDraw."""

    def judged(scenarios: list, skip: Skip) -> Iterator[ScenarioResult | InvalidDraw | None]:
        for result in audit_all(scenarios, skip):
            yield result if result is None else _invalid(result) or result

    return judged


@dataclass
class FunctionSurvey:
    """One function's survey: its search, and the files its kinds were written to."""

    space: SurveySpace
    outcome: SearchOutcome
    files: list[Path] = field(default_factory=list)
    scripts: dict[str, Path] = field(default_factory=dict)
    """Each kind's file -> its plain-JAX script, where its result has a disagreement a script can show
    (written by the caller: `render.repro.write_beside`)."""
    seconds: float = 0.0
    """Wall time of its search, shrinking, confirming and writing its files (its scripts are written after)."""

    @property
    def worst(self) -> str:
        statuses = [found.result.status for found in self.outcome.found] or [CONSISTENT]
        return max(statuses, key=STATUSES.index)


def survey_one(
    space: SurveySpace, budget: int, seed: int, auditor, out: Path, how: str, limits, on_progress
) -> FunctionSurvey:
    """Explore one function, shrink and confirm each kind, write its files (`auditor`: `service.isolated`'s)."""
    started = time.perf_counter()
    outcome = search(
        space,
        budget,
        seed,
        screened(auditor.screen),
        None,
        on_progress,
        limits,
        audit_all=screened_all(auditor.screen_all),
    )
    confirming = time.perf_counter()
    if outcome.found:
        confirm(outcome, space, auditor.audit, auditor.options.timeout)
    files = write_found(outcome, space, out, how) if not outcome.problem else []
    remove_scripts(space, out)
    outcome.phases["confirm"] = round(time.perf_counter() - confirming, 1)
    return FunctionSurvey(space, outcome, files, {}, round(time.perf_counter() - started, 1))


def survey_each(
    chosen: Sequence[SurveySpace],
    budget: int,
    seed: int,
    auditor,
    out: Path,
    how: str,
    limits,
    on_progress: Callable[[str, int, str], None],
    write_scripts: Callable[[list[tuple[ScenarioResult, Path]]], dict[str, Path]],
) -> Iterator[FunctionSurvey]:
    """Each function of `chosen` surveyed in turn (`survey_one`), its plain-JAX scripts written beside
    its files by `write_scripts` (`render.repro.write_beside`, handed in: the survey renders nothing),
    and yielded once whole, so that a caller stopped between two keeps every function finished.
    `on_progress(name, number, message)` hears how each one goes."""
    for number, space in enumerate(chosen, 1):

        def tell(message: str, name: str = space.name, number: int = number) -> None:
            on_progress(name, number, message)

        one = survey_one(space, budget, seed, auditor, out, how, limits, tell)
        kinds = zip(one.outcome.found, one.files, strict=False)  # no files where the search had a problem
        one.scripts = write_scripts([(found.result, path) for found, path in kinds])
        yield one


def remove_scripts(space: SurveySpace, out: Path) -> None:
    """An earlier survey's plain-JAX scripts of this function (`<name>-<n>.py`): its kinds may be gone
    (the survey refused to start where any was not its own: `foreign_files`)."""
    for stale in numbered(out, space.name, ".py"):
        stale.unlink()


def report_document(surveyed: Sequence[FunctionSurvey], environment: dict, budget: int, seed: int) -> dict:
    """The survey report (`gradaudit.survey/1`): per function its draws, skips and kinds, each with
    its reproducer file and findings."""
    functions = []
    for one in surveyed:
        entry: Surveyed = one.space.surveyed
        functions.append(
            {
                "name": one.space.name,
                "function": entry.path,
                "signature": list(entry.signature),
                "audited": one.outcome.audited,
                "skipped": dict(one.outcome.skipped),
                "problem": one.outcome.problem,
                "seconds": one.seconds,
                "phases": dict(one.outcome.phases),
                "timeouts": one.outcome.timed_out,
                **({"not_audited": dict(one.outcome.not_audited)} if one.outcome.not_audited else {}),
                "worst": one.worst,
                "kinds": [
                    {
                        "status": found.result.status,
                        "signatures": list(found.kind[1]),
                        "shrunk": found.shrunk,
                        "swept": found.swept,
                        "shrink_audits": found.audits,
                        "file": str(path),
                        **defects.describe(str(path)),
                        **({"script": str(one.scripts[str(path)])} if str(path) in one.scripts else {}),
                        "findings": [
                            {"fingerprint": f.fingerprint, "class": str(f.finding_class), "message": f.message}
                            for f in found.result.ranked_findings
                        ],
                    }
                    for found, path in zip(one.outcome.found, one.files, strict=False)
                ],
                "unconfirmed": len(one.outcome.unconfirmed),
            }
        )
    document = {"schema": SURVEY_SCHEMA, "environment": environment, "budget": budget, "seed": seed}
    return {**document, "functions": functions, "defects": defects_of(functions)}


def defects_of(functions: list[dict]) -> list[dict]:
    """The report's kinds as defects, ranked (`survey.defects`)."""
    scripts = {kind["file"]: kind["script"] for f in functions for kind in f["kinds"] if "script" in kind}
    grouped = defects.group(defects.variants({"functions": functions}))
    return [defect.to_dict(rank, scripts) for rank, defect in enumerate(grouped, 1)]


def is_survey(path: str) -> bool:
    """Whether a report file is a survey's (`gradaudit merge` merges either kind)."""
    document = read_json(path)
    return isinstance(document, dict) and document.get("schema") == SURVEY_SCHEMA


def merge_surveys(paths: Sequence[str]) -> dict:
    """One survey report from shards of one survey (same environment, budget and seed, no function
    twice), functions in the table's order: what one process surveying them all writes."""
    documents = [read_json(p) for p in paths]
    for path, document in zip(paths, documents, strict=True):
        if (
            not isinstance(document, dict)
            or document.get("schema") != SURVEY_SCHEMA
            or not isinstance(document.get("functions"), list)
        ):
            raise ReportError(f"{path}: not a gradaudit survey report (schema {SURVEY_SCHEMA!r} with 'functions')")
    same_environment(paths, documents, ("budget", "seed"))
    functions = disjoint(paths, documents, "functions")
    order = {space.name: index for index, space in enumerate(spaces())}
    functions.sort(key=lambda f: order.get(f["name"], len(order)))
    return {**documents[0], "functions": functions, "defects": defects_of(functions)}


@dataclass(frozen=True)
class SurveyChange:
    """A kind one survey has and the other has not: `new` (in the later one) or `resolved`."""

    change: str
    function: str
    status: str
    signatures: tuple[str, ...]
    file: str


def diff_surveys(before_path: str, after_path: str) -> list[SurveyChange]:
    """Kinds new in AFTER and resolved since BEFORE, per function, told apart by status and
    findings' signatures (values and files aside): what changed between two JAX releases or devices."""
    documents = []
    for path in (before_path, after_path):
        document = read_json(path)
        if (
            not isinstance(document, dict)
            or document.get("schema") != SURVEY_SCHEMA
            or not isinstance(document.get("functions"), list)
        ):
            raise ReportError(f"{path}: not a gradaudit survey report (schema {SURVEY_SCHEMA!r} with 'functions')")
        documents.append(
            {
                f["name"]: {(k["status"], tuple(k["signatures"])): k["file"] for k in f["kinds"]}
                for f in document["functions"]
            }
        )
    before, after = documents
    changes = []
    for name in dict.fromkeys([*before, *after]):
        old, new = before.get(name, {}), after.get(name, {})
        changes += [
            SurveyChange("new", name, kind[0], kind[1], new[kind]) for kind in new if kind not in old and name in before
        ]
        changes += [
            SurveyChange("resolved", name, kind[0], kind[1], old[kind])
            for kind in old
            if kind not in new and name in after
        ]
    return changes
