"""The peer on the function grid: a loop of jax.test_util.check_grads(f, args, 2, ["fwd", "rev"])
per scenario, integer inputs captured (check_grads differentiates every argument it is given).
Prints how many scenarios check_grads rejects."""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

start = time.perf_counter()

import numpy as np  # noqa: E402
import yaml  # noqa: E402
from jax.test_util import check_grads  # noqa: E402


def main(path: str) -> None:
    sys.path.insert(0, str(Path(path).resolve().parent))
    module = importlib.import_module("fns")
    scenarios = yaml.safe_load(open(path))["scenarios"]
    failed = 0
    for spec in scenarios:
        fn = getattr(module, spec["fn"].split(":")[1])
        values = [np.asarray(i["value"], dtype=i["dtype"]) for i in spec["inputs"]]
        floating = [k for k, i in enumerate(spec["inputs"]) if i["dtype"].startswith("float")]

        def f(*xs, fn=fn, values=values, floating=floating):
            args = list(values)
            for k, x in zip(floating, xs, strict=True):
                args[k] = x
            return fn(*args)

        try:
            check_grads(f, tuple(values[k] for k in floating), 2, ["fwd", "rev"])
        except Exception:  # noqa: BLE001 - an assertion or the function's own exception both count as rejected
            failed += 1
    print(f"peer: {len(scenarios)} scenarios, {failed} rejected by check_grads in {time.perf_counter() - start:.2f}s")


if __name__ == "__main__":
    main(sys.argv[1])
