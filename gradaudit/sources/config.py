"""`[tool.gradaudit]` in pyproject.toml, found from the working directory upwards.

Its keys are those of `model.options` (KEYS and OUTPUT_KEYS): the defaults of the command line's
options and of the Python API's keywords; flags and keywords win. Every unknown key and every
value of the wrong kind is reported at once, each naming the file, line and key.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from gradaudit.model.options import OptionError, check


class ConfigError(Exception):
    """The configuration cannot be used; the message says where and why."""


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


def _relative(value: str, folder: Path) -> str:
    """A path written in pyproject.toml, relative to its folder, as a path from the working directory."""
    if value == "-" or Path(value).is_absolute():
        return value
    return os.path.relpath(folder / value)


PATH_KEYS = ("baseline", "json", "junit", "cache")
"""Keys whose values are paths, written relative to pyproject.toml's folder."""


def load_config(start: Path) -> tuple[dict, Path | None]:
    """The checked `[tool.gradaudit]` settings (see `model.options.check`; paths made relative to
    the working directory) and the file they came from; empty when there is none."""
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
    settings: dict = {}
    problems = []
    for key, value in table.items():
        try:
            settings.update(check({key: value}, "configuration"))
        except OptionError as exc:
            problems.append(f"{path}:{_line_of(text, key)}: [tool.gradaudit] {exc}")
    if problems:
        raise ConfigError("\n".join(problems))
    for key in PATH_KEYS:
        if isinstance(settings.get(key), str):
            settings[key] = _relative(settings[key], path.parent)
    if "paths" in settings:
        settings["paths"] = [_relative(p, path.parent) for p in settings["paths"]]
    return settings, path
