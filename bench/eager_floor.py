"""A measured floor under an audit that computes a select_n grid's eager paths (make bench).

Runs only the eager paths of a grid file (the function's value, jax.jacfwd and jax.jacrev, called
eagerly: nothing jit-compiled, no finite differences, no judging, no report), sharing as much as
we have found eager calls to allow: one eager jax.vmap per set of three or more scenarios sharing
every shape and dtype, padded to a power of two; smaller sets called member by member as a user
calls them (an eager vmap of two compiles programs of its own); kin next to each other, dealt as
the processes (one per core) come free, from both ends of the kin order, so that each keeps
reusing its own programs. The file is read with libyaml while the other processes import JAX; no
garbage collection. It prints how many paths raised, by exception, so that a floor made cheap by
paths failing early shows it.

JAX compiles every eager operation for its shapes and dtypes, and unlike jit programs those
compilations cannot be bundled: this is the fastest way we know to compute these paths as a whole
cold process on this machine (docs/performance.md), measured, not proven. A fresh-eyes review
beat this floor's first version (which read the file with pure-Python YAML in every process and
took 12 s on the 10,000-scenario grid where this takes 7) and found these choices.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import time
from collections import Counter

start = time.perf_counter()
SMALLEST_VMAP = 3


def _shape(value) -> tuple[int, ...]:
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0]
    return tuple(shape)


def _sets(scenarios: list[dict]) -> list[list[dict]]:
    """Scenarios sharing every shape and dtype, kin next to each other (in order of case dtype and
    shape, selector dtype and shape, case count)."""
    sets: dict = {}
    for spec in scenarios:
        selector = spec["selector"]
        key = (
            spec.get("dtype", "float32"),
            tuple(spec["shape"]),
            selector["dtype"],
            _shape(selector["value"]),
            spec["cases"],
        )
        sets.setdefault(key, []).append(spec)
    return [sets[key] for key in sorted(sets)]


def _compute(members: list[dict], raised: Counter) -> None:
    """The three eager paths of every member of one set; `raised` counts paths run and those that raised."""
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
        return tuple(
            np.full(spec["shape"] if rows is None else (rows, *spec["shape"]), 1.0 + c, spec.get("dtype", "float32"))
            for c in argnums
        )

    def selector(member: dict) -> np.ndarray:
        return np.asarray(member["selector"]["value"], dtype=member["selector"]["dtype"])

    if len(members) < SMALLEST_VMAP:
        calls = [(path, (selector(m), *cases(None))) for m in members for path in (value, forward, reverse)]
    else:
        rows = 1 << (len(members) - 1).bit_length()
        padded = members + members[:1] * (rows - len(members))
        calls = [
            (jax.vmap(path), (np.stack([selector(m) for m in padded]), *cases(rows)))
            for path in (value, forward, reverse)
        ]
    for path, arguments in calls:
        raised["paths"] += 1
        try:
            jax.block_until_ready(path(*arguments))
        # a path that raises (select_n's reverse rule) has cost its time all the same
        except Exception as exc:  # noqa: BLE001
            raised[type(exc).__name__] += 1


def _work(sets: list[list[dict]], ends, lock, me: int) -> Counter:
    """Sets taken one at a time until none is left: even processes from the front, odd from the back."""
    raised: Counter = Counter()
    while True:
        with lock:
            if ends[0] > ends[1]:
                return raised
            end = me % 2
            index = ends[end]
            ends[end] += 1 if end == 0 else -1
        _compute(sets[index], raised)


def _child(reader, sender, ends, lock, me: int) -> None:
    gc.disable()
    import jax  # noqa: F401 - imported while the parent reads the file

    sender.send(_work(reader.recv(), ends, lock, me))


def main(path: str) -> int:
    import yaml

    gc.disable()
    context = multiprocessing.get_context("fork")  # before JAX is imported anywhere
    lock, ends = context.Lock(), context.RawArray("l", [0, -1])
    reader, writer = context.Pipe(duplex=False)
    back, sender = context.Pipe(duplex=False)
    children = [
        context.Process(target=_child, args=(reader, sender, ends, lock, k)) for k in range(1, os.cpu_count() or 1)
    ]
    for child in children:
        child.start()
    with open(path) as file:
        sets = _sets(yaml.load(file, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["scenarios"])
    ends[1] = len(sets) - 1
    for _ in children:
        writer.send(sets)
    import jax  # noqa: F401

    raised = _work(sets, ends, lock, 0)
    for child in children:
        child.join()
    if any(child.exitcode for child in children):
        print(
            f"eager floor failed: exit codes {[child.exitcode for child in children]} "
            "(a process did less than its share)"
        )
        return 1
    for _ in children:
        raised += back.recv()
    paths = raised.pop("paths", 0)
    failures = ", ".join(f"{name} {count}" for name, count in sorted(raised.items())) or "none"
    print(
        f"eager floor: {time.perf_counter() - start:.2f}s in {len(children) + 1} processes; {paths} paths, "
        f"raised: {failures}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
