"""Input errors as data: where in which file, and what is wrong (and what is allowed)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass


def did_you_mean(word: str, allowed: Iterable[str], many: int = 1, quoted: bool = True) -> str:
    """'; did you mean 'x'?' naming up to `many` of `allowed` close to `word`, or '' when none is:
    every message that refuses a name suggests the same way."""
    close = difflib.get_close_matches(word, list(allowed), n=many)
    shown = [f"'{c}'" if quoted else c for c in close]
    return f"; did you mean {', '.join(shown)}?" if close else ""


@dataclass(frozen=True, order=True)
class Location:
    """A place in an input file, 1-based as editors count."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class InputError:
    """One problem with the user's input: where it is and what is wrong (and what is allowed)."""

    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"

    def to_dict(self) -> dict:
        return {
            "file": self.location.file,
            "line": self.location.line,
            "col": self.location.col,
            "message": self.message,
        }


class InvalidInput(Exception):
    """Raised by a check that cannot go on; carries the error to record."""

    def __init__(self, error: InputError):
        super().__init__(str(error))
        self.error = error
