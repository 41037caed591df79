"""Orchestration: scenario by scenario, build the target, run every path, judge, collect."""

from __future__ import annotations

import platform
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import replace

import jax

from gradaudit import dtypes
from gradaudit.batched import MAX_ELEMENTS, audit_group, batch_size, group_key
from gradaudit.compiled import Bundle
from gradaudit.devices import describe, device_name
from gradaudit.diagnoses import Evidence, diagnose
from gradaudit.judge import ERROR, INTERRUPTED, NOTE, RAISED, Finding, Tolerances, judge
from gradaudit.limits import LIMIT_EXCEEDED, Limits
from gradaudit.paths import VALUE, run_paths
from gradaudit.results import AuditReport, ScenarioResult
from gradaudit.rules import INSTALLED, select_n_rule
from gradaudit.scenario import Scenario
from gradaudit.targets import build_targets
from gradaudit.targets.base import primitives
from gradaudit.yaml_nodes import InputError


def needs_x64(scenario: Scenario) -> bool:
    """Whether a scenario names a 64-bit dtype, which JAX only keeps with x64 enabled."""
    return any(dtype in dtypes.WIDE_DTYPES for dtype in scenario.target.named_dtypes)


@contextmanager
def x64_for(scenario: Scenario) -> Iterator[None]:
    """x64 on for a scenario that needs it, and only for it: one scenario never changes another's dtypes."""
    previous = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", previous or needs_x64(scenario))
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


def environment(rule: str, devices: Sequence = ()) -> dict:
    """Where the audit ran: the facts a finding belongs to (`devices`: the ones audited on)."""
    import jaxlib

    devices = list(devices) or jax.devices()[:1]
    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "python": platform.python_version(),
        "backend": devices[0].platform,
        "devices": [describe(d) for d in devices],
        "rule": rule,
        "x64": bool(jax.config.jax_enable_x64),
    }


def tolerances_for(scenario: Scenario, default: tuple[float | None, float | None] = (None, None)) -> Tolerances:
    """The scenario's own tolerance, else the run's default (--rtol/--atol), else its dtype's."""
    fd_rtol, fd_atol = dtypes.default_tolerance(scenario.precision_dtype)
    fd_rtol = fd_rtol if default[0] is None else default[0]
    fd_atol = fd_atol if default[1] is None else default[1]
    if scenario.tolerance is not None:
        fd_rtol, fd_atol = scenario.tolerance.rtol, scenario.tolerance.atol
    ad_rtol, ad_atol = dtypes.ad_tolerance(scenario.precision_dtype)
    return Tolerances(fd_rtol=fd_rtol, fd_atol=fd_atol, ad_rtol=ad_rtol, ad_atol=ad_atol)


class ScenarioTimeout(BaseException):
    """Raised by the alarm when a scenario runs past --timeout; a BaseException so paths do not catch it."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the body after `seconds` (main thread, POSIX). Code inside XLA is interrupted when it returns."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise ScenarioTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def failed(scenario: Scenario, message: str, error_type: str, elapsed: float) -> ScenarioResult:
    """The result of a scenario that never finished: timed out, or its worker crashed."""
    finding = Finding(kind=RAISED, paths=(VALUE,), message=message, error_type=error_type)
    return ScenarioResult(
        scenario=scenario,
        arg_names=(),
        inputs=(),
        status=ERROR,
        paths={},
        findings=(finding,),
        provenance=None,
        seconds=elapsed,
    )


def audit_scenario(
    scenario: Scenario,
    tolerance: tuple[float | None, float | None] = (None, None),
    timeout: float | None = None,
    devices: Sequence = (),
) -> ScenarioResult:
    """Every path of one scenario (on each of `devices`), judged; an error result if it runs past `timeout` seconds."""
    start = time.perf_counter()
    try:
        with time_limit(timeout), x64_for(scenario):
            targets = build_targets(scenario)
            results = run_paths(targets, scenario.eps, scenario.order, devices)
    except ScenarioTimeout:
        return failed(scenario, f"timed out after {timeout:g} s", "TimeoutError", time.perf_counter() - start)
    target = targets[0]
    bindings = tuple(t.binding for t in targets)
    judging = time.perf_counter()
    verdict = judge(results, target.arg_names, tolerances_for(scenario, tolerance), bindings)
    judge_seconds = time.perf_counter() - judging
    diagnosis = diagnose(Evidence(paths=results, findings=verdict.findings, notes=verdict.notes, trace=lambda: primitives(target)))
    return ScenarioResult(
        scenario=scenario,
        arg_names=target.arg_names,
        inputs=target.args,
        status=verdict.status,
        paths=results,
        findings=verdict.findings,
        notes=verdict.notes,
        diagnosis=diagnosis,
        provenance=verdict.provenance,
        seconds=time.perf_counter() - start,
        judge_seconds=judge_seconds,
    )


def screen(scenario: Scenario, tolerance: tuple[float | None, float | None] = (None, None)) -> ScenarioResult:
    """The fast path's verdict on one scenario where it applies, findings included and not
    confirmed; else the literal path's. For exploring many scenarios (`gradaudit search`), whose
    findings are confirmed on the literal path before anyone sees them. Runs under the current rule."""
    if group_key(scenario) is not None:
        with x64_for(scenario):
            (found,) = audit_group([scenario], [tolerances_for(scenario, tolerance)], keep_findings=True)
        if found is not None:
            return _shared_result(scenario, found, 0.0, None, "batched")
    return audit_scenario(scenario, tolerance)


FAST_PATH_MIN_GROUP = 16
"""Smaller groups skip the fast path: a group's program costs about 60 ms of compile here, what the
compiled literal path, which every finding needs anyway, spends on some 8 scenarios. On the
1,000-scenario bench grid (groups of about 11) a threshold of 8 took the installed rule from 10.3
to 14.9 s and the fixed rule from 9.6 to 7.4 s; findings are the common case worth serving."""

BUNDLE_SCENARIOS = 256
"""Scenarios traced into one compiled literal program; on the 1,000-scenario grid 64, 128, 256, 512
and 1,024 took 12.1, 11.3, 10.3, 10.7 and 11.2 s (and peak memory grows with the bundle)."""


def _groups(scenarios: Sequence[Scenario]) -> list[list[int]]:
    """Indices of scenarios sharing a fast-path program, in batches small enough for one call;
    only groups of at least FAST_PATH_MIN_GROUP."""
    groups: dict[tuple, list[int]] = {}
    for index, scenario in enumerate(scenarios):
        key = group_key(scenario)
        if key is not None:
            groups.setdefault(key, []).append(index)
    batches = []
    for indices in groups.values():
        if len(indices) < FAST_PATH_MIN_GROUP:
            continue
        size = batch_size(scenarios[indices[0]])
        batches += [indices[start : start + size] for start in range(0, len(indices), size)]
    return batches


def _bundles(scenarios: Sequence[Scenario], indices: Sequence[int]) -> list[list[int]]:
    """The scenarios of `indices` the compiled literal path can take, in bundles: one x64 setting each,
    at most BUNDLE_SCENARIOS scenarios and MAX_ELEMENTS array elements."""
    by_width: dict[bool, list[int]] = {}
    for index in indices:
        if group_key(scenarios[index]) is not None:
            by_width.setdefault(needs_x64(scenarios[index]), []).append(index)
    bundles: list[list[int]] = []
    for members in by_width.values():
        current: list[int] = []
        elements = 0
        for index in members:
            size = MAX_ELEMENTS // batch_size(scenarios[index])
            if current and (len(current) == BUNDLE_SCENARIOS or elements + size > MAX_ELEMENTS):
                bundles.append(current)
                current, elements = [], 0
            current.append(index)
            elements += size
        bundles += [current] if current else []
    return bundles


def _shared_result(scenario: Scenario, found: tuple, seconds: float, device: str | None, method: str) -> ScenarioResult:
    """A scenario's result from a program it shared: the fast path's (`batched`) or a bundle's (`compiled`)."""
    results, verdict, names, inputs, judge_seconds = found
    evidence = Evidence(
        paths=results, findings=verdict.findings, notes=verdict.notes, trace=lambda: primitives(build_targets(scenario)[0])
    )
    diagnosis = diagnose(evidence) if verdict.findings else None
    return ScenarioResult(
        scenario=scenario,
        arg_names=names,
        inputs=inputs,
        status=verdict.status,
        paths={name: replace(path, device=device) for name, path in results.items()},
        findings=verdict.findings,
        notes=verdict.notes,
        provenance=verdict.provenance,
        diagnosis=diagnosis,
        seconds=seconds,
        method=method,
        judge_seconds=judge_seconds,
    )


def run_audit(
    scenarios: Sequence[Scenario],
    rule: str = INSTALLED,
    on_result: Callable[[ScenarioResult], None] | None = None,
    files: tuple[str, ...] = (),
    tolerance: tuple[float | None, float | None] = (None, None),
    timeout: float | None = None,
    literal: bool = False,
    jobs: int = 0,
    devices: Sequence = (),
    limits: Limits | None = None,
) -> AuditReport:
    """Audit every scenario; `on_result` hears of each as it finishes; results keep the scenarios' order.

    The whole run happens under `rule` (see rules.py), on `devices` (default: JAX's default
    device). Unless `literal` or there are several devices to compare, scenarios in large enough
    groups go through the fast path first (batched.py); select_n scenarios it does not find
    consistent, and those in small groups, are audited on the compiled literal path (compiled.py),
    many to a program; the rest (functions, second order, programs that fail as a whole) one by
    one on the literal path. The report shows each scenario's result from where it ended. With
    `jobs`, workers audit those one-by-one scenarios, checking each against `limits` first (see
    workers.py); one too large is an input error of the report.
    """
    results: list[ScenarioResult | None] = [None] * len(scenarios)
    shared = not literal and len(devices) <= 1
    batches = _groups(scenarios) if shared else []
    counts = {"groups": len(batches), "bundles": 0, "failed_bundles": 0, "waited": 0.0}
    with remembered_interrupt() as check:

        def notify(result: ScenarioResult) -> None:
            if on_result is not None:
                on_result(result)
            check()

        try:
            _audit_all(scenarios, results, rule, notify, tolerance, timeout, batches, shared, counts, jobs, tuple(devices), limits)
        except KeyboardInterrupt:
            finished = [r if r is not None else _interrupted(s) for r, s in zip(results, scenarios, strict=True)]
            raise AuditInterrupted(_report(scenarios, finished, rule, files, counts, devices)) from None
    return _report(scenarios, results, rule, files, counts, devices)


@contextmanager
def remembered_interrupt() -> Iterator[Callable[[], None]]:
    """Ctrl-C raises KeyboardInterrupt as ever, and is remembered: where Python swallows that raise
    (inside JAX's garbage-collection hook it only prints "Exception ignored"), the check this yields
    raises it again at the audit's next checkpoint, each result."""
    pending: list[int] = []

    def check() -> None:
        if pending:
            raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield check
        return

    def interrupt(signum, frame):
        pending.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield check
    finally:
        signal.signal(signal.SIGINT, previous)


class AuditInterrupted(Exception):
    """Ctrl-C during an audit: carries the report of what finished, the rest marked interrupted."""

    def __init__(self, report: AuditReport):
        super().__init__("interrupted")
        self.report = report


def _interrupted(scenario: Scenario) -> ScenarioResult:
    return ScenarioResult(
        scenario=scenario, arg_names=(), inputs=(), status=INTERRUPTED, paths={}, findings=(), provenance=None, seconds=0.0
    )


def _report(scenarios, results, rule: str, files: tuple[str, ...], counts: dict[str, int], devices: Sequence) -> AuditReport:
    env = environment(rule, devices)
    # Judging in worker processes happened alongside: `workers` has it, the main process's figure does not.
    in_workers = counts.get("workers", {}).get("judge", 0.0)
    timings = {**counts, "judge": sum(r.judge_seconds for r in results) - in_workers}
    env["x64"] = env["x64"] or any(needs_x64(s) for s in scenarios)
    # A scenario a worker found too large is bad input, not a finding: an error of the report, not a result.
    too_large = [r for r in results if r.findings and r.findings[0].error_type == LIMIT_EXCEEDED]
    errors = tuple(InputError(r.scenario.source, r.findings[0].message) for r in too_large)
    kept = tuple(r for r in results if r not in too_large)
    return AuditReport(environment=env, results=kept, files=files, timings=timings, errors=errors)


def _store(scenarios, indices: list[int], found: list, results: list, notify, seconds: float, devices: tuple, method: str) -> None:
    """Keep what a shared program settled (None: not settled there), each scenario charged its share of `seconds`."""
    where = device_name(devices[0]) if devices else None
    for index, outcome in zip(indices, found, strict=True):
        if outcome is not None:
            results[index] = _shared_result(scenarios[index], outcome, seconds / len(indices), where, method)
            notify(results[index])


def _placed(devices: tuple):
    return jax.default_device(devices[0]) if devices else nullcontext()


def _audit_groups(scenarios, batches: list[list[int]], results: list, notify, tolerance, devices: tuple) -> None:
    """The fast path, group by group: it settles only the scenarios it finds consistent."""
    for indices in batches:
        members = [scenarios[i] for i in indices]
        start = time.perf_counter()
        with x64_for(members[0]), _placed(devices):
            found = audit_group(members, [tolerances_for(s, tolerance) for s in members])
        _store(scenarios, indices, found, results, notify, time.perf_counter() - start, devices, "batched")


def _audit_bundles(scenarios, bundles: list[list[int]], results: list, notify, tolerance, devices: tuple, counts: dict) -> dict[int, str]:
    """The compiled literal path, bundle by bundle, each traced while XLA compiles the one before (in
    a thread: compiling releases the GIL). A bundle that fails as a whole settles nothing: returns,
    per scenario of such a bundle, why, and the literal path takes them one by one.

    Each scenario is charged its share of its bundle's tracing, of the wait for its compile and of
    its run; `counts` gets the bundles that worked, those that failed and the time spent waiting."""
    fallen: dict[int, str] = {}

    def fail(indices: list[int], exc: Exception) -> None:
        counts["failed_bundles"] += 1
        reason = f"its compiled bundle failed ({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''})"
        fallen.update(dict.fromkeys(indices, reason))

    def finish(indices: list[int], bundle: Bundle, compiling: Future, traced: float) -> None:
        members = [scenarios[i] for i in indices]
        start = time.perf_counter()
        try:
            compiling.result()
            counts["waited"] += time.perf_counter() - start
            with x64_for(members[0]), _placed(devices):
                found = bundle.outcomes([tolerances_for(s, tolerance) for s in members])
        except Exception as exc:  # noqa: BLE001 - the literal path will say what went wrong, scenario by scenario
            fail(indices, exc)
            return
        counts["bundles"] += 1
        _store(scenarios, indices, found, results, notify, traced + time.perf_counter() - start, devices, "compiled")

    with ThreadPoolExecutor(max_workers=1) as compiler:
        previous = None
        for indices in bundles:
            members = [scenarios[i] for i in indices]
            start = time.perf_counter()
            try:
                with x64_for(members[0]), _placed(devices):
                    bundle = Bundle(members)
            except Exception as exc:  # noqa: BLE001 - as above
                fail(indices, exc)
                bundle = None
            traced = time.perf_counter() - start
            if previous is not None:
                finish(*previous)
            previous = (indices, bundle, compiler.submit(bundle.compile), traced) if bundle is not None else None
        if previous is not None:
            finish(*previous)
    return fallen


def _noted(result: ScenarioResult, reason: str | None) -> ScenarioResult:
    """A literal-path result that got there because its bundle failed says so."""
    if reason is None:
        return result
    note = Finding(kind=NOTE, paths=(), message=f"audited on the literal path: {reason}")
    return replace(result, notes=(*result.notes, note))


def _audit_all(
    scenarios, results: list, rule: str, notify, tolerance, timeout, batches: list[list[int]], shared: bool, counts: dict,
    jobs: int, devices: tuple, limits,
) -> None:
    """Fill `results` in place, so that an interrupt leaves what finished."""
    with select_n_rule(rule):
        _audit_groups(scenarios, batches, results, notify, tolerance, devices)
        fallen: dict[int, str] = {}
        if shared:
            bundles = _bundles(scenarios, [index for index, result in enumerate(results) if result is None])
            fallen = _audit_bundles(scenarios, bundles, results, notify, tolerance, devices, counts)
        remaining = [(index, scenario) for index, scenario in enumerate(scenarios) if results[index] is None]

        def store(index: int, result: ScenarioResult) -> None:
            results[index] = _noted(result, fallen.get(index))
            notify(results[index])

        if jobs > 0 and remaining:
            from gradaudit.workers import run_in_workers

            counts["workers"] = {}
            run_in_workers(remaining, jobs, rule, tolerance, timeout, tuple(map(device_name, devices)), limits, failed, store, counts["workers"])
            return
        for index, scenario in remaining:
            store(index, audit_scenario(scenario, tolerance, timeout, devices))
