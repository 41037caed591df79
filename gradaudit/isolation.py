"""Worker processes (`--jobs N`): users' code that crashes, aborts or hangs takes down only its worker.

A worker receives batches of scenarios, each for one engine: `literal` (scenarios of one function
together, so they share its programs, each audited on its own), `group` (one group of the group
engine) or `bundle` (one bundle of the bundle engine). It audits them under the run's rule, judges
what it computed (`judging.assess`, as the parent would) and sends each result back as it is done;
a group member whose result the group engine may not report (`judging.assess.one_story`) comes back
as left to another engine, and so does each scenario of a bundle that failed as a whole, with why. The parent
hands out batches, kills a worker whose scenario runs past the timeout, and replaces any worker
that dies. A batch that dies keeps the results it sent; its unfinished scenarios go back in the
queue one by one. Memory corruption can kill a worker a scenario or two after the one that caused
it, so a scenario whose worker died is retried once in a fresh worker before it is blamed.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import replace
from multiprocessing.connection import Connection, wait

from gradaudit.model.computed import Failure
from gradaudit.model.findings import Note
from gradaudit.model.options import OptionError, Options
from gradaudit.model.results import ScenarioResult, lightened
from gradaudit.model.scenario import Scenario

DONE = "done"
READY = "ready"
"""A worker's first message, once JAX is imported and its backend started: a scenario's timeout
counts from then, so that a worker's start-up (seconds) is never blamed on the scenario it was given."""
STARTUP_SECONDS = 120.0
"""Seconds a worker may take to start (import JAX, start the backend) before it counts as hung."""

START_TRIES = 3
"""Worker starts in a row that may fail (die or hang before READY) before a run stops trying: each
scenario left is then an error saying workers cannot start here (`--jobs 0` runs without them)."""


Batch = tuple[tuple[int, Scenario], ...]
"""Scenarios, with their positions in the run, that one worker audits one after another."""

AuditOne = Callable[[Scenario, Options], ScenarioResult]
"""One scenario judged in this process: `service.audit_one`."""

ScreenMany = Callable[[Sequence[Scenario], Options], Iterable[ScenarioResult]]
"""Scenarios judged in this process, in order: `service.screen_all`."""

LITERAL, GROUP, BUNDLE, SCREEN = "literal", "group", "bundle", "screen"
"""The engines a batch can be for (SCREEN: `service.screen`'s quick verdict, for searches)."""


Settings = tuple[Options, tuple[str, ...], dict[str, object], bool, list[str], dict[str, str]]
"""What a worker needs of its run: the options, its devices by name, JAX's compilation-cache
configuration (`jaxenv.cache_config`), whether to send consistent results lightened
(`results.lightened`: the run keeps no more of them, so their arrays need not travel), and the
run's `sys.path` and environment as they are when it hands the worker work: a worker started
ahead of loading would otherwise miss the scenario folders (and any variables) loading added."""


def _serve(connection: Connection) -> None:
    """The worker's loop: import JAX, receive the run's Settings (a worker started ahead of its
    run waits here), say READY, then receive (engine, Batch) and send back (index, result, time
    spent) per scenario, then DONE; the result is None, or why (a str), for one left to another engine.
    Ctrl-C is the run's to handle: it stops its workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import jax

    from gradaudit.engines.base import Engine
    from gradaudit.engines.bundle import BundleEngine
    from gradaudit.engines.group import GroupEngine
    from gradaudit.engines.literal import LiteralEngine
    from gradaudit.jaxenv import JaxEvents, devices_named, select_n_rule, use_cache_config
    from gradaudit.judging.assess import assess_all, one_story
    from gradaudit.refereeing import refereed_all
    from gradaudit.screening import ScreenEngine

    try:
        settings = connection.recv()
    except EOFError:  # the run ended (or was killed) before it needed this worker
        return
    if settings is None:
        return
    options, device_names, cache, lighten, path, environ = settings
    sys.path[:] = path
    for name in set(os.environ) - set(environ):
        del os.environ[name]
    os.environ.update(environ)  # before JAX's backend starts (XLA_FLAGS and the like)
    use_cache_config(cache)
    devices = devices_named(device_names)
    literal = LiteralEngine(options.timeout, devices, options.limits)
    group = GroupEngine(devices=devices, timeout=options.timeout, limits=options.limits)
    bundle = BundleEngine(devices=devices)
    engines: dict[str, Engine] = {LITERAL: literal, GROUP: group, BUNDLE: bundle}
    screener = ScreenEngine(literal, options.tolerance)  # judges as it screens: its verdicts are confirmed later

    def judged(engine: str, scenarios: list[Scenario]) -> Iterator[tuple[int, ScenarioResult, bool]]:
        """Each scenario's verdict as `engine` computes it, refereed where it is kept (False: a group
        member the group engine may not report, left to another engine)."""
        for done in engines[engine].run(scenarios):
            verdicts = assess_all([(scenarios[p], paths) for p, paths in done], options.tolerance)
            keeps = [engine == LITERAL or one_story(result, options.tolerance) for result in verdicts]
            ruled = iter(refereed_all([r for r, kept in zip(verdicts, keeps, strict=True) if kept], options))
            for (position, _), verdict, kept in zip(done, verdicts, keeps, strict=True):
                yield position, next(ruled) if kept else verdict, kept

    events = JaxEvents()
    jax.block_until_ready(jax.numpy.zeros(()) + 1)  # the backend started: not a scenario's time

    with select_n_rule(options.rule):
        connection.send(READY)
        while True:
            message = connection.recv()
            if message is None:
                return
            engine, batch = message
            scenarios = [scenario for _, scenario in batch]
            answered = set()
            verdicts = (
                ((position, result, True) for position, result in screener.screen(scenarios))
                if engine == SCREEN
                else judged(engine, scenarios)
            )
            for position, result, kept in verdicts:
                spent = {**events.take(), "judge": result.judge_seconds, "audit": result.seconds}
                answered.add(position)
                sent = (lightened(result) if lighten else result) if kept else None
                connection.send((batch[position][0], sent, spent))
            fallen = bundle.fallen
            for position in sorted(set(range(len(batch))) - answered):
                connection.send((batch[position][0], fallen.get(position) if engine == BUNDLE else None, events.take()))
            fallen.clear()
            connection.send(DONE)


def signal_name(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


class _Worker:
    def __init__(self, context, settings: Settings | None):
        self.context, self.settings = context, settings
        """None for a worker started ahead of its run (`start_ahead`) until `configure`."""
        self.engine = LITERAL
        self.batch: Batch | None = None
        self.pending: set[int] = set()
        self._start()

    def _start(self) -> None:
        self.connection, child = self.context.Pipe()
        self.process = self.context.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.started = time.monotonic()
        self.ready = False
        """Whether it has said READY; until then its clock is STARTUP_SECONDS, not the timeout."""
        if self.settings is not None:
            try:
                self.connection.send(self.settings)
            except OSError:  # it died at once: it never says READY, and is treated as a failed start
                pass

    def configure(self, settings: Settings) -> None:
        """Give a worker started ahead its run's settings (once: a run's settings do not change)."""
        if self.settings is None:
            self.settings, self.started = (
                settings,
                time.monotonic(),
            )  # its start-up counts from now: a long load is not a hang
            try:
                self.connection.send(settings)
            except OSError:  # it died while it waited: `give` starts a fresh one, with these settings
                pass

    def limit(self, timeout: float | None) -> float | None:
        """Seconds its current scenario may still take from `started`: the timeout, or while it
        starts up, the longer of that and STARTUP_SECONDS."""
        return timeout if self.ready else max(timeout or 0.0, STARTUP_SECONDS)

    def heard_ready(self) -> None:
        self.ready, self.started = True, time.monotonic()

    def give(self, engine: str, batch: Batch) -> None:
        self.engine, self.batch, self.pending = engine, batch, {index for index, _ in batch}
        if self.ready:
            self.started = time.monotonic()
        try:
            if not self.process.is_alive():
                raise BrokenPipeError("the worker died while idle")
            self.connection.send((engine, batch))
        except (
            OSError
        ):  # it died between batches (killed, out of memory): no scenario's fault, a fresh one takes the batch
            self.stop()
            self._start()
            self.connection.send((engine, batch))

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.connection.close()


def _settings(options: Options, devices: tuple[str, ...], lighten: bool = False) -> Settings:
    """The Settings workers get, JAX's cache configuration as it is now in this process (a run
    turns its cache on before it starts or configures workers)."""
    from gradaudit.jaxenv import cache_config

    return options, devices, cache_config(), lighten, list(sys.path), dict(os.environ)


_ahead: list[_Worker] = []
"""Workers started by `start_ahead`, waiting for the next run to configure them (stopped at exit
if none takes them)."""
atexit.register(lambda: stop_workers(_ahead))


def start_ahead(jobs: int) -> None:
    """Start `jobs` workers now, so that they import JAX while this process loads scenarios; the
    next `taken_ahead` hands them to a run, and any never taken are stopped at exit."""
    if jobs > 0 and not _ahead:
        _ahead.extend(_Worker(multiprocessing.get_context("spawn"), None) for _ in range(jobs))


def taken_ahead() -> list[_Worker]:
    """The workers `start_ahead` started (none after the first call): a run's first idle workers."""
    taken = list(_ahead)
    _ahead.clear()
    return taken


class WorkersCannotStart(OptionError):
    """A search's workers died or hung before they were ready, START_TRIES times in a row: nothing
    can be audited with `--jobs` here (a run instead reports each scenario left as an error)."""


START_ERROR = "WorkerStartError"


def cannot_start(reason: str, times: int) -> Failure:
    return Failure(
        f"no worker process could start ({reason}, {times} times in a row); --jobs 0 audits without them",
        START_ERROR,
    )


def run_in_workers(
    batches: Sequence[Batch],
    jobs: int,
    options: Options,
    devices: tuple[str, ...],
    notify: Callable[[int, ScenarioResult], None],
    failure: Callable[[Scenario, Failure], ScenarioResult],
    totals: dict[str, float] | None = None,
    engine: str = LITERAL,
    left: Callable[[int, str], None] | None = None,
    idle: list[_Worker] | None = None,
    lighten: bool = False,
) -> None:
    """Audit `batches` on `engine` in `jobs` worker processes; `notify(index, result)` hears of each
    result (a group member the group engine may not report is not notified: another engine's), and
    `left(index, why)` of each scenario of a bundle that failed as a whole, and of each member of
    a group or bundle whose worker crashed or timed out (each then audited alone, on the literal engine;
    so is each unfinished scenario of a screen batch, whose scenarios are computed together, not in order).

    A batch whose worker dies or times out sends its unfinished scenarios back to the queue, one
    literal batch each, except the scenario it was on (for a group, its first unfinished one): retried
    once in a fresh worker if it died, then `failure(scenario, Failure(...))`; one past
    `options.timeout` (counted from the batch's previous result) gets a timeout failure at once.
    `totals` adds up what the workers report of their time (JAX's trace, lower and compile seconds,
    programs and cache reads, judge and audit seconds). With `idle`, workers are taken from it and,
    alive at the end, put back for the run's next engine (one start-up per worker per run; the
    caller ends them with `stop_workers`). With `lighten`, consistent results come lightened.
    """
    context = multiprocessing.get_context("spawn")
    settings = _settings(options, devices, lighten)
    queue: list[tuple[str, Batch]] = [(engine, batch) for batch in batches]
    scenarios = {index: scenario for batch in batches for index, scenario in batch}
    retried: dict[int, str] = {}
    workers = [idle.pop() if idle else _Worker(context, settings) for _ in range(min(jobs, len(queue)))]
    for worker in workers:
        worker.configure(settings)
    finished = False
    failed_starts = 0
    """Workers in a row that died or hung before they were ready."""

    def lost(worker: _Worker, reason: str, timed_out: bool) -> None:
        """The worker's batch did not finish: the scenario it was on (the first unfinished, as a batch
        runs in order) is retried once or fails; the rest go back in the queue, one each. A worker
        that was not ready yet blames no scenario: its batch goes back whole, up to START_TRIES."""
        nonlocal failed_starts
        batch = worker.batch
        assert batch is not None, "only a busy worker (one with a batch) is lost"
        worker.stop()
        unfinished = [index for index, _ in batch if index in worker.pending]
        failed_starts = 0 if worker.ready else failed_starts + 1
        if failed_starts >= START_TRIES:
            for index in [*unfinished, *(index for _, queued in queue for index, _ in queued)]:
                notify(index, failure(scenarios[index], cannot_start(reason, failed_starts)))
            queue.clear()
            worker.batch = None
            return
        workers[workers.index(worker)] = _Worker(context, settings)
        if not worker.ready:
            queue.insert(0, (worker.engine, tuple((index, scenarios[index]) for index in unfinished)))
            return
        for position, index in enumerate(unfinished):
            if worker.engine in (GROUP, BUNDLE, SCREEN):  # computed together: none is to blame, each goes on alone
                if left is not None:
                    left(index, f"its {worker.engine}'s worker {reason}")
                queue.insert(0, (LITERAL, ((index, scenarios[index]),)))
            elif position > 0:
                queue.insert(0, (LITERAL, ((index, scenarios[index]),)))
            elif timed_out:
                notify(
                    index, failure(scenarios[index], Failure(f"timed out after {options.timeout:g} s", "TimeoutError"))
                )
            elif index not in retried:
                retried[index] = reason
                queue.insert(0, (LITERAL, ((index, scenarios[index]),)))
            else:
                notify(
                    index,
                    failure(
                        scenarios[index], Failure(f"{reason} (also when retried in a fresh worker)", "WorkerCrash")
                    ),
                )

    try:
        while queue or any(w.batch is not None for w in workers):
            for position, worker in enumerate(workers):
                if worker.batch is None and queue:
                    worker.give(*queue.pop(_stretch(position, len(workers), len(queue))))
            busy = [w for w in workers if w.batch is not None]
            ready = wait([w.connection for w in busy], timeout=0.2)
            for worker in busy:
                if worker.connection in ready:
                    try:
                        message = worker.connection.recv()
                    except (EOFError, OSError):
                        worker.process.join(timeout=5)
                        lost(worker, f"crashed: {signal_name(worker.process.exitcode)}", timed_out=False)
                        continue
                    if message == READY:
                        worker.heard_ready()
                        failed_starts = 0
                        continue
                    if message == DONE:
                        worker.batch = None
                        continue
                    index, result, spent = message
                    worker.pending.discard(index)
                    worker.started = time.monotonic()  # the timeout is per scenario: the next one starts now
                    if totals is not None:
                        for key, value in spent.items():
                            totals[key] = totals.get(key, 0.0) + value
                    if isinstance(result, str) and left is not None:
                        left(index, result)
                    if result is None or isinstance(result, str):
                        continue
                    if index in retried:
                        result = replace(
                            result,
                            notes=(
                                *result.notes,
                                Note(message=f"retried in a fresh worker: the first one {retried[index]}"),
                            ),
                        )
                    notify(index, result)
                elif (limit := worker.limit(options.timeout)) and time.monotonic() - worker.started > limit:
                    lost(
                        worker,
                        "timed out" if worker.ready else f"did not start within {limit:g} s",
                        timed_out=worker.ready,
                    )
        finished = True
    finally:
        for worker in workers:
            if finished and idle is not None and worker.process.is_alive():
                idle.append(worker)  # for the run's next engine: no second start-up
            else:
                stop_workers([worker])


def _stretch(worker: int, workers: int, queued: int) -> int:
    """Where in the queue worker `worker` of `workers` takes its next batch: the first worker at
    the front (where batches put back go), the last at the back, the others evenly between, so that
    each works through a stretch of its own. Batches of kin, queued next to each other (the
    service orders groups by `targets.kinship`), then mostly go to one worker, which reuses the
    eager programs they share instead of lowering them again (docs/performance.md, "Measurements
    behind the settings")."""
    return round(worker * (queued - 1) / (workers - 1)) if workers > 1 else 0


def stop_workers(workers: list[_Worker]) -> None:
    """Ask each worker to end, then make sure it has."""
    for worker in workers:
        if worker.process.is_alive():
            try:
                worker.connection.send(None)
            except (OSError, BrokenPipeError):
                pass
        worker.stop()
    workers.clear()


class IsolatedAuditor:
    """One scenario at a time in a persistent worker process, for searches and surveys: a scenario
    that crashes the interpreter or runs past `options.timeout` is an error result of its own
    (`crashed: SIGABRT`, `timed out after …`), and a fresh worker takes the next one."""

    def __init__(self, options: Options, devices: tuple[str, ...] = ()):
        self.options, self.settings = options, (options, devices)
        self.context = multiprocessing.get_context("spawn")
        self.worker: _Worker | None = None

    def screen(self, scenario: Scenario) -> ScenarioResult:
        """`service.screen`'s quick verdict, isolated."""
        return self._audit(SCREEN, scenario)

    def audit(self, scenario: Scenario) -> ScenarioResult:
        """`service.audit_one`'s verdict (the literal engine), isolated."""
        return self._audit(LITERAL, scenario)

    def _audit(self, engine: str, scenario: Scenario) -> ScenarioResult:
        """The scenario's result; a worker that dies or hangs before it is ready is started again
        (up to START_TRIES in a row, then WorkersCannotStart) rather than blamed on the scenario."""
        why = ""
        for _ in range(START_TRIES):
            answer = self._once(engine, scenario)
            if not isinstance(answer, str):
                return answer
            why = answer
        raise WorkersCannotStart(cannot_start(why, START_TRIES).message)

    def _once(self, engine: str, scenario: Scenario) -> ScenarioResult | str:
        """The scenario's result, or why its worker did not start (a str)."""
        from gradaudit.judging.assess import assess
        from gradaudit.model.computed import failed

        if self.worker is None:
            self.worker = _Worker(self.context, _settings(*self.settings))
        worker = self.worker
        worker.give(engine, ((0, scenario),))
        result: ScenarioResult | None = None
        while True:
            limit = worker.limit(self.options.timeout)
            if not wait(
                [worker.connection],
                timeout=None if limit is None else max(0.0, limit - (time.monotonic() - worker.started)),
            ):
                self.close()
                if not worker.ready:
                    return f"did not start within {limit:g} s"
                return assess(
                    scenario,
                    failed(Failure(f"timed out after {self.options.timeout:g} s", "TimeoutError"), limit or 0.0),
                    self.options.tolerance,
                )
            try:
                message = worker.connection.recv()
            except (EOFError, OSError):
                worker.process.join(timeout=5)
                reason = f"crashed: {signal_name(worker.process.exitcode)}"
                self.close()
                if not worker.ready:
                    return reason
                return assess(scenario, failed(Failure(reason, "WorkerCrash"), 0.0), self.options.tolerance)
            if message == READY:
                worker.heard_ready()
                continue
            if message == DONE:
                assert result is not None, (
                    "the literal and screen engines answer every scenario, and the worker keeps their results"
                )
                worker.batch = None  # idle again: a pool's `screen_all` may lend it to `run_in_workers`
                return result
            result = message[1]
            worker.started = time.monotonic()

    def close(self) -> None:
        if self.worker is not None:
            stop_workers([self.worker])
            self.worker = None


class IsolatedPool:
    """`jobs` IsolatedAuditors side by side, for searches and surveys: `screen_all` screens many
    scenarios at once, in batches of kin (one program for the members of a group) spread over the
    workers, results in order; `screen` and `audit` take one (the first worker). With jobs 0, every
    scenario in this process, unisolated, as `run --jobs 0`, under the options' rule until `close`,
    by `here`'s (screen_all, audit) pair (the service's own, handed in so that isolation need not
    import the service that uses it)."""

    def __init__(self, options: Options, here: tuple[ScreenMany, AuditOne], devices: tuple[str, ...] = ()):
        self.options, self.devices, (self.here_screen_all, self.here_audit) = options, devices, here
        self.auditors = [IsolatedAuditor(options, devices) for _ in range(options.jobs)]
        self.here = ExitStack()
        if not self.auditors:
            from gradaudit.jaxenv import select_n_rule

            self.here.enter_context(select_n_rule(options.rule))

    def screen(self, scenario: Scenario) -> ScenarioResult:
        if not self.auditors:
            return next(iter(self.here_screen_all([scenario], self.options)))
        return self.auditors[0].screen(scenario)

    def audit(self, scenario: Scenario) -> ScenarioResult:
        if not self.auditors:
            return self.here_audit(scenario, self.options)
        return self.auditors[0].audit(scenario)

    def screen_all(self, scenarios: Sequence[Scenario]) -> Iterator[ScenarioResult]:
        if not self.auditors:
            yield from self.here_screen_all(scenarios, self.options)
            return
        if len(scenarios) <= 1:
            yield from map(self.screen, scenarios)
            return
        from gradaudit.judging.assess import assess
        from gradaudit.model.computed import failed

        results: dict[int, ScenarioResult] = {}
        cannot: list[Failure] = []

        def failure(scenario: Scenario, why: Failure) -> ScenarioResult:
            if why.error_type == START_ERROR:
                cannot.append(why)
            return assess(scenario, failed(why, 0.0), self.options.tolerance)

        idle = [auditor.worker for auditor in self.auditors if auditor.worker is not None]
        for auditor in self.auditors:
            auditor.worker = None  # lent to the run below, given back after
        try:
            run_in_workers(
                _kin_batches(scenarios, len(self.auditors)),
                len(self.auditors),
                self.options,
                self.devices,
                results.__setitem__,
                failure,
                engine=SCREEN,
                idle=idle,
            )
        finally:
            for auditor in self.auditors:
                auditor.worker = idle.pop() if idle else None
            stop_workers(idle)
        if cannot:
            raise WorkersCannotStart(cannot[0].message)
        yield from (results[position] for position in range(len(scenarios)))

    def close(self) -> None:
        for auditor in self.auditors:
            auditor.close()
        self.here.close()


def _kin_batches(scenarios: Sequence[Scenario], jobs: int) -> list[Batch]:
    """Screen batches for `jobs` workers: scenarios of one program together (the group engine
    compiles it once for them), a family split only into as many parts as there are workers, so
    that a survey's sweep of one function keeps every worker busy without compiling its programs
    more than once a worker."""
    from gradaudit.targets import group_key

    families: dict[object, list[int]] = {}
    for position, scenario in enumerate(scenarios):
        key = group_key(scenario)
        families.setdefault(("alone", position) if key is None else key, []).append(position)
    size = max(1, -(-len(scenarios) // jobs))
    return [
        tuple((position, scenarios[position]) for position in members[start : start + size])
        for members in families.values()
        for start in range(0, len(members), size)
    ]
