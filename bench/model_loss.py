"""make bench: a two-layer MLP loss of 1,011,010 parameters through `gradaudit.assert_consistent`.

Too large for whole Jacobians, so it is compared along directions (docs/python-api.md). Prints and
writes to reports/bench-model.md: the audit's seconds (a first audit in a fresh process, compiling
everything), the whole process's, and its peak RSS.
"""

from __future__ import annotations

import time

start = time.perf_counter()

import argparse  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import gradaudit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def loss(params, x, y):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-model.md")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    width = args.width
    params = {
        "w1": (rng.standard_normal((1000, width)) / 32).astype(np.float32),
        "b1": np.zeros(width, np.float32),
        "w2": (rng.standard_normal((width, 10)) / 32).astype(np.float32),
        "b2": np.zeros(10, np.float32),
    }
    x, y = rng.standard_normal((32, 1000)).astype(np.float32), rng.standard_normal((32, 10)).astype(np.float32)
    began = time.perf_counter()
    result = gradaudit.assert_consistent(lambda p: loss(p, x, y), params, probes=["p['w1'][3, 7]"])
    audit_seconds = time.perf_counter() - began
    count = sum(int(np.size(v)) for v in params.values())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    machine = (
        f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores, "
        f"Python {platform.python_version()}, JAX {jax.__version__} ({jax.default_backend()})"
    )
    line = (
        f"| {count:,} | {len(result.directions.names)} | {result.status} | {audit_seconds:.1f} "
        f"| {time.perf_counter() - start:.1f} | {peak:.0f} |"
    )
    table = (
        f"MLP loss through gradaudit.assert_consistent, compared along directions; {machine}.\n\n"
        "| parameters | directions | status | audit (s) | whole process (s) | peak RSS (MB) |\n"
        "| --- | --- | --- | --- | --- | --- |\n" + line + "\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    print(table)


if __name__ == "__main__":
    main()
