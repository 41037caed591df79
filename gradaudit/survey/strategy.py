"""Scenarios of one surveyed function, drawn by hypothesis from its roles and the shared edge tables.

A draw is a scenario entry as a file holds it (`fn: jax.numpy:take`, `inputs`, `kwargs`), so the
search machinery of `gradaudit search` explores, shrinks, confirms and writes it unchanged. Every
draw shrinks toward the plainest case: the first shape, float32, int32, ordinary values in range,
each option's first alternative.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradaudit.survey.edges import SURVEY_INDICES, float_edges, index_edges
from gradaudit.survey.table import SHAPES, Surveyed

FLOATING = ("x", "v", "m")
INDEX_SHAPES = ((), (2,))
"""Shapes of an index argument: a scalar index, or two of them."""


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


def entry_strategy(surveyed: Surveyed, name: str):
    """Scenario entries for `surveyed`, named `name`."""
    from hypothesis import strategies as st

    def floats(draw, dtype: str, shape: tuple[int, ...]):
        element = st.one_of(st.floats(-3.0, 3.0, width=32), st.sampled_from(float_edges(dtype)))
        return _nested([draw(element) for _ in range(_size(shape))], shape)

    def integers(draw, dtype: str, shape: tuple[int, ...], sizes: tuple[int, ...]):
        """One value per element, each around its own valid range 0..size-1."""
        values = [draw(st.one_of(st.integers(0, max(size - 1, 0)), st.sampled_from(index_edges(dtype, size)))) for size in sizes]
        return _nested(values, shape)

    @st.composite
    def draw_entry(draw) -> dict:
        shape = draw(st.sampled_from(SHAPES[surveyed.shapes]))
        float_dtype = draw(st.sampled_from(surveyed.floats))
        first = shape
        inputs = []
        for position, role in enumerate(surveyed.signature):
            if role in FLOATING:
                inputs.append({"dtype": float_dtype, "value": floats(draw, float_dtype, shape)})
            elif role == "mask":
                inputs.append({"dtype": "bool", "value": _nested([draw(st.booleans()) for _ in range(_size(shape))], shape)})
            elif role == "w":
                cases = sum(1 for r in surveyed.signature[position + 1 :] if r in FLOATING)
                dtype = draw(st.sampled_from(("int32", "bool", *SURVEY_INDICES[1:])))
                where = draw(st.sampled_from(((), shape))) if shape else ()
                if dtype == "bool":
                    value = _nested([draw(st.booleans()) for _ in range(_size(where))], where)
                else:
                    value = integers(draw, dtype, where, (cases,) * _size(where))
                inputs.append({"dtype": dtype, "value": value})
            else:
                dtype = draw(st.sampled_from(SURVEY_INDICES))
                length = first[0] if first else 1
                if role == "i":
                    where = draw(st.sampled_from(INDEX_SHAPES))
                    value = integers(draw, dtype, where, (length,) * _size(where))
                elif role == "starts":
                    where = (len(first),)
                    value = integers(draw, dtype, where, first)
                else:  # seg: one segment id per leading element, among as many segments
                    where = (length,)
                    value = integers(draw, dtype, where, (length,) * length)
                inputs.append({"dtype": dtype, "value": value})
        kwargs = {key: draw(st.sampled_from(alternatives)) for key, alternatives in surveyed.options.items()}
        kwargs.update({key: _plain(rule(shape)) for key, rule in surveyed.derived.items()})
        entry = {"name": name, "fn": surveyed.fn, "inputs": inputs}
        return {**entry, "kwargs": kwargs} if kwargs else entry

    return draw_entry()


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class SurveySpace:
    """One surveyed function as the search machinery takes a space: a name, where files say it came
    from, and its strategy."""

    surveyed: Surveyed
    name: str
    file: str = "<survey>"
    fn: str | None = None

    def strategy(self):
        return entry_strategy(self.surveyed, self.name)
