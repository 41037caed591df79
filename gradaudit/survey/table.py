"""The surveyed surface: public differentiable functions of JAX, as data.

Each entry names a function by its public dotted path and says what its positional arguments are
(their roles, `ROLES`), which static keyword arguments it takes with their alternatives, and the
shapes it is drawn at. The entries are data: `surface.json`, made by introspection
(`surface.py`), and `overrides.yaml`, written where introspection cannot tell. The values come
from the shared tables of `edges.py`: nothing here names a value or says what a function should
give. Calls whose arguments a signature cannot say (an index expression, a window, a mask) are
written out in `wrappers.py` and named from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gradaudit.survey import surface
from gradaudit.survey.edges import SURVEY_FLOATS

ROLES: dict[str, str] = {
    "x": "a floating array of the drawn shape (differentiated)",
    "v": "a floating vector (differentiated)",
    "m": "a floating square matrix (differentiated)",
    "i": "an integer index array into the first argument's leading axis (held fixed)",
    "along": "integer indices shaped as the first argument, each into its leading axis (held fixed)",
    "starts": "integer start indices, one per axis of the first argument (held fixed)",
    "w": "a selector, boolean or integer, choosing among the floating arguments after it (held fixed)",
    "mask": "a boolean array of the drawn shape (held fixed)",
    "seg": "integer segment ids, one per element of the first argument's leading axis (held fixed)",
    "h": "a floating array of the drawn shape, passed in but not differentiated (JAX defines no gradient for it)",
    "n": "an integer-valued array of the drawn shape in an integer dtype (held fixed)",
}
"""What each role token of a signature stands for."""

SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "any": ((), (3,), (2, 3)),
    "array": ((3,), (2, 3)),
    "vector": ((4,),),
    "matrix": ((2, 3),),
    "square": ((3, 3),),
}
"""The shapes a signature's arrays are drawn at (shrinking toward the first)."""

Derived = Callable[[tuple[int, ...]], object]
"""A static argument that follows from the drawn shape (a slice size, a segment count)."""


@dataclass(frozen=True)
class Surveyed:
    """One function: its public path, its arguments' roles, static options and shapes."""

    path: str
    """Public dotted path, `jax.numpy.take`; or `gradaudit.survey.wrappers.NAME` for a written-out call."""
    signature: tuple[str, ...]
    options: dict[str, tuple] = field(default_factory=dict)
    """Static keyword arguments and their alternatives (the first is drawn most, and shrunk toward)."""
    shapes: str = "any"
    derived: dict[str, Derived] = field(default_factory=dict)
    """Static keyword arguments computed from the drawn shape."""
    floats: tuple[str, ...] = SURVEY_FLOATS
    """The floating dtypes it takes (LAPACK and FFT kernels take float32 and float64 only)."""
    surveys: str | None = None
    """For a call written out in wrappers.py, the public function it stands for."""

    @property
    def public(self) -> str | None:
        """The public JAX function this entry surveys, if any."""
        return self.surveys or (self.path if self.path.startswith("jax.") else None)

    @property
    def short(self) -> str:
        """The name files and reports use: the path without `jax.` (`numpy.take`, `lax.select_n`)."""
        return self.path.removeprefix("jax.").removeprefix("gradaudit.survey.")

    @property
    def fn(self) -> str:
        """`module:function`, as a scenario file names it."""
        module, _, name = self.path.rpartition(".")
        return f"{module}:{name}"


WIDE = ("float32", "float64")


def _half(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(max(1, d // 2) for d in shape)


DERIVED: dict[str, Derived] = {
    "zero": lambda shape: 0,
    "leading": lambda shape: shape[0],
    "half": _half,
}
"""The rules overrides.yaml's `derived` names: a static argument worked out from the drawn shape."""


def _entry(path: str, written: dict) -> Surveyed:
    """A table entry from its data (overrides.yaml or surface.json)."""
    return Surveyed(
        path,
        tuple(written["roles"].split()),
        {name: tuple(alternatives) for name, alternatives in (written.get("options") or {}).items()},
        written.get("shapes", "any"),
        {name: DERIVED[rule] for name, rule in (written.get("derived") or {}).items()},
        WIDE if written.get("floats") == "wide" else SURVEY_FLOATS,
        written.get("surveys"),
    )


def _table() -> tuple[Surveyed, ...]:
    """overrides.yaml's functions as written, every other entry of surface.json as introspection
    made it; JAX's functions by path, then the written-out calls."""
    written = surface.overrides()["functions"]
    entries: list[tuple[str, dict]] = [
        (path, one) for path, data in written.items() for one in (data if isinstance(data, list) else [data])
    ]
    entries += [(path, data) for path, data in surface.surface()["entries"].items() if path not in written]
    ordered = sorted(entries, key=lambda item: (not item[0].startswith("jax."), item[0]))
    return tuple(_entry(path, data) for path, data in ordered)


TABLE: tuple[Surveyed, ...] = _table()


def by_path() -> dict[str, list[Surveyed]]:
    """Entries per public path (select_n has several: one per number of cases)."""
    found: dict[str, list[Surveyed]] = {}
    for entry in TABLE:
        found.setdefault(entry.path, []).append(entry)
    return found
