"""make bench: gradaudit against the check_grads loop on testSelectNGrad-style grids, as whole processes.

For each grid size, the peer (bench/peer.py) and `gradaudit run` alternate for several
repetitions; wall time and peak memory (the child's max RSS) are recorded, medians and the ratio
written to reports/bench.json and reports/bench.md with the machine named.
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

from grid import grid  # noqa: E402


def measure(command: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, last output line) of one whole process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    lines = [line for line in output.splitlines() if line.strip()]
    return wall, usage.ru_maxrss / 1024, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--peer-max", type=int, default=1000, help="Largest grid the (slow) peer loop runs on.")
    parser.add_argument("--rule", default="installed")
    parser.add_argument("--out", type=Path, default=ROOT / "reports")
    args = parser.parse_args()
    import jax
    import yaml

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            path = Path(folder) / f"grid-{size}.yaml"
            path.write_text(yaml.safe_dump({"scenarios": grid(size)}, sort_keys=False, width=200))
            ours_cmd = [sys.executable, "-m", "gradaudit", "run", str(path), "-q", "--exit-zero", "--rule", args.rule]
            peer_cmd = [sys.executable, str(ROOT / "bench" / "peer.py"), str(path)]
            repetitions = args.repetitions if size <= 1000 else 1
            ours, peer = [], []
            for _ in range(repetitions):
                if size <= args.peer_max:
                    peer.append(measure(peer_cmd))
                ours.append(measure(ours_cmd))
            row = {
                "size": size,
                "repetitions": repetitions,
                "gradaudit_seconds": statistics.median(m[0] for m in ours),
                "gradaudit_peak_mb": max(m[1] for m in ours),
                "gradaudit_summary": ours[-1][2],
                "peer_seconds": statistics.median(m[0] for m in peer) if peer else None,
                "peer_peak_mb": max(m[1] for m in peer) if peer else None,
                "peer_summary": peer[-1][2] if peer else "not run (slower than --peer-max allows)",
            }
            row["ratio"] = row["gradaudit_seconds"] / row["peer_seconds"] if peer else None
            rows.append(row)
            print(json.dumps(row), flush=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, JAX {jax.__version__} ({jax.default_backend()})"
    document = {"machine": machine, "rule": args.rule, "rows": rows}
    args.out.mkdir(exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(document, indent=2) + "\n")
    table = [
        f"Machine: {machine}; rule: {args.rule}; whole processes, median of the repetitions.",
        "",
        "| scenarios | check_grads loop (s) | gradaudit (s) | ratio | gradaudit peak (MB) | peer peak (MB) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        peer = f"{row['peer_seconds']:.2f}" if row["peer_seconds"] else "not run"
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] else "-"
        peer_mb = f"{row['peer_peak_mb']:.0f}" if row["peer_peak_mb"] else "-"
        table.append(f"| {row['size']} | {peer} | {row['gradaudit_seconds']:.2f} | {ratio} | {row['gradaudit_peak_mb']:.0f} | {peer_mb} |")
    (args.out / "bench.md").write_text("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
