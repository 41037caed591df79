"""The `gradaudit` group: configuration loading, exit codes, and the guard that turns surprises into exit 3."""

from __future__ import annotations

import functools
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import click

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3


class InputProblem(click.ClickException):
    """Bad input found outside the scenario files (configuration, options, baseline, reports to merge): exit 2."""

    exit_code = EXIT_INPUT

    def show(self, file=None) -> None:
        click.echo(self.format_message(), err=True)


class InternalError(click.ClickException):
    """An unexpected failure inside gradaudit: exit 3 with a short message, the traceback on request."""

    exit_code = EXIT_INTERNAL


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gradaudit", prog_name="gradaudit")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Audit JAX automatic differentiation for gradient consistency.

    Options default to [tool.gradaudit] in the nearest pyproject.toml; flags override it.
    """
    from gradaudit.sources.config import ConfigError, load_config
    from gradaudit.supported import jax_problem

    problem = jax_problem()
    if problem is not None:
        raise InputProblem(problem)
    try:
        settings, _ = load_config(Path.cwd())
    except ConfigError as exc:
        raise InputProblem(str(exc)) from None
    ctx.obj = settings


def configured() -> dict:
    """The checked `[tool.gradaudit]` settings of this invocation (see sources.config)."""
    return click.get_current_context().find_root().obj or {}


def guarded(command: Callable[..., int]) -> Callable[..., None]:
    """Run a command body and exit with its code; bad options are exit 2, anything unexpected exit 3."""

    @functools.wraps(command)
    def wrapper(*args, debug: bool, **kwargs) -> None:
        from gradaudit.model.options import OptionError
        from gradaudit.service import AuditInterrupted

        try:
            code = command(*args, **kwargs)
        except click.ClickException:
            raise
        except OptionError as exc:
            raise InputProblem(str(exc)) from None
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


def exit_code(passed: bool, exit_zero: bool) -> int:
    return EXIT_OK if passed or exit_zero else EXIT_FINDINGS
