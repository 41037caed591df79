"""A space file read: each key a list of alternatives, a `{min, max}` range or one value (`read_space`),
with what every key may hold from `model.fields`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from gradaudit.model import dtypes, fields
from gradaudit.model.errors import InputError, InvalidInput, Location
from gradaudit.model.fields import Rule
from gradaudit.model.scenario import FunctionCall, SelectN
from gradaudit.sources.scenario_files import MAX_DEPTH
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
        from gradaudit.search.drawing import scenario_strategy  # drawing reads spaces: imported when drawn

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
        if not any(dtype == "bool" or holds(dtype, axes["selector.value"]) for dtype in axes["selector.dtype"].choices):
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


def holds(dtype: str, values: Axis) -> bool:
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
