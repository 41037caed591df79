"""make bench: gradaudit against the check_grads loop on testSelectNGrad-style grids, as whole processes.

For each grid size, the peer (bench/peer.py) and `gradaudit run` alternate for several
repetitions; wall time and peak memory (the child's max RSS) are recorded, medians and the ratio
written to reports/bench.json and reports/bench.md with the machine named.

Each repetition runs both twice, sharing a fresh JAX persistent compilation cache between the
two: "cold" is a first run (a CI runner with nothing cached), "warm" a rerun of the same grid (a
developer's machine, or CI restoring `.gradaudit/cache`). The peer gets the same cache through
JAX's environment variables, so the warm comparison is like for like.

On select_n grids each repetition also runs bench/eager_floor.py cold: the grid's eager paths
alone, the fastest way we know to compute them here (a floor measured, not proven).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from function_grid import FUNCTIONS  # noqa: E402
from function_grid import grid as function_grid  # noqa: E402
from grid import grid  # noqa: E402


def _reap_outliving(seconds: float = 60.0) -> float:
    """The peak RSS in MB of the measured process's descendants that outlived it, once they end: a run's
    workers are forked from multiprocessing's fork server, which the run never waits for, so its
    wait status holds neither the server's memory nor that of the workers the server waited for.
    Orphaned, they come to this process (`_adopt_orphans`), which waits for them here."""
    peak, end = 0.0, time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.01)
            continue
        peak = max(peak, usage.ru_maxrss / 1024)
    return peak


def _adopt_orphans() -> None:
    """Become the subreaper of what this process starts (Linux): orphaned descendants are reparented here."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def measure(command: list[str], cache: Path) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB of its largest process, last output line) of one whole process using
    JAX's cache in `cache`."""
    env = {
        **os.environ,
        "JAX_COMPILATION_CACHE_DIR": str(cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
    }
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    lines = [line for line in output.splitlines() if line.strip()]
    return wall, max(usage.ru_maxrss / 1024, _reap_outliving()), lines[-1] if lines else ""


def _cell(value, form: str, unit: str = "") -> str:
    return format(value, form) + unit if value is not None else "-"


def markdown(document: dict) -> str:
    """The table of reports/bench.md; peak memory is the largest single process (max RSS)."""
    lines = [
        f"Machine: {document['machine']}; grid: {document['grid']}; rule: {document['rule']}; whole processes, "
        "median of the repetitions; cold: an empty JAX compilation cache, warm: a rerun with it filled; peak: the "
        "largest process's max RSS; JSON: the size of gradaudit's --json report; eager floor (select_n grids): "
        "bench/eager_floor.py, cold, the grid's eager paths alone (value, jax.jacfwd, jax.jacrev), the fastest way "
        "we know to compute them here.",
        "",
        "| scenarios | check_grads loop cold (s) | gradaudit cold (s) | ratio cold | check_grads loop warm (s) "
        "| gradaudit warm (s) | ratio warm | gradaudit peak (MB) | peer peak (MB) | JSON (MB) "
        "| eager floor cold (s) | floor / loop |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in document["rows"]:
        lines.append(
            f"| {row['size']} | {_cell(row['peer_cold_seconds'], '.2f')} | {row['gradaudit_cold_seconds']:.2f} "
            f"| {_cell(row['ratio_cold'], '.2f', 'x')} | {_cell(row['peer_warm_seconds'], '.2f')} "
            f"| {row['gradaudit_warm_seconds']:.2f} | {_cell(row['ratio_warm'], '.2f', 'x')} "
            f"| {row['gradaudit_cold_peak_mb']:.0f} | {_cell(row['peer_cold_peak_mb'], '.0f')} "
            f"| {row['json_mb']:.1f} | {_cell(row['floor_cold_seconds'], '.2f')} "
            f"| {_cell(row['ratio_floor'], '.2f', 'x')} |"
        )
    rows = document["rows"]
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        lines += [
            "",
            f"Memory growth: gradaudit's peak {first['gradaudit_cold_peak_mb']:.0f} MB at {first['size']:,} "
            f"scenarios, {last['gradaudit_cold_peak_mb']:.0f} MB at {last['size']:,}: "
            f"x{last['gradaudit_cold_peak_mb'] / first['gradaudit_cold_peak_mb']:.2f} "
            f"for x{last['size'] / first['size']:g} the scenarios.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    _adopt_orphans()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--peer-max", type=int, default=1000, help="Largest grid the (slow) peer loop runs on.")
    parser.add_argument("--rule", default="installed")
    parser.add_argument(
        "--grid",
        choices=("select_n", "functions"),
        default="select_n",
        help="select_n: testSelectNGrad-style grids of SIZE scenarios; functions: ten functions of the catalog's "
        "kinds (bench/functions/fns.py) at SIZE/10 points each, against check_grads on each",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "reports")
    args = parser.parse_args()
    import jax
    import yaml

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            path = Path(folder) / f"grid-{size}.yaml"
            report = Path(folder) / f"report-{size}.json"
            if args.grid == "functions":
                scenarios = function_grid(size // len(FUNCTIONS))
                (Path(folder) / "fns.py").write_text((ROOT / "bench" / "functions" / "fns.py").read_text())
                peer_cmd = [sys.executable, str(ROOT / "bench" / "function_peer.py"), str(path)]
            else:
                scenarios = grid(size)
                peer_cmd = [sys.executable, str(ROOT / "bench" / "peer.py"), str(path)]
            path.write_text(yaml.safe_dump({"scenarios": scenarios}, sort_keys=False, width=200))
            ours_cmd = [
                sys.executable,
                "-m",
                "gradaudit",
                "run",
                str(path),
                "-q",
                "--exit-zero",
                "--rule",
                args.rule,
                "--json",
                str(report),
            ]
            repetitions = args.repetitions if size <= 1000 else 1
            runs: dict[str, list] = {
                key: [] for key in ("peer_cold", "peer_warm", "gradaudit_cold", "gradaudit_warm", "floor_cold")
            }
            for repetition in range(repetitions):
                if args.grid == "select_n":
                    floor = measure(
                        [sys.executable, str(ROOT / "bench" / "eager_floor.py"), str(path)],
                        Path(folder) / f"cache-floor-{size}-{repetition}",
                    )
                    if not floor[2].startswith("eager floor:"):
                        raise SystemExit(f"bench/eager_floor.py on {path.name}: {floor[2]}")
                    runs["floor_cold"].append(floor)
                for name, command, wanted in (
                    ("peer", peer_cmd, size <= args.peer_max),
                    ("gradaudit", [*ours_cmd, "--cache-dir"], True),
                ):
                    if not wanted:
                        continue
                    cache = Path(folder) / f"cache-{name}-{size}-{repetition}"
                    full = [*command, str(cache)] if name == "gradaudit" else command
                    runs[f"{name}_cold"].append(measure(full, cache))
                    runs[f"{name}_warm"].append(measure(full, cache))
            row = {"size": size, "repetitions": repetitions, "json_mb": report.stat().st_size / 2**20}
            for key, measured in runs.items():
                row[f"{key}_seconds"] = statistics.median(m[0] for m in measured) if measured else None
                row[f"{key}_peak_mb"] = max(m[1] for m in measured) if measured else None
                row[f"{key}_summary"] = (
                    measured[-1][2]
                    if measured
                    else (
                        "not run (select_n grids only)"
                        if key == "floor_cold"
                        else "not run (slower than --peer-max allows)"
                    )
                )
            for state in ("cold", "warm"):
                peer = row[f"peer_{state}_seconds"]
                row[f"ratio_{state}"] = row[f"gradaudit_{state}_seconds"] / peer if peer else None
            row["ratio_floor"] = (
                row["floor_cold_seconds"] / row["peer_cold_seconds"]
                if row["floor_cold_seconds"] and row["peer_cold_seconds"]
                else None
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"JAX {jax.__version__} ({jax.default_backend()})"
    )
    document = {"machine": machine, "rule": args.rule, "grid": args.grid, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(document, indent=2) + "\n")
    table = markdown(document)
    (args.out / "bench.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
