"""Scenarios of one surveyed function: a sweep of the edge values, then draws by hypothesis.

A draw is a scenario entry as a file holds it (`fn: jax.numpy:take`, `inputs`, `kwargs`), so the
search machinery of `gradaudit search` explores, shrinks, confirms and writes it unchanged. Every
draw shrinks toward the plainest case: the first shape, the first floating dtype, int32, ordinary
values in range, each option's first alternative.

Hypothesis draws edge values often but not evenly (it mutates what it drew before), so a survey
first audits a sweep: the plainest case with one edge changed, for every edge of the shared tables
(each floating edge value, a tie, a tie of each non-finite value, each index dtype at its limits, a
narrow index into a long axis).
One entry builder serves both: it asks a picker for every choice, and the sweep's picker answers
with the plainest one.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from gradaudit.model import dtypes
from gradaudit.search.drawing import flat as numbers
from gradaudit.survey.edges import (
    LONG_AXIS,
    SURVEY_INDICES,
    decades,
    float_edges,
    index_edges,
    near_integers,
    scales,
    with_zeros,
)
from gradaudit.survey.table import SHAPES, Surveyed

FLOATING = ("x", "v", "m")
INDEX_SHAPES = ((), (2,))
"""Shapes of an index argument: a scalar index, or two of them."""
INDEXING = ("i", "along", "starts", "seg")
"""Roles that index the first argument: their functions are also drawn at a `LONG_AXIS`."""
SELECTORS = ("int32", "bool", *SURVEY_INDICES[1:])
"""Dtypes of a selector (role `w`), shrinking toward int32."""
SMALL_INTEGERS = 4
"""Integer-valued arguments (role `n`: an order, a degree, a count) are drawn around 0..3."""
PLAIN_VALUES = (0.62, -1.37, 0.25, 1.81, -0.44, 1.09, 0.93, -1.72, 0.38)
"""Ordinary floating values of the plainest case: distinct, of both signs, no square matrix of
them singular."""


def _nested(values: list, shape: tuple[int, ...]):
    if not shape:
        return values.pop(0)
    step = len(values) // shape[0]
    return [_nested(values[k * step : (k + 1) * step], shape[1:]) for k in range(shape[0])]


def _size(shape: tuple[int, ...]) -> int:
    size = 1
    for d in shape:
        size *= d
    return size


def _shapes(surveyed: Surveyed) -> tuple[tuple[int, ...], ...]:
    long = ((LONG_AXIS,),) if any(role in INDEXING for role in surveyed.signature) else ()
    return SHAPES[surveyed.shapes] + long


class _Drawn:
    """Every choice drawn by hypothesis, each kind of choice from a strategy made once per
    `entry_strategy` (`made`): building hypothesis strategies anew for each of a search's tens of
    thousands of choices cost more than drawing from them."""

    def __init__(self, draw, made: dict):
        from hypothesis import strategies as st

        self.draw, self.st, self.made = draw, st, made

    def _strategy(self, key: tuple, make):
        try:
            hash(key)
        except TypeError:  # an unhashable alternative: made each time
            return make()
        if key not in self.made:
            self.made[key] = make()
        return self.made[key]

    def choice(self, alternatives):
        return self.draw(self._strategy(("choice", tuple(alternatives)), lambda: self.st.sampled_from(alternatives)))

    def real(self, dtype: str, position: int) -> float:
        st = self.st
        return self.draw(
            self._strategy(
                ("real", dtype), lambda: st.one_of(st.floats(-3.0, 3.0, width=32), st.sampled_from(float_edges(dtype)))
            )
        )

    def index(self, dtype: str, size: int) -> int:
        st, high = self.st, dtypes.integer_range(dtype)[1]
        return self.draw(
            self._strategy(
                ("index", dtype, size),
                lambda: st.one_of(
                    st.integers(0, min(max(size - 1, 0), high)), st.sampled_from(index_edges(dtype, size))
                ),
            )
        )

    def boolean(self) -> bool:
        return self.draw(self._strategy(("boolean",), self.st.booleans))

    def seed(self) -> int:
        return self.draw(self._strategy(("seed",), lambda: self.st.integers(0, 3)))


class _Plain:
    """Every choice the plainest: the first alternative, ordinary values, index 0."""

    def choice(self, alternatives):
        return alternatives[0]

    def real(self, dtype: str, position: int) -> float:
        return PLAIN_VALUES[position % len(PLAIN_VALUES)]

    def index(self, dtype: str, size: int) -> int:
        return 0

    def boolean(self) -> bool:
        return True

    def seed(self) -> int:
        return 0


def build_entry(surveyed: Surveyed, name: str, pick, shape: tuple[int, ...] | None = None) -> dict:
    """A scenario entry for `surveyed`, every choice made by `pick` (the shape too, unless given)."""
    shape = pick.choice(_shapes(surveyed)) if shape is None else shape
    float_dtype = pick.choice(surveyed.floats)

    def floating() -> dict:
        if shape and shape[0] == LONG_AXIS:  # distinct values: the index, not the values, is the edge here
            return {"dtype": float_dtype, "fill": "normal", "seed": pick.seed(), "shape": list(shape)}
        return {"dtype": float_dtype, "value": _nested([pick.real(float_dtype, k) for k in range(_size(shape))], shape)}

    def integers(dtype: str, where: tuple[int, ...], sizes: tuple[int, ...]):
        """One value per element, each around its own valid range 0..size-1."""
        return _nested([pick.index(dtype, size) for size in sizes], where)

    inputs = []
    for position, role in enumerate(surveyed.signature):
        if role in FLOATING:
            inputs.append(floating())
        elif role == "h":
            inputs.append({**floating(), "held": True})
        elif role == "n":
            dtype = pick.choice(SURVEY_INDICES)
            inputs.append({"dtype": dtype, "value": integers(dtype, shape, (SMALL_INTEGERS,) * _size(shape))})
        elif role == "mask":
            inputs.append({"dtype": "bool", "value": _nested([pick.boolean() for _ in range(_size(shape))], shape)})
        elif role == "w":
            cases = sum(1 for r in surveyed.signature[position + 1 :] if r in FLOATING)
            dtype = pick.choice(SELECTORS)
            where = pick.choice(((), shape)) if shape else ()
            if dtype == "bool":
                value = _nested([pick.boolean() for _ in range(_size(where))], where)
            else:
                value = integers(dtype, where, (cases,) * _size(where))
            inputs.append({"dtype": dtype, "value": value})
        else:
            dtype = pick.choice(SURVEY_INDICES)
            length = shape[0] if shape else 1
            if role == "i":
                where = pick.choice(INDEX_SHAPES)
                value = integers(dtype, where, (length,) * _size(where))
            elif role == "along":
                where = shape
                value = integers(dtype, where, (length,) * _size(where))
            elif role == "starts":
                where = (len(shape),)
                value = integers(dtype, where, shape)
            else:  # seg: one segment id per leading element, among as many segments
                where = (length,)
                value = integers(dtype, where, (length,) * length)
            inputs.append({"dtype": dtype, "value": value})
    kwargs = {key: pick.choice(alternatives) for key, alternatives in surveyed.options.items()}
    kwargs.update({key: _plain(rule(shape)) for key, rule in surveyed.derived.items()})
    entry = {"name": name, "fn": surveyed.fn, "inputs": inputs}
    return {**entry, "kwargs": kwargs} if kwargs else entry


def entry_strategy(surveyed: Surveyed, name: str):
    """Hypothesis's strategy of scenario entries for `surveyed`, named `name`."""
    from hypothesis import strategies as st

    made: dict = {}
    return st.composite(lambda draw: build_entry(surveyed, name, _Drawn(draw, made)))()


def sweep(surveyed: Surveyed, name: str) -> list[dict]:
    """The plainest entry with each static option's other alternatives, one at a time; then the
    plainest entry with one edge changed, for every edge of the shared tables: each floating
    edge value (and a tie, and a tie of each non-finite value) in the first floating argument, and
    each index or selector dtype at its limits in the first such argument (all its elements), also into a
    `LONG_AXIS` where the dtype cannot address one. Each is as small as a draw can be, so a kind it shows needs no
    shrinking."""
    plain = build_entry(surveyed, name, _Plain())
    entries = [
        {**plain, "kwargs": {**plain["kwargs"], key: _plain(alternative)}}
        for key, alternatives in surveyed.options.items()
        for alternative in alternatives[1:]
    ]
    first_float = next((k for k, role in enumerate(surveyed.signature) if role in FLOATING), None)
    if first_float is not None and "value" in plain["inputs"][first_float]:
        spec = plain["inputs"][first_float]
        flat = list(numbers(spec["value"]))
        where = min(1, len(flat) - 1)
        for edge in (*float_edges(spec["dtype"]), flat[0]):
            values = list(flat)
            values[where] = edge
            entries.append(_with(plain, first_float, value=_reshaped(values, spec["value"])))
        for edge in (e for e in float_edges(spec["dtype"]) if not math.isfinite(e)) if len(flat) > 2 else ():
            values = list(flat)
            values[1] = values[2] = edge  # a tie of a non-finite value
            entries.append(_with(plain, first_float, value=_reshaped(values, spec["value"])))
    entries += regimes(surveyed, name)
    first_index = next((k for k, role in enumerate(surveyed.signature) if role in (*INDEXING, "w")), None)
    if first_index is not None:
        role = surveyed.signature[first_index]
        for dtype in SURVEY_INDICES:
            low, high = dtypes.integer_range(dtype)
            for limit in [v for v in dict.fromkeys((high, low)) if v != 0]:
                entries.append(
                    _with(plain, first_index, dtype=dtype, value=_filled(plain["inputs"][first_index]["value"], limit))
                )
            if role in INDEXING and high < LONG_AXIS:
                long = build_entry(surveyed, name, _Plain(), shape=(LONG_AXIS,))
                entries.append(
                    _with(long, first_index, dtype=dtype, value=_filled(long["inputs"][first_index]["value"], high))
                )
    return entries


def regimes(surveyed: Surveyed, name: str) -> list[dict]:
    """The ordinary regimes, in each floating argument while the others stay plain, each value its
    own entry (the plainest case with one element changed, as the edge sweep makes them; entries
    alike in shape are audited together): its dtype's range by decades of both signs (each floating
    dtype), integers and half-integers and their neighbours, exact zeros among nonzeros, the plain
    case scaled across the dtype's range, and for a later argument, integer values in an integer
    dtype. One entry, one value: a kind found needs no narrowing, and nothing else in it can hide it."""
    plain = build_entry(surveyed, name, _Plain())
    floating = [k for k, role in enumerate(surveyed.signature) if role in FLOATING or role == "h"]  # held ones too
    differentiated = [k for k in floating if surveyed.signature[k] in FLOATING]
    entries: list[dict] = []
    for position in floating:
        spec = plain["inputs"][position]
        if "value" not in spec:
            continue
        flat = list(numbers(spec["value"]))
        where = min(1, len(flat) - 1)
        for dtype in surveyed.floats:
            values = decades(dtype) if dtype != spec["dtype"] else (*decades(dtype), *near_integers(dtype))
            for value in values:
                changed = list(flat)
                changed[where] = value
                entries.append(
                    _in_dtype(_with(plain, position, value=_reshaped(changed, spec["value"])), surveyed, dtype)
                )
        numpy_dtype = dtypes.numpy_dtype(spec["dtype"])
        for factor in scales(spec["dtype"]):
            scaled = [float(np.asarray(v * factor, dtype=numpy_dtype)) for v in flat]
            entries.append(_with(plain, position, value=_reshaped(scaled, spec["value"])))
        if len(flat) > 1:
            entries.append(_with(plain, position, value=_reshaped(with_zeros(flat), spec["value"])))
        if surveyed.signature[position] in FLOATING and position != differentiated[0]:  # another stays differentiated
            integral = [int(v) for v in (2, 3, 0, -1, 1, -2, 4, 5, -3)][: len(flat)]
            entries.append(_with(plain, position, dtype="int32", value=_reshaped(integral, spec["value"])))
    return entries


def _in_dtype(entry: dict, surveyed: Surveyed, dtype: str) -> dict:
    """`entry` with every floating argument in `dtype`."""
    inputs = [
        {**spec, "dtype": dtype} if role in FLOATING or role == "h" else spec
        for spec, role in zip(entry["inputs"], surveyed.signature, strict=True)
    ]
    return {**entry, "inputs": inputs}


def _reshaped(values: list, like):
    """`values` (flat) nested as `like` is."""
    if not isinstance(like, list):
        return values.pop(0)
    return [_reshaped(values, item) for item in like]


def _filled(like, value):
    """`like`'s nesting with every element `value`."""
    return [_filled(item, value) for item in like] if isinstance(like, list) else value


def _with(entry: dict, position: int, **changed) -> dict:
    inputs = list(entry["inputs"])
    inputs[position] = {**inputs[position], **changed}
    return {**entry, "inputs": inputs}


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class SurveySpace:
    """One surveyed function as the search machinery takes a space: a name, where files say it came
    from, its sweep and its strategy."""

    surveyed: Surveyed
    name: str
    file: str = "<survey>"
    fn: str | None = None

    def strategy(self):
        return entry_strategy(self.surveyed, self.name)

    def sweep(self) -> list[dict]:
        return self._swept

    @functools.cached_property
    def _swept(self) -> list[dict]:
        """Built once: a search, its shrinking and the shard planner each ask for it."""
        return sweep(self.surveyed, self.name)
