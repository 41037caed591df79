"""The Scenario model and its loading from YAML, with every input error reported as file:line:col.

Loading knows nothing of JAX transforms: it turns files into validated, frozen Scenarios, or into a
complete list of what is wrong with them, so that nothing runs on half-valid input.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from gradaudit import dtypes
from gradaudit.yaml_nodes import (
    InputError,
    InvalidInput,
    Location,
    kind_name,
    mapping_items,
    node_location,
    parse_file,
    scalar_value,
    sequence_items,
)

NestedValue = Any
"""A scalar or a (rectangular) nested list of scalars, as written in YAML."""


@dataclass(frozen=True)
class Selector:
    """The discrete input of `select_n`: held constant, never differentiated."""

    dtype: str
    value: NestedValue

    def array(self) -> np.ndarray:
        return np.asarray(self.value, dtype=dtypes.numpy_dtype(self.dtype))


@dataclass(frozen=True)
class Tolerance:
    """Allowed difference between AD and finite differences: |ad - fd| <= atol + rtol * |fd|."""

    rtol: float
    atol: float


@dataclass(frozen=True)
class Scenario:
    """One question put to every derivative path."""

    name: str
    source: Location
    selector: Selector
    cases: int
    shape: tuple[int, ...]
    dtype: str
    seed: int = 0
    tolerance: Tolerance | None = None
    """None: the dtype's default (see `dtypes.default_tolerance`)."""
    eps: float | None = None
    """Finite-difference step relative to max(1, |x|); None: the dtype's default."""
    values: tuple[NestedValue, ...] | None = None
    """Explicit case values, one per case; None: deterministic, pairwise distinct values from `seed`."""
    order: int = 1
    """Highest derivative order checked: 2 adds the Hessian paths."""
    output: str = "identity"
    """What is applied to the selected value before differentiation (see OUTPUTS)."""

    def to_dict(self) -> dict:
        """The normalized scenario, as loaded, for reports."""
        return {
            "name": self.name,
            "selector": {"dtype": self.selector.dtype, "value": self.selector.value},
            "cases": self.cases,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "seed": self.seed,
            "tolerance": None if self.tolerance is None else {"rtol": self.tolerance.rtol, "atol": self.tolerance.atol},
            "eps": self.eps,
            "values": None if self.values is None else list(self.values),
            "order": self.order,
            "output": self.output,
        }


@dataclass
class LoadResult:
    """Everything loaded from the given paths: the valid scenarios and every input error."""

    scenarios: list[Scenario] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


TOP_LEVEL_KEYS = ("defaults", "scenarios")
SCENARIO_KEYS = ("name", "selector", "cases", "shape", "dtype", "seed", "tolerance", "eps", "values", "order", "output")
REQUIRED_KEYS = ("name", "selector", "cases", "shape", "dtype")
DEFAULT_KEYS = tuple(k for k in SCENARIO_KEYS if k != "name")
SELECTOR_KEYS = ("dtype", "value")
TOLERANCE_KEYS = ("rtol", "atol")
YAML_SUFFIXES = (".yaml", ".yml")
ORDERS = (1, 2)
OUTPUTS = ("identity", "square", "sum_of_squares")
"""identity: the selected value; square: its elementwise square; sum_of_squares: the sum of those squares."""


def _did_you_mean(word: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, allowed, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _allowed(allowed: Sequence[str]) -> str:
    return ", ".join(allowed)


class _FileChecker:
    """Validates one file's nodes, collecting every error instead of stopping at the first."""

    def __init__(self, display: str):
        self.file = display
        self.errors: list[InputError] = []

    def error(self, node: yaml.Node, message: str) -> None:
        self.errors.append(InputError(node_location(self.file, node), message))

    def fail(self, node: yaml.Node, message: str) -> InvalidInput:
        return InvalidInput(InputError(node_location(self.file, node), message))

    def mapping(self, node: yaml.Node, what: str, allowed: Sequence[str]) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        items, errors = mapping_items(self.file, node, what)
        self.errors.extend(errors)
        for key in list(items):
            if key not in allowed:
                key_node = items.pop(key)[0]
                self.error(
                    key_node,
                    f"unknown key '{key}' in {what}{_did_you_mean(key, allowed)} (allowed: {_allowed(allowed)})",
                )
        return items

    def checked(self, check: Callable[[yaml.Node], Any], node: yaml.Node) -> Any:
        """Run one field's check; on failure record the error and return None."""
        try:
            return check(node)
        except InvalidInput as exc:
            self.errors.append(exc.error)
            return None

    # --- scalar checks ---------------------------------------------------------------------

    def integer(self, node: yaml.Node, what: str, minimum: int | None = None) -> int:
        value = scalar_value(self.file, node)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, f"{what} must be an integer, got {kind_name(node)}")
        if minimum is not None and value < minimum:
            raise self.fail(node, f"{what} must be >= {minimum}, got {value}")
        return value

    def number(self, node: yaml.Node, what: str, positive: bool = False, signed: bool = False) -> float:
        value = scalar_value(self.file, node)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(node, f"{what} must be a number, got {kind_name(node)}")
        value = float(value)
        if not np.isfinite(value):
            raise self.fail(node, f"{what} must be finite, got {value}")
        if (value < 0 and not signed) or (positive and value == 0):
            raise self.fail(node, f"{what} must be {'> 0' if positive else '>= 0'}, got {value:g}")
        return value

    def choice(self, node: yaml.Node, what: str, allowed: Sequence[str]) -> str:
        value = scalar_value(self.file, node)
        if not isinstance(value, str) or value not in allowed:
            shown = value if isinstance(value, str) else kind_name(node)
            hint = _did_you_mean(value, allowed) if isinstance(value, str) else ""
            raise self.fail(node, f"{what} must be one of {_allowed(allowed)}, got '{shown}'{hint}")
        return value

    def nested(self, node: yaml.Node, what: str, element: Callable[[yaml.Node], Any]) -> tuple[NestedValue, tuple[int, ...]]:
        """A scalar or rectangular nested list, each leaf checked by `element`; returns (value, shape)."""
        if not isinstance(node, yaml.SequenceNode):
            return element(node), ()
        items = sequence_items(self.file, node, what)
        parts = [self.nested(item, what, element) for item in items]
        shapes = {shape for _, shape in parts}
        if len(shapes) > 1:
            shown = " and ".join(str(list(shape)) for shape in sorted(shapes))
            raise self.fail(node, f"{what} is not rectangular: its rows have shapes {shown}")
        inner = shapes.pop() if shapes else ()
        return [value for value, _ in parts], (len(parts), *inner)


class _ScenarioFile:
    """Turns one parsed file into Scenarios."""

    def __init__(self, display: str):
        self.check = _FileChecker(display)
        self.file = display
        self.names: list[tuple[str, Location]] = []
        """Every valid name with its scenario's location, invalid scenarios included."""

    def load(self, root: yaml.Node | None) -> list[Scenario]:
        check = self.check
        if root is None:
            check.errors.append(
                InputError(Location(self.file, 1, 1), "empty file: expected a mapping with a 'scenarios' list")
            )
            return []
        try:
            top = check.mapping(root, "the file", TOP_LEVEL_KEYS)
        except InvalidInput as exc:
            check.errors.append(exc.error)
            return []
        defaults: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        if "defaults" in top:
            defaults = check.checked(lambda n: check.mapping(n, "defaults", DEFAULT_KEYS), top["defaults"][1]) or {}
        if "scenarios" not in top:
            check.error(root, "missing key 'scenarios': a list of scenarios to audit")
            return []
        entries = check.checked(lambda n: sequence_items(self.file, n, "'scenarios'"), top["scenarios"][1])
        if entries is None:
            return []
        if not entries:
            check.error(top["scenarios"][1], "'scenarios' is empty: nothing to audit")
        scenarios = []
        for entry in entries:
            scenario = self.scenario(entry, defaults)
            if scenario is not None:
                scenarios.append(scenario)
        return scenarios

    def scenario(self, node: yaml.Node, defaults: dict[str, tuple[yaml.Node, yaml.Node]]) -> Scenario | None:
        check = self.check
        errors_before = len(check.errors)
        try:
            own = check.mapping(node, "a scenario", SCENARIO_KEYS)
        except InvalidInput as exc:
            check.errors.append(exc.error)
            return None
        items = {**defaults, **own}
        missing = [key for key in REQUIRED_KEYS if key not in items]
        if missing:
            names = ", ".join(f"'{k}'" for k in missing)
            check.error(node, f"scenario is missing {names} (required: {_allowed(REQUIRED_KEYS)})")
        value = {key: value_node for key, (_, value_node) in items.items()}

        def get(key: str, fn: Callable[[yaml.Node], Any]) -> Any:
            return check.checked(fn, value[key]) if key in value else None

        name = get("name", self.name)
        if name is not None:
            self.names.append((name, node_location(self.file, node)))
        cases = get("cases", lambda n: check.integer(n, "cases", minimum=1))
        shape = get("shape", self.shape)
        dtype = get("dtype", lambda n: check.choice(n, "dtype", dtypes.FLOAT_DTYPES))
        selector = get("selector", lambda n: self.selector(n, cases, shape))
        seed = get("seed", lambda n: check.integer(n, "seed", minimum=0))
        tolerance = get("tolerance", self.tolerance)
        eps = get("eps", lambda n: check.number(n, "eps", positive=True))
        values = get("values", lambda n: self.values(n, cases, shape))
        order = get("order", self.order)
        output = get("output", lambda n: check.choice(n, "output", OUTPUTS))
        if len(check.errors) > errors_before:
            return None
        return Scenario(
            name=name,
            source=node_location(self.file, node),
            selector=selector,
            cases=cases,
            shape=shape,
            dtype=dtype,
            seed=0 if seed is None else seed,
            tolerance=tolerance,
            eps=eps,
            values=values,
            order=1 if order is None else order,
            output="identity" if output is None else output,
        )

    def order(self, node: yaml.Node) -> int:
        value = scalar_value(self.file, node)
        if value not in ORDERS or isinstance(value, bool):
            raise self.check.fail(node, f"order must be 1 or 2, got {kind_name(node)}")
        return value

    def name(self, node: yaml.Node) -> str:
        value = scalar_value(self.file, node)
        if not isinstance(value, str) or not value.strip():
            raise self.check.fail(node, f"name must be a non-empty string, got {kind_name(node)}")
        return value

    def shape(self, node: yaml.Node) -> tuple[int, ...]:
        items = sequence_items(self.file, node, "shape")
        dims = []
        for item in items:
            value = scalar_value(self.file, item)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise self.check.fail(item, f"shape dimensions must be integers >= 0, got {kind_name(item)}")
            dims.append(value)
        return tuple(dims)

    def selector(self, node: yaml.Node, cases: int | None, shape: tuple[int, ...] | None) -> Selector:
        check = self.check
        items = check.mapping(node, "selector", SELECTOR_KEYS)
        missing = [key for key in SELECTOR_KEYS if key not in items]
        if missing:
            raise check.fail(node, f"selector is missing {', '.join(repr(k) for k in missing)} (required: dtype, value)")
        dtype_node = items["dtype"][1]
        dtype_value = scalar_value(self.file, dtype_node)
        if dtype_value in dtypes.FLOAT_DTYPES:
            raise check.fail(
                dtype_node,
                f"selector dtype must be bool or an integer dtype, got floating '{dtype_value}' "
                f"(allowed: {_allowed(dtypes.SELECTOR_DTYPES)})",
            )
        dtype = check.choice(dtype_node, "selector dtype", dtypes.SELECTOR_DTYPES)
        low, high = dtypes.integer_range(dtype)

        def element(item: yaml.Node) -> int | bool:
            value = scalar_value(self.file, item)
            if dtype == "bool":
                if not isinstance(value, bool):
                    raise check.fail(item, f"a bool selector value must be true or false, got {kind_name(item)}")
                return value
            if isinstance(value, bool) or not isinstance(value, int):
                raise check.fail(item, f"an {dtype} selector value must be an integer, got {kind_name(item)}")
            if not low <= value <= high:
                raise check.fail(item, f"selector value {value} is not representable in {dtype} ({low}..{high})")
            return value

        value, value_shape = check.nested(items["value"][1], "selector value", element)
        if dtype == "bool" and cases is not None and cases > 2:
            raise check.fail(
                items["dtype"][1], f"a bool selector chooses between at most 2 cases, but cases is {cases}; use an integer dtype"
            )
        if shape is not None and value_shape not in ((), shape):
            raise check.fail(
                items["value"][1],
                f"selector value has shape {list(value_shape)}; it must be a scalar or the case shape {list(shape)}",
            )
        return Selector(dtype=dtype, value=value)

    def tolerance(self, node: yaml.Node) -> Tolerance:
        items = self.check.mapping(node, "tolerance", TOLERANCE_KEYS)
        missing = [key for key in TOLERANCE_KEYS if key not in items]
        if missing:
            raise self.check.fail(node, f"tolerance is missing {', '.join(repr(k) for k in missing)} (required: rtol, atol)")
        return Tolerance(
            rtol=self.check.number(items["rtol"][1], "rtol"),
            atol=self.check.number(items["atol"][1], "atol"),
        )

    def values(self, node: yaml.Node, cases: int | None, shape: tuple[int, ...] | None) -> tuple[NestedValue, ...]:
        entries = sequence_items(self.file, node, "values")
        if cases is not None and len(entries) != cases:
            raise self.check.fail(node, f"values lists {len(entries)} cases, but cases is {cases}")

        def element(item: yaml.Node) -> float:
            return self.check.number(item, "a case value", signed=True)

        result = []
        for entry in entries:
            value, value_shape = self.check.nested(entry, "a case value", element)
            if shape is not None and value_shape != shape:
                raise self.check.fail(entry, f"a case value has shape {list(value_shape)}, but shape is {list(shape)}")
            result.append(value)
        return tuple(result)


def collect_files(paths: Iterable[str]) -> tuple[list[Path], list[InputError]]:
    """Files to load: named files as given, folders searched recursively for *.yaml and *.yml, sorted."""
    files: list[Path] = []
    errors: list[InputError] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file())
            if not found:
                errors.append(InputError(Location(raw, 1, 1), "no *.yaml or *.yml files in this folder: nothing to audit"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            errors.append(InputError(Location(raw, 1, 1), "no such file or folder"))
    unique = list(dict.fromkeys(files))
    return unique, errors


def load_paths(paths: Iterable[str]) -> LoadResult:
    """Load and validate every scenario under `paths`, reporting every problem in every file."""
    files, errors = collect_files(paths)
    result = LoadResult(errors=errors)
    seen: dict[str, Location] = {}
    for path in files:
        display = str(path)
        result.files.append(display)
        loader = _ScenarioFile(display)
        try:
            root, errors = parse_file(path, display)
        except InvalidInput as exc:
            result.errors.append(exc.error)
            continue
        scenarios = loader.load(root)
        errors += loader.check.errors
        for name, location in loader.names:
            if name in seen:
                errors.append(InputError(location, f"duplicate scenario name '{name}' (first defined at {seen[name]})"))
            else:
                seen[name] = location
        result.errors.extend(sorted(errors, key=lambda e: (e.location.line, e.location.col)))
        duplicated = {e.location for e in errors}
        result.scenarios.extend(s for s in scenarios if s.source not in duplicated)
    if not result.errors and not result.scenarios:
        where = result.files[0] if result.files else "."
        result.errors.append(InputError(Location(where, 1, 1), "nothing to audit: no scenarios were found"))
    return result
