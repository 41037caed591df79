"""The literal engine: each path of one scenario on its own, as a user would call it (those another
engine already computed alike for the scenario, handed in as `given`, kept as they are).

Every path returns a PathResult holding either its arrays or the exception it raised, so one
failing path never hides what the others say. Finite differences use only evaluations of the
function, never JAX's AD, so they are an oracle independent of the rules under audit.
"""

from __future__ import annotations

import functools
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

import jax
import numpy as np

from gradaudit.engines.base import compiled_or_eager, run_path
from gradaudit.engines.probe import prober
from gradaudit.function_caches import per_function
from gradaudit.jaxenv import as_jax_arrays, device_name, unfiltered_tracebacks, x64_for
from gradaudit.limits import LIMIT_EXCEEDED, check_limits
from gradaudit.model import dtypes
from gradaudit.model.computed import Computed, Failure, failed
from gradaudit.model.options import Limits
from gradaudit.model.paths import (
    COMPILED,
    CONSTANT_SUFFIX,
    DEVICE_SEPARATOR,
    EAGER_TWINS,
    FINITE_DIFFERENCE,
    HESSIAN_FINITE_DIFFERENCE,
    HESSIAN_FWD_FWD,
    HESSIAN_FWD_REV,
    HESSIAN_REV_REV,
    JACFWD,
    JACREV,
    JIT_HESSIAN_FWD_FWD,
    JIT_HESSIAN_FWD_REV,
    JIT_HESSIAN_REV_REV,
    JIT_JACFWD,
    JIT_JACREV,
    JIT_VALUE,
    MODES_NEEDED,
    NOT_APPLICABLE,
    VALUE,
    PathError,
    PathResult,
    base_name,
    label,
    path_name,
)
from gradaudit.model.scenario import Scenario
from gradaudit.numerics.finite_differences import differences
from gradaudit.sources import module_state
from gradaudit.targets import build_targets
from gradaudit.targets.base import Target, primitives
from gradaudit.targets.triggers import triggered

Transform = Callable[[Callable[..., object], tuple[int, ...]], Callable[..., object]]
"""Maps (function, argnums) to a function returning its derivative blocks, nested per argnum."""

EAGER: dict[str, Transform] = {
    JACFWD: lambda fn, argnums: jax.jacfwd(fn, argnums=argnums),
    JACREV: lambda fn, argnums: jax.jacrev(fn, argnums=argnums),
    HESSIAN_FWD_FWD: lambda fn, argnums: jax.jacfwd(jax.jacfwd(fn, argnums=argnums), argnums=argnums),
    HESSIAN_FWD_REV: lambda fn, argnums: jax.jacfwd(jax.jacrev(fn, argnums=argnums), argnums=argnums),
    HESSIAN_REV_REV: lambda fn, argnums: jax.jacrev(jax.jacrev(fn, argnums=argnums), argnums=argnums),
}
"""Each AD transform as a user writes it; its compiled path is `jax.jit` of it (`compiled`)."""


def compiled(eager: str) -> Transform:
    """The path `jit_<eager>`: jax.jit of the eager transform."""
    return lambda fn, argnums: jax.jit(EAGER[eager](fn, argnums))


FIRST_ORDER: dict[str, Transform] = {
    JACFWD: EAGER[JACFWD],
    JIT_JACFWD: compiled(JACFWD),
    JACREV: EAGER[JACREV],
    JIT_JACREV: compiled(JACREV),
}
SECOND_ORDER: dict[str, Transform] = {
    JIT_HESSIAN_FWD_REV: compiled(HESSIAN_FWD_REV),
    HESSIAN_FWD_FWD: EAGER[HESSIAN_FWD_FWD],
    JIT_HESSIAN_FWD_FWD: compiled(HESSIAN_FWD_FWD),
    JIT_HESSIAN_REV_REV: compiled(HESSIAN_REV_REV),
}
EAGER_HESSIANS: dict[str, Transform] = {eager: EAGER[eager] for eager in EAGER_TWINS.values()}
"""The eager twins of compiled Hessians (`paths.EAGER_TWINS`), computed only when the judge asks."""


@per_function(maxsize=1024)
def transformed(fn: Callable, transform: str, argnums: tuple[int, ...]) -> Callable:
    """`fn` under the path `transform` (FIRST_ORDER, SECOND_ORDER or EAGER_HESSIANS), made once per
    function: a user calling jit(jacrev(f)) at many points reuses one compiled program, and so does the audit."""
    return {**FIRST_ORDER, **SECOND_ORDER, **EAGER_HESSIANS}[transform](fn, argnums)


def ad_blocks(target: Target, transform: str, order: int) -> tuple[np.ndarray, ...]:
    """Derivative blocks by one AD path: Jacobians per argument, or Hessian blocks [i][j] row-major;
    called on JAX arrays, as a user calls it (eagerly, JAX 0.9 treats NumPy inputs as constants of
    their own kind, on which some rules fail where they do not on arrays)."""
    argnums = tuple(range(len(target.args)))
    result = transformed(target.fn, transform, argnums)(*as_jax_arrays((*target.args, *target.fixed)))
    if order == 1:
        return tuple(np.asarray(result[i]) for i in argnums)
    return tuple(np.asarray(result[i][j]) for i in argnums for j in argnums)


def steps(target: Target, eps: float | None) -> list[float]:
    """Each argument's finite-difference eps: the scenario's, or its dtype's default."""
    return [eps if eps is not None else dtypes.default_eps(np.dtype(arg.dtype).name) for arg in target.args]


def finite_difference_jacobians(
    target: Target, eps: float | None, compiled: Callable | None = None
) -> dict[str, tuple[np.ndarray, ...]]:
    """Jacobians from evaluations of the function alone (compiled where jit can): the oracle independent of AD.

    `compiled` is jit(target.fn) when the jit_value path made it already: one compilation serves both.
    """
    fixed = target.fixed
    forward = compiled_or_eager(target.fn, (*target.args, *fixed), compiled)
    eager = forward is target.fn
    return differences(lambda *a: (forward(*a, *fixed),), target.args, steps(target, eps), eager=eager)


def finite_difference_hessian(target: Target, eps: float | None) -> dict[str, tuple[np.ndarray, ...]]:
    """Hessian blocks [i][j] as finite differences of the Jacobian.

    The Jacobian comes from jacfwd, which never uses a transpose rule; where forward mode does not
    apply (a custom_vjp function), from jacrev, whose first-order answer is checked on its own.
    Compiled where jit can compile the function, eager where it cannot (Python control flow on inputs).
    """
    argnums = tuple(range(len(target.args)))
    fn, fixed = target.fn, target.fixed
    at = (*target.args, *fixed)
    try:
        jacobian = compiled_or_eager(transformed(fn, JACFWD, argnums), at, transformed(fn, JIT_JACFWD, argnums))
    except TypeError as exc:
        if not NOT_APPLICABLE[0].matches(JACFWD, exc):
            raise
        jacobian = compiled_or_eager(transformed(fn, JACREV, argnums), at, transformed(fn, JIT_JACREV, argnums))
    eager = jacobian in (transformed(fn, JACFWD, argnums), transformed(fn, JACREV, argnums))
    return differences(lambda *a: tuple(jacobian(*a, *fixed)), target.args, steps(target, eps), eager=eager)


def run_paths(
    targets: Sequence[Target],
    eps: float | None,
    order: int = 1,
    devices: Sequence = (),
    modes: Sequence[str] = ("fwd", "rev"),
    given: Mapping[str, PathResult] | None = None,
    compiled_only: bool = False,
) -> dict[str, PathResult]:
    """Every path up to `order` for each binding of the target, in the order reports show them;
    a derivative path only where it uses none but `modes`; one in `given` taken as it is where it has
    this path's name and binding (`_reusable`: a select_n selector the group engine passed traced is
    captured here, under the same name); `compiled_only`: of the derivative paths only the jit ones (`_paths`).

    With devices, every path runs on the first; value and the AD paths run again on each further
    device, named `path@device` (finite differences are the oracle and need running only once).
    """
    given = given or {}
    with unfiltered_tracebacks():
        if not devices:
            return {
                name: _reusable(given, name, binding) or replace(run_path(name, compute), binding=binding)
                for name, binding, compute in _paths(targets, eps, order, modes, compiled_only=compiled_only)
            }
        results = {}
        for index, device in enumerate(devices):
            where = device_name(device)
            suffix = "" if index == 0 else DEVICE_SEPARATOR + where
            with jax.default_device(device):
                for name, binding, compute in _paths(
                    targets, eps, order, modes, references=index == 0, compiled_only=compiled_only
                ):
                    named = name + suffix
                    computed = _reusable(given, named, binding) or run_path(named, compute, where)
                    results[named] = replace(computed, binding=binding)
        return results


def _reusable(given: Mapping[str, PathResult], name: str, binding: str) -> PathResult | None:
    """The path another engine computed under `name`, where it bound the discrete inputs as this one does."""
    path = given.get(name)
    return path if path is not None and path.binding == binding else None


def _paths(
    targets: Sequence[Target],
    eps: float | None,
    order: int,
    modes: Sequence[str],
    references: bool = True,
    compiled_only: bool = False,
) -> Iterator[tuple[str, str, Callable]]:
    """(name, binding, compute) of every path, in report order; finite differences only with `references`;
    with `compiled_only` no eager derivative path (the float64 referee's close check: eager ones compile each
    operation on their own, most of a small audit's time, and where the narrow run found no split its eager paths
    agree with their compiled twins).

    `value` is the function called eagerly on JAX arrays, as a user would, once; `jit_value` per binding.
    """
    first = targets[0]
    yield VALUE, first.bound, lambda: (np.asarray(first.fn(*as_jax_arrays((*first.args, *first.fixed)))),)
    for target in targets:
        binding, bound = target.binding, target.bound
        compiled = jax.jit(target.fn)
        yield path_name(JIT_VALUE, binding), bound, lambda tg=target, c=compiled: (np.asarray(c(*tg.args, *tg.fixed)),)
        for base in (b for b in FIRST_ORDER if MODES_NEEDED[b] <= set(modes) and _wanted(b, compiled_only)):
            yield path_name(base, binding), bound, lambda t=base, tg=target: ad_blocks(tg, t, 1)
        if references:
            yield (
                path_name(FINITE_DIFFERENCE, binding),
                bound,
                lambda tg=target, c=compiled: finite_difference_jacobians(tg, eps, c),
            )
        if order >= 2:
            for base in (b for b in SECOND_ORDER if MODES_NEEDED[b] <= set(modes) and _wanted(b, compiled_only)):
                yield path_name(base, binding), bound, lambda t=base, tg=target: ad_blocks(tg, t, 2)
            if references:
                yield (
                    path_name(HESSIAN_FINITE_DIFFERENCE, binding),
                    bound,
                    lambda tg=target: finite_difference_hessian(tg, eps),
                )


def _wanted(base: str, compiled_only: bool) -> bool:
    return not compiled_only or base in COMPILED


class ScenarioTimeout(BaseException):
    """Raised by the alarm when a scenario runs past its timeout; a BaseException so paths do not catch it."""


class Expiry:
    """Whether a time limit fired in this process. The limit interrupts Python, not XLA: what it was
    waiting for goes on running, and the process's next computations wait behind it (after a group
    of svds given up at its limit, `jit(sin)` never returned). A worker process (`worker`) therefore
    computes nothing more once one has fired (`stop_computing`) and is replaced; a process that
    audits in place (`--jobs 0`) goes on, at that risk."""

    fired = False
    worker = False


def stop_computing() -> bool:
    """Whether engines should compute nothing more here: a time limit fired in a worker process."""
    return Expiry.worker and Expiry.fired


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the body after `seconds` (main thread, POSIX). Code inside XLA is interrupted when it
    returns, and goes on running after (`Expiry`)."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        Expiry.fired = True
        raise ScenarioTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def compute(
    scenario: Scenario,
    timeout: float | None = None,
    devices: Sequence = (),
    limits: Limits | None = None,
    given: Mapping[str, PathResult] | None = None,
    compiled_only: bool = False,
) -> Computed:
    """Every path of one scenario (on each of `devices`), or a timeout after `timeout` seconds; `compiled_only`:
    of the derivative paths only the jit ones (`_paths`).

    With `limits`, the scenario is first checked against them with its function traced (under the
    timeout too); one too large is a LimitExceeded failure, unaudited. Paths in `given` (another
    engine computed them for this scenario) are taken as they are where their name and binding are
    this engine's (`run_paths`), the others computed."""
    start = time.perf_counter()
    module_state.fresh()
    try:
        with time_limit(timeout), x64_for(scenario):
            problems = check_limits([scenario], limits) if limits is not None else []
            if problems:
                return failed(Failure(problems[0].message, LIMIT_EXCEEDED), time.perf_counter() - start)
            targets = build_targets(scenario)
            results = run_paths(targets, scenario.eps, scenario.order, devices, scenario.modes, given, compiled_only)
    except ScenarioTimeout as stopped:
        return failed(timed_out(stopped, timeout), time.perf_counter() - start)
    target = targets[0]
    return Computed(
        paths=results,
        arg_names=target.arg_names,
        inputs=target.args,
        bindings=tuple(t.binding for t in targets),
        seconds=time.perf_counter() - start,
        primitives=lambda: primitives(target),
        triggers=functools.partial(triggered, target),
        probe=prober(target, scenario),
        twins=functools.partial(
            eager_twins,
            targets,
            scenario,
            None if timeout is None else start + timeout,
            devices[0] if devices else None,
        ),
    )


def eager_twins(
    targets: Sequence[Target], scenario: Scenario, deadline: float | None, device, names: Collection[str]
) -> dict[str, PathResult]:
    """The eager twin (`paths.EAGER_TWINS`) of each compiled Hessian path in `names` (on `device`, the
    first device, as those paths ran), within what is left of the scenario's timeout (`deadline`, on
    `time.perf_counter`'s clock; a worker's parent counts the scenario's computing and its twins as
    one); those finished when that runs out."""
    found = {}
    where = device_name(device) if device is not None else None
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return {}
    try:
        with time_limit(left), x64_for(scenario), unfiltered_tracebacks(), jax.default_device(device):
            for name in names:
                constant = name.endswith(CONSTANT_SUFFIX)
                target = next(t for t in targets if (t.binding == "constant") == constant)
                eager = EAGER_TWINS[base_name(name)]
                twin = path_name(eager, target.binding)
                computed = run_path(twin, functools.partial(ad_blocks, target, eager, 2), where)
                found[twin] = replace(computed, binding=target.bound)
    except ScenarioTimeout:
        pass  # the time ran out: those finished before it
    return found


def timed_out(stopped: ScenarioTimeout, timeout: float | None) -> Failure:
    """The timeout as a failure that says where it struck: the path being computed (or the tracing
    before any path) and the user's line running then."""
    path = getattr(stopped, "path", None)
    during = f" computing {label(path)}" if path else " tracing the function, before any path"
    where = PathError.from_exception(stopped).user_where
    return Failure(f"timed out after {timeout:g} s{during}" + (f" (at {where})" if where else ""), "TimeoutError")


class LiteralEngine:
    """Each scenario on its own, every path by JAX's own transform of its name, as a user calls them;
    with `limits`, each scenario checked against them first, its function traced."""

    name = "literal"

    def __init__(self, timeout: float | None = None, devices: Sequence = (), limits: Limits | None = None):
        self.timeout, self.devices, self.limits = timeout, tuple(devices), limits

    def run(self, scenarios: Sequence[Scenario]) -> Iterator[list[tuple[int, Computed]]]:
        for index, scenario in enumerate(scenarios):
            yield [(index, self.completed(scenario))]

    def completed(self, scenario: Scenario, given: Mapping[str, PathResult] | None = None) -> Computed:
        """One scenario's paths, those in `given` taken as another engine computed them."""
        return compute(scenario, self.timeout, self.devices, self.limits, given)
