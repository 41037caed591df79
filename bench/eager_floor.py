"""A floor under any audit that computes a select_n grid's eager paths as a user calls them (make bench).

Runs only the eager paths of a grid file (the function's value, jax.jacfwd and jax.jacrev, called
eagerly: nothing jit-compiled, no finite differences, no judging, no report) with the most sharing
eager calls allow: one eager jax.vmap per set of three or more scenarios sharing every shape and
dtype, padded to a power of two, smaller sets called member by member as they are (an eager vmap
of two compiles programs of its own); kin next to each other, dealt as the processes (one per
core) come free, from both ends of the kin order, so that each keeps reusing its own programs.
The file is read with libyaml while the other processes import JAX; no garbage collection.

JAX compiles every eager operation for its shapes and dtypes, and unlike jit programs those
compilations cannot be bundled, so no audit that computes these paths eagerly can take much less
wall time on this machine than this does (docs/performance.md). A fresh-eyes review tried to beat
it and found these choices (its first version read the file with pure-Python YAML in every process
and took 12 s on the 10,000-scenario grid where this takes 7).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import time

start = time.perf_counter()
SMALLEST_VMAP = 3


def _shape(value) -> tuple[int, ...]:
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0]
    return tuple(shape)


def _sets(scenarios: list[dict]) -> list[list[dict]]:
    """Scenarios sharing every shape and dtype, kin (case shapes, then selector dtypes) next to each other."""
    sets: dict = {}
    for spec in scenarios:
        selector = spec["selector"]
        key = (spec.get("dtype", "float32"), tuple(spec["shape"]), selector["dtype"], _shape(selector["value"]), spec["cases"])
        sets.setdefault(key, []).append(spec)
    return [sets[key] for key in sorted(sets)]


def _compute(members: list[dict]) -> None:
    """The three eager paths of every member of one set."""
    import jax
    import numpy as np
    from jax import lax

    spec = members[0]
    argnums = tuple(range(spec["cases"]))

    def value(w, *c):
        return lax.select_n(w, *c)

    def forward(w, *c):
        return jax.jacfwd(lambda *c: lax.select_n(w, *c), argnums=argnums)(*c)

    def reverse(w, *c):
        return jax.jacrev(lambda *c: lax.select_n(w, *c), argnums=argnums)(*c)

    def cases(rows: int | None) -> tuple:
        return tuple(np.full(spec["shape"] if rows is None else (rows, *spec["shape"]), 1.0 + c, spec.get("dtype", "float32")) for c in argnums)

    def selector(member: dict) -> np.ndarray:
        return np.asarray(member["selector"]["value"], dtype=member["selector"]["dtype"])

    if len(members) < SMALLEST_VMAP:
        calls = [(path, (selector(m), *cases(None))) for m in members for path in (value, forward, reverse)]
    else:
        rows = 1 << (len(members) - 1).bit_length()
        padded = members + members[:1] * (rows - len(members))
        calls = [(jax.vmap(path), (np.stack([selector(m) for m in padded]), *cases(rows))) for path in (value, forward, reverse)]
    for path, arguments in calls:
        try:
            jax.block_until_ready(path(*arguments))
        except Exception:  # noqa: BLE001 - a path that raises (select_n's reverse rule) has cost its time all the same
            pass


def _work(sets: list[list[dict]], ends, lock, me: int) -> None:
    """Sets taken one at a time until none is left: even processes from the front, odd from the back."""
    while True:
        with lock:
            if ends[0] > ends[1]:
                return
            end = me % 2
            index = ends[end]
            ends[end] += 1 if end == 0 else -1
        _compute(sets[index])


def _child(reader, ends, lock, me: int) -> None:
    gc.disable()
    import jax  # noqa: F401 - imported while the parent reads the file

    _work(reader.recv(), ends, lock, me)


def main(path: str) -> int:
    import yaml

    gc.disable()
    context = multiprocessing.get_context("fork")  # before JAX is imported anywhere
    lock, ends = context.Lock(), context.RawArray("l", [0, -1])
    reader, writer = context.Pipe(duplex=False)
    children = [context.Process(target=_child, args=(reader, ends, lock, k)) for k in range(1, os.cpu_count() or 1)]
    for child in children:
        child.start()
    with open(path) as file:
        sets = _sets(yaml.load(file, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["scenarios"])
    ends[1] = len(sets) - 1
    for _ in children:
        writer.send(sets)
    import jax  # noqa: F401

    _work(sets, ends, lock, 0)
    for child in children:
        child.join()
    if any(child.exitcode for child in children):
        print(f"eager floor failed: exit codes {[child.exitcode for child in children]} (a process did less than its share)")
        return 1
    print(f"eager floor: {time.perf_counter() - start:.2f}s in {len(children) + 1} processes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
