"""Command line: the only place that knows about argv, exit codes and files.

Exit codes follow ruff, mypy and pytest: 0 every scenario passes (consistent, or as expected, or
known to the baseline), 1 findings, 2 bad input, usage or configuration, 3 internal error.
"""

from __future__ import annotations

import difflib
import functools
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import click
from click.core import ParameterSource
from rich.console import Console
from rich.text import Text
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from gradaudit.devices import BACKENDS
from gradaudit.rules import INSTALLED, RULES

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3

DEFAULT_TIMEOUT = 600.0
"""Seconds per literal-path scenario: generous, so only a hang reaches it."""


class InputProblem(click.ClickException):
    """Bad input found outside the scenario files (configuration, baseline, reports to merge): exit 2."""

    exit_code = EXIT_INPUT

    def show(self, file=None) -> None:
        click.echo(self.format_message(), err=True)


class InternalError(click.ClickException):
    """An unexpected failure inside gradaudit: exit 3 with a short message, the traceback on request."""

    exit_code = EXIT_INTERNAL


def write_atomic(target: str, text: str) -> None:
    """Write `text` to `target` (or stdout for '-') so that readers never see half a file."""
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; a report is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def check_writable(option: str, target: str | None) -> None:
    """Fail before any work is done if a report could not be written where asked."""
    if target is None or target == "-":
        return
    path = Path(target)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise click.BadParameter(f"'{target}' is a folder; give a file name", param_hint=option)
    if not parent.is_dir():
        raise click.BadParameter(f"folder '{parent}' does not exist", param_hint=option)
    if not os.access(parent, os.W_OK):
        raise click.BadParameter(f"folder '{parent}' is not writable", param_hint=option)


def _console(stream, color: str) -> Console:
    """A rich console; `auto` colour follows rich (NO_COLOR, TERM=dumb, TTY), `always`/`never` force it.

    Off a terminal (CI logs, pipes) the width is COLUMNS or 160, so tables are not squeezed to 80.
    Markup is off: names and messages come from users' files and may hold brackets.
    """
    columns = os.environ.get("COLUMNS", "")
    width = None if stream.isatty() else (int(columns) if columns.isdigit() and int(columns) >= 40 else 160)
    if color == "auto":
        return Console(file=stream, highlight=False, markup=False, width=width)
    return Console(file=stream, force_terminal=color == "always", no_color=color == "never", highlight=False, markup=False, width=width)


def _from_config_folder(path: str, folder: Path) -> str:
    """A path written in pyproject.toml, relative to its folder, as a path from the working directory."""
    if path == "-" or Path(path).is_absolute():
        return path
    return os.path.relpath(folder / path)


def config_defaults(table: dict, source: Path | None) -> dict:
    """`[tool.gradaudit]` as click's default_map: per command, its options' defaults."""
    if source is None:
        return {}
    folder = source.parent
    shared: dict = {}
    if "paths" in table:
        shared["paths"] = tuple(_from_config_folder(p, folder) for p in table["paths"])
    if "rule" in table:
        shared["rule"] = table["rule"]
    if "tolerance" in table:
        shared.update({k: v for k, v in table["tolerance"].items()})
    if "timeout" in table:
        shared["timeout"] = float(table["timeout"])
    if "jobs" in table:
        shared["jobs"] = table["jobs"]
    outputs: dict = {}
    for key, param in (("json", "json_path"), ("junit", "junit_path"), ("baseline", "baseline")):
        if key in table:
            outputs[param] = _from_config_folder(table[key], folder)
    if table.get("cache") is False:
        shared["no_cache"] = True
    elif isinstance(table.get("cache"), str):
        shared["cache_dir"] = _from_config_folder(table["cache"], folder)
    for key in ("format", "color", "exit_zero"):
        if key in table:
            outputs[key] = tuple(table[key]) if key == "format" else table[key]
    return {
        "run": {**shared, **outputs},
        "baseline": {k: v for k, v in shared.items()},
        "compare": {**{k: v for k, v in shared.items() if k not in ("paths", "rule")}, **{k: v for k, v in outputs.items() if k != "baseline"}},
        "list": {k: v for k, v in shared.items() if k == "paths"},
        "merge": {k: v for k, v in outputs.items() if k in ("color", "exit_zero")},
        "diff": {k: v for k, v in outputs.items() if k in ("color", "exit_zero")},
        "search": {
            **{k: v for k, v in shared.items() if k in ("rule", "no_cache", "cache_dir")},
            **{k: v for k, v in outputs.items() if k in ("color", "exit_zero")},
        },
    }


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gradaudit", prog_name="gradaudit")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Audit JAX automatic differentiation for gradient consistency.

    Options default to [tool.gradaudit] in the nearest pyproject.toml; flags override it.
    """
    from gradaudit.config import ConfigError, load_config

    try:
        table, source = load_config(Path.cwd())
    except ConfigError as exc:
        raise InputProblem(str(exc)) from None
    from gradaudit.limits import Limits

    ctx.default_map = config_defaults(table, source)
    ctx.obj = {"paths": ctx.default_map.get("run", {}).get("paths", ()), "limits": Limits(**table.get("limits", {}))}


def guarded(command: Callable[..., int]) -> Callable[..., None]:
    """Run a command body and exit with its code; anything unexpected is exit 3 with a short message."""

    @functools.wraps(command)
    def wrapper(*args, debug: bool, **kwargs) -> None:
        from gradaudit.runner import AuditInterrupted

        try:
            code = command(*args, **kwargs)
        except click.ClickException:
            raise
        except AuditInterrupted as exc:
            finished = sum(r.status != "interrupted" for r in exc.report.results)
            click.echo(f"interrupted: {finished} of {len(exc.report.results)} scenarios had finished", err=True)
            code = EXIT_INPUT
        except Exception as exc:  # noqa: BLE001 - anything else is our bug: say so, exit 3
            if debug:
                traceback.print_exc()
            raise InternalError(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback; please report it)"
            ) from exc
        sys.exit(code)

    return wrapper


def _options(*options) -> Callable:
    def apply(command: Callable) -> Callable:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


paths_argument = click.argument("paths", nargs=-1, type=click.Path())
rule_option = click.option(
    "--rule",
    type=click.Choice(RULES),
    default=INSTALLED,
    show_default=True,
    help="select_n transpose rule to audit: JAX's installed one, the legacy (pre-#40814) one or the fixed one.",
)
selection_options = _options(
    click.option("-k", "keyword", metavar="EXPR", help="Only scenarios whose name matches EXPR (substrings with and/or/not)."),
    click.option("--shard", metavar="K/N", help="Only shard K of N: a stable split by scenario name, for CI matrix jobs."),
)
def _remember(key: str) -> Callable:
    """A callback keeping an option's value (and whether the command line gave it) for the session,
    rather than passing it to the command."""

    def store(ctx: click.Context, param: click.Parameter, value) -> None:
        if key == "cache_dir" and value is not None and not str(value).strip():
            raise click.BadParameter("give a folder (or --no-cache for none)", param_hint="--cache-dir")
        options = session_options()
        options[key] = value
        options[f"{key}_from_command_line"] = ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE

    return store


def session_options() -> dict:
    """What the group and the option callbacks keep for the whole invocation (limits, devices, cache)."""
    root = click.get_current_context().find_root()
    root.obj = root.obj or {}
    return root.obj


cache_options = (
    click.option(
        "--cache-dir",
        metavar="DIR",
        type=click.Path(file_okay=False),
        expose_value=False,
        callback=_remember("cache_dir"),
        help="JAX's persistent compilation cache, so a rerun skips compiling.  [default: .gradaudit/cache]",
    ),
    click.option("--no-cache", is_flag=True, expose_value=False, callback=_remember("no_cache"), help="Do not read or write the compilation cache."),
)
audit_options = _options(
    click.option("--rtol", type=click.FloatRange(min=0), help="Default relative tolerance against finite differences."),
    click.option("--atol", type=click.FloatRange(min=0), help="Default absolute tolerance against finite differences."),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="Seconds a literal-path scenario may take before it is an error.",
    ),
    click.option(
        "--literal",
        is_flag=True,
        help="Audit every scenario on its own, every path separately, eager paths too "
        "(no batched fast path, no compiled bundles).",
    ),
    click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=0),
        default=lambda: len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
        envvar="GRADAUDIT_JOBS",
        show_default="the number of cores this process may use",
        help="Worker processes for the literal path: a scenario that crashes or hangs takes down only its worker. "
        "0 audits in this process, unisolated. Also GRADAUDIT_JOBS.",
    ),
    *cache_options,
    click.option(
        "--backend",
        type=click.Choice(BACKENDS),
        expose_value=False,
        callback=_remember("backend"),
        help="Run every path on this backend's devices.  [default: JAX's default backend]",
    ),
    click.option(
        "--devices",
        metavar="all|N,M",
        expose_value=False,
        callback=_remember("devices"),
        help="Device ids to audit on (default: the first); with several, every AD path runs on each and they are compared.",
    ),
)
profile_option = click.option("--profile", is_flag=True, help="Print where the time went and how many programs were compiled.")
color_option = click.option(
    "--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True, help="Colour in the terminal."
)
debug_option = click.option("--debug", is_flag=True, help="Show the traceback of an internal error.")
exit_zero_option = click.option("--exit-zero", is_flag=True, help="Exit 0 even when scenarios fail (bad input still exits 2).")
output_options = _options(
    click.option("--json", "json_path", metavar="PATH", help="Write the JSON report to PATH ('-' for stdout)."),
    click.option("--junit", "junit_path", metavar="PATH", help="Write a JUnit XML report to PATH ('-' for stdout)."),
    click.option(
        "--format",
        "format",
        type=click.Choice(["rich", "github"]),
        multiple=True,
        help="Terminal output: rich (the table) and/or github (Actions annotations). "
        "Default: rich, plus github when GITHUB_ACTIONS=true.",
    ),
    click.option("-v", "--verbose", is_flag=True, help="Show every scenario, finding and note."),
    click.option("-q", "--quiet", is_flag=True, help="Show only the summary."),
    color_option,
    exit_zero_option,
    debug_option,
)


class Session:
    """What one command invocation shares: consoles, report targets, the clock."""

    def __init__(
        self, color: str = "auto", json_path: str | None = None, junit_path: str | None = None, formats=(), json_option: str = "--json"
    ):
        check_writable(json_option, json_path)
        check_writable("--junit", junit_path)
        if json_path == "-" and junit_path == "-":
            raise click.BadParameter("only one report can go to stdout", param_hint="--junit")
        report_on_stdout = "-" in (json_path, junit_path)
        if report_on_stdout and "github" in formats:
            raise click.BadParameter("annotations and a report cannot both go to stdout: write the report to a file", param_hint="--format github")
        self.json_path, self.junit_path = json_path, junit_path
        # Results as they finish, one JSON line each, beside the report: a killed run's work stays readable.
        self.partial = Path(json_path + ".partial") if json_path and json_path != "-" else None
        # Under GitHub Actions annotations come by themselves, unless a report already has stdout.
        in_actions = os.environ.get("GITHUB_ACTIONS") == "true" and not report_on_stdout
        self.formats = set(formats) or ({"rich", "github"} if in_actions else {"rich"})
        # With a report or annotations on stdout alone, the human report moves to stderr so stdout stays parseable.
        to_stderr = "-" in (json_path, junit_path) or "rich" not in self.formats
        self.out = _console(sys.stderr if to_stderr else sys.stdout, color)
        self.err = _console(sys.stderr, color)
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def load(self, paths: Sequence[str], keyword: str | None = None, shard: str | None = None, isolated: bool = False):
        """Scenarios from `paths` (after -k and --shard), or None after reporting every input error."""
        from gradaudit.loading import load_paths
        from gradaudit.report.terminal import print_input_errors
        from gradaudit.results import AuditReport
        from gradaudit.runner import environment
        from gradaudit.selection import parse_shard, select

        if not paths:
            raise click.UsageError("give PATH... (scenario files or folders), or set paths in [tool.gradaudit]")
        try:
            shard_range = parse_shard(shard) if shard else None
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--shard") from None
        loaded = load_paths(paths)
        for note in loaded.notes:
            self.err.print(note, style="dim", highlight=False, soft_wrap=True)
        if loaded.errors:
            print_input_errors(self.err, loaded.errors)
            report = AuditReport(environment=environment(INSTALLED), errors=tuple(loaded.errors), files=tuple(loaded.files))
            self.write_files(report)
            return None
        try:
            chosen = select(loaded.scenarios, keyword, shard_range)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="-k") from None
        if keyword and not chosen and not shard_range:
            raise click.BadParameter(f"no scenario name matches {keyword!r}", param_hint="-k")
        from gradaudit.limits import check_limits

        too_large = check_limits(chosen, self.limits(), trace=not isolated)
        if too_large:
            print_input_errors(self.err, too_large)
            self.write_files(AuditReport(environment=environment(INSTALLED), errors=tuple(too_large), files=tuple(loaded.files)))
            return None
        loaded.scenarios = chosen
        return loaded

    def audit(self, loaded, rule: str, rtol=None, atol=None, timeout=None, literal=False, jobs=0):
        """Audit the loaded scenarios under `rule`, with a progress bar on a terminal's stderr."""
        from gradaudit.report.json_report import result_line
        from gradaudit.runner import run_audit

        self.use_cache()
        devices = self.chosen_devices()

        partial = self.partial.open("w", encoding="utf-8") if self.partial else None

        def finished(result) -> None:
            progress.advance(task)
            if partial is not None:
                partial.write(result_line(result))
                partial.flush()

        with Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
            disable=not self.err.is_terminal,
        ) as progress:
            task = progress.add_task(f"auditing ({rule} rule)", total=len(loaded.scenarios))
            try:
                return run_audit(
                    loaded.scenarios,
                    rule=rule,
                    on_result=finished,
                    files=tuple(loaded.files),
                    tolerance=(rtol, atol),
                    timeout=timeout,
                    literal=literal,
                    jobs=jobs,
                    devices=devices,
                    limits=self.limits() if jobs > 0 else None,
                )
            finally:
                if partial is not None:
                    partial.close()

    @staticmethod
    def limits():
        """The run's limits: `[tool.gradaudit] limits`, or the defaults."""
        from gradaudit.limits import Limits

        return session_options().get("limits", Limits())

    def refused(self, report) -> bool:
        """Print the scenarios workers found too large (input errors found during the run), if any."""
        from gradaudit.report.terminal import print_input_errors

        if report.errors:
            print_input_errors(self.err, report.errors, audited=True)
        return bool(report.errors)

    def chosen_devices(self) -> list:
        """The devices of --backend and --devices; exit 2 naming what is available when they are not here."""
        from gradaudit.devices import DeviceError, select_devices

        options = session_options()
        try:
            return select_devices(options.get("backend"), options.get("devices"))
        except DeviceError as exc:
            raise InputProblem(str(exc)) from None

    def use_cache(self) -> None:
        """Turn on JAX's compilation cache unless --no-cache (or `cache = false`) says otherwise."""
        from gradaudit import compilation_cache

        options = session_options()
        # `cache = false` in the configuration yields to a --cache-dir given on the command line.
        if options.get("no_cache") and (options.get("no_cache_from_command_line") or not options.get("cache_dir_from_command_line")):
            return
        problem = compilation_cache.unsupported()
        if problem is None:
            problem = compilation_cache.enable(Path(options.get("cache_dir") or compilation_cache.DEFAULT_FOLDER))
        elif not options.get("cache_dir"):
            return  # the default cache, silently off where this JAX cannot use it
        if problem:
            self.err.print(Text("warning: ", style="yellow").append(problem, style=""))

    def write_files(self, report=None, comparison=None) -> None:
        from gradaudit.report import ReportFormat, formatter_for

        for target, fmt in ((self.json_path, ReportFormat.JSON), (self.junit_path, ReportFormat.JUNIT)):
            if target:
                renderer = formatter_for(fmt)
                write_atomic(target, renderer.render(report) if comparison is None else renderer.render_comparison(comparison))
        if self.partial is not None:
            self.partial.unlink(missing_ok=True)

    def annotate(self, report=None, comparison=None) -> None:
        from gradaudit.report import ReportFormat, formatter_for

        if "github" in self.formats:
            renderer = formatter_for(ReportFormat.GITHUB)
            sys.stdout.write(renderer.render(report) if comparison is None else renderer.render_comparison(comparison))
            sys.stdout.flush()


def _exit_code(passed: bool, exit_zero: bool) -> int:
    return EXIT_OK if passed or exit_zero else EXIT_FINDINGS


def _say_why_it_failed(console: Console, report) -> None:
    """The last line when findings make the exit code 1: that they do, and how to accept them."""
    failed = sum(not r.passed for r in report.results)
    noun = "scenario fails" if failed == 1 else "scenarios fail"
    console.print(
        Text(f"exit 1: {failed} {noun} (findings, not a broken install). ", style="bold")
        .append("To accept findings you know about: --baseline REPORT (write one with `gradaudit baseline`), "
                "`expect:` on the scenario, or --exit-zero."),
        highlight=False,
        soft_wrap=True,
    )


@main.command()
@paths_argument
@rule_option
@selection_options
@click.option("--baseline", metavar="REPORT", help="A previous JSON report: its findings are known and do not fail the run.")
@audit_options
@profile_option
@output_options
@guarded
def run(
    paths, rule, keyword, shard, baseline, rtol, atol, timeout, literal, jobs, profile, json_path, junit_path, format, verbose, quiet, color, exit_zero
) -> int:
    """Audit every scenario in PATHS (YAML files, or folders searched for *.yaml and *.yml).

    Exit 0 when every scenario passes, 1 when any fails, 2 for bad input.
    """
    from gradaudit.gate import BaselineError, apply_gate, load_baseline
    from gradaudit.profiling import Profile
    from gradaudit.report.terminal import print_report

    profiler = Profile(enabled=profile)
    session = Session(color, json_path, junit_path, format)
    try:
        known = load_baseline(baseline) if baseline else None
    except BaselineError as exc:
        raise InputProblem(str(exc)) from None
    with profiler.phase("load"):
        loaded = session.load(paths, keyword, shard, isolated=jobs > 0)
    if loaded is None:
        return EXIT_INPUT
    from gradaudit.runner import AuditInterrupted

    interrupted = None
    with profiler.phase("audit"):
        try:
            report = apply_gate(session.audit(loaded, rule, rtol, atol, timeout, literal, jobs), known)
        except AuditInterrupted as exc:
            interrupted = exc
            report = apply_gate(exc.report, known)
    with profiler.phase("report"):
        if "rich" in session.formats:
            print_report(session.out, report, verbose=verbose, quiet=quiet, seconds=session.elapsed())
        session.annotate(report)
        session.write_files(report)
    profiler.print(session.err, report)
    if interrupted is not None:
        raise interrupted
    if session.refused(report):
        return EXIT_INPUT
    code = _exit_code(report.passed, exit_zero)
    if code == EXIT_FINDINGS and not quiet:
        _say_why_it_failed(session.out, report)
    return code


@main.command("baseline")
@paths_argument
@rule_option
@selection_options
@audit_options
@click.option("-o", "--output", required=True, metavar="FILE", help="Where to write the baseline report ('-' for stdout).")
@color_option
@debug_option
@guarded
def baseline_command(paths, rule, keyword, shard, rtol, atol, timeout, literal, jobs, output, color) -> int:
    """Write a baseline: the JSON report of PATHS, whose findings later runs accept with --baseline.

    Exit 0 when written (findings included), 2 for bad input.
    """
    from gradaudit.report.terminal import summary_line

    session = Session(color, json_path=output, formats=("rich",), json_option="-o")
    loaded = session.load(paths, keyword, shard, isolated=jobs > 0)
    if loaded is None:
        return EXIT_INPUT
    report = session.audit(loaded, rule, rtol, atol, timeout, literal, jobs)
    session.write_files(report)
    session.err.print(summary_line(report, session.elapsed(), prefix=f"baseline {output}: "), highlight=False)
    return EXIT_INPUT if session.refused(report) else EXIT_OK


@main.command("list")
@paths_argument
@selection_options
@color_option
@debug_option
@guarded
def list_command(paths, keyword, shard, color) -> int:
    """List the scenarios in PATHS: source, name, suite and parameters, after -k and --shard."""
    from gradaudit.report.terminal import print_listing

    session = Session(color)
    loaded = session.load(paths, keyword, shard)
    if loaded is None:
        return EXIT_INPUT
    print_listing(session.out, loaded.scenarios)
    return EXIT_OK


@main.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, metavar="FILE", help="Where to write the merged report ('-' for stdout).")
@color_option
@exit_zero_option
@debug_option
@guarded
def merge(reports, output, color, exit_zero) -> int:
    """Merge JSON reports (shards of one run) into one, whose counts equal a single full run's.

    Exit 0 when every merged scenario passed, 1 when any failed, 2 for unusable reports.
    """
    import json

    from gradaudit.merge import merge_reports
    from gradaudit.saved_reports import ReportError
    from gradaudit.report.terminal import counts_line

    session = Session(color, json_path=output, json_option="-o")
    try:
        merged = merge_reports(list(reports))
    except ReportError as exc:
        raise InputProblem(str(exc)) from None
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # damage read_report does not name
        raise InputProblem(f"a report is damaged: {type(exc).__name__}: {exc}") from None
    write_atomic(output, json.dumps(merged, indent=2, allow_nan=False) + "\n")
    session.err.print(counts_line(merged["summary"], prefix=f"merged {len(reports)} reports: "), highlight=False)
    return _exit_code(merged["gate"]["failed"] == 0, exit_zero)


@main.command()
@click.argument("before", type=click.Path())
@click.argument("after", type=click.Path())
@click.option("--json", "json_path", metavar="PATH", help="Write the differences as JSON to PATH ('-' for stdout).")
@click.option("-q", "--quiet", is_flag=True, help="Show only the summary line.")
@color_option
@exit_zero_option
@debug_option
@guarded
def diff(before, after, json_path, quiet, color, exit_zero) -> int:
    """What changed from report BEFORE to report AFTER: new and resolved findings, status changes.

    Read a JAX upgrade this way: a report under the old version, one under the new, then diff.
    Exit 0 when AFTER has no new finding, 1 when it has, 2 for unusable reports.
    """
    import json

    from gradaudit.diff import diff_reports
    from gradaudit.saved_reports import ReportError
    from gradaudit.report.terminal import print_diff

    session = Session(color, json_path=json_path)
    try:
        changes = diff_reports(before, after)
    except ReportError as exc:
        raise InputProblem(str(exc)) from None
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # damage read_report does not name
        raise InputProblem(f"a report is damaged: {type(exc).__name__}: {exc}") from None
    if json_path:
        write_atomic(json_path, json.dumps(changes.to_dict(), indent=2) + "\n")
    print_diff(session.out, changes, quiet=quiet)
    return _exit_code(not changes.new, exit_zero)


@main.command()
@click.argument("space", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--budget", type=click.IntRange(min=1), default=300, show_default=True, help="Scenarios hypothesis may draw (shrinking comes on top).")
@click.option("--seed", type=int, default=0, show_default=True, help="The search's random seed: the same seed, the same search.")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for the minimal scenario files.")
@rule_option
@click.option("--no-database", is_flag=True, help="Neither keep nor replay hypothesis's examples (kept in .gradaudit/hypothesis).")
@_options(*cache_options)
@color_option
@exit_zero_option
@debug_option
@guarded
def search(space, budget, seed, out, rule, no_database, color, exit_zero) -> int:
    """Let hypothesis explore the scenario space in SPACE and shrink every kind of disagreement
    to a minimal scenario file in --out, which `gradaudit run` reproduces.

    Exit 0 when the budget ran out with nothing found, 1 when something was, 2 for a bad space file.
    """
    import jax

    from gradaudit import compilation_cache
    from gradaudit.report.terminal import print_input_errors, print_search
    from gradaudit.rules import select_n_rule
    from gradaudit.runner import audit_scenario, screen
    from gradaudit.search import SpaceError, confirm, database_folder, foreign_files, read_space, search as explore, write_found

    session = Session(color)
    try:
        parsed = read_space(space)
    except SpaceError as exc:
        print_input_errors(session.err, exc.errors)
        return EXIT_INPUT
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(f"cannot create folder {out}: {exc.strerror or exc}", param_hint="--out") from None
    if not os.access(out, os.W_OK):
        raise click.BadParameter(f"folder {out} is not writable", param_hint="--out")
    foreign = foreign_files(out, parsed.name)
    if foreign:
        raise click.BadParameter(f"{foreign[0]} was not written by gradaudit search and would be replaced; choose another folder", param_hint="--out")
    session.use_cache()
    storage = compilation_cache.DEFAULT_FOLDER.parent / "hypothesis"
    database = None if no_database else database_folder(space, rule, storage)
    with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=session.err, transient=True, disable=not session.err.is_terminal) as progress:
        task = progress.add_task(f"searching {parsed.name}")

        def tell(message: str) -> None:
            progress.update(task, description=f"searching {parsed.name}: {message}")

        with select_n_rule(rule):
            outcome = explore(parsed, budget, seed, screen, database, tell, session.limits(), storage)
            tell("confirming on the literal path")
            confirm(outcome, parsed, audit_scenario)
    if outcome.problem:
        session.err.print(f"{space}: {outcome.problem}", highlight=False)
        return EXIT_INPUT
    command = f"gradaudit search {space} --budget {budget} --seed {seed} --rule {rule} --out {out}"
    written = write_found(outcome, parsed, out, f"`{command}` (JAX {jax.__version__}, {jax.default_backend()})")
    print_search(session.out, parsed.name, outcome, written, budget, f"gradaudit run {out} --rule {rule}")
    return _exit_code(not outcome.found, exit_zero)


def split_rules(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Separate `--rules A B ...` (or `--rules=A,B`) from the paths around it."""
    paths: list[str] = []
    rules: list[str] = []
    taking_rules = False
    for arg in args:
        if arg == "--rules":
            taking_rules = True
        elif arg.startswith("--rules="):
            rules.extend(r for r in arg.split("=", 1)[1].split(",") if r)
            taking_rules = False
        elif arg.startswith("-") and arg != "-":
            raise click.UsageError(f"no such option: {arg}")
        elif taking_rules and arg in RULES:
            rules.append(arg)
        elif taking_rules and not Path(arg).exists():
            rules.append(arg)  # not a path either: reported below as an unknown rule
        else:
            taking_rules = False
            paths.append(arg)
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        close = difflib.get_close_matches(unknown[0], RULES, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise click.BadParameter(f"unknown rule '{unknown[0]}'{hint} (allowed: {', '.join(RULES)})", param_hint="--rules")
    if len(rules) < 2 or len(set(rules)) != len(rules):
        raise click.BadParameter(f"give two or more different rules from {', '.join(RULES)}, e.g. --rules legacy fixed", param_hint="--rules")
    return paths, rules


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, required=True, metavar="PATH... --rules RULE RULE...")
@selection_options
@audit_options
@output_options
@click.pass_context
@guarded
def compare(ctx, args, keyword, shard, rtol, atol, timeout, literal, jobs, json_path, junit_path, format, verbose, quiet, color, exit_zero) -> int:
    """Audit PATHs under each of two or more select_n transpose rules and show what changed.

    RULE is installed, legacy or fixed. Exit 0 when the last rule passes everywhere, else 1.
    """
    from gradaudit.gate import apply_gate
    from gradaudit.report.terminal import print_comparison, print_report
    from gradaudit.results import RuleComparison

    paths, rules = split_rules(args)
    session = Session(color, json_path, junit_path, format)
    loaded = session.load(paths or ctx.obj["paths"], keyword, shard, isolated=jobs > 0)
    if loaded is None:
        return EXIT_INPUT
    reports = tuple(apply_gate(session.audit(loaded, rule, rtol, atol, timeout, literal, jobs), None) for rule in rules)
    comparison = RuleComparison(rules=tuple(rules), reports=reports)
    if "rich" in session.formats:
        print_comparison(session.out, comparison, session.elapsed(), quiet=quiet)
        if verbose:
            for rule, report in zip(rules, reports, strict=True):
                session.out.rule(f"{rule} rule")
                print_report(session.out, report, verbose=True)
    session.annotate(comparison=comparison)
    session.write_files(comparison=comparison)
    if session.refused(reports[0]):
        return EXIT_INPUT
    code = _exit_code(reports[-1].passed, exit_zero)
    if code == EXIT_FINDINGS and not quiet:
        _say_why_it_failed(session.out, reports[-1])
    return code


@main.command(short_help="Explain a diagnosis: what it means and how to fix it.")
@click.argument("diagnosis_id", required=False, metavar="ID")
@color_option
def explain(diagnosis_id: str | None, color: str) -> None:
    """Explain diagnosis ID (e.g. GA002): what it means and how to fix it. Without ID, list them all."""
    from gradaudit.diagnoses import BY_ID, CATALOG
    from gradaudit.report.terminal import print_diagnosis

    out = _console(sys.stdout, color)
    if diagnosis_id is None:
        for diagnosis in CATALOG:
            out.print(f"{diagnosis.id}  {diagnosis.title}", highlight=False)
        return
    key = diagnosis_id.upper()
    if key not in BY_ID:
        close = difflib.get_close_matches(key, list(BY_ID), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise click.BadParameter(f"no diagnosis '{diagnosis_id}'{hint} (known: {', '.join(BY_ID)})", param_hint="ID")
    print_diagnosis(out, BY_ID[key], evidence=True)
