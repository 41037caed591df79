"""How much of the survey's time is JAX compiling the programs its named paths need: the floor under
`make survey`'s wall time that no change of ours removes while every path is computed as named.

    python bench/survey_floor.py [--every 24] [--report reports/survey/survey.json]

Takes every Nth function of the committed report among those without a timed-out audit, ordered by
their committed time (a sample across the whole range), surveys each as `gradaudit survey` does
(`--budget` and `--seed` of the report) in this one process (`--jobs 0`), with no compilation cache,
and counts JAX's own compile events (as `--profile` does). Prints each function's seconds beside its
committed ones, then the sample's compile and lowering seconds scaled to the committed total.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from gradaudit.jaxenv import JaxEvents
from gradaudit.model.options import Options
from gradaudit.service import isolated, prepare
from gradaudit.survey.explore import SURVEY_TIMEOUT, spaces, survey_one


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=24)
    parser.add_argument("--report", type=Path, default=Path("reports/survey/survey.json"))
    arguments = parser.parse_args()
    report = json.loads(arguments.report.read_text())
    committed = sorted((f for f in report["functions"] if not f["timeouts"]), key=lambda f: f["seconds"])
    sample = committed[:: arguments.every]
    options = Options(timeout=SURVEY_TIMEOUT, jobs=0, cache=None)
    prepare(options)
    events = JaxEvents()
    auditor = isolated(options)
    totals = {"seconds": 0.0, "committed": 0.0, "compile": 0.0, "lower": 0.0, "trace": 0.0, "programs": 0}
    try:
        by_name = {space.name: space for space in spaces()}
        for entry in sample:
            space = by_name[entry["name"]]
            events.take()
            started = time.perf_counter()
            with tempfile.TemporaryDirectory() as out:
                survey_one(
                    space,
                    report["budget"],
                    report["seed"],
                    auditor,
                    Path(out),
                    "floor",
                    options.limits,
                    lambda message: None,
                )
            taken = {"seconds": time.perf_counter() - started, "committed": entry["seconds"], **events.take()}
            for key in totals:
                totals[key] += taken.get(key, 0)
            print(
                f"{entry['name']:40s} {taken['seconds']:7.1f} s (committed {entry['seconds']:6.1f} s)  "
                f"compile {taken.get('compile', 0):6.1f} s  lower {taken.get('lower', 0):5.1f} s  "
                f"{taken['programs']:5d} programs",
                flush=True,
            )
    finally:
        auditor.close()
    whole = sum(f["seconds"] for f in report["functions"])
    floor = whole * (totals["compile"] + totals["lower"]) / totals["committed"]
    print(
        f"\n{len(sample)} functions: {totals['seconds']:.0f} s here, {totals['committed']:.0f} s committed; "
        f"compile {totals['compile']:.0f} s, lower {totals['lower']:.0f} s, trace {totals['trace']:.0f} s, "
        f"{totals['programs']} programs.\nScaled to the committed {whole:,.0f} s: compiling and lowering about "
        f"{floor:,.0f} s, {floor / 2 / 60:.0f} min on two cores."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
