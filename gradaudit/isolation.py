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
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait

from gradaudit.model.computed import Failure
from gradaudit.model.findings import Note
from gradaudit.model.options import OptionError, Options
from gradaudit.model.results import ScenarioResult, lightened
from gradaudit.model.scenario import Scenario
from gradaudit.worker_starts import starts

DONE = "done"
POISONED = "poisoned"
"""A worker's last message instead of DONE where a time limit fired inside it (`literal.Expiry`): XLA
still runs what the limit interrupted, so it computes nothing more; its batch's scenarios it did not
answer go to a fresh worker, one batch each, and are not blamed (the one at fault fails again alone)."""
STARTING = "starting"
"""A worker's word, with a scenario's index, that it starts computing that screen batch member on its
own (its literal paths, after the group engine's quick ones): its clock starts then, as the worker's
own time limit for it does, and a worker killed past it blames that member alone, not its batch."""
READY = "ready"
"""A worker's first message, once JAX is imported and its backend started: a scenario's timeout
counts from then, so that a worker's start-up (seconds) is never blamed on the scenario it was given."""
STARTUP_SECONDS = 120.0
"""Seconds a worker may take to start (import JAX, start the backend) before it counts as hung."""

GRACE_SECONDS = 1.0
"""How much longer than the timeout a worker's scenario may take before the parent kills the worker:
the worker's own time limit fires first where it can (Python code, a wait on XLA), answering with
the scenario's timeout and what it had computed, and saying POISONED; the parent's kill is for code
that no signal interrupts."""

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
    """The worker's loop: import JAX (`worker_starts.WORKER_MODULES`: one forked from the fork server has them),
    receive the run's Settings (a worker started ahead of its run waits here), say READY, then
    receive (engine, Batch) and send back (index, result, time spent) per scenario, then DONE (or
    POISONED, and it exits); the result is None, or why (a str), for one left to another engine.
    Ctrl-C is the run's to handle: it stops its workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import jax

    from gradaudit.engines.base import Engine
    from gradaudit.engines.bundle import BundleEngine
    from gradaudit.engines.group import GroupEngine
    from gradaudit.engines.literal import Expiry, LiteralEngine
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
    Expiry.worker = True
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
    batch: Batch = ()
    screener.starting = lambda position: connection.send((STARTING, batch[position][0]))

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
                if Expiry.fired:
                    break
            if Expiry.fired and engine in (LITERAL, SCREEN):
                connection.send(POISONED)  # its unanswered scenarios are the parent's to give a fresh worker
                return
            fallen = bundle.fallen
            for position in sorted(set(range(len(batch))) - answered):
                connection.send((batch[position][0], fallen.get(position) if engine == BUNDLE else None, events.take()))
            fallen.clear()
            connection.send(POISONED if Expiry.fired else DONE)
            if Expiry.fired:
                return


CRASHED, ANSWER = "crashed", "answer"


@dataclass(frozen=True)
class Heard:
    """One thing a worker said (`_Worker.hear`): READY, DONE, POISONED, STARTING a screen member (its
    index), a scenario's ANSWER (its index, its result or None or why it is left to another engine, the
    time spent), or CRASHED (why)."""

    what: str
    index: int = -1
    answer: ScenarioResult | str | None = None
    spent: dict[str, float] = field(default_factory=dict)
    why: str = ""


def signal_name(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


class _Worker:
    def __init__(self, settings: Settings | None):
        self.settings = settings
        """None for a worker started ahead of its run (`start_ahead`) until `configure`."""
        self.engine = LITERAL
        self.batch: Batch | None = None
        self.pending: set[int] = set()
        self.current: int | None = None
        """The screen member it said it is STARTING on, until it answers."""
        self._start()

    def _start(self) -> None:
        self.connection, child = multiprocessing.Pipe()
        self.process = starts.start(lambda context: context.Process(target=_serve, args=(child,), daemon=True))
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
        """Seconds its current scenario may still take from `started`: the timeout and GRACE_SECONDS,
        or while it starts up, the longer of that and STARTUP_SECONDS."""
        if timeout is None:
            return None if self.ready else STARTUP_SECONDS
        return timeout + GRACE_SECONDS if self.ready else max(timeout, STARTUP_SECONDS)

    def heard_ready(self) -> None:
        self.ready, self.started = True, time.monotonic()

    def left(self, timeout: float | None) -> float | None:
        """Seconds its current scenario (or its start-up) may still take; None: no limit."""
        limit = self.limit(timeout)
        return None if limit is None else max(0.0, limit - (time.monotonic() - self.started))

    def overdue(self, timeout: float | None) -> str:
        """Why a worker past its limit is given up: its scenario timed out, or it never started."""
        return "timed out" if self.ready else f"did not start within {self.limit(timeout):g} s"

    def hear(self) -> Heard:
        """The worker's next message, its own state kept up with it: ready, idle again after DONE, a
        scenario answered (the timeout is per scenario: the next one's clock starts now)."""
        try:
            message = self.connection.recv()
        except (EOFError, OSError):
            self.process.join(timeout=5)
            return Heard(CRASHED, why=f"crashed: {signal_name(self.process.exitcode)}")
        if message == READY:
            self.heard_ready()
            return Heard(READY)
        if message == DONE:
            self.batch = None
            return Heard(DONE)
        if message == POISONED:
            return Heard(POISONED)
        if message[0] == STARTING:
            self.current, self.started = message[1], time.monotonic()
            return Heard(STARTING, message[1])
        index, answer, spent = message
        self.pending.discard(index)
        self.current, self.started = None, time.monotonic()
        return Heard(ANSWER, index, answer, spent)

    def give(self, engine: str, batch: Batch) -> None:
        self.engine, self.batch, self.pending = engine, batch, {index for index, _ in batch}
        self.current = None
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
    """Get `jobs` workers under way now, so that JAX is imported while this process loads scenarios: where
    workers fork from the fork server, the server alone is started (`worker_starts.warm_up`; starting a worker
    from it would wait here for its import), and the run's workers fork from it at once; where they are spawned,
    they are started, the next `taken_ahead` hands them to a run, and any never taken are stopped at exit."""
    if jobs > 0 and not _ahead and not starts.warm_up():
        _ahead.extend(_Worker(None) for _ in range(jobs))


def taken_ahead() -> list[_Worker]:
    """The workers `start_ahead` started (none after the first call): a run's first idle workers."""
    taken = list(_ahead)
    _ahead.clear()
    return taken


class WorkersCannotStart(OptionError):
    """A search's workers died or hung before they were ready, START_TRIES times in a row: nothing
    can be audited with `--jobs` here (a run instead reports each scenario left as an error)."""


START_ERROR = "WorkerStartError"
CRASH_ERROR = "WorkerCrash"


def cannot_start(reason: str, times: int) -> Failure:
    return Failure(
        f"no worker process could start ({reason}, {times} times in a row); --jobs 0 audits without them",
        START_ERROR,
    )


@dataclass
class Listener:
    """What a worker run tells its caller."""

    notify: Callable[[int, ScenarioResult], None]
    """Each result, with its index (not a group member the group engine may not report: another engine's)."""
    failure: Callable[[Scenario, Failure], ScenarioResult]
    """The result of a scenario whose worker crashed, hung or could not start."""
    left: Callable[[int, str], None] | None = None
    """Each scenario left to another engine, and why (a bundle that failed as a whole; each member
    of a group, bundle or screen batch whose worker crashed or timed out, then audited alone)."""
    totals: dict[str, float] | None = None
    """What the workers report of their time added up (JAX's trace, lower and compile seconds,
    programs and cache reads, judge and audit seconds)."""
    unaudited: Callable[[int], None] | None = None
    """Each scenario not audited: `skip` (WorkerRun.steps) said so when its turn came."""


class WorkerRun:
    """Batches audited in `options.jobs` worker processes, one engine's at a time (`run`); the workers
    last from one engine to the next (one start-up per worker per run) until `close`. With `idle`,
    workers are taken from it first and, alive at the end of each `run`, put back (a pool lends its
    own). With `lighten`, consistent results come lightened.

    A batch whose worker dies or times out sends its unfinished scenarios back to the queue, one
    literal batch each, except the scenario it was on (for a group, its first unfinished one): retried
    once in a fresh worker if it died, then `listener.failure(scenario, Failure(...))`; one past
    `options.timeout` (counted from the batch's previous result) gets a timeout failure at once. A
    screen batch's members, each computed on its own, go back as screen batches of one, where one
    that fails is to blame as a literal batch's is (a search's screen is confirmed later).
    """

    def __init__(
        self,
        options: Options,
        devices: tuple[str, ...],
        listener: Listener,
        lighten: bool = False,
        idle: list[_Worker] | None = None,
    ):
        self.options, self.listener = options, listener
        self.settings = _settings(options, devices, lighten)
        self.idle: list[_Worker] = idle if idle is not None else []
        self.queue: list[tuple[str, Batch]] = []
        self.scenarios: dict[int, Scenario] = {}
        self.retried: dict[int, str] = {}
        """Each scenario retried in a fresh worker: why its first worker was lost."""
        self.workers: list[_Worker] = []
        self.failed_starts = 0
        """Workers in a row that died or hung before they were ready."""
        self.skip: Callable[[int], bool] | None = None

    def run(self, engine: str, batches: Sequence[Batch]) -> None:
        """Audit `batches` on `engine`; each result reaches the listener."""
        for _ in self.steps(engine, batches):
            pass

    def steps(
        self, engine: str, batches: Sequence[Batch], skip: Callable[[int], bool] | None = None
    ) -> Generator[None, None, None]:
        """`run`, pausing after each round of the workers' messages (so that a caller can pass on the
        results the listener has had so far); stopping early stops the workers. A scenario that
        `skip(index)` says, as its batch is given out, is not to be audited goes to `listener.unaudited`."""
        self.skip = skip
        self.queue = [(engine, batch) for batch in batches]
        self.scenarios = {index: scenario for batch in batches for index, scenario in batch}
        self.retried, self.failed_starts = {}, 0
        count = min(self.options.jobs, len(self.queue))
        self.workers = [self.idle.pop() if self.idle else _Worker(self.settings) for _ in range(count)]
        for worker in self.workers:
            worker.configure(self.settings)
        finished = False
        try:
            while self.queue or any(w.batch is not None for w in self.workers):
                self._give_out()
                busy = [w for w in self.workers if w.batch is not None]
                ready = wait([w.connection for w in busy], timeout=0.2)
                for worker in busy:
                    if worker.connection in ready:
                        self._heard(worker, worker.hear())
                    elif worker.left(self.options.timeout) == 0.0:
                        self._lost(worker, worker.overdue(self.options.timeout), timed_out=worker.ready)
                yield
            finished = True
        finally:
            for worker in self.workers:
                if finished and worker.process.is_alive():
                    self.idle.append(worker)  # for the run's next engine: no second start-up
                else:
                    stop_workers([worker])
            self.workers = []

    def close(self) -> None:
        stop_workers(self.idle)

    def _give_out(self) -> None:
        """Each idle worker its next batch. With `skip`, the batch holding the lowest position goes first, to
        every worker: a search gives its scenarios in the order its account takes them (nearest to ordinary
        values first), and a scenario audited out of that order may be one the account leaves out."""
        if self.skip is not None:
            self.queue.sort(key=lambda queued: min((index for index, _ in queued[1]), default=0), reverse=True)
        for position, worker in enumerate(self.workers):
            while worker.batch is None and self.queue:
                where = (
                    len(self.queue) - 1
                    if self.skip is not None
                    else _stretch(position, len(self.workers), len(self.queue))
                )
                engine, batch = self.queue.pop(where)
                wanted = self._wanted(batch)
                if wanted:
                    worker.give(engine, wanted)

    def _wanted(self, batch: Batch) -> Batch:
        """The batch's scenarios `skip` does not leave out (those it does go to `listener.unaudited`)."""
        if self.skip is None or self.listener.unaudited is None:
            return batch
        left = [index for index, _ in batch if self.skip(index)]
        for index in left:
            self.listener.unaudited(index)
        return tuple((index, scenario) for index, scenario in batch if index not in left)

    def _heard(self, worker: _Worker, heard: Heard) -> None:
        if heard.what == CRASHED:
            self._lost(worker, heard.why, timed_out=False)
        elif heard.what == POISONED:
            self._poisoned(worker)
        elif heard.what == READY:
            self.failed_starts = 0
        elif heard.what == ANSWER:
            if self.listener.totals is not None:
                for key, value in heard.spent.items():
                    self.listener.totals[key] = self.listener.totals.get(key, 0.0) + value
            if isinstance(heard.answer, str) and self.listener.left is not None:
                self.listener.left(heard.index, heard.answer)
            if isinstance(heard.answer, ScenarioResult):
                result = heard.answer
                if heard.index in self.retried:
                    why = f"retried in a fresh worker: the first one {self.retried[heard.index]}"
                    result = replace(result, notes=(*result.notes, Note(message=why)))
                self.listener.notify(heard.index, result)

    def _poisoned(self, worker: _Worker) -> None:
        """A time limit fired in the worker (POISONED): a fresh one takes its place, and its scenarios
        it did not answer go back one batch each, blaming none; the only one of a batch of one is the
        one that ran past the limit."""
        assert worker.batch is not None, "only a busy worker says POISONED"
        unfinished = self._stopped(worker)
        self._replace(worker)
        if len(worker.batch) == 1 and unfinished:
            self._blame_timeout(*unfinished)
            return
        self._each_again(worker.engine, unfinished)

    def _stopped(self, worker: _Worker) -> list[int]:
        """Stop a busy worker: the positions of its batch it did not answer, in the batch's order."""
        assert worker.batch is not None, "only a busy worker (one with a batch) is stopped"
        worker.stop()
        return [index for index, _ in worker.batch if index in worker.pending]

    def _replace(self, worker: _Worker) -> None:
        self.workers[self.workers.index(worker)] = _Worker(self.settings)

    def _each_again(self, engine: str, indices: Sequence[int]) -> None:
        """Each of `indices` back at the front of the queue, in a batch of its own, in their order."""
        for index in reversed(indices):
            self.queue.insert(0, (engine, ((index, self.scenarios[index]),)))

    def _blame_timeout(self, index: int) -> None:
        self.listener.notify(index, self.listener.failure(self.scenarios[index], _timed_out(self.options.timeout)))

    def _lost(self, worker: _Worker, reason: str, timed_out: bool) -> None:
        """The worker's batch did not finish: the scenario it was on (the first unfinished, as a batch
        runs in order) is retried once or fails; the rest go back in the queue, one each. A worker
        that was not ready yet blames no scenario: its batch goes back whole, up to START_TRIES."""
        notify, failure, scenarios = self.listener.notify, self.listener.failure, self.scenarios
        unfinished = self._stopped(worker)
        self.failed_starts = 0 if worker.ready else self.failed_starts + 1
        if self.failed_starts >= START_TRIES:
            for index in [*unfinished, *(index for _, queued in self.queue for index, _ in queued)]:
                notify(index, failure(scenarios[index], cannot_start(reason, self.failed_starts)))
            self.queue.clear()
            worker.batch = None
            return
        self._replace(worker)
        if not worker.ready:
            self.queue.insert(0, (worker.engine, tuple((index, scenarios[index]) for index in unfinished)))
            return
        if worker.engine == SCREEN and len(unfinished) > 1:
            if timed_out and worker.current in unfinished:
                # It was computing one member on its own past that member's timeout: that one is to
                # blame; the others go back as a batch.
                self._blame_timeout(worker.current)
                rest = tuple((index, scenarios[index]) for index in unfinished if index != worker.current)
                self.queue.insert(0, (SCREEN, rest))
                return
            # Members of a screen batch are each computed on their own, but which one it was on the
            # parent cannot tell: each is screened again alone, and one that fails alone is to blame.
            self._each_again(SCREEN, unfinished)
            return
        for position, index in enumerate(unfinished):
            alone = (SCREEN if worker.engine == SCREEN else LITERAL, ((index, scenarios[index]),))
            if worker.engine in (GROUP, BUNDLE):  # computed together: none is to blame, each goes on alone
                if self.listener.left is not None:
                    self.listener.left(index, f"its {worker.engine}'s worker {reason}")
                self.queue.insert(0, alone)
            elif position > 0:
                self.queue.insert(0, alone)
            elif timed_out:
                self._blame_timeout(index)
            elif index not in self.retried:
                self.retried[index] = reason
                self.queue.insert(0, alone)
            else:
                also = Failure(f"{reason} (also when retried in a fresh worker)", CRASH_ERROR)
                notify(index, failure(scenarios[index], also))


def _stretch(worker: int, workers: int, queued: int) -> int:
    """Where in the queue worker `worker` of `workers` takes its next batch: the first worker at
    the front (where batches put back go), the last at the back, the others evenly between, so that
    each works through a stretch of its own. Batches of kin, queued next to each other (the
    service orders groups by `targets.kinship`), then mostly go to one worker, which reuses the
    eager programs they share instead of lowering them again (docs/performance.md, "Measurements
    behind the settings")."""
    return round(worker * (queued - 1) / (workers - 1)) if workers > 1 else 0


def _timed_out(timeout: float | None) -> Failure:
    return Failure(f"timed out after {timeout:g} s", "TimeoutError")


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
            self.worker = _Worker(_settings(*self.settings))
        worker = self.worker
        worker.give(engine, ((0, scenario),))
        result: ScenarioResult | None = None
        while True:
            timeout = self.options.timeout
            if wait([worker.connection], timeout=worker.left(timeout)):
                heard = worker.hear()
            else:
                heard = Heard(CRASHED, why=worker.overdue(timeout))
            if heard.what == CRASHED:
                self.close()
                if not worker.ready:
                    return heard.why
                if heard.why == "timed out":
                    return assess(scenario, failed(_timed_out(timeout), timeout or 0.0), self.options.tolerance)
                return assess(scenario, failed(Failure(heard.why, CRASH_ERROR), 0.0), self.options.tolerance)
            if heard.what == POISONED:
                self.close()  # a time limit fired in it (`literal.Expiry`): the next scenario gets a fresh one
                if result is not None:
                    return result
                return assess(scenario, failed(_timed_out(timeout), timeout or 0.0), self.options.tolerance)
            if heard.what == DONE:
                assert result is not None, (
                    "the literal and screen engines answer every scenario, and the worker keeps their results"
                )
                return result  # the worker is idle again: a pool's `screen_all` may lend it to a WorkerRun
            if heard.what == ANSWER and isinstance(heard.answer, ScenarioResult):
                result = heard.answer

    def close(self) -> None:
        if self.worker is not None:
            stop_workers([self.worker])
            self.worker = None


class IsolatedPool:
    """`jobs` IsolatedAuditors side by side, for searches and surveys: `screen_all` screens many
    scenarios at once, in batches of kin (one program for the members of a group) spread over the
    workers, results in order; `screen` and `audit` take one (the first worker; `audit` under a timeout of
    its own, a worker of its own). With jobs 0, every
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

    def audit(self, scenario: Scenario, timeout: float | None = None) -> ScenarioResult:
        """`service.audit_one`'s verdict, under `timeout` where one is given instead of the options' (then,
        with workers, in a worker of its own, stopped after it; with jobs 0, in this process)."""
        options = self.options if timeout is None else replace(self.options, timeout=timeout)
        if not self.auditors:
            return self.here_audit(scenario, options)
        if timeout is None:
            return self.auditors[0].audit(scenario)
        patient = IsolatedAuditor(options, self.devices)
        try:
            return patient.audit(scenario)
        finally:
            patient.close()

    def screen_all(
        self, scenarios: Sequence[Scenario], skip: Callable[[int, Mapping[int, object]], bool] = lambda p, known: False
    ) -> Iterator[ScenarioResult | None]:
        """Each scenario's screen, in order; None for one that `skip(position, known)` says, when its turn
        comes, not to audit, `known` the results so far by position (with jobs 0 every one is audited)."""
        if not self.auditors:
            yield from self.here_screen_all(scenarios, self.options)
            return
        if len(scenarios) <= 1:
            yield from (None if skip(position, {}) else self.screen(s) for position, s in enumerate(scenarios))
            return
        from gradaudit.judging.assess import assess
        from gradaudit.model.computed import failed

        results: dict[int, ScenarioResult | None] = {}
        cannot: list[Failure] = []

        def failure(scenario: Scenario, why: Failure) -> ScenarioResult:
            if why.error_type == START_ERROR:
                cannot.append(why)
            return assess(scenario, failed(why, 0.0), self.options.tolerance)

        idle = [auditor.worker for auditor in self.auditors if auditor.worker is not None]
        for auditor in self.auditors:
            auditor.worker = None  # lent to the run below, given back after
        given = 0
        steps: Generator[None, None, None] | None = None
        try:  # from here on, the lent workers are given back (or stopped) whatever happens
            listener = Listener(results.__setitem__, failure, unaudited=lambda index: results.__setitem__(index, None))
            run = WorkerRun(self.options, self.devices, listener, idle=idle)
            steps = run.steps(SCREEN, _kin_batches(scenarios, len(self.auditors)), lambda index: skip(index, results))
            for _ in steps:
                while given in results and not cannot:  # in order, as soon as each is known: a search's progress
                    yield results[given]
                    given += 1
        finally:
            if steps is not None:
                steps.close()  # a caller that stopped early: its workers are stopped, not left running
            for auditor in self.auditors:
                auditor.worker = idle.pop() if idle else None
            stop_workers(idle)
        if cannot:
            raise WorkersCannotStart(cannot[0].message)
        yield from (results[position] for position in range(given, len(scenarios)))

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
