"""A testSelectNGrad-style grid of select_n scenarios, written as a gradaudit scenario file.

Selectors bool/int32/uint32/int8/uint8; 1, 2, 3 and 6 cases; shapes (), (3,) and (2, 3); scalar
and full selectors; values in and out of range. The same file feeds gradaudit and the peer loop.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import yaml

SELECTOR_DTYPES = ("bool", "int32", "uint32", "int8", "uint8")
CASES = (1, 2, 3, 6)
SHAPES = ((), (3,), (2, 3))


def _value(rng: np.random.Generator, dtype: str, cases: int, shape: tuple[int, ...]):
    if dtype == "bool":
        draw = lambda: bool(rng.integers(0, 2))  # noqa: E731
    else:
        low = -1 if dtype.startswith("int") else 0
        high = cases + 1
        draw = lambda: int(rng.integers(low, high + 1))  # noqa: E731
    if not shape:
        return draw()
    return np.array([draw() for _ in range(int(np.prod(shape)))], dtype=object).reshape(shape).tolist()


def grid(size: int, seed: int = 0) -> list[dict]:
    """`size` scenarios cycling through every valid combination, with seeded selector values."""
    rng = np.random.default_rng(seed)
    combos = [
        (dtype, cases, shape, full)
        for dtype, cases, shape, full in itertools.product(SELECTOR_DTYPES, CASES, SHAPES, (False, True))
        if not (dtype == "bool" and cases > 2) and not (full and not shape)
    ]
    scenarios = []
    for index in range(size):
        dtype, cases, shape, full = combos[index % len(combos)]
        scenarios.append(
            {
                "name": f"g{index}-{dtype}-n{cases}-{'x'.join(map(str, shape)) or 'scalar'}{'-full' if full else ''}",
                "selector": {"dtype": dtype, "value": _value(rng, dtype, cases, shape if full else ())},
                "cases": cases,
                "shape": list(shape),
                "dtype": "float32",
                "seed": index,
            }
        )
    return scenarios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("size", type=int)
    parser.add_argument("output", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.output.write_text(yaml.safe_dump({"scenarios": grid(args.size, args.seed)}, sort_keys=False, width=200))


if __name__ == "__main__":
    main()
