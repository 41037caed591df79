"""Where one function's survey spends its time, by component: XLA compilation, the group engine's
programs, the literal engine (screen fallbacks and confirmations), the trigger diagnosis that
classes a finding, judging. `bench/survey_time.py` says which functions are slow; this says why.

    python bench/survey_profile.py FUNCTION [FUNCTION ...] [--budget 30] [--seed 0]

Each function is surveyed as `gradaudit survey` does (same budget and seed, the same search), in
this process (`--jobs 0`, so the profiler sees every call) under cProfile, whose overhead makes
every figure some tens of percent larger than a survey's own: compare the shares, not the seconds.
Components overlap (compilation happens inside the others); each is a cumulative time. The engines'
`run` are generators: their calls count resumptions, not scenarios. XLA compilation is read from a
JAX internal (`jax._src.compiler`); where a release renames it, that row is missing, not zero.
An unknown function name exits 2 with the near names, as `gradaudit survey` does.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

from gradaudit.model.options import Options
from gradaudit.service import isolated, prepare
from gradaudit.survey.explore import SURVEY_TIMEOUT, UnknownFunction, spaces, survey_one

COMPONENTS = {
    ("compiler.py", "backend_compile_and_load"): "XLA compilation",
    ("group.py", "_program"): "group programs (built and compiled)",
    ("group.py", "run"): "group engine",
    ("literal.py", "run"): "literal engine",
    ("triggers.py", "triggered"): "trigger diagnosis (judging's)",
    ("assess.py", "assess_all"): "judging",
}
"""(file, function) whose cumulative time and calls are reported, under the component's name."""


def components(profile: cProfile.Profile) -> dict[str, tuple[int, float]]:
    """Calls and cumulative seconds of each of COMPONENTS (recursive calls counted once)."""
    found: dict[str, tuple[int, float]] = {}
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    for (path, _, function), (primitive_calls, _, _, cumulative, _) in stats.items():
        name = COMPONENTS.get((Path(path).name, function))
        if name is not None:
            calls, seconds = found.get(name, (0, 0.0))
            found[name] = (calls + primitive_calls, seconds + cumulative)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("functions", nargs="+")
    parser.add_argument("--budget", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    try:
        chosen = spaces(arguments.functions)
    except UnknownFunction as exc:
        print(f"survey_profile: {exc}", file=sys.stderr)
        return 2
    options = Options(timeout=SURVEY_TIMEOUT, jobs=0, cache=None)
    prepare(options)
    auditor = isolated(options)
    try:
        with tempfile.TemporaryDirectory() as out:
            for space in chosen:
                report(space, arguments.budget, arguments.seed, auditor, Path(out), options)
    finally:
        auditor.close()
    return 0


def report(space, budget: int, seed: int, auditor, out: Path, options: Options) -> None:
    """One function surveyed under the profiler, and its time by component printed."""
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    one = survey_one(space, budget, seed, auditor, out, "profile", options.limits, lambda _: None)
    profile.disable()
    total = time.perf_counter() - started
    phases = ", ".join(f"{phase} {spent:.1f} s" for phase, spent in one.outcome.phases.items())
    print(
        f"{space.name}: {total:.1f} s under the profiler ({phases}); {one.outcome.audited} audited, "
        f"{len(one.outcome.found)} kinds, {one.outcome.timed_out} timed out"
    )
    for name, (calls, seconds) in sorted(components(profile).items(), key=lambda item: -item[1][1]):
        print(f"  {seconds:7.1f} s {100 * seconds / total:4.0f}%  {calls:6d} calls  {name}")


if __name__ == "__main__":
    raise SystemExit(main())
