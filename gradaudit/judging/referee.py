"""The float64 referee: whether a low-precision split between paths is the dtype's rounding or real.

Where a float32 (float16, bfloat16) scenario's paths split, the same paths are run again with every
narrow floating input widened to float64, at the same input values (`widened`). A split that
vanishes there, with each AD path of the narrow run within the narrow dtype's tolerance of its
own float64 answer, is precision: a note showing both runs' numbers. One that persists, or whose
narrow paths stray from their float64 answers, stays a finding, its reason saying what float64
showed. The referee never decides from the narrow run alone, and a float64 run that cannot be
made or fails leaves every finding as it was.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from gradaudit.judging.classes import between_slopes
from gradaudit.judging.scale import row_and_column_scale
from gradaudit.judging.tolerances import COARSE, Tolerances, function_scale, tolerances_for
from gradaudit.judging.wording import entry_location, index_text, path_labels
from gradaudit.model import dtypes
from gradaudit.model.computed import MOVED_ELEMENTS, Backward, Moved
from gradaudit.model.findings import (
    CLASSES,
    CONSISTENT,
    DISAGREEMENT,
    ERROR,
    FAIL_ON_DEFAULT,
    MISMATCH,
    RAISED,
    ROUTING,
    Compared,
    Finding,
    FindingClass,
    Note,
    parse_location,
)
from gradaudit.model.paths import (
    FINITE_DIFFERENCE,
    FIRST_ORDER_PATHS,
    HESSIAN_FINITE_DIFFERENCE,
    JIT_PREFIX,
    JIT_VALUE,
    SECOND_ORDER_PATHS,
    VALUE,
    base_name,
    block_names,
    transform_of,
)
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import Scenario
from gradaudit.numerics.finite_differences import rounding

NARROW = ("bfloat16", "float16", "float32")
"""Floating dtypes float64 can referee."""
REFEREED = (FindingClass.WRONG, FindingClass.EAGER_JIT, FindingClass.LEAK, FindingClass.NON_DIFFERENTIABLE)
"""Classes a narrow dtype's rounding or range can fake: paths parting at finite inputs, a NaN born of
an intermediate that overflows the narrow dtype (float64 holds it), and one-sided slopes parting at
a smooth point (its finite differences too coarse). Float64 probes finer steps (its smallest normal
is far smaller) and holds numbers past the narrow dtype's range, so the class its own run gives a
finding on the same paths is the one kept."""
SCALED = 64.0
"""How far a float64 split may stay above the narrow split times the dtypes' rounding ratio
(`_scaled_split`) and still be read as rounding that shrank with precision."""
REFERENCES = (FINITE_DIFFERENCE, HESSIAN_FINITE_DIFFERENCE)


def widened(result: ScenarioResult) -> Scenario | None:
    """The result's scenario with every narrow floating input float64, at the same values (the narrow
    array's, widened exactly), its tolerances and step the float64 defaults, and no higher an order than
    the findings to settle ask (the close check of a loosely checked run is first order: an order-2
    audit's Hessians in float64 would double its time for nothing); None where there is nothing to widen
    (a select_n scenario is a question about routing, not precision)."""
    scenario = result.scenario
    target = scenario.target.widened(NARROW)
    if target is None:
        return None
    names = (*block_names(result.arg_names, 1), *block_names(result.arg_names, 2))
    asked = [parse_location(f.location or "", names) for f in result.findings if _refereed(f)]
    order = max((found[0] if found is not None else scenario.order for found in asked), default=1)
    return replace(
        scenario,
        name=f"{scenario.name} (float64 referee)",
        target=target,
        tolerance=None,
        eps=None,
        expect=None,
        order=min(scenario.order, max(order, 1)),
    )


def wanted(result: ScenarioResult, tolerance: tuple[float | None, ...] = ()) -> bool:
    """Whether `result` has a finding the referee could settle and a float64 run could change its
    outcome (`beyond_reconciling` says where it cannot), or was checked only coarsely (`_coarse`: float64
    checks its AD paths more closely, `_checked_closely`)."""
    return (
        result.scenario.target.refereed
        and result.scenario.precision_dtype in NARROW
        and (any(_refereed(f) for f in result.findings) or _checked_loosely(result, tolerance))
        and beyond_reconciling(result) is None
    )


def _checked_loosely(result: ScenarioResult, tolerance: tuple[float | None, ...]) -> bool:
    """Whether float64 should check `result`'s AD paths more closely (`_checked_closely`): coarsely
    checked (`_coarse`), left entries unresolved (`ScenarioResult.unresolved`), or passed only by
    the absolute tolerance at an entry finite differences resolve
    (`ScenarioResult.absolute_only`: taken at the function's scale, it lets a rule twice the slope of an
    entry 1e-4 the size of the rest pass in float32; float64's is 1e8 times finer)."""
    return result.absolute_only > 0 or result.unresolved or _coarse(result, tolerance)


def _coarse(result: ScenarioResult, tolerance: tuple[float | None, ...]) -> bool:
    """Whether finite differences in `result`'s dtype check derivatives only within `tolerances.COARSE` or more
    (float16's default 0.125, bfloat16's 0.35, plus as much absolute): a rule twice a slope of 0.85 passes."""
    return result.status != ERROR and tolerances_for(result.scenario, tolerance, paths=result.paths).fd_rtol >= COARSE


def beyond_reconciling(result: ScenarioResult) -> Finding | None:
    """A `wrong` or `eager-jit` finding between AD paths alone whose split no float64 answer could
    reconcile, at inputs and a value nowhere near the dtype's limits; None where there is none.

    Such a scenario fails whatever float64 says: a precision note needs every AD path within the
    dtype's tolerance of one float64 number (entry-wise, or of its block's largest entry), so two
    paths parting by more than twice that (doubled again, for a float64 block larger than the
    narrow one) cannot both be; and at ordinary magnitudes (zero, or between the square roots of
    the smallest normal and of the largest value), finite, float64 has neither a finer step nor a
    wider range to tell more. The float64 run would be spent on a verdict it cannot change."""
    dtype = result.scenario.precision_dtype
    value = result.paths.get(VALUE)
    arrays = [*result.inputs, *(value.ok_arrays[:1] if value is not None and value.ok else ())]
    if not arrays or not all(_ordinary(a, dtype) for a in arrays):
        return None
    tolerances = tolerances_for(result.scenario, paths=result.paths)
    rtol, atol = tolerances.fd_rtol, tolerances.fd_atol
    for finding in result.findings:
        if (
            finding.kind != DISAGREEMENT
            or finding.finding_class not in (FindingClass.WRONG, FindingClass.EAGER_JIT)
            or any(base_name(p) in REFERENCES for p in finding.paths)
        ):
            continue
        located = [_located(result, p, finding.location or "") for p in finding.paths]
        if any(found is None for found in located):
            continue
        blocks = [found[0] for found in located if found is not None]
        if not all(np.isfinite(b).all() for b in blocks):
            continue
        numbers = [float(found[0][found[1]]) for found in located if found is not None]
        scale = max(float(np.max(np.abs(b), initial=0.0)) for b in blocks)
        largest = max(abs(n) for n in numbers)
        if max(numbers) - min(numbers) > 4.0 * (atol + rtol * largest) + 4.0 * rtol * scale:
            return finding
    return None


def _ordinary(array: np.ndarray, dtype: str) -> bool:
    values = np.abs(np.asarray(array, dtype=np.float64))
    low, high = math.sqrt(dtypes.smallest_normal(dtype)), math.sqrt(dtypes.largest(dtype))
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.isfinite(values) & ((values == 0) | ((values >= low) & (values <= high)))))


def _refereed(finding: Finding) -> bool:
    return finding.kind == DISAGREEMENT and finding.finding_class in REFEREED and finding.location is not None


def checked_closely_only(result: ScenarioResult) -> bool:
    """Whether float64 is asked only to check `result`'s AD paths more closely (`_checked_loosely`), no finding to
    settle, and each eager AD path of `result` has a compiled twin that ran (jit compiles the function: not a Python
    `if` on an input, nor a slice a traced input bounds): then float64's compiled AD paths suffice (the narrow run
    found no split, so each eager path agrees with its twin) and each eager narrow path is held to its twin's float64
    number (`_answering`). A review found wrong rules behind an `if` passing once float64 computed no eager path where
    it could compute no compiled one."""
    if any(_refereed(f) for f in result.findings):
        return False
    for name, path in result.paths.items():
        if _eager_ad(name):
            twin = result.paths.get(JIT_PREFIX + name)
            if not path.ok or twin is None or not twin.ok:
                return False
    return True


def _answering(wide: ScenarioResult, name: str) -> str:
    """The float64 path a narrow path `name` is held to: its own, or where float64 computed compiled AD paths
    alone (`checked_closely_only`), an eager path's compiled twin (`jit_jacfwd` for `jacfwd`)."""
    twin = JIT_PREFIX + name
    return twin if _eager_ad(name) and name not in wide.paths and twin in wide.paths else name


def _eager_ad(name: str) -> bool:
    return base_name(name) in (*FIRST_ORDER_PATHS, *SECOND_ORDER_PATHS) and not name.startswith(JIT_PREFIX)


def refereed(
    narrow: ScenarioResult,
    wide: ScenarioResult | None,
    why: str = "",
    nearby: Nearby | None = None,
    tolerance: tuple[float | None, ...] = (),
    narrowing: Callable[[], str] | None = None,
    backward: Backwards | None = None,
) -> ScenarioResult:
    """`narrow` with each finding the float64 run `wide` settles as precision turned into a note,
    and the others' reasons saying what float64 showed; `wide` None (it could not be made: `why`)
    leaves the findings as they are, each reason saying the referee could not judge. `nearby`: float64's
    derivatives at inputs moved by the narrow dtype's rounding, asked for where a narrow path strays;
    `tolerance`: the run's (`Options.tolerance`), which the narrow run was judged by; `narrowing`: where the
    widened function rounds float64 to a narrower dtype inside (`targets.base.narrowing`), asked where float64's
    evidence holds only if its finite differences are finer (its close check of a loosely checked run, or its
    finite differences parting from AD where a finding is); traced once, when first asked; `backward`: where
    float64 gives the narrow value with one input element moved (`Backwards`), asked where a narrow AD path strays
    and the narrow value does too."""
    kept: list[Finding] = []
    notes: list[Note] = []
    rulings: list[tuple[Finding, Note | Finding]] = []
    for finding in narrow.findings:
        if not _refereed(finding):
            continue
        if wide is None or wide.status == ERROR:
            failure = why or (wide.findings[0].message if wide is not None and wide.findings else "")
            rulings.append((finding, _with_reason(finding, f"the float64 referee could not judge: {failure}")))
        else:
            rulings.append((finding, _ruling(finding, narrow, wide, nearby, tolerance, narrowing, backward)))
    ruled = {id(finding): ruling for finding, ruling in rulings}
    for finding in narrow.findings:
        ruling = ruled.get(id(finding)) or (_routed(finding, rulings) if finding.kind == ROUTING else finding)
        if isinstance(ruling, Note):
            notes.append(ruling)
        else:
            kept.append(ruling)
    if wide is not None and wide.status != ERROR and _checked_loosely(narrow, tolerance):
        # float64 checks more closely only where it computes in float64 on the way to the outputs: through a
        # cast its steps may fall inside one of the narrow dtype's stairs and read 0, or round as the narrow ones.
        # Where the function casts, float64's `wrong` counts only where the narrow finite differences read its
        # slope too (the entry's path is float64's own); otherwise the note says float64 could not check closely.
        rounded = narrowing() if narrowing is not None else ""
        # a split the narrow run reports `wrong` on the same paths already says the rule is wrong: not twice (one
        # it classes otherwise, a kink its coarse steps saw, does not: a flipped rule after a layer norm at 1e4)
        reported = {
            frozenset(f.paths) for f in kept if f.kind == DISAGREEMENT and f.finding_class == FindingClass.WRONG
        }
        tolerances = tolerances_for(narrow.scenario, tolerance, paths=narrow.paths)
        closely, unresolved = _checked_closely(narrow, wide, tolerances, bool(rounded), backward)
        kept.extend(f for f in closely if frozenset(f.paths) not in reported)
        if not rounded:
            kept.extend(_strays_unchecked(narrow, wide, tolerances, nearby, backward, kept))
        checked = None if closely else _not_finer(narrow, rounded) if rounded else _checked_instead(narrow, wide)
        notes.extend([*([checked] if checked is not None else []), *([] if rounded else unresolved)])
    if (
        not notes
        and len(kept) == len(narrow.findings)
        and all(k is f for k, f in zip(kept, narrow.findings, strict=True))
    ):
        return narrow
    status = ERROR if any(f.kind == RAISED for f in kept) else MISMATCH if kept else CONSISTENT
    return replace(
        narrow,
        findings=tuple(kept),
        notes=(*narrow.notes, *notes),
        status=status,
        diagnosis=narrow.diagnosis if kept else None,
        seconds=narrow.seconds + wide.seconds if wide is not None else narrow.seconds,
    )


def _strays_unchecked(
    narrow: ScenarioResult,
    wide: ScenarioResult,
    tolerances: Tolerances,
    nearby: Nearby | None,
    backward: Backwards | None,
    kept: Sequence[Finding],
) -> list[Finding]:
    """`wrong` findings at first-order entries the narrow finite differences could not compare (a kink or staircase
    their steps saw, no finite estimate), or compared only within rounding beyond the tolerance (`Compared.loose`:
    `|1 - (1 - x)| ** 0.3` at 0.01 in bfloat16, 15 give or take 14), and float64's did, finding float64's AD path
    right there, where the narrow AD path strays from float64's beyond the narrow tolerance (`_strays`), and neither
    the inputs' rounding (`_moves`) nor where its evaluation computes the function (`_Elsewhere.ruling`) explains
    it: a rule wrong in the narrow dtype alone (a sign flipped at 1e-7 in float32, where its finite differences read
    a staircase) passed in silence, float64 checking only its own paths. One finding per entry, paths straying there
    together, decided entry by entry: float64's AD path agrees with float64's finite differences at the entry
    (within the tolerance its judge compared them by), and no finding kept names the path at the entry. And an
    `unjudged` finding per entry where the narrow value strays too and no one point settles where the narrow run
    computes the function."""
    named = {(p, f.location) for f in kept for p in f.paths}
    mine, theirs = (next((c for c in r.compared if c.order == 1), None) for r in (narrow, wide))
    value = narrow.paths.get(VALUE) or narrow.paths.get(JIT_VALUE)
    if mine is None or theirs is None or value is None or not value.ok or not mine.excluded:
        return []
    unsure = _unsure(mine)
    if theirs.reference is None or len(theirs.excluded) != len(mine.excluded):
        return []
    references = theirs.reference.ok_arrays
    names = block_names(narrow.arg_names, 1)
    output_shape = np.shape(value.ok_arrays[0])
    rtol, atol = tolerances.fd_rtol, tolerances.fd_atol
    straying: dict[tuple[int, int], list[str]] = {}
    counts: dict[tuple[int, int], int] = {}
    for name, path in narrow.paths.items():
        wide_path = wide.paths.get(_answering(wide, name))
        if base_name(name) not in FIRST_ORDER_PATHS or not path.ok or wide_path is None or not wide_path.ok:
            continue
        if not len(path.ok_arrays) == len(wide_path.ok_arrays) == len(mine.excluded) == len(references):
            continue
        for block, (here, there) in enumerate(zip(path.ok_arrays, wide_path.ok_arrays, strict=True)):
            here, there = np.asarray(here, dtype=np.float64), np.asarray(there, dtype=np.float64)
            estimate = np.asarray(references[block], dtype=np.float64)
            # float64's own AD is held to its estimate by its tolerance alone below (`right`), rounding's slack apart
            unchecked = unsure[block].reshape(-1) & ~np.asarray(theirs.excluded[block]).reshape(-1)
            if here.shape != there.shape or estimate.shape != there.shape or unchecked.size != here.size:
                continue
            with np.errstate(invalid="ignore", over="ignore"):
                # float64's AD right at the entry: its finite differences there say so
                right = (np.abs(there - estimate) <= theirs.atol + theirs.rtol * np.abs(estimate)).reshape(-1)
            off = _straying(here, there, rtol, atol) & unchecked & right
            if not off.any():
                continue
            location = entry_location(here.shape, output_shape, names[block], 1, int(np.argmax(off)))
            moves = _moves(nearby, narrow, wide, location, there.shape)
            if moves is not None:
                off &= _straying(here, there, rtol, atol, moves)
            flats = [
                flat
                for flat in np.flatnonzero(off).tolist()
                if (name, entry_location(here.shape, output_shape, names[block], 1, flat)) not in named
            ]
            if flats:
                straying.setdefault((block, flats[0]), []).append(name)
                counts[block, flats[0]] = max(counts.get((block, flats[0]), 0), len(flats))
    dtype = narrow.scenario.precision_dtype
    largest = dtypes.largest(dtype)
    entries = int(sum(np.size(a) for a in mine.excluded))
    unchecked = (
        f"{dtype}'s finite differences could not compare the entry (a kink or staircase their steps saw, or no finite "
        f"estimate) or compared it only within rounding beyond the tolerance; float64's did and find its AD paths "
        f"right there, and {dtype}'s AD strays from float64's by more than {dtype}'s tolerance (rtol {rtol:.2g}, atol "
        f"{atol:.2g}, or rtol of the block's largest entry), beyond what rounding its inputs moves float64's derivative"
    )
    found = []
    for (block, flat), straying_there in straying.items():
        location = entry_location(
            np.shape(narrow.paths[straying_there[0]].ok_arrays[block]), output_shape, names[block], 1, flat
        )
        rulings: dict[str, list[str]] = {}
        for straying_path in straying_there:
            entry = _entry(narrow, straying_path, location)
            if entry is None or not math.isfinite(entry):
                # no finite function's derivative, at whatever point: wrong where the value there is finite and
                # float64's derivative within the narrow dtype's range (else the split is the range's: not this check's)
                output, wanted = _output_at(narrow, location), _entry(wide, _answering(wide, straying_path), location)
                if output is not None and math.isfinite(output) and wanted is not None and abs(wanted) <= largest:
                    rulings.setdefault(UNEXPLAINED, []).append(straying_path)
                continue
            elsewhere = _elsewhere(narrow, wide, backward, straying_path, location, rtol, atol)
            if elsewhere is not None:
                loose_only = not bool(np.asarray(mine.excluded[block]).reshape(-1)[flat])
                # compared, though only within rounding, and the value holds: the gap may be the narrow AD's own
                # rounding of large terms that cancel ((x + 1e3) (x - 1e3) in bfloat16: AD 0, float64 1.4), which
                # nothing here measures (a review's false `wrong`)
                held = loose_only and not elsewhere.strays
                rulings.setdefault(HELD if held else elsewhere.ruling, []).append(straying_path)
        loosely = _estimate(narrow, location)
        for ruling, finding_class, why in (
            (
                UNEXPLAINED,
                FindingClass.WRONG,
                f"{unchecked}, and at every point float64 takes {dtype}'s value at there, if it strays",
            ),
            (
                HELD,
                FindingClass.UNJUDGED,
                f"{unchecked}; {dtype}'s finite differences compared it, but only within their rounding"
                f"{'' if loosely is None else f' ({_number(loosely[0])} give or take {_number(loosely[1])})'}, and "
                f"{dtype}'s value there is float64's within its rounding: the gap may be a wrong rule or the AD's own "
                "rounding of large terms that cancel, which the referee does not measure, and it cannot tell which",
            ),
            (
                UNJUDGED,
                FindingClass.UNJUDGED,
                f"{unchecked}; {dtype}'s value there is {_number(_output_at(narrow, location))} against "
                f"{_number(_output_at(wide, location))} in float64, so {dtype} computes the function elsewhere (it "
                "rounds inside), and no one point float64 takes that value at, moving one input element "
                f"({MOVED_ELEMENTS} at most), settles where: the referee cannot tell a rule's error from the "
                "function's own rounding",
            ),
        ):
            if paths := rulings.get(ruling, []):
                count = counts[block, flat]
                found.append(_strays_from_float64(narrow, wide, paths, location, (count, entries), finding_class, why))
    return found


def _unsure(compared: Compared) -> list[np.ndarray]:
    """Per block, the entries finite differences could not compare, or compared only within rounding beyond the
    tolerance (`Compared.loose`)."""
    excluded = [np.asarray(e, dtype=bool) for e in compared.excluded]
    if len(compared.loose) != len(excluded):
        return excluded
    return [
        e | np.asarray(loose, dtype=bool) if np.shape(loose) == e.shape else e
        for e, loose in zip(excluded, compared.loose, strict=True)
    ]


def _strays_from_float64(
    narrow: ScenarioResult,
    wide: ScenarioResult,
    paths: list[str],
    location: str,
    counted: tuple[int, int],
    finding_class: FindingClass,
    why: str,
) -> Finding:
    """A finding that the narrow AD `paths` stray from float64's at `location`, first of `counted` (entries that stray,
    of how many), of `finding_class` because `why`."""
    dtype = narrow.scenario.precision_dtype
    count, entries = counted
    got = {p: _entry(narrow, p, location) for p in paths}
    answering = _answering(wide, paths[0])
    want = _entry(wide, answering, location)
    shown = ", ".join(f"{_number(v)} from {path_labels([p])}" for p, v in got.items())
    return Finding(
        kind=DISAGREEMENT,
        paths=tuple(paths),
        message=(
            f"{path_labels(paths)} in {dtype} {'disagrees' if len(paths) == 1 else 'disagree'} with float64's at "
            f"the same inputs at {location}: {shown} in {dtype}, {_number(want)} in float64"
            f"{f' (from {path_labels([answering])}: float64 computed no eager path)' if answering != paths[0] else ''} "
            f"({count} of {entries} "
            "entries stray, this the first)"
        ),
        count=count,
        of=entries,
        location=location,
        values={
            **{p: v for p, v in got.items() if v is not None},
            **({f"{answering} (float64)": want} if want is not None else {}),
            **({f"value ({dtype})": here} if (here := _output_at(narrow, location)) is not None else {}),
            **({"value (float64)": there} if (there := _output_at(wide, location)) is not None else {}),
        },
        magnitude=math.inf,
        wrong="value",
        finding_class=finding_class,
        reason=why,
    )


def _checked_instead(narrow: ScenarioResult, wide: ScenarioResult) -> Note | None:
    """Where the narrow dtype's finite differences left entries unresolved (`ScenarioResult.unresolved`) and
    float64's judge finds its AD paths wrong nowhere: a note saying whether float64's finite differences
    checked them instead (they left no more unchecked, and none unresolved) or could not either (an entry
    1e-4 the size of a scalar loss of 1e9 is below what float64's steps resolve too), beside the narrow
    run's own notes on what it could not check."""
    unchecked, entries = narrow.unchecked
    if not narrow.unresolved or wide.unchecked[1] != entries:
        return None
    if any(f.finding_class == FindingClass.WRONG for f in wide.findings):
        return None
    dtype = narrow.scenario.precision_dtype
    left = f" ({unchecked} of {entries} not at all)" if unchecked else ""
    if wide.unresolved or wide.unchecked[0] > unchecked:
        return Note(
            message=(
                f"{dtype}'s finite differences could not check entries closely{left}, nor could the float64 "
                f"referee's at the same inputs ({wide.unchecked[0]} of {entries} not at all): those entries are "
                "checked only within their rounding"
            ),
            count=entries - wide.unchecked[0],
            of=entries,
        )
    return Note(
        message=(
            f"{dtype}'s finite differences could not check entries closely{left}; the float64 referee at the same "
            f"inputs leaves {wide.unchecked[0]} of {entries} unchecked and finds none of float64's own AD paths wrong "
            f"(float64's rule; {dtype}'s AD is compared with it only where it strays at an entry {dtype}'s finite "
            "differences could not compare closely)"
        ),
        count=entries - wide.unchecked[0],
        of=entries,
    )


def _not_finer(narrow: ScenarioResult, rounded: str) -> Note:
    """The note for a loosely checked narrow run whose function rounds float64 to a narrower dtype inside
    (`rounded`, `targets.base.narrowing`) and where float64 finds no AD path wrong: its finite differences
    may be no finer there (a rule 1.1 times the slope of a minimiser whose state is a float32 constant
    passes in both), so the referee says it could not check rather than that float64 did."""
    dtype = narrow.scenario.precision_dtype
    unchecked, entries = narrow.unchecked
    if narrow.unresolved:
        loose = f"{unchecked} of {entries} entries not at all" if unchecked else "some entries only within rounding"
    elif narrow.absolute_only:
        loose = f"{narrow.absolute_only} of {entries} only within the absolute tolerance"
    else:
        loose = f"every entry only within {dtype}'s coarse tolerance"
    return Note(
        message=(
            f"{dtype}'s finite differences check its AD paths only loosely ({loose}), and the float64 referee cannot "
            f"check them more closely: the function rounds float64 inside ({rounded}), so float64's finite "
            "differences are no finer there"
        ),
        count=unchecked if narrow.unresolved and unchecked else narrow.absolute_only or entries,
        of=entries,
    )


def _checked_closely(
    narrow: ScenarioResult,
    wide: ScenarioResult,
    tolerances: Tolerances,
    confirmed_only: bool = False,
    backward: Backwards | None = None,
) -> tuple[list[Finding], list[Note]]:
    """The AD paths of a loosely checked narrow run (`_checked_loosely`) that float64 finds wrong: where float64's
    judge finds its AD paths `wrong` against its finite differences, the narrow paths within the narrow
    tolerance of float64's (the same rule in both dtypes), and further from float64's finite differences
    than the narrow relative tolerance alone plus what float64 resolves at the entry (`_resolved`), a `wrong`
    finding of the narrow run naming float64's numbers. The narrow finite differences' absolute part and
    rounding no longer decide: a bfloat16 rule 1.5 times softplus's slope passed within 0.98 at 0.85,
    float64's finite differences say 0.845. And the notes for float64 `wrong` findings that are within what
    float64 resolves there, beyond the narrow relative tolerance: float64 saw them, and cannot say whether
    they are rounding ([1e9 sin x0, 1e4 + 1e-4 bad(x1)]: a rule twice the slope of x1, 15 of float64's
    resolution at the function's scale). `confirmed_only` (the function rounds float64 inside): only where
    the narrow finite differences read float64's slope too."""
    found: list[Finding] = []
    unsure: list[Note] = []
    dtype = narrow.scenario.precision_dtype
    for wrong in wide.findings:
        location = wrong.location or ""
        reference = wrong.values.get(FINITE_DIFFERENCE)
        answered = [p for p in wrong.paths if base_name(p) not in REFERENCES]
        # the narrow paths float64's are, in the narrow run's order (an eager one float64 did not compute: its twin's)
        sides = [p for p in narrow.paths if _answering(wide, p) in answered] or answered
        if (
            wrong.finding_class != FindingClass.WRONG
            or wrong.kind != DISAGREEMENT
            or FINITE_DIFFERENCE not in wrong.paths
            or reference is None
            or not math.isfinite(reference)
            or _computed_narrow(narrow, wide, location, reference)
        ):
            continue
        here = {p: _entry(narrow, p, location) for p in sides}
        there = {p: wrong.values.get(_answering(wide, p)) for p in sides}
        numbers = [
            (h, t)
            for h, t in zip(here.values(), there.values(), strict=True)
            if h is not None and t is not None and math.isfinite(h) and math.isfinite(t)
        ]
        if not sides or len(numbers) != len(sides):
            continue
        shared = all(abs(h - t) <= tolerances.fd_atol + tolerances.fd_rtol * abs(t) for h, t in numbers)
        own = _entry(narrow, FINITE_DIFFERENCE, location)
        confirmed = own is not None and abs(own - reference) <= tolerances.fd_rtol * abs(reference)
        if confirmed_only and not confirmed:
            continue
        floor = _resolved(wide, answered, location, confirmed)
        if not shared:
            # each path's own error and its float64 twin's (the rule's, as float64 measures it), past what float64
            # resolves there as well as the narrow tolerance
            slack = tolerances.fd_rtol * abs(reference) + floor
            off = {
                p: (abs(h - reference) > slack, abs(t - reference) > slack)
                for p, (h, t) in zip(sides, numbers, strict=True)
            }
            found.extend(_not_shared(wrong, narrow, wide, backward, off, tolerances))
            continue
        # the path further than the narrow tolerance from float64's differences, or its float64 twin (the same rule,
        # float64's measure of its error: a bfloat16 path may sit nearer the truth than its rule, computing elsewhere)
        # with the path itself further than its dtype's AD rounding (a path on the truth is not convicted by a rule
        # float64 alone runs: a review's softplus rule 1.5 times in float64 only, bfloat16's 0.703 against 0.701)
        beyond = [
            abs(h - reference) > tolerances.fd_rtol * abs(reference)
            or (
                abs(t - reference) > tolerances.fd_rtol * abs(reference)
                and abs(h - reference) > tolerances.ad_atol + tolerances.ad_rtol * abs(reference)
            )
            for h, t in numbers
        ]
        if not any(beyond):
            continue
        labels = path_labels(sides)
        twins = " (eager paths float64 did not compute: their compiled twins')" if set(sides) != set(answered) else ""
        paths = wrong.paths if not twins else (*sides, *(p for p in wrong.paths if p not in answered))
        if all(
            max(abs(h - reference), abs(t - reference)) <= tolerances.fd_rtol * abs(reference) + floor
            for h, t in numbers
        ):
            unsure.append(
                Note(
                    paths=tuple(paths),
                    message=(
                        f"the float64 referee finds {path_labels(answered)} apart from its finite differences at "
                        f"{location} "
                        f"({_values(wrong)}) by less than float64 resolves there ({floor:.3g}: the square root of "
                        "its epsilon times the largest number the entry's terms may hold), so it cannot judge "
                        "them: not counted"
                    ),
                    count=wrong.count,
                    of=wrong.of,
                    location=location,
                )
            )
            continue
        found.append(
            replace(
                wrong,
                paths=tuple(paths),
                message=(
                    f"{labels} disagree with float64's finite differences at the same inputs on {wrong.count} of "
                    f"{wrong.of} entries; largest at {location}: {_number(reference)} from finite differences in "
                    f"float64, {', '.join(f'{_number(h)} from {path_labels([p])}' for p, h in here.items())} "
                    f"in {dtype}"
                ),
                values={p: h for p, h in {**here, FINITE_DIFFERENCE: own}.items() if h is not None},
                evidence={f"{name} (float64)": number for name, number in wrong.evidence.items()},
                reason=(
                    f"{dtype}'s finite differences check it only within {tolerances.fd_rtol:.3g} relative plus "
                    f"{tolerances.fd_atol:.3g} absolute; the float64 referee at the same inputs finds the AD paths "
                    f"wrong ({_values(wrong)}), and every {dtype} AD path is within {dtype}'s tolerance of its float64 "
                    f"number{twins} (the same rule), it or that number further than {tolerances.fd_rtol:.3g} relative "
                    f"from float64's finite differences: {wrong.reason}"
                ),
            )
        )
    return found, unsure


def _not_shared(
    wrong: Finding,
    narrow: ScenarioResult,
    wide: ScenarioResult,
    backward: Backwards | None,
    off: dict[str, tuple[bool, bool]],
    tolerances: Tolerances,
) -> list[Finding]:
    """Float64's `wrong` finding of a loosely checked narrow run whose AD paths are not float64's numbers (not the
    same rule at the same inputs, which `_checked_closely` carries over), decided path by path where the narrow run
    computes the function (`_elsewhere`). `off`: per path, whether it and whether its float64 twin (the rule, as float64
    measures it) are further than the narrow tolerance from float64's finite differences. Only where float64's rule is
    off (else its AD is right at the narrow dtype's standard and its split is float64's precision: `jnp.linalg.solve`
    of a 1e-18 matrix, float64's AD 4e-6 relative from its differences, float32's computed elsewhere): `wrong` where
    the narrow value is float64's within rounding and the path is off too (it misses float64's finite differences at
    the same inputs and value), or where float64's Jacobian is the path's at the point the narrow run computes at
    (`_Elsewhere.explained_at`: the same rule); `unjudged` where the path is off, or is float64's rule at some point
    float64 takes the narrow value at, and neither settles it (several points, a parabola's two sides where a
    sign-flipped rule is float64's at one; none matching; nothing to read: float64's AD being wrong, its points say
    nothing of the truth there); else nothing (the path within the narrow tolerance, the rule not shown to be its).
    Silent before: a rule sign-flipped in every dtype on `|1 - (1 - x)| ** 0.3` at 1e-7 in float32 (float32 computes
    at x + 1.92e-8, its AD -2.1e4; float64's -2.38e4 against its finite differences' 2.38e4) passed with a kink note."""
    location = wrong.location or ""
    dtype = narrow.scenario.precision_dtype
    reference = wrong.values.get(FINITE_DIFFERENCE)
    rtol, atol = tolerances.fd_rtol, tolerances.fd_atol
    classed: dict[FindingClass, list[tuple[str, str]]] = {}
    for path, (missed, rule_off) in off.items():
        if not rule_off:
            continue  # float64's AD right within the narrow tolerance: its split is float64's precision, not the rule
        elsewhere = _elsewhere(narrow, wide, backward, path, location, rtol, atol)
        point = None if elsewhere is None or not elsewhere.strays else elsewhere.explained_at
        if elsewhere is None:
            if missed:
                why = f"where {dtype} computes the function cannot be read"
                classed.setdefault(FindingClass.UNJUDGED, []).append((path, why))
        elif not elsewhere.strays:
            if missed:
                why = f"{dtype}'s value there is float64's within its rounding ({_number(elsewhere.value)})"
                classed.setdefault(FindingClass.WRONG, []).append((path, why))
        elif point is not None and _jacobian_entry(point, location, block_names(narrow.arg_names, 1)) not in (None, 0):
            # a Jacobian of 0 there is every rule's (x ** 2 at 0, where bfloat16 rounds (x + 1) - 1): it shows none
            why = (
                f"{dtype}'s value there is {_number(elsewhere.value)} against {_number(_output_at(wide, location))} "
                f"in float64, and float64's Jacobian where it takes that value ({_moved(point, narrow)}) is "
                f"{dtype}'s AD there: the same rule, which float64 finds wrong"
            )
            classed.setdefault(FindingClass.WRONG, []).append((path, why))
        elif missed or elsewhere.matching:
            why = (
                f"{dtype} computes the function elsewhere ({_number(elsewhere.value)} against "
                f"{_number(_output_at(wide, location))} in float64) and no one point settles where "
                f"({_points_read(elsewhere, narrow, location)}): the referee cannot tell whether {dtype}'s AD is "
                "float64's rule"
            )
            classed.setdefault(FindingClass.UNJUDGED, []).append((path, why))
    found = []
    for finding_class, ruled in classed.items():
        paths = [p for p, _ in ruled]
        here = {p: _entry(narrow, p, location) for p in paths}
        shown = ", ".join(f"{_number(h)} from {path_labels([p])}" for p, h in here.items())
        own = _entry(narrow, FINITE_DIFFERENCE, location)
        found.append(
            replace(
                wrong,
                paths=(*paths, FINITE_DIFFERENCE),
                message=(
                    f"{path_labels(paths)} in {dtype} {'disagrees' if len(paths) == 1 else 'disagree'} with float64's "
                    f"finite differences at the same inputs at {location}: {_number(reference)} from finite "
                    f"differences in float64, {shown} in {dtype}"
                ),
                values={p: h for p, h in {**here, FINITE_DIFFERENCE: own}.items() if h is not None},
                evidence={f"{name} (float64)": number for name, number in wrong.evidence.items()},
                finding_class=finding_class,
                reason=(
                    f"{dtype}'s finite differences check it only within {rtol:.3g} relative plus {atol:.3g} absolute; "
                    f"the float64 referee at the same inputs finds its AD paths wrong ({_values(wrong)}); {dtype}'s "
                    f"are not float64's numbers; {'; '.join(sorted({why for _, why in ruled}))}"
                ),
            )
        )
    return found


def _moved(point: Backward, narrow: ScenarioResult) -> str:
    """The input element a backward point moves, and by how much."""
    name = block_names(narrow.arg_names, 1)[point.argument]
    return f"{name}{index_text(np.shape(narrow.inputs[point.argument]), point.element)} moved by {point.move:.3g}"


def _routed(finding: Finding, rulings: list[tuple[Finding, Note | Finding]]) -> Note | Finding:
    """A routing finding follows the referee's rulings on the disagreements of its paths (it is read
    off the same numbers): a note where all became notes, else the most severe class they kept."""
    mine = [ruling for found, ruling in rulings if set(found.paths) & set(finding.paths)]
    changed = [
        found for found, ruling in rulings if isinstance(ruling, Note) or ruling.finding_class != found.finding_class
    ]
    if not mine or not any(set(found.paths) & set(finding.paths) for found in changed):
        return finding
    if all(isinstance(ruling, Note) for ruling in mine):
        return Note(
            paths=finding.paths,
            message=f"precision, not counted: {finding.message}: the float64 referee settles its paths' disagreements",
            count=finding.count,
            of=finding.of,
            location=finding.location,
        )
    worst = min((r.finding_class for r in mine if isinstance(r, Finding)), key=CLASSES.index)
    if worst == finding.finding_class:
        return finding
    return replace(
        _with_reason(finding, f"the float64 referee classes its paths' disagreements {worst}"), finding_class=worst
    )


def _with_reason(finding: Finding, words: str) -> Finding:
    return replace(finding, reason=f"{finding.reason}; {words}" if finding.reason else words)


def _located(result: ScenarioResult, path: str, location: str) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """The block of `path` in `result` that `location` falls in, and the entry's index in it; None
    where the path has no number there."""
    found = result.paths.get(path)
    names = (*block_names(result.arg_names, 1), *block_names(result.arg_names, 2))
    parsed = parse_location(location, names)
    if found is None or not found.ok or parsed is None:
        return None
    order, out, name, at = parsed
    blocks = block_names(result.arg_names, order) if order else ("",)
    if name not in blocks:
        return None
    block = np.asarray(found.ok_arrays[blocks.index(name)], dtype=np.float64)
    index = (*out, *at)
    if len(index) != block.ndim or any(not 0 <= i < n for i, n in zip(index, block.shape, strict=True)):
        return None
    return block, index


def _resolved(wide: ScenarioResult, paths: list[str], location: str, confirmed: bool) -> float:
    """What float64 resolves at the entry of `location`: the square root of its epsilon (a computation of
    condition up to 1/sqrt(eps) rounds to it) times the whole function's largest number: the entry's
    terms may be as large (poly of a matrix holding 1e9 has an exact 0 that float64's finite differences read
    as -3e-6; lstsq's at a matrix holding 1e8 reads 1e-6 where AD's 4e-22 is right). Where the narrow run's
    own finite differences read float64's slope (`confirmed`: two dtypes' steps agree on it, as rounding
    at another scale would not), at the entry's own scale instead: the larger of its output and the largest
    AD entry in its row and column (`_rounding_room`), where they can be read. A rule twice the slope of an
    entry 1e-4 beside an output of 1e9 is wrong: both dtypes read 7.6484e-5."""
    room = _rounding_room(wide, paths, location, "float64")
    output = _output_at(wide, location)
    condition = math.sqrt(rounding(np.dtype(np.float64)))
    if not confirmed or room is None or output is None:
        return condition * function_scale(wide.paths)
    return max(room, condition * abs(output)) if math.isfinite(output) else room


def _output_at(result: ScenarioResult, location: str) -> float | None:
    """The function's output element of `location` in `result` (its value path's); None where it cannot
    be read."""
    value = result.paths.get(VALUE)
    names = (*block_names(result.arg_names, 1), *block_names(result.arg_names, 2))
    parsed = parse_location(location, names)
    if parsed is None or value is None or not value.ok or not value.ok_arrays:
        return None
    output = np.asarray(value.ok_arrays[0], dtype=np.float64)
    out = parsed[1]
    if len(out) != output.ndim or any(not 0 <= i < n for i, n in zip(out, output.shape, strict=True)):
        return None
    return float(output[out])


def _computed_narrow(narrow: ScenarioResult, wide: ScenarioResult, location: str, reading: float) -> bool:
    """Whether the output element of `location` is the same number in float64 as in the narrow dtype (a
    finite one), and float64's finite differences read a slope of 0 at the entry (`reading`, its finding's):
    the function
    rounds it through the narrow dtype inside, whatever its inputs, so float64's finite differences there
    are the narrow dtype's and no closer check (`x + 1e-4 y` cast to float32 and less x reads 0 at every
    step at x = 100, though its derivative in y is 1e-4; a layer norm or logsumexp computed in float32 at
    inputs offset by 1e4 or 1e6 reads 0 where AD's 0.64 is right)."""
    here, there = _output_at(narrow, location), _output_at(wide, location)
    return reading == 0.0 and here is not None and math.isfinite(here) and here == there


def _entry(result: ScenarioResult, path: str, location: str) -> float | None:
    located = _located(result, path, location)
    return None if located is None else float(located[0][located[1]])


def _ruling(
    finding: Finding,
    narrow: ScenarioResult,
    wide: ScenarioResult,
    nearby: Nearby | None,
    tolerance: tuple[float | None, ...] = (),
    narrowing: Callable[[], str] | None = None,
    backward: Backwards | None = None,
) -> Note | Finding:
    """What float64 makes of `finding`: a precision note, the finding reclassed (float64 finds the
    point non-differentiable, or the derivative beyond the narrow dtype's range), or the finding
    with its reason saying why it stands (`narrowing`, `backward`: as `refereed`'s)."""
    location = finding.location or ""
    dtype = narrow.scenario.precision_dtype
    here = {p: _entry(narrow, p, location) for p in finding.paths}
    there = {p: _entry(wide, p, location) for p in finding.paths}
    if any(v is None for v in there.values()):
        return _with_reason(finding, f"the float64 referee could not judge: a path has no float64 number at {location}")
    shown = ", ".join(f"{_number(there[p])} from {p}" for p in finding.paths)
    sharing = sorted(
        (g for g in wide.findings if g.kind == finding.kind and set(g.paths) & set(finding.paths)),
        key=lambda g: (g.location != location, g.rank),
    )
    tolerances = tolerances_for(narrow.scenario, tolerance, paths=narrow.paths)
    persisting = [
        g
        for g in sharing
        if not (_scaled_split(g, here, there, dtype) if g.location == location else _shrank(g, narrow, wide, dtype))
        and not _tolerated(g, finding, here, there, tolerances)
    ]
    if persisting:
        found = persisting[0]
        if found.location != location:
            return _with_reason(finding, f"the split persists in float64, largest at {found.location} there")
        if found.finding_class == finding.finding_class:
            return _with_reason(finding, f"the split persists in float64 ({shown})")
        words = f"the float64 referee at the same inputs finds it {found.finding_class}: {found.reason}"
        if found.finding_class in FAIL_ON_DEFAULT or _outside_slopes(finding, here):
            # A failing class in float64 confirms the finding, and a narrow non-differentiable one
            # rests on the narrow probe's own evidence (float64's finer step may not reach a
            # staircase's step): kept in its class, float64's word shown, and why it does not decide.
            if finding.finding_class not in FAIL_ON_DEFAULT and found.finding_class in FAIL_ON_DEFAULT:
                words += (
                    f"; kept {finding.finding_class}: this run's probe saw it at steps float64's finer ones "
                    "need not reach (a staircase's)"
                )
            return _with_reason(finding, words)
        return replace(_with_reason(finding, words), finding_class=found.finding_class)
    scaled = _scaled_split(finding, here, there, dtype)
    rtol, atol = tolerances.fd_rtol, tolerances.fd_atol
    largest = dtypes.largest(dtype)
    strays: list[str] = []
    beyond: list[str] = []
    conditioned: list[str] = []
    strayed: list[str] = []
    for path in finding.paths:
        if base_name(path) in REFERENCES:
            continue  # the narrow finite differences are what float64 improves on, not what it checks
        mine, theirs = _located(narrow, path, location), _located(wide, path, location)
        if mine is None or theirs is None or mine[0].shape != theirs[0].shape:
            return _with_reason(finding, f"the float64 referee could not judge: {path} has no comparable float64 block")
        off = _strays(mine[0], theirs[0], rtol, atol)
        if off is None:
            continue
        got, want = mine[0].reshape(-1)[off], theirs[0].reshape(-1)[off]
        if abs(want) > largest:
            beyond.append(f"{path} {got:g} against {want:.6g}")
            continue
        moves = _moves(nearby, narrow, wide, location, theirs[0].shape)
        if moves is not None and _strays(mine[0], theirs[0], rtol, atol, moves) is None:
            conditioned.append(f"{path} {got:g} against {want:.6g} (float64 moves by {moves.reshape(-1)[off]:.3g})")
        else:
            strays.append(f"{path} {got:g} against {want:.6g}")
            strayed.append(path)
    if strays:
        computed = _computed_elsewhere(finding, narrow, wide, backward, strayed, rtol, atol)
        if isinstance(computed, Note):
            return computed
        words = (
            f"float64 agrees ({shown}) but {dtype} strays from it by more than {dtype}'s tolerance "
            f"(rtol {rtol:.2g}, atol {atol:.2g}, or rtol of the block's largest entry): {'; '.join(strays)}"
        )
        if computed is not None:
            return replace(_with_reason(finding, f"{words}; {computed[1]}"), finding_class=computed[0])
        return _with_reason(finding, words)
    if beyond:
        return replace(
            _with_reason(
                finding,
                f"the derivative is beyond {dtype}'s range (largest {largest:.4g}): the float64 referee at the same "
                f"inputs gives {'; '.join(beyond)}; here float64 gives {shown}",
            ),
            finding_class=FindingClass.NON_FINITE,
        )
    finite = {math.isfinite(v) for v in there.values() if v is not None}
    if len(finite) > 1:
        # NaN or inf on some paths and a number on others is a disagreement in any dtype, whether or not
        # float64's own judge compares that entry (it may leave a kink's entry out): it stands.
        return _with_reason(finding, f"the split persists in float64 ({shown})")
    narrow_shown = ", ".join(f"{_number(here[p])} from {p}" for p in finding.paths)
    numbers = [v for v in there.values() if v is not None and math.isfinite(v)]
    # float64's own tolerances, scaled to the function's size as its judge scaled them
    wide_tolerances = tolerances_for(wide.scenario, paths=wide.paths)
    wide_rtol, wide_atol = wide_tolerances.fd_rtol, wide_tolerances.fd_atol
    parted = bool(numbers) and max(numbers) - min(numbers) > wide_atol + wide_rtol * max(abs(v) for v in numbers)
    elsewhere = [g for g in sharing if g.location != location]
    if elsewhere:
        first = elsewhere[0]
        shown += (
            f"; its own split between these paths at {first.location} is this run's split there "
            "shrunk as rounding shrinks with precision"
            if _shrank(first, narrow, wide, dtype)
            else f"; its own split between these paths at {first.location} is within {dtype}'s tolerance "
            f"({_values(first)})"
        )
    same = [g for g in sharing if g.location == location]
    narrow_numbers = [v for v in here.values() if v is not None]
    rounded = narrowing() if parted and not scaled and not same and narrowing is not None else ""
    if rounded:
        # float64's finite differences part from AD as the narrow ones do, and its judge excused them; a function
        # rounding float64 inside gives float64 no finer step to excuse them with (a solver's float32 state)
        return _with_reason(
            finding,
            f"the float64 referee cannot judge: its finite differences part from the AD paths too ({shown}), and the "
            f"function rounds float64 inside ({rounded}), so they are no finer than {dtype}'s there",
        )
    found_words = (
        f"{scaled} ({shown})"
        if scaled
        else f"a split {dtype}'s tolerance passes ({_values(same[0])}; {dtype} splits by "
        f"{max(narrow_numbers) - min(narrow_numbers):.3g} there)"
        if same and narrow_numbers
        else f"no disagreement it counts ({shown}; finite differences at its usual step part from the AD paths, "
        "and its judge refined the entry at finer steps, left it uncompared as a kink, or left it unjudged)"
        if parted
        else f"no disagreement ({shown})"
    )
    within = (
        f"within {dtype}'s tolerance (rtol {rtol:.2g}, atol {atol:.2g}, or rtol of the block's largest entry) of its "
        "float64 block"
    )
    if conditioned:
        within += (
            f", or of what float64's own derivative moves where the inputs move as far as the {dtype} value shows "
            f"its rounding moved them (each by at most {dtype}'s epsilon times its size), entry by entry "
            f"({'; '.join(conditioned)}): {dtype}'s rounding of the inputs or of what it computes from them moves it "
            "as much"
        )
    return Note(
        paths=finding.paths,
        message=(
            f"precision, not counted: {location}: {narrow_shown} in {dtype}; the float64 referee at the same inputs "
            f"finds {found_words}, and every AD path's {dtype} block is {within}"
        ),
        count=finding.count,
        of=finding.of,
        location=location,
        values={
            **{f"{p} ({dtype})": v for p, v in here.items() if v is not None},
            **{f"{p} (float64)": v for p, v in there.items() if v is not None},
        },
    )


def _tolerated(found: Finding, finding: Finding, here: dict, there: dict, tolerances: Tolerances) -> bool:
    """Whether the float64 run's split `found` is no narrow split persisting: within the narrow run's
    tolerances at its lead entry (`found.values`, the numbers its judge compared, a refined finite
    difference too; the largest of its entries against the tolerance, both dtypes' scaling alike), and
    explaining too little of the narrow split at `finding`'s own entry (`here`; float64's there: `there`):
    the narrow split exceeds float64's by more than the narrow tolerance. A float64 solve of a 1e-18
    matrix splits from its finite differences by 4e-4 at an entry whose terms round at the scale of the
    whole output, where float32 splits 1.35e32 against 0; a wrong rule splits both dtypes alike."""
    if not _within(found.values, found.paths, tolerances):
        return False
    narrow = [v for v in here.values() if v is not None]
    wide = [v for v in there.values() if v is not None]
    if not narrow or not wide or not all(math.isfinite(v) for v in narrow + wide):
        return False
    rtol, atol = _tolerances_of(finding.paths, tolerances)
    reference = _reference_value(here, finding.paths)
    return (max(narrow) - min(narrow)) - (max(wide) - min(wide)) > atol + rtol * reference


def _within(values: dict[str, float], paths: tuple[str, ...], tolerances: Tolerances) -> bool:
    """Whether the paths' `values` part by no more than `tolerances` allow, relative to finite differences'
    value where they are among the paths (as the judge measures), else to the smallest."""
    numbers = [values.get(p) for p in paths]
    finite = [v for v in numbers if v is not None and math.isfinite(v)]
    if not finite or len(finite) != len(numbers):
        return False
    rtol, atol = _tolerances_of(paths, tolerances)
    return max(finite) - min(finite) <= atol + rtol * _reference_value(values, paths)


def _tolerances_of(paths: tuple[str, ...], tolerances: Tolerances) -> tuple[float, float]:
    """(rtol, atol): against finite differences where they are among `paths`, else AD against AD."""
    if any(base_name(p) in REFERENCES for p in paths):
        return tolerances.fd_rtol, tolerances.fd_atol
    return tolerances.ad_rtol, tolerances.ad_atol


def _reference_value(values: dict, paths: tuple[str, ...]) -> float:
    """|finite differences' value| where they are among `paths`, else the smallest |value|."""
    references = [values[p] for p in paths if base_name(p) in REFERENCES and values.get(p) is not None]
    numbers = references or [v for p in paths if (v := values.get(p)) is not None]
    return min(abs(v) for v in numbers) if numbers else 0.0


def _values(found: Finding) -> str:
    """What each of `found`'s paths gave at its lead entry, as a ruling shows them."""
    return ", ".join(f"{_number(found.values.get(p))} from {p}" for p in found.paths)


def _outside_slopes(finding: Finding, here: dict) -> bool:
    """Whether `finding` is wrong with its AD paths outside the one-sided slopes that finite differences
    took at its entry (which part, `classes.between_slopes`): evidence at the narrow dtype's own step
    that float64's finer probe, whose steps its rounding may make part like a jump, does not undo."""
    left, right = finding.evidence.get("slope_left"), finding.evidence.get("slope_right")
    if finding.finding_class != FindingClass.WRONG or left is None or right is None or left == right:
        return False
    ad = [v for p, v in here.items() if base_name(p) not in REFERENCES and v is not None]
    return bool(ad) and not any(bool(between_slopes(v, left, right)) for v in ad)


def _shrank(found: Finding, narrow: ScenarioResult, wide: ScenarioResult, dtype: str) -> bool:
    """Whether the float64 run's finding `found` is the narrow run's split at the same entry shrunk
    as rounding shrinks (`_scaled_split`): float64's own rounding of what the narrow dtype rounded
    more coarsely, where a float64 split persisting elsewhere would otherwise keep a narrow finding
    whose own entry float64 settles (a structurally zero entry, noisy at the scale of the whole
    matrix, in both dtypes)."""
    location = found.location or ""
    here = {p: _entry(narrow, p, location) for p in found.paths}
    there = {p: _entry(wide, p, location) for p in found.paths}
    if not _scaled_split(found, here, there, dtype, elsewhere=True) or None in here.values():
        return False
    # The narrow split must itself be rounding: within what the dtype rounds a Jacobian to at the entry's
    # row and column (its AD blocks' scale there, `scale.row_and_column_scale`). A finite difference whose
    # usual step reaches a feature that float64's finer step does not parts from AD by far more than that,
    # and would otherwise pass for rounding that float64 shrank.
    room = _rounding_room(narrow, [p for p in found.paths if base_name(p) not in REFERENCES], location, dtype)
    numbers = [v for v in here.values() if v is not None]
    return room is not None and max(numbers) - min(numbers) <= room


def _rounding_room(result: ScenarioResult, paths: list[str], location: str, dtype: str) -> float | None:
    """The square root of the dtype's epsilon times the largest AD entry in the row and column of
    `location` (`scale.row_and_column_scale`, over `paths`' first-order blocks): what rounding can move
    an entry of a Jacobian of condition up to 1/sqrt(eps) by. None where it cannot be read."""
    value = result.paths.get(VALUE)
    names = block_names(result.arg_names, 1)
    parsed = parse_location(location, names)
    if not paths or value is None or not value.ok or parsed is None or parsed[0] != 1 or parsed[2] not in names:
        return None
    _, out, name, at = parsed
    k = names.index(name)
    out_size = int(np.size(value.ok_arrays[0]))
    largest = 0.0
    for path in paths:
        found = result.paths.get(path)
        if found is None or not found.ok or len(found.ok_arrays) < len(names):
            return None
        blocks = [np.asarray(b, dtype=np.float64) for b in found.ok_arrays[: len(names)]]
        scales = row_and_column_scale(blocks, out_size)
        index = (*out, *at)
        if (
            scales is None
            or len(index) != blocks[k].ndim
            or any(not 0 <= i < n for i, n in zip(index, blocks[k].shape, strict=True))
        ):
            return None
        largest = max(largest, float(scales[k][np.ravel_multi_index(index, blocks[k].shape)]))
    return math.sqrt(dtypes.machine_epsilon(dtype)) * largest


def _scaled_split(finding: Finding, here: dict, there: dict, dtype: str, elsewhere: bool = False) -> str:
    """Where the float64 split between the paths of `finding` is smaller than the narrow one by
    about the ratio of the dtypes' epsilons (within SCALED), the words saying so: rounding shrinks
    with the dtype's precision, but a wrong rule gives the same wrong number in both. `elsewhere`
    (float64's split at another entry than the finding's, `_shrank`): with finite differences among
    the paths the ratio is a central difference's error at each dtype's default step (rounding,
    epsilon over the step, and truncation, the step squared: each shrinks as epsilon to the
    two-thirds), its looseness bounded there by the narrow split having to be rounding itself. At the
    finding's own entry the epsilons' ratio stays: a narrow step reaching a feature float64's finer
    step does not would otherwise pass for rounding. Else empty."""
    if None in here.values() or None in there.values():
        return ""
    narrow_gap = max(here.values()) - min(here.values())
    wide_gap = max(there.values()) - min(there.values())
    ratio = dtypes.machine_epsilon("float64") / dtypes.machine_epsilon(dtype)
    if elsewhere and any(base_name(p) in REFERENCES for p in finding.paths):
        steps = dtypes.default_eps("float64") / dtypes.default_eps(dtype)
        ratio = max(ratio / steps, steps**2)
    if not (math.isfinite(narrow_gap) and math.isfinite(wide_gap)) or wide_gap > SCALED * ratio * narrow_gap:
        return ""
    if wide_gap == 0:
        return f"no split where {dtype} parts by {narrow_gap:.3g}, as rounding's can vanish"
    return f"a split {narrow_gap / wide_gap:.3g} times smaller, as rounding is (their rounding's ratio {1 / ratio:.3g})"


def _strays(
    mine: np.ndarray, theirs: np.ndarray, rtol: float, atol: float, moves: np.ndarray | None = None
) -> int | None:
    """The flat index of the entry where the narrow block `mine` strays furthest from the float64
    block `theirs` (`_straying`); None where none strays."""
    off = _straying(mine, theirs, rtol, atol, moves)
    if not off.any():
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.abs(mine - theirs).reshape(-1)
    excess = np.where(off, np.nan_to_num(gap, nan=np.inf, posinf=np.inf), -1.0)
    return int(np.argmax(excess))


def _straying(
    mine: np.ndarray, theirs: np.ndarray, rtol: float, atol: float, moves: np.ndarray | None = None
) -> np.ndarray:
    """Per entry (flat), whether the narrow block `mine` strays from the float64 block `theirs`: beyond tolerance
    both entry-wise and against the block's largest finite entry (a norm-wise bound: linear algebra rounds
    relative to the whole matrix), and not the same number, NaN or infinity. `moves` (`_moves`) widens each
    entry's tolerance."""
    with np.errstate(invalid="ignore", over="ignore"):
        scale = float(np.max(np.abs(theirs[np.isfinite(theirs)]), initial=0.0))
        gap = np.abs(mine - theirs)
        entry = atol + rtol * np.abs(theirs) + (0.0 if moves is None else moves)
        within = (gap <= entry) | (gap <= rtol * scale)
        return ~(within | (mine == theirs) | (np.isnan(mine) & np.isnan(theirs))).reshape(-1)


Nearby = Callable[[], Moved | None]
"""`Moved` for a result, computed when first called (None: not to be had)."""

Backwards = Callable[[int, float, float], list[Backward] | None]
"""(output element, the narrow value there, how closely) -> float64's `Backward` points for it, one per input
element where one is found (None: not to be had)."""
MATCHED = 0.25
"""How closely, in the narrow dtype's rounding of the value, float64's value at a backward point matches the narrow
one: well within that rounding (float64 rounds inside too: 1 - (1 - x) at 1e-7 holds x to 1e-9 of itself)."""


UNEXPLAINED, EXPLAINED, UNJUDGED = "unexplained", "explained", "unjudged"
HELD = "held"
"""`_strays_unchecked`'s ruling at an entry compared only within rounding where the narrow value holds."""


@dataclass(frozen=True)
class _Elsewhere:
    """Where a narrow AD path's own evaluation (eager or jit) computes the function, at an output element: its value
    there, whether it strays from float64's beyond its rounding (the function rounds inside), the points float64
    gives that value at (`Backwards`; None: none to be had), and those where float64's first-order Jacobian is the
    path's within the narrow tolerance, every block."""

    value: float
    strays: bool
    points: tuple[Backward, ...] | None = None
    matching: tuple[Backward, ...] = ()
    read: tuple[Backward, ...] = ()
    """The points whose float64 Jacobian entry the narrow finite differences' estimate there agrees with, where they
    compared the entry: they read the slope of the function the narrow dtype computes, so of the point it computes at
    (`((1 - (1 - x)) 1e8 - 11) ** 2` at 1e-7 in float32: 1.844e8, float64's slope at x + 1.92e-8, not at the mirror
    point x + 7.9e-10 past the minimum, -1.842e8)."""
    refuted: bool = False
    """Whether that estimate reads a slope the path's AD is not, each told apart (from 0, from the path) by the
    judge's tolerance, and float64's finite differences read it too: the function has that slope, wherever the
    narrow dtype computes, so no point explains the path (`(x + 1e6) - 1e6 + g(y)` at x = 0.025 in float32, g's
    rule flipped: x's share rounds away, which no move of one element reproduces, but d/dy reads 1.0 in float32 as
    in float64; `rsf2csf` of a matrix of entries near 1e-18). A stair's 0 refutes nothing: steps inside one stair
    read no slope at all (`sin(x + 2e7)` at 6.83 in float32, `tan(pi (1/2 - q))` at q = 1e10: -5.1e-8, rounding's
    noise)."""
    unread: bool = False
    """Whether that estimate, told from 0, reads a slope float64 gives neither at the inputs nor at any point where
    it takes the narrow value: the rounding inside hides part of the input's effect from the narrow steps, a slope
    no move of the input makes (`sin(x + 2e7) + 1e-3 log(x)` at 0.3 in float32: x's share of the sine rounds away,
    its steps read the logarithm's 0.0033 alone, float64 0.846), so those points are not where the narrow dtype
    computes, and the estimate tells a wrong rule from a right one no more than they do."""
    wide_slope: float | None = None
    """Float64's finite differences at the entry as its judge compared them, where the narrow ones compared it."""

    @property
    def ruling(self) -> str:
        """What the path's straying from float64's AD is, where it computes the function: UNEXPLAINED where its
        value holds, or strays and float64 takes that value at points of one input element alone, its Jacobian the
        path's at none of them, or at none of those the narrow finite differences read; EXPLAINED where float64's
        Jacobian is the path's at an element's only point, or at every point the narrow finite differences read;
        UNJUDGED otherwise: several elements' or points' values (two elements that each round, a period or a
        turning point away, where a flipped rule is float64's at the mirror point), none nearby, or more elements
        than are moved."""
        if not self.strays:
            return UNEXPLAINED
        if self.explained_at is not None:
            return EXPLAINED
        if self.refuted or (self.read and not any(_among(p, self.matching) for p in self.read)):
            return UNEXPLAINED
        if self.unread:
            return UNJUDGED
        if self.points and not self.matching and len({(p.argument, p.element) for p in self.points}) == 1:
            return UNEXPLAINED
        return UNJUDGED

    @property
    def explained_at(self) -> Backward | None:
        """The point that explains the path: where float64's Jacobian is the path's, the element's only point or every
        point the narrow finite differences read."""
        alone = [p for p in self.matching if p.crossings == 1]
        if alone:
            return alone[0]
        if self.read and all(_among(p, self.matching) for p in self.read):
            return self.read[0]
        return None


def _among(point: Backward, points: Sequence[Backward]) -> bool:
    return any(point is p for p in points)


def _elsewhere(
    narrow: ScenarioResult,
    wide: ScenarioResult,
    backward: Backwards | None,
    path: str,
    location: str,
    rtol: float,
    atol: float,
) -> _Elsewhere | None:
    """`_Elsewhere` for `path` at the output element of the first-order `location`; None where it cannot be read."""
    parsed = parse_location(location, block_names(narrow.arg_names, 1))
    there = _output_at(wide, location)
    evaluated = narrow.paths.get(path.replace(transform_of(path), VALUE, 1))
    if parsed is None or parsed[0] != 1 or there is None or not math.isfinite(there):
        return None
    if evaluated is None or not evaluated.ok or path not in narrow.paths or not narrow.paths[path].ok:
        return None
    output = np.asarray(evaluated.ok_arrays[0], dtype=np.float64)
    if output.ndim != len(parsed[1]) or not math.isfinite(here := float(output[parsed[1]])):
        return None
    epsilon = dtypes.machine_epsilon(narrow.scenario.precision_dtype)
    if abs(here - there) <= epsilon * abs(there):
        return _Elsewhere(here, False)
    points = (
        None
        if backward is None
        else backward(int(np.ravel_multi_index(parsed[1], output.shape)), here, MATCHED * epsilon * abs(here))
    )
    blocks = narrow.paths[path].ok_arrays
    matching = tuple(
        p
        for p in points or ()
        if len(blocks) == len(p.jacobian)
        and all(
            np.shape(b) == np.shape(j) and _strays(np.asarray(b, dtype=np.float64), j, rtol, atol) is None
            for b, j in zip(blocks, p.jacobian, strict=True)
        )
    )
    estimate = _estimate(narrow, location)
    read = (
        ()
        if estimate is None
        else tuple(
            p
            for p in points or ()
            if (entry := _jacobian_entry(p, location, block_names(narrow.arg_names, 1))) is not None
            and abs(entry - estimate[0]) <= estimate[1]
        )
    )
    mine = _entry(narrow, path, location)
    compared_there = _estimate(wide, location)  # float64's estimate as its judge compared it, not the raw steps'
    wide_estimate = None if compared_there is None else compared_there[0]
    refuted = unread = False
    if estimate is not None and wide_estimate is not None and math.isfinite(wide_estimate):
        slope, tolerance = estimate
        # the function has the slope the narrow steps read where float64 takes the narrow value somewhere and its
        # Jacobian reads it at one of those points, or takes it nowhere and its steps read it at the inputs (float64's
        # steps read 0.0138 by chance where a hidden sine's slope is 0 at x, but at none of its points: a review's)
        faithful = bool(read) or (abs(wide_estimate - slope) <= tolerance and not points)
        told_from_zero = abs(slope) > tolerance  # a stair's 0 reads no slope: it refutes nothing, and picks no point
        refuted = faithful and told_from_zero and mine is not None and abs(mine - slope) > tolerance
        unread = told_from_zero and not faithful
    return _Elsewhere(
        here, True, None if points is None else tuple(points), matching, read, refuted, unread, wide_estimate
    )


def _estimate(narrow: ScenarioResult, location: str) -> tuple[float, float] | None:
    """The narrow finite differences' estimate at the first-order `location` and the tolerance the judge compared it
    by, the rounding it allowed there included (`Compared.allowance`), where the judge compared it (not a kink's or
    staircase's entry, nor one without an estimate)."""
    compared = next((c for c in narrow.compared if c.order == 1), None)
    names = block_names(narrow.arg_names, 1)
    parsed = parse_location(location, names)
    if compared is None or compared.reference is None or not compared.reference.ok or parsed is None:
        return None
    if parsed[2] not in names or len(compared.excluded) != len(compared.reference.ok_arrays):
        return None
    block = names.index(parsed[2])
    estimates, excluded = np.asarray(compared.reference.ok_arrays[block]), np.asarray(compared.excluded[block])
    index = (*parsed[1], *parsed[3])
    if len(index) != estimates.ndim or estimates.shape != excluded.shape or excluded[index]:
        return None
    estimate = float(estimates[index])
    allowance = compared.allowance[block] if len(compared.allowance) == len(compared.excluded) else None
    slack = float(allowance[index]) if allowance is not None and np.shape(allowance) == estimates.shape else 0.0
    # the rounding the judge allowed beside the tolerance: a loosely compared estimate reads a slope that far off
    tolerance = compared.atol + compared.rtol * abs(estimate) + (slack if math.isfinite(slack) else 0.0)
    return (estimate, tolerance) if math.isfinite(estimate) else None


def _computed_elsewhere(
    finding: Finding,
    narrow: ScenarioResult,
    wide: ScenarioResult,
    backward: Backwards | None,
    strayed: list[str],
    rtol: float,
    atol: float,
) -> Note | tuple[FindingClass, str] | None:
    """A precision note where each of the `strayed` narrow AD paths is computed at another point than float64's
    (`_elsewhere`): the narrow value strays from float64's beyond its rounding, float64 gives that value with one
    input element moved, at one point alone over that element's moves (its backward error: the function rounds
    inside, as 1 - x at x = 1e-7 in float32 moves x to 1.19e-7), or at several of which the narrow finite
    differences read one, and there float64's Jacobian is the path's, every block: the path computes the function
    at that point, and its AD is that point's derivative. A wrong rule gives another number there (one 15% off, a
    sign flipped, a zero); one input's rounding explains no other input's derivative. Otherwise the class the
    finding keeps and the words on float64's points: its own where a path's Jacobian is float64's at none of the
    points that could explain it (`_Elsewhere.ruling` UNEXPLAINED); `unjudged` where no one point settles where a
    path computes (float64's Jacobian the path's at one of several points, either side of a minimum or a period of a
    sine away, where a flipped rule is float64's at the mirror point; the points of two elements; none nearby): the
    evidence fits the path's rule and a wrong rule alike. None where a path's value holds or cannot be read."""
    location = finding.location or ""
    names = block_names(narrow.arg_names, 1)
    there = _output_at(wide, location)
    if backward is None or not strayed or there is None:
        return None
    dtype = narrow.scenario.precision_dtype
    holding = _strays_where_value_holds(narrow, wide, strayed, rtol, atol)
    if holding is not None:
        return finding.finding_class, (
            f"at {holding}, another entry of the finding, {dtype}'s value is float64's within its rounding, so where "
            f"{dtype} computes the function explains no straying there"
        )
    found: list[tuple[str, float, Backward]] = []
    unsettled: dict[str, dict[str, list[str]]] = {UNEXPLAINED: {}, UNJUDGED: {}}
    value = math.nan
    for path in strayed:
        elsewhere = _elsewhere(narrow, wide, backward, path, location, rtol, atol)
        mine = _entry(narrow, path, location)
        if elsewhere is None or not elsewhere.strays or mine is None or not math.isfinite(mine):
            return None  # a NaN or inf derivative is no finite function's at any point: where it computes explains none
        if elsewhere.explained_at is not None:
            found.append((path, elsewhere.value, elsewhere.explained_at))
            continue
        value = elsewhere.value
        said = f"{_number(mine)}: {_points_read(elsewhere, narrow, location)}"
        # a finding stands already: float64's Jacobian the path's at no point at all, of any element, excuses nothing
        # (a rule zeroed on y beside an x float32 rounds); only points that fit the path and others leave it open, or
        # narrow finite differences that read a slope of none of them (`_Elsewhere.unread`: the finding's own evidence)
        ruling = (
            UNEXPLAINED if elsewhere.points and not elsewhere.matching and not elsewhere.unread else elsewhere.ruling
        )
        unsettled[ruling].setdefault(said, []).append(path)
    for ruling, finding_class, verdict in (
        (UNEXPLAINED, finding.finding_class, "no point explains a path's AD"),
        (
            UNJUDGED,
            FindingClass.UNJUDGED,
            f"no one point settles where {dtype} computes: a path's rule there and a wrong rule fit alike, and the "
            "referee cannot tell which",
        ),
    ):
        if unsettled[ruling]:
            read = " | ".join(f"{path_labels(paths)} {points}" for points, paths in unsettled[ruling].items())
            return finding_class, (
                f"{dtype}'s value there is {_number(value)} against {_number(there)} in float64, so {dtype} computes "
                f"the function elsewhere (it rounds inside); moving one input element, {read}; {verdict}"
            )
    shown = "; ".join(
        f"{path} {_number(_entry(narrow, path, location))} where float64's value is {dtype}'s {_number(here)} with "
        f"{names[point.argument]}{index_text(np.shape(narrow.inputs[point.argument]), point.element)} moved by "
        f"{point.move:.3g}"
        for path, here, point in found
    )
    return Note(
        paths=finding.paths,
        message=(
            f"precision, not counted: {location}: float64 gives {_number(there)} for the value and "
            f"{_number(_entry(wide, strayed[0], location))} from {strayed[0]}, but {dtype} computes the function "
            f"elsewhere (it rounds inside), and its AD is float64's there, every block within {dtype}'s tolerance "
            f"(rtol {rtol:.2g}, atol {atol:.2g}): {shown}"
        ),
        count=finding.count,
        of=finding.of,
        location=location,
        values={
            "value (float64)": there,
            **{f"value ({dtype}, {path})": here for path, here, _ in found},
            **{f"{path} moved by": point.move for path, _, point in found},
        },
    )


def _strays_where_value_holds(
    narrow: ScenarioResult, wide: ScenarioResult, strayed: list[str], rtol: float, atol: float
) -> str | None:
    """The first first-order entry where a `strayed` narrow path strays from float64's (`_straying`) while the narrow
    value of its output element is float64's within the narrow rounding; None where there is none. A finding is
    ruled at its lead entry; an excuse read there (where the function rounds inside) must not cover an entry whose
    value holds: a rule 5% off in float32 alone at x[19] beside sin(x[0] + 2e7), 20 elements, passed `unjudged`."""
    values = [r.paths.get(VALUE) for r in (narrow, wide)]
    if any(v is None or not v.ok or not v.ok_arrays for v in values):
        return None
    here, there = (np.asarray(v.ok_arrays[0], np.float64).reshape(-1) for v in values if v is not None)
    if here.shape != there.shape:
        return None
    with np.errstate(invalid="ignore"):
        holds = np.abs(here - there) <= dtypes.machine_epsilon(narrow.scenario.precision_dtype) * np.abs(there)
    names = block_names(narrow.arg_names, 1)
    output_shape = np.shape(values[0].ok_arrays[0]) if values[0] is not None else ()
    for path in strayed:
        mine, theirs = narrow.paths.get(path), wide.paths.get(_answering(wide, path))
        if mine is None or theirs is None or not mine.ok or not theirs.ok or len(mine.ok_arrays) != len(names):
            continue
        for block, (a, b) in enumerate(zip(mine.ok_arrays, theirs.ok_arrays, strict=False)):
            a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
            if a.shape != b.shape or a.size == 0 or a.size % max(here.size, 1):
                continue
            off = _straying(a, b, rtol, atol).reshape(here.size, -1) & holds[:, None]
            if off.any():
                return entry_location(a.shape, output_shape, names[block], 1, int(np.flatnonzero(off.reshape(-1))[0]))
    return None


def _points_read(elsewhere: _Elsewhere, narrow: ScenarioResult, location: str) -> str:
    """Where float64 takes a narrow value, and its Jacobian there: the numbers an `_Elsewhere` ruling is read from."""
    names = block_names(narrow.arg_names, 1)
    dtype = narrow.scenario.precision_dtype
    estimate = _estimate(narrow, location)
    read = ""
    if elsewhere.refuted and estimate is not None:
        read = f"; {dtype}'s finite differences there read {_number(estimate[0])}, the slope of the function "
        read += f"{dtype} computes"
    elif elsewhere.unread and estimate is not None and elsewhere.wide_slope is not None:
        read = (
            f"; {dtype}'s finite differences there read {_number(estimate[0])}, a slope float64 reads neither by its "
            f"finite differences at the inputs ({_number(elsewhere.wide_slope)}) nor by its Jacobian at a point it "
            f"takes {dtype}'s value at: where {dtype} computes is no move of one input element (its rounding inside "
            f"seems to hide part of the input's effect from {dtype}'s steps), and those finite differences refute no "
            "rule"
        )
    if elsewhere.points is None:
        unread = f"more than {MOVED_ELEMENTS} input elements, or the probe could not run"
        return f"float64's points not read ({unread}){read}"
    if not elsewhere.points:
        return f"float64 takes that value at no point over its moves (half its size each way){read}"
    return (
        "float64 takes that value at "
        + "; ".join(
            f"{_moved(p, narrow)} "
            f"(its Jacobian {_number(_jacobian_entry(p, location, names))}, "
            f"{'matching' if _among(p, elsewhere.matching) else 'not matching'}"
            f"{', the one the finite differences read' if _among(p, elsewhere.read) else ''})"
            for p in elsewhere.points
        )
        + read
    )


def _jacobian_entry(point: Backward, location: str, names: tuple[str, ...]) -> float | None:
    """Float64's Jacobian entry at the first-order `location`, at a backward point."""
    parsed = parse_location(location, names)
    if parsed is None or parsed[2] not in names:
        return None
    block = np.asarray(point.jacobian[names.index(parsed[2])])
    index = (*parsed[1], *parsed[3])
    return float(block[index]) if len(index) == block.ndim else None


def _moves(
    nearby: Nearby | None, narrow: ScenarioResult, wide: ScenarioResult, location: str, shape: tuple[int, ...]
) -> np.ndarray | None:
    """`_allowance` for the first-order block `location` falls in, where `nearby` gives them and both
    runs have values."""
    names = block_names(narrow.arg_names, 1)
    parsed = parse_location(location, names)
    mine, theirs = narrow.paths.get(VALUE), wide.paths.get(VALUE)
    if nearby is None or parsed is None or parsed[0] != 1 or parsed[2] not in names:
        return None
    if mine is None or theirs is None or not mine.ok or not theirs.ok:
        return None
    moved = nearby()
    if moved is None:
        return None
    block = names.index(parsed[2])
    if block >= len(moved.center) or moved.center[block].shape != shape:
        return None
    here, there = (np.asarray(p.ok_arrays[0], dtype=np.float64) for p in (mine, theirs))
    if here.shape != there.shape:
        return None
    rounding = dtypes.machine_epsilon(narrow.scenario.precision_dtype) * np.abs(there)
    with np.errstate(invalid="ignore"):
        strayed = np.maximum(np.abs(here - there) - rounding, 0.0)
    return _allowance(moved, block, np.where(np.isfinite(strayed), strayed, 0.0))


def _allowance(found: Moved, block: int, strayed: np.ndarray) -> np.ndarray:
    """Per entry of `block`, how far float64's derivative moves when the inputs move as far as the
    narrow run's rounding moved its value: the sum over input elements of its move either way by the
    narrow epsilon (sinc at 1e6 in float32, whose pi x rounds by up to 0.19), times the share of the
    value change those moves would make that the narrow value shows (`strayed`, per output: how far it
    is from float64's beyond its own rounding; sin(x - 1e5) at 1e5 + 1.3 rounds nothing, and excuses
    nothing). Only where the derivative moves smoothly: a quarter of the move moves it by a half to a
    thirty-second as much (a line's quarter, a turning point's sixteenth); else NaN, which widens nothing
    (the moves cross a pole, tan's at every integer q of cauchy.isf at 1e10, or a jump, or reach a NaN)."""

    def total(pairs: tuple) -> np.ndarray:
        center = found.center[block]
        summed = np.zeros(center.shape)
        with np.errstate(invalid="ignore", over="ignore"):
            for up, down in pairs:
                summed = summed + np.maximum(np.abs(up[block] - center), np.abs(down[block] - center))
        return summed

    far, near = total(found.moved), total(found.closer)
    outputs = strayed.size
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        # the value change moving every input by the narrow epsilon would make, per output
        change = sum(
            np.abs(c.reshape(outputs, -1)) @ s.reshape(-1) for c, s in zip(found.center, found.sizes, strict=True)
        )
        share = np.clip(np.where(change > 0, strayed.reshape(-1) / change, 0.0), 0.0, 1.0)
        scaled = far * share.reshape(strayed.shape + (1,) * (far.ndim - strayed.ndim))
        smooth = np.isfinite(far) & (near <= 0.5 * far) & (near >= far / 32.0)
        return np.where(smooth, scaled, np.nan)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.9g}"
