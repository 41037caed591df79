"""Orchestration: scenario by scenario, build the target, run every path, judge, collect."""

from __future__ import annotations

import platform
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import jax

from gradaudit import dtypes
from gradaudit.diagnoses import Evidence, diagnose
from gradaudit.judge import ERROR, RAISED, Finding, Tolerances, judge
from gradaudit.paths import VALUE, run_paths
from gradaudit.results import AuditReport, ScenarioResult
from gradaudit.rules import INSTALLED, select_n_rule
from gradaudit.scenario import Scenario
from gradaudit.targets import build_targets


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


def environment(rule: str) -> dict:
    """Where the audit ran: the facts a finding belongs to."""
    import jaxlib

    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "python": platform.python_version(),
        "backend": jax.default_backend(),
        "devices": [{"platform": d.platform, "kind": d.device_kind, "id": d.id} for d in jax.devices()],
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


def _timed_out(scenario: Scenario, seconds: float, elapsed: float) -> ScenarioResult:
    finding = Finding(kind=RAISED, paths=(VALUE,), message=f"timed out after {seconds:g} s", error_type="TimeoutError")
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
    scenario: Scenario, tolerance: tuple[float | None, float | None] = (None, None), timeout: float | None = None
) -> ScenarioResult:
    """Every path of one scenario, judged; an error result if it runs past `timeout` seconds."""
    start = time.perf_counter()
    try:
        with time_limit(timeout), x64_for(scenario):
            targets = build_targets(scenario)
            results = run_paths(targets, scenario.eps, scenario.order)
    except ScenarioTimeout:
        return _timed_out(scenario, timeout, time.perf_counter() - start)
    target = targets[0]
    bindings = tuple(t.binding for t in targets)
    verdict = judge(results, target.arg_names, tolerances_for(scenario, tolerance), bindings)
    diagnosis = diagnose(Evidence(paths=results, findings=verdict.findings, notes=verdict.notes))
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
    )


def run_audit(
    scenarios: Sequence[Scenario],
    rule: str = INSTALLED,
    on_result: Callable[[ScenarioResult], None] | None = None,
    files: tuple[str, ...] = (),
    tolerance: tuple[float | None, float | None] = (None, None),
    timeout: float | None = None,
) -> AuditReport:
    """Audit every scenario in order; `on_result` hears of each as it finishes.

    The whole run happens under `rule` (see rules.py).
    """
    with select_n_rule(rule):
        results = []
        for scenario in scenarios:
            result = audit_scenario(scenario, tolerance, timeout)
            results.append(result)
            if on_result is not None:
                on_result(result)
    env = environment(rule)
    env["x64"] = env["x64"] or any(needs_x64(s) for s in scenarios)
    return AuditReport(environment=env, results=tuple(results), files=files)
