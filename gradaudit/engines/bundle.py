"""The bundle engine: many scenarios, each exactly as a user writes it, compiled as one program.

Every scenario keeps its own function, unbatched, with its discrete inputs bound as the scenario
says (a select_n selector captured as testSelectNGrad writes it; a function's integer inputs
traced, captured, or both, each binding its own paths). Only the compilation is shared: the jit paths of a bundle
of scenarios (jit(value), jax.jacfwd, jax.jacrev, and the function at every finite-difference
point, one point at a time) are traced into one program that XLA compiles once; with the selector a
constant, XLA folds most of the derivative arithmetic, so a scenario adds little to the compile.
The eager paths run for each scenario on its own, op by op, as a user's eager call does. A bundle
is traced while XLA compiles the one before it (compiling releases the GIL). A bundle that fails
as a whole computes nothing: its scenarios are left to the literal engine, with the reason in
`fallen`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext

import jax
import numpy as np

from gradaudit.engines.base import VALUE_, Recorded, assembled
from gradaudit.engines.group import MAX_ELEMENTS, _answers, batch_size, computations
from gradaudit.engines.literal import steps
from gradaudit.engines.probe import prober
from gradaudit.jaxenv import as_jax_arrays, device_name, needs_x64, unfiltered_tracebacks, x64_for
from gradaudit.model.computed import Computed
from gradaudit.model.scenario import Scenario
from gradaudit.numerics.finite_differences import estimates, points, scenario_estimates
from gradaudit.targets import build_targets, group_key
from gradaudit.targets.base import Target, primitives
from gradaudit.targets.triggers import triggered

VALUE, POINTS = VALUE_, "points"

BUNDLE_SCENARIOS = 64
"""Scenarios traced into one program: larger bundles took no less time and XLA's memory grows with
the program (docs/performance.md, "Measurements behind the settings")."""


def _compute(target: Target, inputs: Sequence, failures: dict[str, BaseException]) -> dict:
    """A target's value and Jacobian blocks by jax.jacfwd and jax.jacrev at `inputs` (its arguments,
    then its traced fixed inputs); a computation that raises is left out and its exception kept."""
    return _answers(computations(target.fn, len(target.args)), inputs, failures)


class Bundle:
    """Many scenarios' functions in one program: traced and lowered when made, then compiled by
    `compile` and run by `computed`. Either may raise if the program as a whole cannot be compiled
    or run; the caller then leaves each scenario to another engine."""

    def __init__(self, scenarios: Sequence[Scenario]):
        self.scenarios = list(scenarios)
        self.targets = [target for scenario in self.scenarios for target in build_targets(scenario)]
        self.owners = [s for s, scenario in enumerate(self.scenarios) for _ in build_targets(scenario)]
        self.points = [
            points([np.asarray(arg)[None] for arg in t.args], steps(t, self.scenarios[s].eps))
            for s, t in zip(self.owners, self.targets, strict=True)
        ]
        self.failures: list[dict[str, BaseException]] = [{} for _ in self.targets]

        def program(all_inputs, all_points):
            results = []
            for target, inputs, stacks, failed in zip(self.targets, all_inputs, all_points, self.failures, strict=True):
                answers = _compute(target, inputs, failed)
                try:
                    # One point at a time (a loop, not vmap): the function as a user calls it, unbatched.
                    fixed = inputs[len(target.args) :]
                    answers[POINTS] = jax.lax.map(lambda p, t=target, fixed=fixed: t.fn(*p, *fixed), tuple(stacks))
                except Exception as exc:  # noqa: BLE001 - as above
                    failed[POINTS] = exc
                results.append(answers)
            return results

        self.inputs = (
            [(*t.args, *t.fixed) for t in self.targets],
            [[stack[:, 0] for stack in p.stacks] for p in self.points],
        )
        with unfiltered_tracebacks():
            self.lowered = jax.jit(program).lower(*self.inputs)
        self.executable: jax.stages.Compiled | None = None

    def compile(self) -> None:
        self.executable = self.lowered.compile()

    def computed(self, share: float, device: str | None = None) -> list[Computed]:
        """Every scenario's paths: the jit ones from the program, the eager ones computed now."""
        assert self.executable is not None, "compile() first (run waits for it before this)"
        everything = jax.device_get(self.executable(*self.inputs))
        paths: list[dict] = [{} for _ in self.scenarios]
        seconds = [share] * len(self.scenarios)
        for index, (owner, target, compiled, failed, where) in enumerate(
            zip(self.owners, self.targets, everything, self.failures, self.points, strict=True)
        ):
            started = time.perf_counter()
            first = index == 0 or self.owners[index - 1] != owner
            with unfiltered_tracebacks():
                eager_failures: dict[str, BaseException] = {}
                eager = jax.device_get(_compute(target, as_jax_arrays((*target.args, *target.fixed)), eager_failures))
            paths[owner].update(_paths(target, compiled, failed, eager, eager_failures, where, first, device))
            seconds[owner] += time.perf_counter() - started
        results = []
        for owner in range(len(self.scenarios)):
            mine = [t for s, t in zip(self.owners, self.targets, strict=True) if s == owner]
            results.append(
                Computed(
                    paths=paths[owner],
                    arg_names=mine[0].arg_names,
                    inputs=mine[0].args,
                    bindings=tuple(t.binding for t in mine),
                    seconds=seconds[owner],
                    engine="bundle",
                    primitives=functools.partial(primitives, mine[0]),
                    triggers=functools.partial(triggered, mine[0]),
                    probe=prober(mine[0], self.scenarios[owner]),
                )
            )
        return results


def _paths(
    target: Target,
    compiled: dict,
    failed: dict,
    eager: dict,
    eager_failed: dict,
    where,
    with_value: bool,
    device: str | None,
) -> dict:
    """One target's first-order paths from its compiled and eager answers."""

    if POINTS in compiled and VALUE in compiled:
        args = [np.asarray(arg)[None] for arg in target.args]
        blocks = estimates([np.asarray(compiled[VALUE])[None]], [np.asarray(compiled[POINTS])[:, None]], where, args)
        reference = scenario_estimates(blocks, 0, [(0, j) for j in range(len(args))])
    else:
        reference = failed.get(POINTS) or failed[VALUE]
    return assembled(
        eager,
        eager_failed,
        compiled,
        failed,
        reference,
        Recorded("bundle", target.bound, target.binding, with_value, device),
    )


class BundleEngine:
    """Scenarios as users write them, many to a compiled program: see the module's docstring."""

    name = "bundle"

    def __init__(self, devices: Sequence = (), size: int = BUNDLE_SCENARIOS):
        self.devices = tuple(devices)
        self.size = size
        self.fallen: dict[int, str] = {}
        """Scenarios of bundles that failed as a whole, with why (their positions in `run`'s list)."""
        self.counts = {"bundles": 0, "failed_bundles": 0, "waited": 0.0}

    def bundles(self, scenarios: Sequence[Scenario]) -> list[list[int]]:
        """The scenarios this engine can take (first order), in bundles of one x64 setting each, at
        most `size` scenarios and MAX_ELEMENTS array elements."""
        by_width: dict[bool, list[int]] = {}
        for index, scenario in enumerate(scenarios):
            if group_key(scenario) is not None:
                by_width.setdefault(needs_x64(scenario), []).append(index)
        fits: dict[tuple, int] = {}
        bundles: list[list[int]] = []
        for members in by_width.values():
            current: list[int] = []
            elements = 0
            for index in members:
                key = group_key(scenarios[index])
                assert key is not None, "by_width holds only scenarios with a group key"
                if key not in fits:
                    with x64_for(scenarios[index]):
                        try:
                            fits[key] = batch_size(scenarios[index])
                        # a function that cannot even be traced: the literal engine will say why
                        except Exception:  # noqa: BLE001
                            fits[key] = 0
                if not fits[key]:
                    continue
                size = MAX_ELEMENTS // fits[key]
                if current and (len(current) == self.size or elements + size > MAX_ELEMENTS):
                    bundles.append(current)
                    current, elements = [], 0
                current.append(index)
                elements += size
            bundles += [current] if current else []
        return bundles

    def _placed(self):
        return jax.default_device(self.devices[0]) if self.devices else nullcontext()

    def run(self, scenarios: Sequence[Scenario]) -> Iterator[list[tuple[int, Computed]]]:
        """Bundle by bundle, each traced while XLA compiles the one before (in a thread)."""

        def fail(indices: list[int], exc: Exception) -> None:
            self.counts["failed_bundles"] += 1
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            self.fallen.update(
                dict.fromkeys(indices, f"its compiled bundle failed ({type(exc).__name__}: {first_line})")
            )

        def finish(indices: list[int], bundle: Bundle, compiling: Future, traced: float) -> list[tuple[int, Computed]]:
            start = time.perf_counter()
            try:
                compiling.result()
                self.counts["waited"] += time.perf_counter() - start
                with x64_for(bundle.scenarios[0]), self._placed():
                    where = device_name(self.devices[0]) if self.devices else None
                    computed = bundle.computed((traced + time.perf_counter() - start) / len(indices), where)
            except Exception as exc:  # noqa: BLE001 - the literal engine will say what went wrong, scenario by scenario
                fail(indices, exc)
                return []
            self.counts["bundles"] += 1
            return list(zip(indices, computed, strict=True))

        with ThreadPoolExecutor(max_workers=1) as compiler:
            previous = None
            for indices in self.bundles(scenarios):
                members = [scenarios[i] for i in indices]
                start = time.perf_counter()
                try:
                    with x64_for(members[0]), self._placed():
                        bundle = Bundle(members)
                except Exception as exc:  # noqa: BLE001 - as above
                    fail(indices, exc)
                    bundle = None
                traced = time.perf_counter() - start
                if previous is not None and (done := finish(*previous)):
                    yield done
                previous = (indices, bundle, compiler.submit(bundle.compile), traced) if bundle is not None else None
            if previous is not None and (done := finish(*previous)):
                yield done
