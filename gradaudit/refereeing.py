"""The float64 referee's run: narrow-dtype results' scenarios widened and audited again, then ruled
on (`judging.referee`). It computes, so it sits above the engines and the judge, as screening does;
the service calls it where it judges in this process, and each worker where it judges there, a
batch of results at a time: widened scenarios calling one function run vmapped on the group engine
(one compiled program for them all), the rest on the literal engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gradaudit.engines import GROUP_MIN
from gradaudit.judging.referee import Moved
from gradaudit.model.options import Options
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import Scenario


def refereed(result: ScenarioResult, options: Options) -> ScenarioResult:
    """`result` with its low-precision splits put to the float64 referee (`refereed_all`)."""
    return refereed_all([result], options)[0]


def refereed_all(results: Sequence[ScenarioResult], options: Options) -> list[ScenarioResult]:
    """Each result with its low-precision splits put to the float64 referee (judging/referee.py):
    its scenario widened to float64 and run in this process, x64 on for it alone."""
    from gradaudit.judging import referee

    wanted = [(i, referee.widened(r.scenario)) for i, r in enumerate(results) if referee.wanted(r)]
    wides = [(i, wide) for i, wide in wanted if wide is not None]
    if not wides:
        return list(results)
    from gradaudit.engines.literal import compute
    from gradaudit.judging.assess import assess, assess_all, one_story

    scenarios = [wide for _, wide in wides]
    found: dict[int, ScenarioResult] = {}
    if len(scenarios) >= GROUP_MIN:
        from gradaudit.engines.group import GroupEngine

        group = GroupEngine(min_size=GROUP_MIN, timeout=options.timeout)
        for batch in group.run(scenarios):
            judged = assess_all([(scenarios[p], computed) for p, computed in batch])
            # Kept only where each eager path agrees with its jit twin, as the service keeps a group's results.
            found.update({p: r for (p, _), r in zip(batch, judged, strict=True) if one_story(r)})
    ruled = list(results)
    for position, (index, wide) in enumerate(wides):
        if position not in found:
            try:
                found[position] = assess(wide, compute(wide, options.timeout))
            except Exception as error:  # noqa: BLE001 (a function that cannot run in float64 leaves its findings be)
                ruled[index] = referee.refereed(results[index], None, f"{type(error).__name__}: {error}")
                continue
        ruled[index] = referee.refereed(
            results[index],
            found[position],
            nearby=_nearby(wide, results[index].scenario.precision_dtype, options.timeout),
        )
    return ruled


MOVED_ELEMENTS = 16
"""Most input elements whose moves `_nearby` evaluates (four float64 Jacobians each)."""


def _nearby(wide: Scenario, narrow: str, timeout: float | None) -> Callable[[], Moved | None]:
    """float64's Jacobian at the widened scenario's inputs and at each input element moved up and down by
    the `narrow` dtype's epsilon times its size, and by a quarter of that (`referee.Moved`), by
    jax.jit(jax.jacfwd) as the float64 run computed it, when the referee first asks; None where the
    inputs hold more than MOVED_ELEMENTS elements or the function cannot be evaluated there."""
    asked: list[Moved | None] = []

    def moved() -> Moved | None:
        if not asked:
            try:
                asked.append(_moved(wide, narrow, timeout))
            except Exception:  # noqa: BLE001 (no such evidence: the finding stays as the rest of the ruling says)
                asked.append(None)
        return asked[0]

    return moved


def _moved(wide: Scenario, narrow: str, timeout: float | None) -> Moved | None:
    import jax
    import numpy as np

    from gradaudit.engines.group import FORWARD, computations
    from gradaudit.engines.literal import time_limit
    from gradaudit.jaxenv import x64_for
    from gradaudit.model import dtypes
    from gradaudit.targets import build_targets

    target = build_targets(wide)[0]
    if sum(np.size(a) for a in target.args) > MOVED_ELEMENTS:
        return None
    epsilon, smallest = dtypes.machine_epsilon(narrow), dtypes.smallest_normal(narrow)
    with x64_for(wide), time_limit(timeout):
        jacobian = jax.jit(computations(target.fn, len(target.args))[FORWARD])

        def at(args: list) -> tuple[np.ndarray, ...]:
            return tuple(np.asarray(b, np.float64) for b in jax.device_get(jacobian(*args, *target.fixed)))

        sizes = tuple(epsilon * np.maximum(np.abs(np.asarray(a, dtype=np.float64)), smallest) for a in target.args)

        def pairs(share: float) -> tuple:
            found = []
            for position, arg in enumerate(target.args):
                for element in range(np.size(arg)):
                    pair = []
                    for sign in (1.0, -1.0):
                        moved = np.array(arg, dtype=np.float64, copy=True)
                        moved.flat[element] += sign * share * sizes[position].flat[element]
                        pair.append(at([*target.args[:position], moved, *target.args[position + 1 :]]))
                    found.append((pair[0], pair[1]))
            return tuple(found)

        return Moved(at(list(target.args)), pairs(1.0), pairs(0.25), sizes)
