"""How an audit runs, as one value (`Options`), and the one table of its keys.

Command-line flags, `[tool.gradaudit]` in pyproject.toml and the Python API's keywords all read
`KEYS`: each key's name, what it accepts, how it is described in messages and in `--help`, and the
flag that sets it. A value given on the command line beats the configuration, which beats the
default (`resolve`). No JAX here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from gradaudit.model.errors import did_you_mean
from gradaudit.model.findings import CLASSES, FAIL_ON_DEFAULT

INSTALLED = "installed"
LEGACY = "legacy"
FIXED = "fixed"
RULES: tuple[str, ...] = (INSTALLED, LEGACY, FIXED)
"""select_n transpose rules: JAX's installed one, the pre-#40814 one, PR #40814's."""

BACKENDS: tuple[str, ...] = ("cpu", "gpu", "tpu")
FORMATS: tuple[str, ...] = ("rich", "github")
COLORS: tuple[str, ...] = ("auto", "always", "never")
DETAILS: tuple[str, ...] = ("findings", "full")
"""How much of each path a JSON report keeps: every array of scenarios with findings and a summary
of consistent ones, or every array of every scenario."""
DEFAULT_CACHE = ".gradaudit/cache"
DEFAULT_TIMEOUT = 600.0
"""Seconds per literal-path scenario: generous, so only a hang reaches it."""


class OptionError(ValueError):
    """An option's value cannot be used; the message names the option, what is wrong and what is allowed."""


@dataclass(frozen=True)
class Limits:
    """Sizes per scenario and per run; over them a scenario is bad input (exit 2), not an out-of-memory."""

    elements: int = 1_000_000
    """Elements of one input or case."""
    cases: int = 1_024
    """Cases of one select_n."""
    jacobian: int = 50_000_000
    """Entries of one scenario's derivative blocks (Jacobians, and Hessians at order 2)."""
    evaluations: int = 2_000_000
    """Function evaluations finite differences need for one scenario."""
    work: int = 2_000_000_000
    """Derivative entries over the whole run."""


LIMIT_NAMES = tuple(f.name for f in fields(Limits))


def default_jobs() -> int:
    """The cores this process may use: worker processes for the literal path by default."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Key:
    """One setting: its name (an `Options` field, a Python keyword and a `[tool.gradaudit]` key)."""

    name: str
    kind: type | tuple[type, ...]
    described: str
    """What it must be, for messages: 'a number of seconds'."""
    help: str
    """What it does, for --help."""
    choices: tuple[str, ...] = ()
    flag: str | None = None
    """The command-line flag (None: set only by configuration or keyword)."""
    configurable: bool = True
    """Whether `[tool.gradaudit]` may set it (selection flags such as -k belong to one run)."""


KEYS: dict[str, Key] = {
    key.name: key
    for key in (
        Key(
            "rule",
            str,
            "a rule name",
            "select_n transpose rule to audit under: JAX's installed one, the legacy (pre-#40814) one or the fixed "
            "one.",
            RULES,
            "--rule",
        ),
        Key(
            "rtol",
            (int, float),
            "a number >= 0",
            "Default relative tolerance against finite differences.",
            flag="--rtol",
        ),
        Key(
            "atol",
            (int, float),
            "a number >= 0",
            "Default absolute tolerance against finite differences.",
            flag="--atol",
        ),
        Key(
            "ad_rtol",
            (int, float),
            "a number >= 0",
            "Relative tolerance of one AD path against another (default: the dtype's rounding).",
            flag="--ad-rtol",
        ),
        Key(
            "ad_atol",
            (int, float),
            "a number >= 0",
            "Absolute tolerance of one AD path against another (default: the dtype's rounding).",
            flag="--ad-atol",
        ),
        Key(
            "fail_on",
            (str, list, tuple),
            "finding classes (a list, or comma-separated), or 'all'",
            "Finding classes that fail the run; the others are reported in a section of their own. "
            f"Default: {','.join(FAIL_ON_DEFAULT)}; 'all' adds the rest "
            f"({', '.join(c for c in CLASSES if c not in FAIL_ON_DEFAULT)}).",
            (*CLASSES, "all"),
            "--fail-on",
        ),
        Key(
            "timeout",
            (int, float),
            "a number of seconds > 0",
            "Seconds a literal-path scenario may take before it is an error.",
            flag="--timeout",
        ),
        Key(
            "jobs",
            int,
            "a number of worker processes (0: none)",
            "Worker processes for the literal path: a scenario that crashes or hangs takes down only its worker. 0 "
            "audits in this process, unisolated. Also GRADAUDIT_JOBS.",
            flag="--jobs",
        ),
        Key(
            "literal",
            bool,
            "true or false",
            "Audit every scenario on its own, every path separately (no batching).",
            flag="--literal",
        ),
        Key(
            "cache",
            (str, bool),
            "a folder for JAX's compilation cache, or false for none",
            "JAX's persistent compilation cache, so a rerun skips compiling.",
            flag="--cache-dir",
        ),
        Key(
            "backend",
            str,
            "a backend name",
            "Run every path on this backend's devices (default: JAX's default backend).",
            BACKENDS,
            "--backend",
        ),
        Key(
            "devices",
            str,
            "'all' or device ids, comma-separated",
            "Device ids to audit on (default: the first); with several, every AD path runs on each and they are "
            "compared.",
            flag="--devices",
        ),
        Key(
            "limits",
            dict,
            "a table of positive integers: " + ", ".join(LIMIT_NAMES),
            "Sizes over which a scenario is refused as bad input.",
        ),
        Key(
            "baseline",
            str,
            "a path to a JSON report",
            "A previous JSON report: its findings are known and do not fail the run.",
            flag="--baseline",
        ),
        Key(
            "keyword",
            str,
            "an expression",
            "Only scenarios whose name matches EXPR (substrings with and/or/not).",
            flag="-k",
            configurable=False,
        ),
        Key(
            "shard",
            str,
            "K/N",
            "Only shard K of N: a stable split by scenario name, for CI matrix jobs.",
            flag="--shard",
            configurable=False,
        ),
        Key(
            "directions",
            int,
            "a number of directions >= 1",
            "Random tangent and cotangent directions the Python API compares a large function along.",
        ),
        Key(
            "directional_above",
            int,
            "a number of Jacobian entries >= 0",
            "Jacobian entries above which the Python API compares along directions instead of whole Jacobians (0: "
            "always).",
        ),
        Key(
            "shuffle",
            int,
            "a seed (an integer)",
            "Audit in a random order drawn from this seed (recorded in the report), to show a result that depends on "
            "what ran before it; the report lists scenarios in file order either way.",
            flag="--shuffle",
        ),
        Key(
            "user_code",
            bool,
            "true or false",
            "Run function scenarios: `fn:` imports and runs Python code, as a conftest does. Off, they are refused as "
            "bad input (exit 2) "
            "before anything is imported, for gates over files from untrusted pull requests; select_n scenarios still "
            "run.",
            flag="--user-code",
        ),
        Key(
            "json_detail",
            str,
            "a detail level",
            "How much a JSON report keeps: every path's arrays for scenarios with findings and a summary of the "
            "others, or everything.",
            DETAILS,
            "--json-detail",
        ),
    )
}
"""What an audit reads. The command line's output settings (paths, json, junit, html, sarif,
format, color, exit_zero) are `[tool.gradaudit]` keys too: see OUTPUT_KEYS."""

OUTPUT_KEYS: dict[str, Key] = {
    key.name: key
    for key in (
        Key("paths", list, "a list of files or folders", "Scenario files or folders to audit when none are given."),
        Key("json", str, "a path ('-' for stdout)", "Write the JSON report to PATH ('-' for stdout)."),
        Key("junit", str, "a path", "Write a JUnit XML report to PATH ('-' for stdout)."),
        Key("html", str, "a path", "Write a self-contained HTML report to PATH."),
        Key("sarif", str, "a path", "Write SARIF 2.1.0 to PATH (GitHub code scanning)."),
        Key("format", list, f"a list of output formats ({', '.join(FORMATS)})", "Terminal output formats.", FORMATS),
        Key("color", str, "a colour mode", "Colour in the terminal.", COLORS),
        Key("exit_zero", bool, "true or false", "Exit 0 even when scenarios fail (bad input still exits 2)."),
        Key(
            "tolerance",
            dict,
            "a table {rtol = …, atol = …} of numbers >= 0",
            "Default tolerances (the same as rtol and atol).",
        ),
    )
}
"""Settings of the command line (and `tolerance`, another spelling of rtol and atol)."""


@dataclass(frozen=True)
class Options:
    """How an audit runs: one value, whoever set it (see KEYS for what each field means)."""

    rule: str = INSTALLED
    rtol: float | None = None
    atol: float | None = None
    ad_rtol: float | None = None
    ad_atol: float | None = None
    fail_on: tuple[str, ...] = tuple(FAIL_ON_DEFAULT)
    timeout: float = DEFAULT_TIMEOUT
    jobs: int = field(default_factory=default_jobs)
    literal: bool = False
    cache: str | None = DEFAULT_CACHE
    """The compilation cache's folder; None: no cache."""
    backend: str | None = None
    devices: str | None = None
    limits: Limits = field(default_factory=Limits)
    baseline: str | None = None
    keyword: str | None = None
    shard: str | None = None
    json_detail: str = "findings"
    directions: int = 4
    directional_above: int = 10_000
    user_code: bool = True
    shuffle: int | None = None

    @property
    def tolerance(self) -> tuple[float | None, ...]:
        """Defaults the judge reads (`tolerances_for`): against finite differences, then AD against AD."""
        return self.rtol, self.atol, self.ad_rtol, self.ad_atol

    def updated(self, **values) -> Options:
        """These options with `values` (checked as keywords are) in place of their own."""
        return replace(self, **check(values, "keyword"))


def check_value(key: Key, value: Any) -> Any:
    """`value` as `key` takes it, or OptionError saying what is allowed."""
    kinds: tuple[Any, ...] = (
        key.kind if isinstance(key.kind, tuple) else (key.kind,)
    )  # Any: the checks below depend on the key, so `value` stays Any
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise OptionError(f"'{key.name}' must be {key.described}, got {value!r}")
    if key.name == "fail_on" and isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        if not all(isinstance(v, str) for v in value):
            raise OptionError(f"'{key.name}' must be a list of strings, got {value!r}")
        bad = [v for v in value if key.choices and v not in key.choices]
    else:
        bad = [value] if key.choices and value not in key.choices else []
    if bad:
        raise OptionError(
            f"'{key.name}' must be one of {', '.join(key.choices)}, got "
            f"{bad[0]!r}{did_you_mean(str(bad[0]), key.choices)}"
        )
    if key.name == "fail_on" and not value:
        raise OptionError(f"'fail_on' must name at least one class ({', '.join(CLASSES)}) or 'all'")
    if key.name in ("rtol", "atol", "ad_rtol", "ad_atol") and value < 0:
        raise OptionError(f"'{key.name}' must be {key.described}, got {value!r}")
    if key.name == "timeout" and value <= 0:
        raise OptionError(f"'timeout' must be {key.described}, got {value!r}")
    if key.name == "jobs" and value < 0:
        raise OptionError(f"'jobs' must be 0 or more, got {value!r}")
    if key.name == "directions" and value < 1 or key.name == "directional_above" and value < 0:
        raise OptionError(f"'{key.name}' must be {key.described}, got {value!r}")
    if key.name == "cache" and isinstance(value, str) and not value.strip():
        raise OptionError("'cache' must be a folder (or false for none), got an empty string")
    if key.name == "tolerance":
        if set(value) - {"rtol", "atol"} or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value.values()
        ):
            raise OptionError(f"'tolerance' must be {key.described}, got {value!r}")
    if key.name == "limits":
        for name, limit in value.items():
            if name not in LIMIT_NAMES:
                raise OptionError(
                    f"unknown limit '{name}'{did_you_mean(name, LIMIT_NAMES)} (allowed: {', '.join(LIMIT_NAMES)})"
                )
            if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
                raise OptionError(f"limit '{name}' must be a positive integer, got {limit!r}")
    return value


def check(values: Mapping[str, Any], source: str) -> dict:
    """Keyword values (`source` is 'keyword' or 'configuration') as Options takes them: every name
    checked against KEYS with a did-you-mean, every value against its key; `cache = false` is None,
    `limits` a Limits, `tolerance` its rtol and atol."""
    allowed = {**KEYS, **(OUTPUT_KEYS if source == "configuration" else {})}
    taken: dict = {}
    for name, value in values.items():
        key = allowed.get(name)
        if key is None or (source == "configuration" and not key.configurable):
            noun = "key" if source == "configuration" else "keyword"
            raise OptionError(f"unknown {noun} '{name}'{did_you_mean(name, allowed)} (allowed: {', '.join(allowed)})")
        if value is None and source == "keyword":
            taken[name] = None
            continue
        check_value(key, value)
        if name == "cache":
            taken[name] = None if value is False else (DEFAULT_CACHE if value is True else value)
        elif name == "limits":
            taken[name] = Limits(**value)
        elif name == "tolerance":
            taken.update(value)
        elif name == "fail_on":
            taken[name] = fail_on_classes(value)
        else:
            taken[name] = float(value) if name in ("rtol", "atol", "ad_rtol", "ad_atol", "timeout") else value
    return taken


def fail_on_classes(value: str | list | tuple) -> tuple[str, ...]:
    """`fail_on` as the classes it names, in ranking order ('all': every class)."""
    names = {v.strip() for v in (value.split(",") if isinstance(value, str) else value)}
    return tuple(c.value for c in CLASSES if "all" in names or c.value in names)


def resolve(configured: Mapping[str, Any], given: Mapping[str, Any]) -> Options:
    """Options from defaults, then `configured` (already checked), then `given` (flags or keywords)."""
    names = {f.name for f in fields(Options)}
    merged = {k: v for k, v in configured.items() if k in names}
    merged.update({k: v for k, v in given.items() if k in names})
    return Options(**merged)
