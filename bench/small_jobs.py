"""make bench: the small jobs most users run, each against the plain script it replaces.

- One scenario: `gradaudit run one.yaml` (the seed's select_n(int32(2), a, b)) against a plain-JAX
  script computing the same paths (value, jit value, jacfwd, jacrev, their jit forms and central
  finite differences), both cold (no persistent compilation cache), whole processes, alternating.
- Cold API audits: `gradaudit.audit(f, *args, order=2)` against
  `jax.test_util.check_grads(f, args, 2, modes=["fwd", "rev"])` over five small functions (an MLP
  loss, softmax cross-entropy, layer norm, a 50-step scan, masked attention), each in a fresh
  process, whole processes, alternating; compared summed over the five.

Prints and writes reports/bench-small.md (medians of --repetitions).

    python bench/small_jobs.py [--repetitions 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_SCENARIO = """scenarios:
  - name: int32-above-two-cases
    selector: {dtype: int32, value: 2}
    cases: 2
    dtype: float32
    shape: []
    values: [2.0, 5.0]
"""

PLAIN_SCRIPT = """import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

which = np.int32(2)


def f(a, b):
    return lax.select_n(which, a, b)


a, b = np.float32(2.0), np.float32(5.0)
both = (0, 1)
print("value", f(a, b), "jit value", jax.jit(f)(a, b))
print("jacfwd", jax.jacfwd(f, both)(a, b), "jit", jax.jit(jax.jacfwd(f, both))(a, b))
print("jacrev", jax.jacrev(f, both)(a, b), "jit", jax.jit(jax.jacrev(f, both))(a, b))
g, h = jax.jit(f), 1e-3
print("finite differences", (g(a + h, b) - g(a - h, b)) / (2 * h), (g(a, b + h) - g(a, b - h)) / (2 * h))
"""


def _functions():
    """The five small functions and their arguments (float32, fixed seeds)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)

    def normal(*shape):
        return (rng.standard_normal(shape) / 2).astype(np.float32)

    x, y = normal(16, 8), normal(16, 4)

    def mlp(w1, b1, w2, b2):
        return jnp.mean((jnp.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)

    labels = jax.nn.one_hot(np.arange(8) % 5, 5)

    def cross_entropy(logits):
        return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1))

    def layer_norm(h, gamma, beta):
        mean, var = jnp.mean(h, -1, keepdims=True), jnp.var(h, -1, keepdims=True)
        return jnp.sum(((h - mean) / jnp.sqrt(var + 1e-5) * gamma + beta) ** 2)

    def scan(c0, w):
        final, _ = jax.lax.scan(lambda c, _: (jnp.tanh(w * c + 0.1), None), c0, None, length=50)
        return jnp.sum(final)

    mask = np.tril(np.ones((6, 6), bool))

    def attention(q, k, v):
        scores = jnp.where(mask, q @ k.T / np.sqrt(4.0), -1e9)
        return jnp.sum(jax.nn.softmax(scores, axis=-1) @ v)

    return {
        "mlp": (mlp, (normal(8, 12), normal(12), normal(12, 4), normal(4))),
        "cross_entropy": (cross_entropy, (normal(8, 5),)),
        "layer_norm": (layer_norm, (normal(4, 6), normal(6), normal(6))),
        "scan": (scan, (normal(3), normal(3))),
        "attention": (attention, (normal(6, 4), normal(6, 4), normal(6, 4))),
    }


FUNCTIONS = ("mlp", "cross_entropy", "layer_norm", "scan", "attention")


def one(tool: str, name: str) -> None:
    """In a fresh process: one cold order-2 audit of `name` by `tool` (gradaudit or check_grads)."""
    function, args = _functions()[name]
    if tool == "gradaudit":
        import gradaudit

        audit = gradaudit.audit(function, *args, order=2)
        print(name, audit.status, audit.programs, "programs")
    else:
        from jax.test_util import check_grads

        check_grads(function, args, 2, modes=["fwd", "rev"])
        print(name, "check_grads passed")


def timed(command: list[str], cwd: Path, findings: bool = False, printed: list[str] | None = None) -> float:
    """Wall seconds of `command`; it must succeed (with `findings`, exit 1 too: `gradaudit run` on
    the seed's scenario finds its defect). What it prints goes to `printed` where given."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in ((0, 1) if findings else (0,)):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-2000:]}")
    if printed is not None:
        printed.append(done.stdout.strip())
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "bench-small.md")
    parser.add_argument("--one", nargs=2, metavar=("TOOL", "FUNCTION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one(*args.one)
        return
    python = sys.executable
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        (here / "one.yaml").write_text(ONE_SCENARIO)
        (here / "plain.py").write_text(PLAIN_SCRIPT)
        run = [python, "-m", "gradaudit", "run", "one.yaml", "--no-cache", "-q"]
        ours, plain = [], []
        for _ in range(args.repetitions):
            ours.append(timed(run, here, findings=True))
            plain.append(timed([python, "plain.py"], here))
        api: dict[str, list[float]] = {name: [] for name in FUNCTIONS}
        peer: dict[str, list[float]] = {name: [] for name in FUNCTIONS}
        said: dict[str, list[str]] = {name: [] for name in FUNCTIONS}
        for _ in range(args.repetitions):
            for name in FUNCTIONS:
                api[name].append(timed([python, __file__, "--one", "gradaudit", name], here, printed=said[name]))
                peer[name].append(timed([python, __file__, "--one", "check_grads", name], here))
    import jax

    machine = (
        f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}, "
        f"JAX {jax.__version__} ({jax.default_backend()})"
    )
    one_ours, one_plain = statistics.median(ours), statistics.median(plain)
    rows = [
        f"| one select_n scenario: `gradaudit run one.yaml --no-cache` / plain-JAX script | {one_ours:.2f} | "
        f"{one_plain:.2f} | {one_ours / one_plain:.2f}x | 1.1x | |"
    ]
    total_api = total_peer = 0.0
    for name in FUNCTIONS:
        a, p = statistics.median(api[name]), statistics.median(peer[name])
        total_api, total_peer = total_api + a, total_peer + p
        verdicts = sorted({line.split()[1] for line in said[name]})  # "NAME STATUS N programs"
        rows.append(
            f"| `audit(order=2)` / `check_grads` (order 2): {name} | {a:.2f} | {p:.2f} | {a / p:.2f}x | | "
            f"{' / '.join(verdicts)} |"
        )
    rows.append(f"| the five summed | {total_api:.2f} | {total_peer:.2f} | {total_api / total_peer:.2f}x | 1.5x | |")
    text = (
        f"Small jobs, cold (no persistent compilation cache), whole processes, alternating, median of "
        f"{args.repetitions}; {machine}.\n\n"
        "`check_grads` passes all five; gradaudit's verdict is its own (a mismatch is a finding: docs/found.md).\n\n"
        "| job | gradaudit (s) | plain script (s) | ratio | target | gradaudit's verdict |\n"
        "| --- | --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
