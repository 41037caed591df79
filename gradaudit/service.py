"""The audit service: scenarios in, an AuditReport out. No click and no rich: the command line, the
pytest plugin and the Python API are thin callers of `audit`.

One call selects (-k, --shard), checks limits, sets JAX up (rule, compilation cache, devices),
runs the engines, judges and diagnoses what they computed (`judging.assess`, the same for every
engine) and applies the gate (expectations, baseline). Which engine computes a scenario:

1. Scenarios in groups of at least GROUP_MIN sharing a program (select_n families with the
   selector passed in; calls of one user function with the same shapes, dtypes and binding, each
   captured value computed for the members capturing it): the group engine, in worker processes
   with --jobs (a group a batch). Its eager paths are one eager vmap of the group; its jit paths
   each scenario's own calls, on its own inputs, of jax.jit programs compiled once for the group
   (for a user's function each path its own program, as the user's). A scenario is reported from it
   when each eager path agrees with its jit twin and, for a user's function, it found nothing
   (`judging.assess.one_story`). Any other (an answer only the batched run gave: a NaN that batched
   XLA code turns into 0; a finding, whose class the batched eager paths may not tell as the user's
   own calls would) goes on to the next engine.
2. Every other select_n scenario: the bundle engine, with its selector captured as a user writes
   it, in worker processes with --jobs (a bundle a batch); what it finds is reported.
3. Everything else (functions in smaller groups, second order, several devices, a bundle that
   failed as a whole, group members left over) and everything with --literal: the literal engine,
   one scenario at a time (in worker processes with --jobs), scenarios of one function one after
   the other, so that, as in a user's code, they share its traced and compiled programs.
So every finding is reproduced with the scenario's function exactly as a user writes it before it
is reported.
"""

from __future__ import annotations

import platform
import random
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from gradaudit.collector import collecting, long_lived
from gradaudit.engines import GROUP_MIN
from gradaudit.model.computed import Failure
from gradaudit.model.errors import InputError
from gradaudit.model.findings import INTERRUPTED, Note
from gradaudit.model.options import OptionError, Options
from gradaudit.model.results import AuditReport, ScenarioResult, lightened
from gradaudit.model.scenario import TARGET_KINDS, Scenario
from gradaudit.refereeing import refereed, refereed_all
from gradaudit.sources.selection import parse_shard, select

if TYPE_CHECKING:
    from gradaudit.isolation import WorkerRun


class AuditInterrupted(Exception):
    """Ctrl-C (or SIGTERM) during an audit: carries the report of what finished, the rest marked interrupted."""

    def __init__(self, report: AuditReport):
        super().__init__("interrupted")
        self.report = report


def environment(rule: str, devices: Sequence = ()) -> dict:
    """Where the audit ran: the facts a finding belongs to (`devices`: the ones audited on)."""
    import jax
    import jaxlib

    from gradaudit.jaxenv import describe

    devices = list(devices) or jax.devices()[:1]
    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "python": platform.python_version(),
        "backend": devices[0].platform,
        "devices": [describe(d) for d in devices],
        "rule": rule,
        # Config defines each flag as an attribute at run time
        "x64": bool(jax.config.jax_enable_x64),  # type: ignore[attr-defined]
    }


def selected(scenarios: Sequence[Scenario], options: Options) -> list[Scenario]:
    """The scenarios -k and --shard select; OptionError for an unreadable expression or shard, or a
    keyword that matches nothing."""
    try:
        shard = parse_shard(options.shard) if options.shard else None
        chosen = select(scenarios, options.keyword, shard)
    except ValueError as exc:
        raise OptionError(str(exc)) from None
    if options.keyword and not chosen and not shard:
        raise OptionError(f"no scenario name matches {options.keyword!r}")
    return chosen


def prepare(options: Options) -> tuple[list, list[str]]:
    """Turn on JAX's compilation cache as `options` say; the devices to audit on, and warnings
    (a cache folder that cannot be used: the run goes on without it)."""
    from gradaudit import jaxenv

    warnings = []
    if options.cache is not None:
        problem = jaxenv.cache_unsupported()
        if problem is None:
            problem = jaxenv.enable_cache(Path(options.cache))
        elif options.cache == str(jaxenv.CACHE_FOLDER):
            problem = None  # the default cache, silently off where this JAX cannot use it
        if problem:
            warnings.append(problem)
    try:
        devices = jaxenv.select_devices(options.backend, options.devices)
    except jaxenv.DeviceError as exc:
        raise OptionError(str(exc)) from None
    return devices, warnings


IN_PROCESS_AT_MOST = 1
"""A command-line run of this many scenarios or fewer audits in its own process unless its worker
count was chosen (--jobs, GRADAUDIT_JOBS, [tool.gradaudit]): starting a worker (importing JAX in
it) costs more than auditing one scenario. What that gives up is in docs/ci.md ("Isolation")."""

START_AHEAD_BYTES = 256 * 1024
"""Scenario files this large take long enough to load to hide a worker's start-up (docs/performance.md,
"Measurements behind the settings")."""


def start_workers(options: Options, paths: Sequence[str]) -> None:
    """Start the coming audit's worker processes (`--jobs`) now, while the caller loads `paths`,
    where those files are large enough to take the time (START_AHEAD_BYTES) and no -k or --shard
    may leave fewer scenarios than workers: the audit configures and uses them, and any it does
    not need are stopped at exit."""
    from gradaudit.isolation import start_ahead
    from gradaudit.sources.scenario_files import collect_files

    def size(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError:  # loading will say what is wrong with it
            return 0

    if options.keyword or options.shard:
        return
    if sum(size(path) for path, _ in collect_files(paths)[0]) >= START_AHEAD_BYTES:
        start_ahead(options.jobs)


def audit(
    scenarios: Sequence[Scenario],
    options: Options | None = None,
    *,
    files: tuple[str, ...] = (),
    on_result: Callable[[ScenarioResult], None] | None = None,
    sigterm: bool = False,
    lighten: bool = False,
) -> AuditReport:
    """Audit `scenarios` as `options` say: the report of every chosen scenario, gated.

    Args:
        scenarios: what to audit (from `load_paths`, or built in code).
        options: how (`Options`; None: the defaults).
        files: the scenario files they came from, for the report.
        on_result: called with each scenario's result as it is judged (progress, partial reports).
        sigterm: SIGTERM interrupts as Ctrl-C does (`remembered_interrupt`; the command line's choice).
        lighten: keep of each consistent result only what the terminal and a findings-detail JSON
            report show (`results.lightened`), `on_result` included (worker processes send them
            so): memory and traffic that do not grow with the arrays of scenarios that agreed.

    Returns:
        An AuditReport: every chosen scenario's result, gated (`passed`), with where it ran.
        Scenarios too large for `options.limits` are its input errors, and nothing is audited then.

    Raises:
        OptionError: options that cannot be used (nothing is audited then).
        AuditInterrupted: Ctrl-C (or SIGTERM, with `sigterm`); it carries the report of what finished.
    """
    from gradaudit.judging.gate import apply_gate, load_baseline
    from gradaudit.limits import check_limits

    options = options or Options()
    chosen = selected(scenarios, options)
    baseline = load_baseline(options.baseline) if options.baseline else None
    # Users' functions are traced for their sizes by the literal engine, under its timeout.
    too_large = check_limits(chosen, options.limits, trace=False)
    devices, warnings = prepare(options)
    if too_large:
        return AuditReport(
            environment=environment(options.rule, devices),
            errors=tuple(too_large),
            files=files,
            warnings=tuple(warnings),
        )
    try:
        # Results live until the report is made: no full garbage collection meanwhile, unless the
        # paths are computed here (their exceptions' frames hold arrays in cycles).
        with long_lived() if options.jobs > 0 else collecting():
            report = _run(chosen, options, devices, on_result, files, sigterm, lighten)
    except AuditInterrupted as exc:
        raise AuditInterrupted(
            replace(apply_gate(exc.report, baseline, options.fail_on), warnings=tuple(warnings))
        ) from None
    return replace(apply_gate(report, baseline, options.fail_on), warnings=tuple(warnings))


@contextmanager
def remembered_interrupt(sigterm: bool = False) -> Iterator[Callable[[], None]]:
    """Ctrl-C raises KeyboardInterrupt as ever, and is remembered: where Python swallows that raise
    (inside JAX's garbage-collection hook it only prints "Exception ignored"), the check this yields
    raises it again at the audit's next checkpoint, each result.

    With `sigterm`, SIGTERM does the same. It is how CI runners, `timeout`, Docker and systemd stop
    a job, and its default action kills the process with no report at all (and leaves the workers
    to die later on a broken pipe); the command line asks for it, so a stopped job still reports
    what finished. Library callers (the Python API, the pytest plugin) keep their process's own
    SIGTERM handling: pytest, stopped, must not carry on to its next test."""
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

    signals = (signal.SIGINT, signal.SIGTERM) if sigterm else (signal.SIGINT,)
    previous = {signum: signal.signal(signum, interrupt) for signum in signals}
    try:
        yield check
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _interrupted(scenario: Scenario) -> ScenarioResult:
    return ScenarioResult(
        scenario=scenario,
        arg_names=(),
        inputs=(),
        status=INTERRUPTED,
        paths={},
        findings=(),
        provenance=None,
        seconds=0.0,
    )


def _report(scenarios, results, options: Options, files, counts: dict, devices) -> AuditReport:
    from gradaudit.jaxenv import needs_x64
    from gradaudit.limits import LIMIT_EXCEEDED

    env = environment(options.rule, devices)
    # Judging in worker processes happened alongside: `workers` has it, the main process's figure does not.
    in_workers = counts.get("workers", {}).get("judge", 0.0)
    timings = {**counts, "judge": max(0.0, sum(r.judge_seconds for r in results) - in_workers)}
    env["x64"] = env["x64"] or any(needs_x64(s) for s in scenarios)
    # A scenario a worker found too large is bad input, not a finding: an error of the report, not a result.
    too_large = [r for r in results if r.findings and r.findings[0].error_type == LIMIT_EXCEEDED]
    errors = tuple(InputError(r.scenario.source, r.findings[0].message) for r in too_large)
    kept = tuple(r for r in results if r not in too_large)
    return AuditReport(
        environment=env, results=kept, files=files, timings=timings, errors=errors, shuffle=options.shuffle
    )


def _run(
    scenarios: Sequence[Scenario],
    options: Options,
    devices: list,
    on_result,
    files,
    sigterm: bool = False,
    lighten: bool = False,
) -> AuditReport:
    """Every scenario through the engines (see the module's docstring), under the options' rule."""
    from gradaudit.jaxenv import select_n_rule

    results: list[ScenarioResult | None] = [None] * len(scenarios)
    counts: dict = {"groups": 0, "bundles": 0, "failed_bundles": 0, "waited": 0.0}
    order = list(range(len(scenarios)))
    if options.shuffle is not None:
        random.Random(options.shuffle).shuffle(order)
    with select_n_rule(options.rule), remembered_interrupt(sigterm) as check:

        def settle(index: int, result: ScenarioResult) -> None:
            results[order[index]] = result  # first: a Ctrl-C during on_result must not lose it
            if on_result is not None:
                on_result(result)
            check()

        try:
            _EngineRun([scenarios[i] for i in order], options, devices, settle, counts, lighten).run()
        except KeyboardInterrupt:
            finished = [r if r is not None else _interrupted(s) for r, s in zip(results, scenarios, strict=True)]
            raise AuditInterrupted(_report(scenarios, finished, options, files, counts, devices)) from None
    return _report(scenarios, results, options, files, counts, devices)


class _EngineRun:
    """One run's scenarios through the engines (see the module's docstring): each settled once, by
    the first engine that may report it, and `settle(index, result)` hears of it."""

    def __init__(self, scenarios: Sequence[Scenario], options: Options, devices: list, settle, counts: dict, lighten):
        from gradaudit.isolation import taken_ahead

        self.scenarios, self.options, self.devices, self.settle = scenarios, options, devices, settle
        self.counts, self.lighten = counts, lighten
        self.settled = [False] * len(scenarios)
        self.fallen: dict[int, str] = {}
        """Why each scenario another engine left went to the literal engine."""
        self.idle: list = taken_ahead() if options.jobs > 0 else []
        """Workers between one engine's batches and the next's: started once per run (or ahead of it)."""
        self.workers: WorkerRun | None = None
        """The run's WorkerRun, made when workers first get batches."""

    def run(self) -> None:
        from gradaudit.engines.literal import LiteralEngine

        options = self.options
        try:
            if not options.literal and len(self.devices) <= 1:
                for kind in TARGET_KINDS:
                    self.grouped(kind)
                    if kind.bundled:
                        self.bundled(self.of_kind(kind))
            everything = self.positions(lambda s: True)
            if options.jobs > 0:
                self.in_workers(_literal_batches(self.scenarios, everything, options.jobs), "literal")
                return
            literal = LiteralEngine(options.timeout, self.devices, options.limits)
            self.here(literal, sorted(everything, key=lambda i: self.scenarios[i].family()))
        finally:
            from gradaudit.isolation import stop_workers

            stop_workers(self.idle)

    def positions(self, wanted: Callable[[Scenario], bool]) -> list[int]:
        return [i for i, s in enumerate(self.scenarios) if wanted(s) and not self.settled[i]]

    def of_kind(self, kind: type) -> list[int]:
        return self.positions(lambda s: isinstance(s.target, kind))

    def take(self, index: int, result: ScenarioResult) -> None:
        if index in self.fallen:
            why = f"audited on the literal engine: {self.fallen[index]}"
            result = replace(result, notes=(*result.notes, Note(message=why)))
        self.settled[index] = True
        self.settle(index, result)

    def here(self, engine, indices: list[int], keep: Callable[[ScenarioResult], bool] = lambda result: True) -> None:
        """Scenarios on `engine` in this process, judged and refereed; those `keep` refuses are left."""
        from gradaudit.judging.assess import assess_all

        tolerance = self.options.tolerance
        for batch in engine.run([self.scenarios[i] for i in indices]):
            judged = assess_all([(self.scenarios[indices[p]], computed) for p, computed in batch], tolerance)
            kept = [(position, result) for (position, _), result in zip(batch, judged, strict=True) if keep(result)]
            for (position, _), result in zip(kept, refereed_all([r for _, r in kept], self.options), strict=True):
                self.take(indices[position], lightened(result) if self.lighten else result)

    def in_workers(self, batches: list[list[int]], engine: str) -> None:
        """Batches audited in worker processes on `engine`; what they do not settle is left unsettled."""
        from gradaudit.isolation import Listener, WorkerRun
        from gradaudit.jaxenv import device_name
        from gradaudit.judging.assess import assess
        from gradaudit.model.computed import failed

        if self.workers is None:
            options = self.options
            listener = Listener(
                self.take,
                lambda scenario, why: assess(scenario, failed(why), options.tolerance),
                self.fallen.__setitem__,
                self.counts.setdefault("workers", {}),
            )
            devices = tuple(map(device_name, self.devices))
            self.workers = WorkerRun(options, devices, listener, self.lighten, idle=self.idle)
        self.workers.run(engine, [tuple((i, self.scenarios[i]) for i in batch) for batch in batches])

    def bundled(self, indices: list[int]) -> None:
        """Scenarios on the bundle engine: in workers, a bundle a batch (bundles small enough that
        every worker has one); else in this process."""
        from gradaudit.engines.bundle import BUNDLE_SCENARIOS, BundleEngine

        counts = self.counts
        if self.options.jobs > 0:
            size = max(1, min(BUNDLE_SCENARIOS, -(-len(indices) // self.options.jobs)))
            batches = [
                [indices[p] for p in bundle]
                for bundle in BundleEngine(size=size).bundles([self.scenarios[i] for i in indices])
            ]
            self.in_workers(batches, "bundle")
            failed = sum(any(i in self.fallen for i in batch) for batch in batches)
            counts.update(
                bundles=counts["bundles"] + len(batches) - failed, failed_bundles=counts["failed_bundles"] + failed
            )
            return
        engine = BundleEngine(devices=self.devices)
        self.here(engine, indices)
        counts.update({k: counts.get(k, 0) + v for k, v in engine.counts.items()})
        self.fallen.update({indices[p]: why for p, why in engine.fallen.items()})

    def grouped(self, kind: type) -> None:
        """Scenarios of `kind` (a target class) in groups of at least GROUP_MIN on the group engine:
        in workers, a group a batch, grouped here without tracing users' code; else in this process."""
        from gradaudit.engines.group import GroupEngine
        from gradaudit.judging.assess import one_story

        options, scenarios = self.options, self.scenarios
        indices = self.of_kind(kind)
        group = GroupEngine(min_size=GROUP_MIN, devices=self.devices, timeout=options.timeout, limits=options.limits)
        batches = [[indices[p] for p in batch] for batch in group.keyed([scenarios[i] for i in indices])]
        self.counts["groups"] += len(batches)
        if options.jobs > 0 and batches:
            self.in_workers(group.queued(scenarios, batches, options.jobs), "group")
        elif batches:
            self.here(group, indices, keep=lambda result: one_story(result, options.tolerance))


def _literal_batches(scenarios: Sequence[Scenario], indices: list[int], jobs: int) -> list[list[int]]:
    """The literal engine's work for `jobs` workers: scenarios of one family together, in batches
    small enough that every worker has some (a hang or a crash costs a batch only its unfinished part)."""
    families: dict[tuple, list[int]] = {}
    for index in indices:
        families.setdefault(scenarios[index].family(), []).append(index)
    size = max(1, min(LITERAL_BATCH, -(-len(indices) // jobs)))
    return [members[start : start + size] for members in families.values() for start in range(0, len(members), size)]


LITERAL_BATCH = 32
"""Most scenarios a worker takes at once on the literal engine."""


def audit_one(scenario: Scenario, options: Options | None = None) -> ScenarioResult:
    """One scenario on the literal engine, in this process, judged (not gated), under the current rule."""
    from gradaudit.engines.literal import compute
    from gradaudit.judging.assess import assess

    options = options or Options()
    return refereed(assess(scenario, compute(scenario, options.timeout), options.tolerance), options)


def output_shape(function: Callable, arrays: Sequence, timeout: float | None):
    """`function`'s output (shape and dtype) at arrays like `arrays`, traced, not run, under the
    timeout (tracing runs the user's Python, which may hang); None where it cannot be traced (the
    paths will say why), the timeout's Failure where it ran past the timeout (`failed_before`)."""
    import jax

    from gradaudit.engines.literal import ScenarioTimeout, time_limit, timed_out

    try:
        with time_limit(timeout):
            return jax.eval_shape(function, *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays])
    except ScenarioTimeout as stopped:
        return timed_out(stopped, timeout)
    except Exception:  # noqa: BLE001 - the paths will say why, each under the timeout
        return None


def failed_before(scenario: Scenario, failure: Failure, options: Options | None = None) -> AuditReport:
    """The report of a scenario that failed before any engine ran (its function hung while traced
    for its size: running it again would only hang again), judged and gated as a failed engine's."""
    from gradaudit.judging.assess import assess
    from gradaudit.judging.gate import apply_gate, load_baseline
    from gradaudit.model.computed import failed

    options = options or Options()
    result = assess(scenario, failed(failure), options.tolerance)
    report = AuditReport(environment=environment(options.rule), results=(result,))
    return apply_gate(report, load_baseline(options.baseline) if options.baseline else None, options.fail_on)


def isolated(options: Options):
    """Auditors in `options.jobs` worker processes (`.screen`, `.audit` one scenario, `.screen_all`
    many, in batches side by side, `.close`), for searches and surveys: a draw that crashes the
    interpreter or hangs is a result, not the end. With jobs 0, this process."""
    from gradaudit.isolation import IsolatedPool

    return IsolatedPool(options, here=(screen_all, audit_one))


def screen(scenario: Scenario, options: Options | None = None) -> ScenarioResult:
    """A quick verdict on one scenario (`screening.ScreenEngine`: jit paths where they settle it), findings
    included and not confirmed. For exploring many scenarios (`gradaudit search`), whose findings
    are confirmed with `audit_one` before anyone sees them. Runs under the current rule."""
    return next(screen_all([scenario], options))


def screen_all(scenarios: Sequence[Scenario], options: Options | None = None) -> Iterator[ScenarioResult]:
    """`screen`'s verdict on each of `scenarios`, in order, those sharing a program screened together."""
    from gradaudit.engines.literal import LiteralEngine
    from gradaudit.screening import ScreenEngine

    options = options or Options()
    engine = ScreenEngine(LiteralEngine(options.timeout, limits=options.limits), options.tolerance)
    verdicts: dict[int, ScenarioResult] = {}
    wanted = 0
    for position, result in engine.screen(scenarios):
        verdicts[position] = result
        while wanted in verdicts:
            yield verdicts.pop(wanted)
            wanted += 1
