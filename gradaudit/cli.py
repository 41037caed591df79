"""Command line: the only place that knows about argv, exit codes and files.

Exit codes follow ruff, mypy and pytest: 0 all consistent, 1 findings, 2 bad input or usage,
3 internal error.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--json", "json_path", metavar="PATH", help="Write the JSON report to PATH ('-' for stdout).")
@click.option("-v", "--verbose", is_flag=True, help="Show every scenario in the table and every finding.")
@click.option("--color/--no-color", default=None, help="Force colour on or off (default: automatic).")
@click.option("--debug", is_flag=True, help="Show the traceback of an internal error.")
def run(paths: tuple[str, ...], json_path: str | None, verbose: bool, color: bool | None, debug: bool) -> None:
    """Audit every scenario in PATHS (YAML files, or folders searched for *.yaml and *.yml).

    Exit 0 when every scenario is consistent, 1 when any has a finding, 2 for bad input.
    """
    try:
        code = _run(paths, json_path, verbose, color)
    except click.ClickException:
        raise
    except Exception as exc:  # noqa: BLE001 - anything else is our bug: say so, exit 3
        if debug:
            traceback.print_exc()
        raise InternalError(
            f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback; please report it)"
        ) from exc
    sys.exit(code)


def _run(paths: tuple[str, ...], json_path: str | None, verbose: bool, color: bool | None) -> int:
    from gradaudit.report import ReportFormat, formatter_for
    from gradaudit.report.terminal import print_input_errors, print_report
    from gradaudit.results import AuditReport
    from gradaudit.runner import environment, run_audit
    from gradaudit.scenario import load_paths

    check_writable("--json", json_path)
    # With the JSON report on stdout, the human report moves to stderr so the JSON stays parseable.
    out = _console(sys.stderr if json_path == "-" else sys.stdout, color)
    err = _console(sys.stderr, color)
    started = time.perf_counter()
    loaded = load_paths(paths)
    if loaded.errors:
        print_input_errors(err, loaded.errors)
        if json_path:
            report = AuditReport(environment=environment("installed"), errors=tuple(loaded.errors), files=tuple(loaded.files))
            write_atomic(json_path, formatter_for(ReportFormat.JSON).render(report))
        return EXIT_INPUT
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task("auditing", total=len(loaded.scenarios))
        report = run_audit(loaded.scenarios, on_result=lambda result: progress.advance(task))
    report = AuditReport(environment=report.environment, results=report.results, files=tuple(loaded.files))
    print_report(out, report, verbose, time.perf_counter() - started)
    if json_path:
        write_atomic(json_path, formatter_for(ReportFormat.JSON).render(report))
    return EXIT_OK if report.summary["consistent"] == report.summary["total"] else EXIT_FINDINGS
