"""A floor under any audit that computes a select_n grid's eager paths as a user calls them (make bench).

Runs only the eager paths of a grid file (the function's value, jax.jacfwd and jax.jacrev, called
eagerly: nothing jit-compiled, no finite differences, no judging, no report) with the most sharing
eager calls allow: one eager jax.vmap per set of scenarios sharing every shape and dtype (a set of
one called as it is), batches padded to a power of two, kin next to each other, in as many
processes as the machine has cores, each taking an equal share of the scenarios. JAX compiles
every eager operation per shape and dtype, and no tool can bundle those compilations the way it
can bundle jit programs, so no audit that computes these paths eagerly can take less wall time on
this machine than this does (docs/performance.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

start = time.perf_counter()


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
    import jax
    import numpy as np
    from jax import lax

    spec = members[0]
    if len(members) > 1:  # padded to a power of two, so sets whose sizes differ a little share programs
        members = members + members[:1] * ((1 << (len(members) - 1).bit_length()) - len(members))
    which = np.stack([np.asarray(m["selector"]["value"], dtype=m["selector"]["dtype"]) for m in members])
    cases = tuple(np.stack([np.full(spec["shape"], 1.0 + c, spec.get("dtype", "float32")) for _ in members]) for c in range(spec["cases"]))
    argnums = tuple(range(len(cases)))

    def value(w, *c):
        return lax.select_n(w, *c)

    def forward(w, *c):
        return jax.jacfwd(lambda *c: lax.select_n(w, *c), argnums=argnums)(*c)

    def reverse(w, *c):
        return jax.jacrev(lambda *c: lax.select_n(w, *c), argnums=argnums)(*c)

    for path in (value, forward, reverse):
        try:
            jax.block_until_ready(path(which[0], *(c[0] for c in cases)) if len(members) == 1 else jax.vmap(path)(which, *cases))
        except Exception:  # noqa: BLE001 - a path that raises (select_n's reverse rule) has cost its time all the same
            pass


def part(path: str, mine: int, parts: int) -> None:
    """This process's share: the sets whose first scenario falls in its equal slice of the kin order."""
    import yaml

    scenarios = yaml.safe_load(open(path))["scenarios"]
    done = 0
    for members in _sets(scenarios):
        if done * parts // len(scenarios) == mine:
            _compute(members)
        done += len(members)


def main(path: str) -> int:
    parts = os.cpu_count() or 1
    processes = [subprocess.Popen([sys.executable, __file__, path, str(k), str(parts)]) for k in range(parts)]
    status = max(p.wait() for p in processes)
    print(f"eager floor: {time.perf_counter() - start:.2f}s in {parts} processes")
    return status


if __name__ == "__main__":
    if len(sys.argv) == 2:
        sys.exit(main(sys.argv[1]))
    part(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
