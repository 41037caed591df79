"""The peer a JAX developer would reach for: a loop of jax.test_util.check_grads per scenario.

Reads the same scenario file as gradaudit and calls
`check_grads(f, args, 2, ["fwd", "rev"], eps=1.)` with the selector captured, as JAX's
lax_autodiff_test does in testSelectNGrad. Prints how many scenarios check_grads rejects.
"""

from __future__ import annotations

import sys
import time

start = time.perf_counter()

import numpy as np  # noqa: E402
import yaml  # noqa: E402
from jax import lax  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from gradaudit.model.scenario import Selector  # noqa: E402


def main(path: str) -> None:
    scenarios = yaml.safe_load(open(path))["scenarios"]
    failed = 0
    for spec in scenarios:
        which = Selector(spec["selector"]["dtype"], spec["selector"]["value"]).array()
        rng = np.random.default_rng(spec["seed"])
        size = int(np.prod(spec["shape"])) if spec["shape"] else 1
        values = (
            (1.0 + rng.permutation(spec["cases"] * size)).reshape((spec["cases"], *spec["shape"])).astype(np.float32)
        )
        try:
            check_grads(lambda *cases, w=which: lax.select_n(w, *cases), tuple(values), 2, ["fwd", "rev"], eps=1.0)
        except Exception:  # noqa: BLE001 - an assertion or the rule's own exception both count as rejected
            failed += 1
    print(f"peer: {len(scenarios)} scenarios, {failed} rejected by check_grads in {time.perf_counter() - start:.2f}s")


if __name__ == "__main__":
    main(sys.argv[1])
