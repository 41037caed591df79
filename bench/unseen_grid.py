"""make bench: a function grid the other rows do not hold (bench/unseen/fns.py, ten smooth functions at
30 points each, 300 scenarios, float32) against the check_grads loop (bench/function_peer.py), both
cold (no persistent compilation cache), whole processes, alternating, in a fresh folder.

Prints and writes reports/bench-unseen-grid.md (medians of --repetitions).

    python bench/unseen_grid.py [--repetitions 3]
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from small_jobs import timed  # bench/ is the script's folder: its modules import by name

ROOT = Path(__file__).resolve().parents[1]
SHAPES: dict[str, list[tuple[int, ...]]] = {
    "tanh_sum": [(3,)],
    "log_sum_exp": [(4,)],
    "gated": [(3,), (3,)],
    "norm2": [(5,)],
    "soft_dot": [(4,), (4,)],
    "gelu_sum": [(3,)],
    "poly": [(2,)],
    "cosh_ratio": [(3,)],
    "erf_mix": [(2,), (2,)],
    "atan_pair": [(3,), (3,)],
}
"""Each function of bench/unseen/fns.py and its inputs' shapes (drawn normal, three decimals)."""
POINTS = 30


def grid(seed: int = 1) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "name": f"{name}-{point}",
            "fn": f"fns:{name}",
            "inputs": [{"dtype": "float32", "value": np.round(rng.standard_normal(s), 3).tolist()} for s in shapes],
        }
        for name, shapes in SHAPES.items()
        for point in range(POINTS)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-unseen-grid.md")
    args = parser.parse_args()
    ours, peer = [], []
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        shutil.copy(Path(__file__).parent / "unseen" / "fns.py", here / "fns.py")
        (here / "grid.yaml").write_text(yaml.safe_dump({"scenarios": grid()}, sort_keys=False, width=200))
        for _ in range(args.repetitions):
            ours.append(timed([sys.executable, "-m", "gradaudit", "run", "grid.yaml", "--no-cache", "-q"], here))
            peer.append(timed([sys.executable, str(Path(__file__).parent / "function_peer.py"), "grid.yaml"], here))
    import jax

    a, p = statistics.median(ours), statistics.median(peer)
    text = (
        f"A function grid no other row holds (bench/unseen/fns.py: {len(SHAPES)} functions x {POINTS} points), cold, "
        f"whole processes, alternating, median of {args.repetitions}; {platform.machine()}, Python "
        f"{platform.python_version()}, JAX {jax.__version__} ({jax.default_backend()}).\n\n"
        "| scenarios | gradaudit (s) | check_grads loop (s) | ratio | target |\n| --- | --- | --- | --- | --- |\n"
        f"| {len(SHAPES) * POINTS} | {a:.2f} | {p:.2f} | {a / p:.2f}x | 0.5x |\n"
    )
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
