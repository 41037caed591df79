"""What one command invocation shares: consoles, report files, progress, the clock."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from gradaudit.model.options import Options


def write_atomic(target: str, text: str | Iterable[str]) -> None:
    """Write `text` (or its pieces, in order) to `target` (or stdout for '-') so that readers never
    see half a file."""
    pieces = [text] if isinstance(text, str) else text
    if target == "-":
        sys.stdout.write("".join(pieces))  # made whole first: a failure while rendering prints nothing
        sys.stdout.flush()
        return
    path = Path(target)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; a report is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(pieces)
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


def _fingerprints(files: Iterable[str]) -> dict[str, str | None]:
    """Each file's content hash (None: unreadable now), to tell whether it changed during a run."""
    found: dict[str, str | None] = {}
    for name in files:
        try:
            found[name] = hashlib.sha256(Path(name).read_bytes()).hexdigest()
        except OSError:
            found[name] = None
    return found


def unwritten(target: str, exc: OSError, kept: Path | None = None) -> click.ClickException:
    """A report that could not be written (a full disk, a folder made read-only during the run):
    exit 2 naming the path, as an unwritable location found before the run is, not an internal
    error. `write_atomic` leaves no half-written file; `kept` names the `.partial` results, if whole."""
    from gradaudit.cli.app import InputProblem

    why = exc.strerror or errno.errorcode.get(exc.errno or 0) or str(exc)
    tail = f"; the results that finished are in {kept}" if kept is not None else ""
    return InputProblem(f"could not write the report {target}: {why} (nothing was written there){tail}")


def check_html(target: str | None) -> None:
    """An HTML report is a page to open in a browser: a file, never stdout."""
    if target == "-":
        raise click.BadParameter(
            "the HTML report is a page to open in a browser: give a file name, not '-'", param_hint="--html"
        )
    check_writable("--html", target)


def console(stream, color: str | None) -> Console:
    """A rich console; `auto` colour follows rich (NO_COLOR, TERM=dumb, TTY), `always`/`never` force it.

    Off a terminal (CI logs, pipes) the width is COLUMNS or 160, so tables are not squeezed to 80.
    Markup is off: names and messages come from users' files and may hold brackets.
    """
    columns = os.environ.get("COLUMNS", "")
    width = None if stream.isatty() else (int(columns) if columns.isdigit() and int(columns) >= 40 else 160)
    if color in (None, "auto"):
        return Console(file=stream, highlight=False, markup=False, width=width)
    return Console(
        file=stream,
        force_terminal=color == "always",
        no_color=color == "never",
        highlight=False,
        markup=False,
        width=width,
    )


class Session:
    """Consoles and report targets of one invocation, checked before any work is done."""

    def __init__(
        self,
        color: str | None = None,
        json_path: str | None = None,
        junit_path: str | None = None,
        formats=(),
        json_option: str = "--json",
        json_detail: str = "findings",
        html_path: str | None = None,
        sarif_path: str | None = None,
    ):
        check_writable(json_option, json_path)
        check_writable("--junit", junit_path)
        check_html(html_path)
        check_writable("--sarif", sarif_path)
        if json_path == "-" and junit_path == "-":
            raise click.BadParameter("only one report can go to stdout", param_hint="--junit")
        report_on_stdout = "-" in (json_path, junit_path)
        if report_on_stdout and "github" in (formats or ()):
            raise click.BadParameter(
                "annotations and a report cannot both go to stdout: write the report to a file",
                param_hint="--format github",
            )
        self.json_path, self.junit_path, self.json_detail = json_path, junit_path, json_detail
        self.html_path, self.sarif_path = html_path, sarif_path
        self.repro_dir: Path | None = None
        # Results as they finish, one JSON line each, beside the report: a killed run's work stays readable.
        self.partial = Path(json_path + ".partial") if json_path and json_path != "-" else None
        from gradaudit.render.json_report import RenderedRows

        self.rendered = RenderedRows()
        # Under GitHub Actions annotations come by themselves, unless a report already has stdout.
        in_actions = os.environ.get("GITHUB_ACTIONS") == "true" and not report_on_stdout
        self.formats = set(formats or ()) or ({"rich", "github"} if in_actions else {"rich"})
        # With a report or annotations on stdout alone, the human report moves to stderr so stdout stays parseable.
        to_stderr = "-" in (json_path, junit_path) or "rich" not in self.formats
        self.out = console(sys.stderr if to_stderr else sys.stdout, color)
        self.err = console(sys.stderr, color)
        self.started = time.perf_counter()
        self.loaded_files: dict[str, str | None] = {}

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def load(self, paths: Sequence[str], user_code: bool = True):
        """Scenarios from `paths`, or None after reporting every input error (and writing the reports);
        without `user_code`, function scenarios are input errors and nothing of theirs is imported."""
        from gradaudit.model.results import AuditReport
        from gradaudit.render.terminal import print_input_errors
        from gradaudit.sources.scenario_files import load_paths

        if not paths:
            raise click.UsageError("give PATH... (scenario files or folders), or set paths in [tool.gradaudit]")
        loaded = load_paths(paths, user_code)
        self.loaded_files = _fingerprints(loaded.files)
        for note in loaded.notes:
            self.err.print(note, style="dim", highlight=False, soft_wrap=True)
        if loaded.errors:
            print_input_errors(self.err, loaded.errors)
            self.write_files(AuditReport(environment={}, errors=tuple(loaded.errors), files=tuple(loaded.files)))
            return None
        return loaded

    def audit(self, loaded, options: Options, label: str = ""):
        """The service's audit of the loaded scenarios, with a progress bar on a terminal's stderr and
        each result appended to the `.partial` file as it finishes."""
        from gradaudit.service import IN_PROCESS_AT_MOST, audit, selected

        chosen = selected(loaded.scenarios, options)
        if len(chosen) <= IN_PROCESS_AT_MOST and options.jobs > 0 and not _jobs_given():
            options = options.updated(jobs=0)  # starting workers would cost more than the audit
        partial = self._open_partial()

        def finished(result) -> None:
            nonlocal partial
            progress.advance(task)
            if partial is not None:
                try:
                    partial.write(self.rendered.line(result))
                    partial.flush()
                except OSError as exc:
                    self._drop_partial(partial, exc)
                    partial = None

        columns = (
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=self.err, transient=True, disable=not self.err.is_terminal) as progress:
            task = progress.add_task(f"auditing ({label or options.rule + ' rule'})", total=len(chosen))
            lighten = (
                self.json_detail != "full" and self.html_path is None
            )  # nothing will show a consistent scenario's arrays
            try:
                report = audit(
                    chosen,
                    options.updated(keyword=None, shard=None),
                    files=tuple(loaded.files),
                    on_result=finished,
                    sigterm=True,
                    lighten=lighten,
                )
            finally:
                if partial is not None:
                    partial.close()
        changed = [name for name, seen in _fingerprints(self.loaded_files).items() if seen != self.loaded_files[name]]
        if changed:
            note = (
                f"{', '.join(changed)} changed during the run: this report is of the scenarios as loaded when it "
                "started"
            )
            report = dataclasses.replace(report, warnings=(*report.warnings, note))
        for warning in report.warnings:
            self.err.print(Text("warning: ", style="yellow").append(warning, style=""))
        return report

    def _open_partial(self):
        if self.partial is None:
            return None
        try:
            return self.partial.open("w", encoding="utf-8")
        except OSError as exc:
            self._drop_partial(None, exc)
            return None

    def _drop_partial(self, handle, exc: OSError) -> None:
        """A `.partial` file that cannot be written (a full disk) is removed, not left half a line
        long, and the audit goes on: the partial file is a convenience, the results are not."""
        assert self.partial is not None, "only a session with a JSON report keeps a .partial file"
        self.err.print(
            Text("warning: ", style="yellow").append(
                f"stopped writing {self.partial}: {exc.strerror or exc}; the audit goes on", style=""
            )
        )
        if handle is not None:
            try:
                handle.close()
            except OSError:
                pass
        self.partial.unlink(missing_ok=True)
        self.partial = None

    def refused(self, report) -> bool:
        """Print the scenarios found too large (input errors found before or during the run), if any."""
        from gradaudit.render.terminal import print_input_errors

        if report.errors:
            print_input_errors(self.err, report.errors, audited=bool(report.results))
        return bool(report.errors)

    def check_repro_dir(self, directory: str | None) -> None:
        """--repro-dir: a folder, made now if missing, so a bad one is refused before any work is done."""
        if directory is None:
            return
        folder = Path(directory)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise click.BadParameter(
                f"cannot make the folder {directory}: {exc.strerror or exc}", param_hint="--repro-dir"
            ) from None
        self.repro_dir = folder

    def write_reproducers(self, report) -> None:
        """Each wrong or eager-jit finding as a plain-JAX script in --repro-dir, and a line saying how many."""
        if self.repro_dir is None:
            return
        from gradaudit.render.repro import write_reproducers

        try:
            written, skipped = write_reproducers(report.results, self.repro_dir)
        except OSError as exc:
            raise unwritten(str(self.repro_dir), exc, None) from None
        self.err.print(
            f"wrote {len(written)} reproducer script{'s' if len(written) != 1 else ''} to {self.repro_dir}",
            highlight=False,
        )
        for line in skipped:
            self.err.print(line, style="dim", highlight=False, soft_wrap=True)

    def write_files(self, report=None, comparison=None) -> None:
        from gradaudit.render import ReportFormat, formatter_for

        for target, fmt in (
            (self.json_path, ReportFormat.JSON),
            (self.junit_path, ReportFormat.JUNIT),
            (self.html_path, ReportFormat.HTML),
            (self.sarif_path, ReportFormat.SARIF),
        ):
            if target:
                renderer = formatter_for(fmt, json_detail=self.json_detail, rendered=self.rendered)
                try:
                    write_atomic(
                        target,
                        renderer.render(report) if comparison is None else renderer.render_comparison(comparison),
                    )
                except OSError as exc:
                    raise unwritten(
                        target, exc, self.partial if self.partial is not None and self.partial.exists() else None
                    ) from None
        if self.partial is not None:
            self.partial.unlink(missing_ok=True)

    def annotate(self, report=None, comparison=None) -> None:
        from gradaudit.render import ReportFormat, formatter_for

        if "github" in self.formats:
            renderer = formatter_for(ReportFormat.GITHUB)
            text = renderer.render(report) if comparison is None else renderer.render_comparison(comparison)
            assert isinstance(text, str), "GithubFormat renders the annotations whole"
            sys.stdout.write(text)
            sys.stdout.flush()

    def say_why_it_failed(self, report) -> None:
        """The last line when findings make the exit code 1: that they do, and how to accept them."""
        failed = sum(not r.passed for r in report.results)
        noun = "scenario fails" if failed == 1 else "scenarios fail"
        self.out.print(
            Text(f"exit 1: {failed} {noun} (findings, not a broken install). ", style="bold").append(
                "To accept findings you know about: --baseline REPORT (write one with `gradaudit baseline`), `expect:` "
                "on the scenario, or --exit-zero."
            ),
            highlight=False,
            soft_wrap=True,
        )


def _jobs_given() -> bool:
    """Whether this invocation chose its worker count (--jobs, GRADAUDIT_JOBS or `jobs` in
    [tool.gradaudit]), rather than taking the default of one per core."""
    from gradaudit.cli.app import configured

    context = click.get_current_context(silent=True)
    return context is not None and (context.params.get("jobs") is not None or "jobs" in configured())
