"""make order: the catalog audited several times in shuffled orders with 0, 1 and 2 worker processes,
as whole processes; every report must be the same apart from timings, the order and the worker count.

Writes reports/order.md (each run's seed, jobs, seconds, summary and whether it equals the first)
and exits 1 if any report differs, naming the scenarios that do.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def comparable(report: dict) -> dict:
    """What must not depend on the order or the workers: everything but timings, the seed and jobs."""
    for result in report["results"]:
        result.pop("seconds", None)
    report.pop("shuffle", None)
    report["environment"] = {k: v for k, v in report["environment"].items() if k not in ("jobs", "workers")}
    return report


def differing(first: dict, other: dict) -> list[str]:
    """Names of the scenarios whose rows differ (or 'the report' when something else does)."""
    names = [a["name"] for a, b in zip(first["results"], other["results"], strict=True) if a != b]
    rest = {k: v for k, v in first.items() if k != "results"} != {k: v for k, v in other.items() if k != "results"}
    return names + (["the report's other fields"] if rest else [])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rule", default="legacy")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "order.md")
    args = parser.parse_args()
    rows, reference, failed = [], None, False
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            jobs, seed = run % 3, None if run == 0 else 1000 + run
            report = Path(folder) / f"run-{run}.json"
            command = [
                sys.executable,
                "-m",
                "gradaudit",
                "run",
                "scenarios",
                "--rule",
                args.rule,
                "-q",
                "--exit-zero",
                "--no-cache",
            ]
            command += [
                "--jobs",
                str(jobs),
                "--json",
                str(report),
                "--json-detail",
                "full",
                *(["--shuffle", str(seed)] if seed is not None else []),
            ]
            start = time.perf_counter()
            subprocess.run(
                command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"}
            )
            seconds = time.perf_counter() - start
            document = comparable(json.loads(report.read_text()))
            reference = reference or document
            changed = differing(reference, document)
            failed |= bool(changed)
            summary = document["summary"]
            verdict = "same" if not changed else "differs: " + ", ".join(changed)
            counts = f"{summary['consistent']}/{summary['mismatch']}/{summary['error']}"
            rows.append(
                f"| {run + 1} | {seed if seed is not None else 'file order'} | {jobs} | {seconds:.1f} "
                f"| {counts} | {verdict} |"
            )
            print(rows[-1], flush=True)
    import jax

    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"JAX {jax.__version__} ({jax.default_backend()})"
    )
    text = [
        f"The catalog (`scenarios/`, rule {args.rule}) audited {args.runs} times as whole processes, "
        "each with `--json-detail full`, compared with the first apart from timings, the order and the worker count. "
        f"Machine: {machine}.",
        "",
        "| run | --shuffle | --jobs | seconds | consistent/mismatch/error | report |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
    ]
    args.out.write_text("\n".join(text) + "\n")
    print("\n".join(text))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
