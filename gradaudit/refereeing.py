"""The float64 referee's run: narrow-dtype results' scenarios widened and audited again, then ruled
on (`judging.referee`). It computes, so it sits above the engines and the judge, as screening does;
the service calls it where it judges in this process, and each worker where it judges there, a
batch of results at a time: widened scenarios calling one function run vmapped on the group engine
(one compiled program for them all), the rest on the literal engine."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from gradaudit.engines import GROUP_MIN
from gradaudit.model.computed import Backward, Moved
from gradaudit.model.options import Options
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import Scenario


def refereed(result: ScenarioResult, options: Options) -> ScenarioResult:
    """`result` with its low-precision splits put to the float64 referee (`refereed_all`)."""
    return refereed_all([result], options)[0]


def refereed_all(results: Sequence[ScenarioResult], options: Options) -> list[ScenarioResult]:
    """Each result with its low-precision splits put to the float64 referee (judging/referee.py):
    its scenario widened to float64 and run in this process, x64 on for it alone; only its compiled AD paths where
    it has no finding to settle (`referee.checked_closely_only`)."""
    from gradaudit.judging import referee

    wanted = [(i, referee.widened(r)) for i, r in enumerate(results) if referee.wanted(r, options.tolerance)]
    wides = [(i, wide) for i, wide in wanted if wide is not None]
    if not wides:
        return list(results)
    from gradaudit.engines.literal import compute
    from gradaudit.judging.assess import assess, assess_all, one_story

    scenarios = [wide for _, wide in wides]
    found: dict[int, ScenarioResult] = {}
    split: set[int] = set()  # a group's float64 eager and jit paths apart: computed again with every path
    if len(scenarios) >= GROUP_MIN:
        from gradaudit.engines.group import GroupEngine

        group = GroupEngine(min_size=GROUP_MIN, timeout=options.timeout)
        for batch in group.run(scenarios):
            judged = assess_all([(scenarios[p], computed) for p, computed in batch])
            # Kept only where each eager path agrees with its jit twin, as the service keeps a group's results.
            found.update({p: r for (p, _), r in zip(batch, judged, strict=True) if one_story(r)})
            split.update(p for (p, _), r in zip(batch, judged, strict=True) if not one_story(r))
    ruled = list(results)
    for position, (index, wide) in enumerate(wides):
        if position not in found:
            try:
                closely = position not in split and referee.checked_closely_only(results[index])
                found[position] = assess(wide, compute(wide, options.timeout, compiled_only=closely))
            except Exception as error:  # noqa: BLE001 (a function that cannot run in float64 leaves its findings be)
                ruled[index] = referee.refereed(results[index], None, f"{type(error).__name__}: {error}")
                continue
        ruled[index] = referee.refereed(
            results[index],
            found[position],
            nearby=_nearby(wide, results[index].scenario.precision_dtype, options.timeout),
            tolerance=options.tolerance,
            narrowing=functools.cache(functools.partial(_narrowing, wide)),
            backward=functools.cache(functools.partial(_backward, wide, options.timeout)),
        )
    return ruled


def _narrowing(wide: Scenario) -> str:
    """`targets.base.narrowing` of the widened scenario's function; '' where it cannot be traced (its float64
    run then checks the narrow one as it finds)."""
    from gradaudit.jaxenv import x64_for
    from gradaudit.targets import build_targets
    from gradaudit.targets.base import narrowing

    try:
        with x64_for(wide):
            return narrowing(build_targets(wide)[0])
    except Exception:  # noqa: BLE001 (no such evidence: float64's run is taken as it is)
        return ""


def _nearby(wide: Scenario, narrow: str, timeout: float | None) -> Callable[[], Moved | None]:
    """`engines.probe.moved_jacobians` for the widened scenario, computed when the referee first asks; None where
    it cannot be had (the finding stays as the rest of the ruling says)."""
    asked: list[Moved | None] = []

    def found() -> Moved | None:
        if not asked:
            from gradaudit.engines.probe import moved_jacobians

            try:
                asked.append(moved_jacobians(wide, narrow, timeout))
            except Exception:  # noqa: BLE001 (no such evidence: the finding stays as the rest of the ruling says)
                asked.append(None)
        return asked[0]

    return found


def _backward(wide: Scenario, timeout: float | None, output: int, value: float, within: float) -> list[Backward] | None:
    """`engines.probe.backward_points` for the widened scenario; None where they cannot be had (the finding stays
    as the rest of the ruling says)."""
    from gradaudit.engines.probe import backward_points

    try:
        return backward_points(wide, output, value, within, timeout)
    except Exception:  # noqa: BLE001 (no such evidence: the finding stays as the rest of the ruling says)
        return None
