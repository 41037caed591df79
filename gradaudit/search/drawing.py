"""Scenarios drawn from a space by hypothesis, and the text of a drawn entry as a scenario file holds it."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable

import numpy as np
import yaml

from gradaudit.model import dtypes
from gradaudit.search.spaces import Axis, Space, holds


def _draw_axis(draw, st, axis: Axis, integer: bool = True):
    """An alternative, or a number in the range: an integer (bounds rounded inwards), else a float."""
    if not axis.is_range:
        return draw(st.sampled_from(axis.choices))
    assert axis.minimum is not None and axis.maximum is not None, "a range has both bounds (_SpaceReader.axis)"
    if integer:
        low, high = math.ceil(axis.minimum), math.floor(axis.maximum)
        assume(low <= high)
        return draw(st.integers(low, high))
    return draw(st.floats(float(axis.minimum), float(axis.maximum), allow_nan=False, allow_infinity=False))


def assume(condition: object) -> None:
    """hypothesis.assume, imported only when a search runs."""
    from hypothesis import assume as hypothesis_assume

    hypothesis_assume(condition)


def flat(value) -> Iterable:
    """The numbers of a nested list (an entry's `value`), in order."""
    if isinstance(value, list):
        for item in value:
            yield from flat(item)
    elif value is not None:
        yield value


def _nested(draw, element: Callable, shape: list[int]):
    if not shape:
        return element()
    return [_nested(draw, element, shape[1:]) for _ in range(shape[0])]


def scenario_strategy(space: Space):
    """Scenario entries (dicts as a scenario file holds them), shrinking toward the first alternatives and small
    values."""
    from hypothesis import strategies as st

    @st.composite
    def select_n(draw) -> dict:
        axes = space.axes
        values = axes["selector.value"]
        dtype = draw(st.sampled_from([d for d in axes["selector.dtype"].choices if d == "bool" or holds(d, values)]))
        cases = _draw_axis(draw, st, axes["cases"])
        shape = list(draw(st.sampled_from(axes["shape"].choices)))
        per_element = bool(shape) and bool(
            _draw_axis(draw, st, axes.get("selector.per_element", Axis(choices=(False, True))))
        )
        element: Callable[[], object]
        if dtype == "bool":
            element = functools.partial(draw, st.booleans())
        else:
            low, high = dtypes.integer_range(dtype)
            if values.is_range:
                assert values.minimum is not None and values.maximum is not None, (
                    "a range has both bounds (_SpaceReader.axis)"
                )
                low, high = max(low, int(values.minimum)), min(high, int(values.maximum))
                assume(low <= high)
                element = functools.partial(draw, st.integers(low, high))
            else:
                held = [
                    v for v in values.choices if isinstance(v, int) and not isinstance(v, bool) and low <= v <= high
                ]
                assume(held)
                element = functools.partial(draw, st.sampled_from(held))
        entry = {
            "name": space.name,
            "selector": {"dtype": dtype, "value": _nested(draw, element, shape if per_element else [])},
            "cases": cases,
            "shape": shape,
            "dtype": _draw_axis(draw, st, axes.get("dtype", Axis(choices=("float32",)))),
        }
        for key in ("output", "order", "seed"):
            if key in axes:
                entry[key] = _draw_axis(draw, st, axes[key])
        return {**entry, **space.fixed}

    @st.composite
    def function(draw) -> dict:
        inputs = []
        for spec in space.inputs:
            dtype = _draw_axis(draw, st, spec["dtype"])
            shape = list(_draw_axis(draw, st, spec.get("shape", Axis(choices=([],)))))
            value_axis = spec.get("value", Axis(minimum=-10.0, maximum=10.0))
            integer = dtype in dtypes.SELECTOR_DTYPES
            element: Callable[[], object]
            if dtype == "bool":
                element = functools.partial(draw, st.booleans())
            else:
                element = functools.partial(_draw_axis, draw, st, value_axis, integer=integer)
            inputs.append({"dtype": dtype, "value": _nested(draw, element, shape)})
        entry = {"name": space.name, "fn": space.fn, "inputs": inputs}
        for key in ("bind", "order", "seed"):
            if key in space.axes:
                entry[key] = _draw_axis(draw, st, space.axes[key])
        return {**entry, **space.fixed}

    return function() if space.fn else select_n()


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's emitter where PyYAML has it (the same text, a few times faster: a survey writes every
draw of every function), the pure-Python one otherwise."""


def scenario_text(entry: dict, header: str = "", modules: str | None = None) -> str:
    """An entry as a scenario file, flow style inside for readability, a long input that is all zeros,
    all ones or 0, 1, 2, ... as its `fill` (`_filled`); `modules` where user modules live."""
    document = {"modules": modules} if modules else {}
    if "inputs" in entry:
        entry = {**entry, "inputs": [_filled(spec) for spec in entry["inputs"]]}
    body = yaml.dump(
        {**document, "scenarios": [entry]}, Dumper=_DUMPER, sort_keys=False, default_flow_style=None, width=120
    )
    return header + body


FILLED_FROM = 8
"""Inputs of at least this many numbers are written as their `fill` where one makes them: a shrunk
300-element input is 300 zeros, which a reader should not have to count."""


def _filled(spec: dict) -> dict:
    """An input spec with a long `value` that a fill makes (zeros, ones, arange) written as that fill."""
    value = spec.get("value")
    if not isinstance(value, list):
        return spec
    array = np.asarray(value, dtype=np.float64)
    if array.size < FILLED_FROM or not np.all(np.isfinite(array)):
        return spec
    flat = array.reshape(-1)
    fills = {"zeros": np.zeros_like(flat), "ones": np.ones_like(flat), "arange": np.arange(flat.size, dtype=np.float64)}
    fill = next((name for name, made in fills.items() if np.array_equal(flat, made)), None)
    if fill is None:
        return spec
    rest = {k: v for k, v in spec.items() if k != "value"}
    return {**rest, "shape": list(array.shape), "fill": fill}
