"""`[tool.gradaudit]` in pyproject.toml, found from the working directory upwards.

Its keys become the defaults of the command-line options (flags given on the command line win);
an unknown key or a value of the wrong kind is an input error naming the file, line and key.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from pathlib import Path

from gradaudit.rules import RULES

FORMATS = ("rich", "github")
COLORS = ("auto", "always", "never")


class ConfigError(Exception):
    """The configuration cannot be used; the message says where and why."""


@dataclass(frozen=True)
class Key:
    kind: type | tuple[type, ...]
    described: str
    choices: tuple[str, ...] = ()


KEYS: dict[str, Key] = {
    "paths": Key(list, "a list of files or folders"),
    "rule": Key(str, "a rule name", RULES),
    "tolerance": Key(dict, "a table {rtol = …, atol = …}"),
    "baseline": Key(str, "a path to a JSON report"),
    "format": Key(list, f"a list of output formats ({', '.join(FORMATS)})", FORMATS),
    "json": Key(str, "a path ('-' for stdout)"),
    "junit": Key(str, "a path"),
    "timeout": Key((int, float), "a number of seconds"),
    "jobs": Key(int, "a number of worker processes (0: none)"),
    "color": Key(str, "a colour mode", COLORS),
    "exit_zero": Key(bool, "true or false"),
    "cache": Key((str, bool), "a folder for JAX's compilation cache, or false for none"),
    "limits": Key(dict, "a table of positive integers: elements, cases, jacobian, evaluations, work"),
}


def find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _line_of(text: str, key: str) -> int:
    """The line of `key = …` inside [tool.gradaudit], for messages (1 when not found)."""
    inside = False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.replace(" ", "") in ("[tool.gradaudit]",) or stripped.startswith("[tool.gradaudit.")
        elif inside and stripped.split("=", 1)[0].strip().strip('"') == key:
            return number
    return 1


def load_config(start: Path) -> tuple[dict, Path | None]:
    """The validated `[tool.gradaudit]` table (empty when there is none) and the file it came from."""
    path = find_pyproject(start)
    if path is None:
        return {}, None
    try:
        text = path.read_text(encoding="utf-8")
        document = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    tool = document.get("tool", {})
    table = tool.get("gradaudit", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}:{_line_of(text, 'gradaudit')}: [tool.gradaudit] must be a table, got {table!r}")
    problems = []
    for key, value in table.items():
        where = f"{path}:{_line_of(text, key)}"
        spec = KEYS.get(key)
        if spec is None:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(f"{where}: [tool.gradaudit] unknown key '{key}'{hint} (allowed: {', '.join(KEYS)})")
            continue
        kinds = spec.kind if isinstance(spec.kind, tuple) else (spec.kind,)
        if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
            problems.append(f"{where}: [tool.gradaudit] '{key}' must be {spec.described}, got {value!r}")
            continue
        values = value if isinstance(value, list) else [value]
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            problems.append(f"{where}: [tool.gradaudit] '{key}' must be a list of strings, got {value!r}")
            continue
        bad = [v for v in values if spec.choices and v not in spec.choices]
        if bad:
            problems.append(f"{where}: [tool.gradaudit] '{key}' must be one of {', '.join(spec.choices)}, got {bad[0]!r}")
        if key == "tolerance" and (
            set(value) - {"rtol", "atol"}
            or not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value.values())
        ):
            problems.append(f"{where}: [tool.gradaudit] 'tolerance' must be {{rtol = …, atol = …}} with numbers >= 0, got {value!r}")
        if key == "cache" and isinstance(value, str) and not value.strip():
            problems.append(f"{where}: [tool.gradaudit] 'cache' must be a folder (or false for none), got an empty string")
        if key == "jobs" and isinstance(value, int) and not isinstance(value, bool) and value < 0:
            problems.append(f"{where}: [tool.gradaudit] 'jobs' must be 0 or more, got {value!r}")
        if key == "limits" and isinstance(value, dict):
            from gradaudit.limits import LIMIT_NAMES

            for name, limit in value.items():
                if name not in LIMIT_NAMES:
                    close = difflib.get_close_matches(name, LIMIT_NAMES, n=1)
                    hint = f"; did you mean '{close[0]}'?" if close else ""
                    problems.append(f"{where}: [tool.gradaudit] unknown limit '{name}'{hint} (allowed: {', '.join(LIMIT_NAMES)})")
                elif isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
                    problems.append(f"{where}: [tool.gradaudit] limit '{name}' must be a positive integer, got {limit!r}")
    if problems:
        raise ConfigError("\n".join(problems))
    return table, path
