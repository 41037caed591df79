"""Command-line flags made from the one table of option keys (`model.options.KEYS`), and how a
command's flags and `[tool.gradaudit]` make its Options: a flag given beats the configuration,
which beats the default."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import click

from gradaudit.cli.app import configured
from gradaudit.model.options import (
    BACKENDS,
    COLORS,
    DEFAULT_TIMEOUT,
    DETAILS,
    FORMATS,
    KEYS,
    RULES,
    Options,
    check,
    resolve,
)

CLICK_TYPES: dict[str, dict] = {
    "rule": {"type": click.Choice(RULES)},
    "rtol": {"type": click.FloatRange(min=0)},
    "atol": {"type": click.FloatRange(min=0)},
    "ad_rtol": {"type": click.FloatRange(min=0)},
    "ad_atol": {"type": click.FloatRange(min=0)},
    "fail_on": {"metavar": "CLASS,..."},
    "timeout": {"type": click.FloatRange(min=0, min_open=True), "show_default": f"{DEFAULT_TIMEOUT:g}"},
    "jobs": {
        "type": click.IntRange(min=0),
        "envvar": "GRADAUDIT_JOBS",
        "show_default": "the number of cores this process may use",
    },
    "backend": {"type": click.Choice(BACKENDS)},
    "devices": {"metavar": "all|N,M"},
    "baseline": {"metavar": "REPORT"},
    "keyword": {"metavar": "EXPR"},
    "shard": {"metavar": "K/N"},
    "json_detail": {"type": click.Choice(DETAILS), "show_default": "findings"},
    "shuffle": {"type": int, "metavar": "SEED"},
}
"""How click reads each flag; its name, flag and help come from KEYS."""


def _flag(name: str) -> Callable:
    key = KEYS[name]
    assert key.flag is not None, f"'{name}' is set only by configuration or keyword: it has no flag"
    if name in ("literal", "user_code"):
        return click.option(f"{key.flag}/--no-{key.flag[2:]}", name, default=None, help=key.help)
    if name == "cache":
        return _stacked(
            click.option("--cache-dir", "cache_dir", metavar="DIR", help=key.help + "  [default: .gradaudit/cache]"),
            click.option("--no-cache", is_flag=True, default=None, help="Do not read or write the compilation cache."),
        )
    declarations = ("-j", key.flag) if name == "jobs" else (key.flag,)
    return click.option(*declarations, name, default=None, help=key.help, **CLICK_TYPES.get(name, {}))


def _stacked(*options: Callable) -> Callable:
    def apply(command: Callable) -> Callable:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def flags(*names: str) -> Callable:
    """The flags of these option keys, in this order."""
    return _stacked(*(_flag(name) for name in names))


SELECTION = ("keyword", "shard")
AUDIT = (
    "rtol",
    "atol",
    "ad_rtol",
    "ad_atol",
    "fail_on",
    "timeout",
    "literal",
    "jobs",
    "cache",
    "backend",
    "devices",
    "user_code",
    "shuffle",
)


def options_from(flags_given: dict) -> Options:
    """Options from the configuration and the command line's flags (None: not given). A command owns
    its process: without a cache (--no-cache, `cache = false`) JAX's own is turned off there too."""
    given = {name: value for name, value in flags_given.items() if name in KEYS and value is not None}
    if flags_given.get("no_cache"):
        given["cache"] = False
    elif flags_given.get("cache_dir") is not None:
        if not str(flags_given["cache_dir"]).strip():
            raise click.BadParameter("give a folder (or --no-cache for none)", param_hint="--cache-dir")
        given["cache"] = flags_given["cache_dir"]
    options = resolve(configured(), check(given, "keyword"))
    if options.cache is None:
        _without_jax_cache()
    return options


def _without_jax_cache() -> None:
    """No compilation cache in this process or the workers it starts, whatever JAX's own settings say
    (JAX_COMPILATION_CACHE_DIR in the environment names one that JAX would read and write otherwise).
    JAX reads the variable when imported and decides at its first compilation; a command that audits
    nothing (`list`) imports no JAX for it."""
    os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    if "jax" in sys.modules:
        sys.modules["jax"].config.update("jax_enable_compilation_cache", False)


def output_setting(name: str, given):
    """An output setting (json, junit, html, sarif, format, color, exit_zero, paths): the flag's value, else the
    configuration's."""
    if given not in (None, ()):
        return given
    value = configured().get(name)
    return tuple(value) if isinstance(value, list) else value


paths_argument = click.argument("paths", nargs=-1, type=click.Path())
color_option = click.option(
    "--color", type=click.Choice(COLORS), default=None, help="Colour in the terminal.  [default: auto]"
)
debug_option = click.option("--debug", is_flag=True, help="Show the traceback of an internal error.")
exit_zero_option = click.option(
    "--exit-zero", is_flag=True, default=None, help="Exit 0 even when scenarios fail (bad input still exits 2)."
)
profile_option = click.option(
    "--profile", is_flag=True, help="Print where the time went and how many programs were compiled."
)
output_options = _stacked(
    click.option("--json", "json_path", metavar="PATH", help="Write the JSON report to PATH ('-' for stdout)."),
    flags("json_detail"),
    click.option("--junit", "junit_path", metavar="PATH", help="Write a JUnit XML report to PATH ('-' for stdout)."),
    click.option(
        "--html",
        "html_path",
        metavar="PATH",
        help="Write a self-contained HTML report (findings and pictures, no network needed) to PATH.",
    ),
    click.option(
        "--sarif",
        "sarif_path",
        metavar="PATH",
        help="Write SARIF 2.1.0 to PATH: each finding at its scenario's line, for GitHub code scanning.",
    ),
    click.option(
        "--format",
        "format",
        type=click.Choice(FORMATS),
        multiple=True,
        help=(
            "Terminal output: rich (the table) and/or github (Actions annotations). Default: rich, plus github when "
            "GITHUB_ACTIONS=true."
        ),
    ),
    click.option("-v", "--verbose", is_flag=True, help="Show every scenario, finding and note."),
    click.option("-q", "--quiet", is_flag=True, help="Show only the summary."),
    color_option,
    exit_zero_option,
    debug_option,
)
