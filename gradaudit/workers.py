"""Worker processes (`--jobs N`): a scenario that crashes, aborts or hangs takes down only its worker.

Each worker audits literal-path scenarios one at a time under the run's rule. The parent hands out
scenarios, kills a worker whose scenario runs past the timeout, and replaces any worker that dies.
Memory corruption can kill a worker a scenario or two after the one that caused it, so a scenario
whose worker died is retried once in a fresh worker before it is blamed.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from multiprocessing.connection import Connection, wait

from gradaudit.judge import NOTE, Finding

from gradaudit.results import ScenarioResult
from gradaudit.scenario import Scenario


def _serve(connection: Connection, rule: str, tolerance: tuple, device_names: tuple[str, ...], limits) -> None:
    """The worker's loop: receive (index, scenario), send back (index, result).

    With `limits`, a scenario is first checked against them with its function traced (which the
    parent leaves to workers); one too large comes back as a LIMIT_EXCEEDED result, unaudited.
    """
    from gradaudit.devices import resolve
    from gradaudit.limits import LIMIT_EXCEEDED, check_limits
    from gradaudit.profiling import JaxEvents
    from gradaudit.rules import select_n_rule
    from gradaudit.runner import audit_scenario, failed

    devices = resolve(device_names)
    events = JaxEvents()
    with select_n_rule(rule):
        while True:
            item = connection.recv()
            if item is None:
                return
            index, scenario = item
            problems = check_limits([scenario], limits) if limits is not None else []
            if problems:
                result = failed(scenario, problems[0].message, LIMIT_EXCEEDED, 0.0)
            else:
                result = audit_scenario(scenario, tolerance, devices=devices)
            connection.send((index, result, {**events.take(), "judge": result.judge_seconds, "audit": result.seconds}))


def _signal_name(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


class _Worker:
    def __init__(self, context, settings: tuple):
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, *settings), daemon=True)
        self.process.start()
        child.close()
        self.item: tuple[int, Scenario] | None = None
        self.started = 0.0

    def give(self, item: tuple[int, Scenario]) -> None:
        self.item, self.started = item, time.monotonic()
        self.connection.send(item)

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.connection.close()


def run_in_workers(
    items: Sequence[tuple[int, Scenario]],
    jobs: int,
    rule: str,
    tolerance: tuple,
    timeout: float | None,
    devices: tuple[str, ...],
    limits,
    failed: Callable[[Scenario, str, str, float], ScenarioResult],
    notify: Callable[[int, ScenarioResult], None],
    totals: dict[str, float] | None = None,
) -> None:
    """Audit `items` in `jobs` worker processes; `notify(index, result)` hears of each result.

    `failed(scenario, message, error_type, seconds)` builds the result of a scenario whose worker
    died twice or ran past `timeout`. `totals` adds up what the workers report of their time (JAX's
    trace, lower and compile seconds, programs and cache reads, judge and audit seconds).
    """
    context = multiprocessing.get_context("spawn")
    settings = (rule, tolerance, devices, limits)
    queue = list(items)
    retried: dict[int, str] = {}
    workers = [_Worker(context, settings) for _ in range(min(jobs, len(queue)))]
    try:
        while queue or any(w.item is not None for w in workers):
            for worker in workers:
                if worker.item is None and queue:
                    worker.give(queue.pop(0))
            busy = [w for w in workers if w.item is not None]
            ready = wait([w.connection for w in busy], timeout=0.2)
            for worker in busy:
                index, scenario = worker.item
                if worker.connection in ready:
                    try:
                        _, result, spent = worker.connection.recv()
                    except (EOFError, OSError):
                        worker.process.join(timeout=5)
                        reason = f"crashed: {_signal_name(worker.process.exitcode)}"
                        worker.stop()
                        workers[workers.index(worker)] = _Worker(context, settings)
                        if index not in retried:
                            retried[index] = reason
                            queue.insert(0, (index, scenario))
                        else:
                            notify(index, failed(scenario, f"{reason} (also when retried in a fresh worker)", "WorkerCrash", 0.0))
                        continue
                    worker.item = None
                    if totals is not None:
                        for key, value in spent.items():
                            totals[key] = totals.get(key, 0.0) + value
                    if index in retried:
                        note = Finding(kind=NOTE, paths=(), message=f"retried in a fresh worker: the first one {retried[index]}")
                        result = replace(result, notes=(*result.notes, note))
                    notify(index, result)
                elif timeout and time.monotonic() - worker.started > timeout:
                    worker.stop()
                    workers[workers.index(worker)] = _Worker(context, settings)
                    notify(index, failed(scenario, f"timed out after {timeout:g} s", "TimeoutError", timeout))
    finally:
        for worker in workers:
            if worker.process.is_alive():
                try:
                    worker.connection.send(None)
                except (OSError, BrokenPipeError):
                    pass
            worker.stop()
