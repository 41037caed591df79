"""`gradaudit search`: hypothesis explores a scenario space and shrinks each kind of disagreement.

A space file describes ranges instead of values:

    search:
      name: selector-space
      selector: {dtype: [bool, int8, int32, uint8, uint32], value: {min: -300, max: 300}}
      cases: {min: 1, max: 6}
      shape: [[], [3], [2, 3]]

Every key holds a list of alternatives, a `{min, max}` range or one fixed value. Hypothesis draws
scenarios (a selector value is drawn inside its dtype's range, so values a dtype cannot hold are
never tried; combinations the loader rejects are skipped and counted), audits each one exactly as
`gradaudit run` would, and treats a scenario that is not consistent as a failure of the kind
given by its findings' fingerprints. Hypothesis then shrinks each kind separately (see `search`)
and the minimal scenario of each is written out as an ordinary scenario file.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import yaml

from gradaudit.limits import LIMIT_EXCEEDED, Limits, check_limits
from gradaudit.model import dtypes, fields
from gradaudit.model.errors import InputError, InvalidInput, Location
from gradaudit.model.fields import Rule
from gradaudit.model.findings import CONSISTENT
from gradaudit.model.found import Found, FoundKind, SearchOutcome, kind_of
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import FunctionCall, Scenario, SelectN
from gradaudit.sources.scenario_files import MAX_DEPTH, load_text
from gradaudit.sources.user_modules import FunctionImportError, resolve_checked
from gradaudit.sources.yaml_nodes import (
    kind_name,
    mapping_items,
    node_location,
    parse_file,
    scalar_value,
    sequence_items,
)

# What a search space file may hold: a scenario's keys (model.fields), each one an axis of
# alternatives or one value for every draw; named SPACE_* so that no reader's names shadow another's.
SPACE_SELECT_N_KEYS = fields.keys(SelectN, space=fields.AXIS)
SPACE_FUNCTION_KEYS = fields.keys(FunctionCall, space=fields.AXIS)
SPACE_FIXED_KEYS = fields.keys(space=fields.FIXED)
SPACE_KEYS = ("name", *dict.fromkeys((*SPACE_SELECT_N_KEYS, *SPACE_FUNCTION_KEYS)), *SPACE_FIXED_KEYS)
SPACE_SELECTOR_KEYS = ("dtype", "value", "per_element")
SPACE_INPUT_KEYS = ("dtype", "shape", "value")


@dataclass(frozen=True)
class Axis:
    """One key of a space: alternatives to sample from, or an inclusive numeric range."""

    choices: tuple = ()
    minimum: float | None = None
    maximum: float | None = None

    @property
    def is_range(self) -> bool:
        return self.minimum is not None


@dataclass(frozen=True)
class Space:
    name: str
    file: str
    axes: dict[str, Axis]
    """select_n keys (`selector.dtype`, `selector.value`, …) or function keys (`bind`, `order`)."""
    fn: str | None = None
    inputs: tuple[dict[str, Axis], ...] = ()
    fixed: dict = field(default_factory=dict)
    """Keys passed through unchanged (eps, tolerance)."""

    def strategy(self):
        """Hypothesis's strategy of scenario entries from this space (a survey's spaces have their own)."""
        return scenario_strategy(self)

    def sweep(self) -> list[dict]:
        """Entries audited before any draw (a survey's spaces sweep their edge values; a space file names its own)."""
        return []


class SearchSpace(Protocol):
    """What a search explores: a space file's Space, or a survey's space of one function."""

    @property
    def name(self) -> str: ...

    @property
    def file(self) -> str: ...

    @property
    def fn(self) -> str | None: ...

    def strategy(self) -> Any: ...

    def sweep(self) -> list[dict]: ...


class SpaceError(Exception):
    """The space file cannot be searched; `errors` says where and why."""

    def __init__(self, errors: list[InputError]):
        super().__init__("\n".join(str(e) for e in errors))
        self.errors = errors


# --- reading a space file ---------------------------------------------------------------------


AXIS_RULES: dict[str, Rule] = {  # what each key of a space file may hold (not a select_n rule: model.options.RULES)
    **{
        key: fields.BY_KEY[key].rule
        for key in (*SPACE_SELECT_N_KEYS, *SPACE_FUNCTION_KEYS)
        if fields.BY_KEY[key].rule is not fields.OWN
    },
    "selector.dtype": Rule("choice", dtypes.SELECTOR_DTYPES),
    "selector.value": Rule("integer"),
    "selector.per_element": Rule("choice", (False, True)),
    "input.dtype": Rule("choice", dtypes.INPUT_DTYPES),
    "input.shape": Rule("shape"),
    "input.value": Rule("number"),
}
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""A space's name names its files: no folders, no leading dot (and at most 100 characters)."""


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _SpaceReader:
    def __init__(self, file: str, user_code: bool = True):
        self.file, self.user_code = file, user_code

    def fail(self, node: yaml.Node, message: str) -> InvalidInput:
        return InvalidInput(InputError(node_location(self.file, node), message))

    def mapping(self, node: yaml.Node, what: str, allowed: tuple[str, ...]) -> dict[str, yaml.Node]:
        items, errors = mapping_items(self.file, node, what)
        if errors:
            raise InvalidInput(errors[0])
        for key, (key_node, _) in items.items():
            if key not in allowed:
                raise self.fail(key_node, f"unknown key '{key}' in {what} (allowed: {', '.join(allowed)})")
        return {key: value for key, (_, value) in items.items()}

    def plain(self, node: yaml.Node, ancestors: tuple = ()):
        """A node's Python value (lists and mappings included); a value containing itself through
        an alias, or nested past MAX_DEPTH, is refused."""
        if any(node is ancestor for ancestor in ancestors):
            raise self.fail(node, "this value contains itself through a YAML alias")
        if len(ancestors) >= MAX_DEPTH:
            raise self.fail(node, f"this value is nested more than {MAX_DEPTH} levels deep")
        inside = (*ancestors, node)
        if isinstance(node, yaml.SequenceNode):
            return [self.plain(item, inside) for item in sequence_items(self.file, node, "a list")]
        if isinstance(node, yaml.MappingNode):
            return {
                key: self.plain(value, inside)
                for key, value in self.mapping(node, "a mapping", tuple(_keys(node))).items()
            }
        return scalar_value(self.file, node)

    def alternative(self, node: yaml.Node, key: str, rule: Rule):
        """One alternative of a key, checked against its rule."""
        label = key.removeprefix("input.")
        if rule.kind == "shape":
            shape = self.plain(node)
            if not isinstance(shape, list) or not all(_is_integer(d) and d >= 0 for d in shape):
                raise self.fail(
                    node, f"a shape in '{label}' is a list of sizes >= 0, e.g. [2, 3]; got {kind_name(node)}"
                )
            return shape
        value = scalar_value(self.file, node)
        if not rule.accepts(value):
            raise self.fail(node, f"'{label}' must be {rule.describe()}; got {kind_name(node)}")
        return value

    def axis(self, node: yaml.Node, key: str) -> Axis:
        """A list of alternatives, a {min, max} range (integers and numbers), or one alternative."""
        rule = AXIS_RULES[key]
        label = key.removeprefix("input.")
        if isinstance(node, yaml.MappingNode):
            if rule.kind not in ("integer", "number"):
                raise self.fail(node, f"'{label}' takes a list of alternatives, not a range")
            bounds = self.mapping(node, f"the range of '{label}'", ("min", "max"))
            if set(bounds) != {"min", "max"}:
                raise self.fail(node, f"the range of '{label}' needs both min and max, e.g. {{min: -3, max: 3}}")
            low, high = (self.alternative(bounds[k], key, rule) for k in ("min", "max"))
            if low > high:
                raise self.fail(node, f"the range of '{label}' is empty: min {low} > max {high}")
            return Axis(minimum=low, maximum=high)
        if rule.kind == "shape":
            if not isinstance(node, yaml.SequenceNode) or not all(isinstance(i, yaml.SequenceNode) for i in node.value):
                raise self.fail(
                    node, f"'{label}' lists the shapes to try, e.g. [[], [3], [2, 3]]; got {kind_name(node)}"
                )
            items = list(node.value)
        else:
            items = sequence_items(self.file, node, f"'{label}'") if isinstance(node, yaml.SequenceNode) else [node]
        if not items:
            raise self.fail(node, f"'{label}' needs at least one alternative")
        return Axis(choices=tuple(self.alternative(item, key, rule) for item in items))

    def read(self, root: yaml.Node | None) -> Space:
        if root is None:
            raise InvalidInput(InputError(Location(self.file, 1, 1), "empty file: a space file holds 'search:'"))
        top = self.mapping(root, "the file", ("search",))
        if "search" not in top:
            raise self.fail(root, "missing key 'search' (the space to explore)")
        node = top["search"]
        items = self.mapping(node, "the search space", SPACE_KEYS)
        name = scalar_value(self.file, items["name"]) if "name" in items else None
        if not isinstance(name, str) or not NAME.fullmatch(name) or len(name) > 100:
            raise self.fail(
                items.get("name", node),
                "a search space needs a 'name' of at most 100 letters, digits, '-', '_' and '.' (it names the files "
                "written)",
            )
        fixed = {k: self.fixed(items[k], k) for k in SPACE_FIXED_KEYS if k in items}
        if "fn" in items:
            misplaced = [k for k in items if k in SPACE_SELECT_N_KEYS and k not in SPACE_FUNCTION_KEYS]
            if misplaced:
                raise self.fail(
                    items[misplaced[0]],
                    f"'{misplaced[0]}' belongs to select_n spaces; "
                    f"a space with 'fn' takes {', '.join(SPACE_FUNCTION_KEYS)}",
                )
            fn = self.function(items["fn"])
            if "inputs" not in items:
                raise self.fail(node, "a function space needs 'inputs': a list of {dtype, shape, value} ranges")
            inputs = tuple(self.input(n) for n in sequence_items(self.file, items["inputs"], "'inputs'"))
            if not inputs:
                raise self.fail(items["inputs"], "'inputs' needs at least one input range")
            axes: dict[str, Axis] = {k: self.axis(items[k], k) for k in ("bind", "order", "seed") if k in items}
            return Space(name=name, file=self.file, axes=axes, fn=fn, inputs=inputs, fixed=fixed)
        for key in ("selector", "cases", "shape"):
            if key not in items:
                raise self.fail(node, f"a select_n space needs '{key}' (or 'fn' and 'inputs' for a function space)")
        selector = self.mapping(items["selector"], "the selector", SPACE_SELECTOR_KEYS)
        for key in ("dtype", "value"):
            if key not in selector:
                raise self.fail(items["selector"], f"the selector needs '{key}'")
        axes = {f"selector.{k}": self.axis(v, f"selector.{k}") for k, v in selector.items()}
        if not any(
            dtype == "bool" or _holds(dtype, axes["selector.value"]) for dtype in axes["selector.dtype"].choices
        ):
            raise self.fail(
                selector["value"],
                f"no selector dtype of {', '.join(axes['selector.dtype'].choices)} can hold these values",
            )
        axes.update({k: self.axis(items[k], k) for k in SPACE_SELECT_N_KEYS if k in items and k != "selector"})
        return Space(name=name, file=self.file, axes=axes, fixed=fixed)

    def fixed(self, node: yaml.Node, key: str):
        """eps (a number > 0) and tolerance ({rtol, atol}) hold one value for every scenario."""
        value = self.plain(node)
        if key == "eps" and (isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf):
            raise self.fail(node, f"'eps' is one number > 0 for every scenario; got {kind_name(node)}")
        if key == "tolerance" and not (
            isinstance(value, dict)
            and set(value) <= {"rtol", "atol"}
            and all(
                isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < math.inf for v in value.values()
            )
        ):
            raise self.fail(
                node, f"'tolerance' is one {{rtol, atol}} of numbers >= 0 for every scenario; got {kind_name(node)}"
            )
        return value

    def function(self, node: yaml.Node) -> str:
        """`module:function`, importable from the space file's folder."""
        spec = scalar_value(self.file, node)
        if not isinstance(spec, str) or ":" not in spec:
            raise self.fail(node, f"'fn' must be 'module:function', got {kind_name(node)}")
        try:
            resolve_checked(spec, str(Path(self.file).parent), self.user_code)
        except FunctionImportError as exc:
            raise self.fail(
                node, f"{exc}" + (f" (modules are imported from {Path(self.file).parent})" if self.user_code else "")
            ) from None
        return spec

    def input(self, node: yaml.Node) -> dict[str, Axis]:
        items = self.mapping(node, "an input range", SPACE_INPUT_KEYS)
        if "dtype" not in items:
            raise self.fail(node, "an input range needs 'dtype' (one or a list of dtypes)")
        return {k: self.axis(v, f"input.{k}") for k, v in items.items()}


def _holds(dtype: str, values: Axis) -> bool:
    """Whether an integer dtype can hold some of these selector values."""
    low, high = dtypes.integer_range(dtype)
    if values.is_range:
        assert values.minimum is not None and values.maximum is not None, "a range has both bounds (_SpaceReader.axis)"
        return max(low, values.minimum) <= min(high, values.maximum)
    return any(low <= v <= high for v in values.choices)


def _keys(node: yaml.MappingNode) -> list[str]:
    return [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]


def read_space(path: Path, user_code: bool = True) -> Space:
    """The space in `path`; SpaceError with file:line:col messages when it cannot be searched (a
    function space among them when `user_code` is false: nothing of it is imported)."""
    display = str(path)
    try:
        root, errors = parse_file(path, display)
        if errors:
            raise SpaceError(errors)
        return _SpaceReader(display, user_code).read(root)
    except InvalidInput as exc:
        raise SpaceError([exc.error]) from None
    except RecursionError:
        raise SpaceError([InputError(Location(display, 1, 1), "YAML nested too deeply")]) from None


# --- drawing scenarios ------------------------------------------------------------------------


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
        dtype = draw(st.sampled_from([d for d in axes["selector.dtype"].choices if d == "bool" or _holds(d, values)]))
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


# --- the search -------------------------------------------------------------------------------


class InvalidDraw(Exception):
    """Raised by a search's `audit` for a drawn scenario that asks nothing (the function rejects its
    own inputs): skipped and counted, like one the loader rejects."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Disagreement(Exception):
    """A drawn scenario of the kind being shrunk."""

    def __init__(self, entry: dict, result: ScenarioResult):
        super().__init__(f"{result.status}: {', '.join(kind_of(result)[1])}")
        self.entry = entry
        self.result = result


def search(
    space: SearchSpace,
    budget: int,
    seed: int,
    audit: Callable[..., ScenarioResult],
    database: Path | None,
    on_progress: Callable[[str], None] = lambda message: None,
    limits: Limits | None = None,
    storage: Path | None = None,
    audit_all: Callable[[list[Scenario]], Iterable[ScenarioResult | InvalidDraw]] | None = None,
) -> SearchOutcome:
    """Explore, then shrink each kind of disagreement found; `audit(scenario)` judges one scenario
    (or raises InvalidDraw), `audit_all(scenarios)` many at once (several workers), in order.

    Exploring audits the space's sweep, then `budget` more distinct valid scenarios drawn by
    hypothesis (fewer only when the space holds fewer), and notes the first of each kind. The
    draws are made first and audited together afterwards: hypothesis sees a draw's outcome
    (valid or not) before it is audited, so any that the audit finds invalid (an InvalidDraw) sends
    hypothesis back to draw again, from the start, with those known; its draws repeat up to there,
    and the search is the one a draw-audit-draw loop makes, however many workers audit. Then, per kind,
    hypothesis runs again with the same seed, so it draws the same scenarios (their audits are
    remembered) until the first of that kind, which fails, and shrinks it while the kind holds.
    Two phases rather than hypothesis's own multiple-bug mode, whose generation stops on a clock
    ten seconds after the first failure: this way the same seed gives the same search.
    Hypothesis keeps its own files in `storage` (under .gradaudit/), not in ./.hypothesis.

    The limits are checked here without tracing users' functions (which could hang, or crash this
    process): `audit` checks those that need tracing, under its timeout (the literal engine with
    limits), and answers a draw over them with a LIMIT_EXCEEDED error, taken as an invalid draw.
    """
    with _hypothesis_home(storage), _fresh_hypothesis():
        return _search(space, budget, seed, audit, audit_all or _one_by_one(audit), database, on_progress, limits)


def _one_by_one(
    audit: Callable[..., ScenarioResult],
) -> Callable[[list[Scenario]], Iterator[ScenarioResult | InvalidDraw]]:
    def audit_all(scenarios: list[Scenario]) -> Iterator[ScenarioResult | InvalidDraw]:
        for scenario in scenarios:
            try:
                yield audit(scenario)
            except InvalidDraw as exc:
                yield exc

    return audit_all


@contextmanager
def _hypothesis_home(folder: Path | None) -> Iterator[None]:
    """Hypothesis's home folder set to `folder` for the search only, then restored."""
    from hypothesis import configuration

    if folder is None:
        yield
        return
    previous = configuration.storage_directory(intent_to_write=False).home_directory
    configuration.set_hypothesis_home_dir(folder.resolve())
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)


@contextmanager
def _fresh_hypothesis() -> Iterator[None]:
    """Hypothesis as a fresh process has it, so that one seed gives one search whatever the process
    did before (another function surveyed first, `--jobs 0` importing the engines). Two things of
    its internals carry over otherwise: strategies it caches between tests keep state that changes
    later draws (the same search twice in one process drew differently from its seventh draw on),
    and from 6.131 on it draws now and then a constant found in the source of any "local" module
    imported so far (this package installed editable, a user's project). For the search, its
    strategy cache starts empty and it sees no local constants (its global ones stay). Where its
    internals are not as expected, they are left alone. And its weakly held caches empty when the
    garbage collector runs, which depends on everything the process allocated before (importing a
    module of three functions changed a search's draws): the collector runs before the search and
    not during it (cyclic garbage waits until the search ends)."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.strategies._internal import utils
    except ImportError:
        yield
        return
    clear_strategies = getattr(utils, "clear_strategy_cache", lambda: None)
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        with _without_local_constants(providers):
            clear_strategies()
            try:
                yield
            finally:
                clear_strategies()
    finally:
        if collecting:
            gc.enable()


@contextmanager
def _without_local_constants(providers) -> Iterator[None]:
    """Hypothesis's local constants (see `_fresh_hypothesis`) kept out while this lasts."""
    original = getattr(providers, "_get_local_constants", None)
    cache = getattr(getattr(providers, "CONSTANTS_CACHE", None), "cache", None)
    constants = getattr(providers, "Constants", None)
    if original is None or constants is None or not isinstance(cache, dict):
        yield
        return
    none = constants()
    providers._get_local_constants = lambda: none
    cache.clear()  # permitted constants per kind of choice, computed with the local ones
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.clear()


def _search(space, budget, seed, audit, audit_all, database, on_progress, limits) -> SearchOutcome:
    from hypothesis import HealthCheck, Phase, Verbosity, example, given, reject, settings
    from hypothesis import seed as seeded
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Unsatisfiable

    outcome = SearchOutcome()
    loaded: dict[str, Scenario | None] = {}
    """Each drawn scenario's text: the scenario, or None where it is invalid (or over the limits)."""
    judged: dict[str, ScenarioResult | None] = {}
    """Each audited scenario's text: its result, or None where the audit found the draw invalid."""

    over: dict[tuple, str] = {}
    """Why draws of each `Scenario.limits_key` are over the limits, once an audit found one that is."""

    def load(text: str) -> Scenario | None:
        if text not in loaded:
            errors: Sequence[InputError]
            scenarios, errors = load_text(text, space.file)
            if scenarios and not errors and limits is not None:
                errors = check_limits(scenarios, limits, trace=False)
            key = scenarios[0].limits_key() if scenarios and not errors else None
            known = over.get(key) if key is not None else None
            loaded[text] = scenarios[0] if scenarios and not errors and known is None else None
            if loaded[text] is None:
                outcome.skipped[known or (_reason(str(errors[0].message)) if errors else "no scenario")] += 1
        return loaded[text]

    def settle(texts: list[str]) -> None:
        """Audit `texts` (valid, not yet audited), all at once."""
        for number, (text, result) in enumerate(zip(texts, audit_all([loaded[t] for t in texts]), strict=True), 1):
            if (
                isinstance(result, ScenarioResult)
                and result.findings
                and result.findings[0].error_type == LIMIT_EXCEEDED
            ):
                result = InvalidDraw(result.findings[0].message)
                scenario = loaded[text]
                assert scenario is not None, "only scenarios that loaded are audited"
                key = scenario.limits_key()
                if key is not None:
                    over[key] = _reason(result.message)  # every draw of that key is, too: no more audits of them
            judged[text] = None if isinstance(result, InvalidDraw) else result
            if isinstance(result, InvalidDraw):
                outcome.skipped[_reason(result.message)] += 1
            on_progress(f"{number} of {len(texts)} drawn scenarios audited")

    def evaluate(entry: dict) -> ScenarioResult:
        text = scenario_text(entry)
        if load(text) is not None and text not in judged:
            settle([text])
        result = judged.get(text) if loaded[text] is not None else None
        if result is None:
            reject()
        return result

    def run(test: Callable, phases: tuple, folder: Path | None, examples: int = budget) -> None:
        test = given(space.strategy())(test)
        if Phase.explicit in phases:
            for entry in reversed(space.sweep()):  # `example` decorators run innermost first
                test = example(entry)(test)
        settings(
            max_examples=examples,
            database=DirectoryBasedExampleDatabase(str(folder)) if folder else None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            phases=phases,
            verbosity=Verbosity.quiet,
            print_blob=False,
        )(seeded(seed)(test))()

    swept = {scenario_text(entry) for entry in space.sweep()}
    total = budget + len(swept)
    drawn: dict[str, dict] = {}
    """The distinct valid draws of the last pass, in the order drawn."""

    def explore(entry: dict) -> None:
        if len(drawn) >= total:
            raise BudgetSpent  # hypothesis replays the example that stopped it: it stops there again
        outcome.tried += 1
        text = scenario_text(entry)
        if load(text) is None or (text in judged and judged[text] is None):
            reject()
        drawn.setdefault(text, entry)
        on_progress(f"{len(drawn)} of {total} scenarios drawn")

    while True:
        drawn.clear()
        outcome.tried = 0
        try:
            # Draws that repeat a scenario, or are invalid, do not count: draw until `budget` distinct ones are audited.
            run(explore, (Phase.explicit, Phase.generate), None, examples=budget * EXPLORE_DRAWS)
        except (Unsatisfiable, BudgetSpent):
            pass
        new = [text for text in drawn if text not in judged]
        settle(new)
        if all(judged[text] is not None for text in new):
            break  # every draw hypothesis took as valid was: the pass stands
    outcome.audited = len(drawn)
    first: dict[FoundKind, tuple[dict, ScenarioResult]] = {}
    for text, entry in drawn.items():
        result = judged[text]
        assert result is not None, "the last pass drew only scenarios audited as valid"
        if result.status != CONSISTENT:
            first.setdefault(kind_of(result), (entry, result))
    if not outcome.audited:
        reasons = "; ".join(f"{reason}: {n}" for reason, n in outcome.skipped.most_common(3)) or "none could be drawn"
        outcome.problem = f"no valid scenario could be drawn from this space ({reasons})"
        return outcome

    def shrinker(kind: FoundKind, number: int, audits: list[int]) -> Callable[[dict], None]:
        def shrink(entry: dict) -> None:
            outcome.shrinking += 1
            on_progress(f"shrinking kind {number} of {len(first)}: {outcome.shrinking} scenarios tried")
            if scenario_text(entry) not in judged:
                if audits[0] >= SHRINK_AUDITS:
                    return  # out of audits: only scenarios already audited count now, so hypothesis settles
                audits[0] += 1
            result = evaluate(entry)
            if result.status != CONSISTENT and kind_of(result) == kind:
                raise Disagreement(entry, result)

        return shrink

    for number, kind in enumerate(sorted(first), 1):
        entry, result = first[kind]
        if scenario_text(entry) in swept:
            outcome.found.append(Found(kind, entry, result, shrunk=False, swept=True))
            continue
        folder = database / hashlib.sha256(repr(kind).encode()).hexdigest()[:16] if database else None
        audits = [0]
        try:
            run(shrinker(kind, number, audits), (Phase.reuse, Phase.generate, Phase.shrink), folder)
        except Disagreement as minimal:
            outcome.found.append(Found(kind, minimal.entry, minimal.result, audits=audits[0]))
        else:
            outcome.found.append(Found(kind, entry, result, shrunk=False, audits=audits[0]))
    return outcome


SHRINK_AUDITS = 60
"""New audits shrinking one kind may make: past them, hypothesis settles on the smallest scenario of
the kind audited so far. A count, not seconds, so that a loaded machine shrinks as far as an idle
one and the same seed writes the same files (a kind that hangs costs a whole timeout an audit)."""


class BudgetSpent(Exception):
    """Raised into hypothesis once the budget of distinct scenarios is audited, to stop its drawing."""


EXPLORE_DRAWS = 10
"""Draws hypothesis may make per scenario of the budget, so repeats and invalid draws cannot shorten
the search; a space with fewer distinct valid scenarios ends when hypothesis has drawn them all."""


def _reason(message: str) -> str:
    """A skip reason without the scenario's name, so that equal reasons count together."""
    return re.sub(r"^scenario '[^']*' ", "", message)


def confirm(outcome: SearchOutcome, space: SearchSpace, audit: Callable[..., ScenarioResult]) -> None:
    """Each minimal scenario audited again by `audit` (the literal path), whose result is what is
    reported; one the literal path finds consistent is set aside as unconfirmed."""
    confirmed: list[Found] = []
    for found in outcome.found:
        scenarios, _ = load_text(scenario_text(found.entry), space.file)
        found.result = audit(scenarios[0])
        (confirmed if found.result.status != CONSISTENT else outcome.unconfirmed).append(found)
    outcome.found = confirmed


def database_folder(space_path: Path, rule: str, storage: Path) -> Path:
    """Where hypothesis keeps this space's examples: one folder per space file content and rule."""
    digest = hashlib.sha256(space_path.read_bytes() + rule.encode()).hexdigest()[:16]
    return storage / "examples" / digest


FOUND_HEADER = "# Found by `gradaudit "
"""How a file written by a search or a survey begins (`how` is the command, in backquotes)."""


def _numbered(out: Path, name: str) -> list[Path]:
    """The files a search of space `name` writes in `out`: `<name>-<n>.yaml`."""
    pattern = re.compile(re.escape(name) + r"-[0-9]+\.yaml")
    return [path for path in out.glob(f"{name}-*.yaml") if pattern.fullmatch(path.name)]


def foreign_files(out: Path, name: str) -> list[Path]:
    """Files in `out` with the names a search of `name` writes that no search wrote: never overwritten."""
    return [
        path
        for path in _numbered(out, name)
        if not path.read_text(encoding="utf-8", errors="replace").startswith(FOUND_HEADER)
    ]


def write_found(outcome: SearchOutcome, space: SearchSpace, out: Path, how: str) -> list[Path]:
    """Each minimal scenario as `out/<space name>-<n>.yaml`, with a comment saying how it was found."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in _numbered(out, space.name):
        # an earlier search's file of this space (foreign_files refused any other): its kinds may be gone
        stale.unlink()
    home = Path(space.file).parent.resolve()
    modules = os.path.relpath(home, out.resolve()) if space.fn and home != out.resolve() else None
    written = []
    for number, found in enumerate(outcome.found, 1):
        name = f"{space.name}-{number}"
        entry = {**found.entry, "name": name}
        status = found.result.status
        if found.swept:
            shrunk = "as the edge sweep drew it: the plainest case with one edge changed"
        elif found.shrunk and found.audits >= SHRINK_AUDITS:
            shrunk = f"shrunk by hypothesis until its {SHRINK_AUDITS} audits were spent (perhaps short of minimal)"
        elif found.shrunk:
            shrunk = "shrunk by hypothesis to this minimal scenario"
        else:
            shrunk = "not shrunk (hypothesis did not meet it again)"
        lines = [f"# Found by {how}", f"# and {shrunk}.", f"# Status: {status}. Findings:"]
        lines += [f"#   {f.fingerprint}: {f.message}" for f in found.result.findings]
        path = out / f"{name}.yaml"
        path.write_text(scenario_text(entry, "\n".join(lines) + "\n", modules), encoding="utf-8")
        written.append(path)
    return written
