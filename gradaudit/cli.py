"""Command line: the only place that knows about argv, exit codes and files.

Exit codes follow ruff, mypy and pytest: 0 all consistent, 1 findings, 2 bad input or usage,
3 internal error.
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
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gradaudit.rules import INSTALLED, RULES

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


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


def _console(stream, color: bool | None) -> Console:
    """A rich console; colour follows rich (NO_COLOR, TERM=dumb, TTY) unless --color/--no-color says.

    Off a terminal (CI logs, pipes) the width is COLUMNS or 160, so tables are not squeezed to 80.
    """
    width = None if stream.isatty() else int(os.environ.get("COLUMNS", "160") or 160)
    if color is None:
        return Console(file=stream, highlight=False, width=width)
    return Console(file=stream, force_terminal=color, no_color=not color, highlight=False, width=width)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gradaudit", prog_name="gradaudit")
def main() -> None:
    """Audit JAX automatic differentiation for gradient consistency."""


def guarded(command: Callable[..., int]) -> Callable[..., None]:
    """Run a command body and exit with its code; anything unexpected is exit 3 with a short message."""

    @functools.wraps(command)
    def wrapper(*args, debug: bool, **kwargs) -> None:
        try:
            code = command(*args, **kwargs)
        except click.ClickException:
            raise
        except Exception as exc:  # noqa: BLE001 - anything else is our bug: say so, exit 3
            if debug:
                traceback.print_exc()
            raise InternalError(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback; please report it)"
            ) from exc
        sys.exit(code)

    return wrapper


def output_options(command: Callable[..., None]) -> Callable[..., None]:
    """Options every auditing command shares."""
    for option in reversed(
        [
            click.option("--json", "json_path", metavar="PATH", help="Write the JSON report to PATH ('-' for stdout)."),
            click.option("-v", "--verbose", is_flag=True, help="Show every scenario in the table and every finding."),
            click.option("--color/--no-color", default=None, help="Force colour on or off (default: automatic)."),
            click.option("--debug", is_flag=True, help="Show the traceback of an internal error."),
        ]
    ):
        command = option(command)
    return command


class Session:
    """What one command invocation shares: consoles, the report target, the clock."""

    def __init__(self, json_path: str | None, color: bool | None):
        check_writable("--json", json_path)
        self.json_path = json_path
        # With the JSON report on stdout, the human report moves to stderr so the JSON stays parseable.
        self.out = _console(sys.stderr if json_path == "-" else sys.stdout, color)
        self.err = _console(sys.stderr, color)
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def load(self, paths: Sequence[str]):
        """Scenarios from `paths`, or None after reporting every input error (and writing them to --json)."""
        from gradaudit.report import ReportFormat, formatter_for
        from gradaudit.report.terminal import print_input_errors
        from gradaudit.results import AuditReport
        from gradaudit.runner import environment
        from gradaudit.loading import load_paths

        loaded = load_paths(paths)
        if not loaded.errors:
            return loaded
        print_input_errors(self.err, loaded.errors)
        if self.json_path:
            report = AuditReport(environment=environment(INSTALLED), errors=tuple(loaded.errors), files=tuple(loaded.files))
            write_atomic(self.json_path, formatter_for(ReportFormat.JSON).render(report))
        return None

    def audit(self, loaded, rule: str, description: str):
        """Audit the loaded scenarios under `rule`, with a progress bar on a terminal's stderr."""
        from gradaudit.runner import run_audit

        with Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=True,
            disable=not self.err.is_terminal,
        ) as progress:
            task = progress.add_task(description, total=len(loaded.scenarios))
            return run_audit(
                loaded.scenarios, rule=rule, on_result=lambda result: progress.advance(task), files=tuple(loaded.files)
            )


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--rule",
    type=click.Choice(RULES),
    default=INSTALLED,
    show_default=True,
    help="select_n transpose rule to audit: JAX's installed one, the legacy (pre-#40814) one or the fixed one.",
)
@output_options
@guarded
def run(paths: tuple[str, ...], rule: str, json_path: str | None, verbose: bool, color: bool | None) -> int:
    """Audit every scenario in PATHS (YAML files, or folders searched for *.yaml and *.yml).

    Exit 0 when every scenario is consistent, 1 when any has a finding, 2 for bad input.
    """
    from gradaudit.report import ReportFormat, formatter_for
    from gradaudit.report.terminal import print_report

    session = Session(json_path, color)
    loaded = session.load(paths)
    if loaded is None:
        return EXIT_INPUT
    report = session.audit(loaded, rule, f"auditing ({rule} rule)")
    print_report(session.out, report, verbose, session.elapsed())
    if json_path:
        write_atomic(json_path, formatter_for(ReportFormat.JSON).render(report))
    return EXIT_OK if report.summary["consistent"] == report.summary["total"] else EXIT_FINDINGS


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
    if not paths:
        raise click.UsageError("give at least one scenario file or folder")
    return paths, rules


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, required=True, metavar="PATH... --rules RULE RULE...")
@output_options
@guarded
def compare(args: tuple[str, ...], json_path: str | None, verbose: bool, color: bool | None) -> int:
    """Audit PATHs under each of two or more select_n transpose rules and show what changed.

    RULE is installed, legacy or fixed. Exit 0 when the last rule is consistent everywhere, else 1.
    """
    from gradaudit.report import ReportFormat, formatter_for
    from gradaudit.report.terminal import print_comparison
    from gradaudit.results import RuleComparison

    paths, rules = split_rules(args)
    session = Session(json_path, color)
    loaded = session.load(paths)
    if loaded is None:
        return EXIT_INPUT
    reports = tuple(session.audit(loaded, rule, f"auditing ({rule} rule)") for rule in rules)
    comparison = RuleComparison(rules=tuple(rules), reports=reports)
    print_comparison(session.out, comparison, session.elapsed())
    if verbose:
        from gradaudit.report.terminal import print_report

        for rule, report in zip(rules, reports, strict=True):
            session.out.rule(f"{rule} rule")
            print_report(session.out, report, verbose=True)
    if json_path:
        write_atomic(json_path, formatter_for(ReportFormat.JSON).render_comparison(comparison))
    last = reports[-1].summary
    return EXIT_OK if last["consistent"] == last["total"] else EXIT_FINDINGS


@main.command()
@click.argument("diagnosis_id", required=False, metavar="ID")
@click.option("--color/--no-color", default=None, help="Force colour on or off (default: automatic).")
def explain(diagnosis_id: str | None, color: bool | None) -> None:
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
    print_diagnosis(out, BY_ID[key])
