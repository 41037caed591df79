"""The function bench grid: ten functions of the catalog's kinds (bench/functions/fns.py) at 100
input points each, integer inputs included, written as one gradaudit scenario file; the same file
feeds gradaudit and the check_grads loop (bench/function_peer.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import yaml

POINTS = 100

FUNCTIONS: dict[str, list] = {
    "select_scaled": [("int32", lambda rng: int(rng.integers(-1, 3))), ("float32", ()), ("float32", ())],
    "where_log": [("float32", (3,))],
    "clip": [("float32", (4,)), ("float32", ()), ("float32", ())],
    "take": [("float32", (5,)), ("int32", lambda rng: [int(v) for v in rng.integers(-2, 7, size=2)])],
    "window": [("float32", (6,)), ("int32", lambda rng: int(rng.integers(-1, 6)))],
    "max_rows": [("float32", (2, 3))],
    "softplus": [("float32", (3,))],
    "huber": [("float32", (3,)), ("float32", (3,))],
    "cumulative": [("float32", (4,))],
    "sort_square": [("float32", (4,))],
}
"""Per function, its inputs: (dtype, shape) for floating ones, drawn normal; (dtype, draw) for integer ones."""


def grid(points: int = POINTS, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    scenarios = []
    for name, inputs in FUNCTIONS.items():
        for point in range(points):
            values = []
            for dtype, shape_or_draw in inputs:
                if callable(shape_or_draw):
                    values.append({"dtype": dtype, "value": shape_or_draw(rng)})
                else:
                    value = np.round(rng.standard_normal(shape_or_draw) * 2.0, 3)
                    values.append({"dtype": dtype, "value": value.tolist()})
            scenarios.append({"name": f"{name}-{point}", "fn": f"fns:{name}", "inputs": values})
    return scenarios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output", type=Path, help="The scenario file to write (its folder gets fns.py beside it).")
    parser.add_argument("--points", type=int, default=POINTS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    (args.output.parent / "fns.py").write_text((Path(__file__).parent / "functions" / "fns.py").read_text())
    args.output.write_text(yaml.safe_dump({"scenarios": grid(args.points, args.seed)}, sort_keys=False, width=200))


if __name__ == "__main__":
    main()
