"""Loading scenarios from YAML, with every input error reported as file:line:col.

Every file is validated completely before anything runs: each problem in each file becomes an
InputError with what is allowed, so a user fixes them all in one round.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from gradaudit.model import dtypes, fields
from gradaudit.model.errors import InputError, InvalidInput, Location, did_you_mean
from gradaudit.model.scenario import (
    EXPECTED_STATUSES,
    FILLS,
    TARGET_KINDS,
    Expectation,
    FunctionCall,
    InputSpec,
    NestedValue,
    Scenario,
    SelectN,
    Selector,
    Tolerance,
)
from gradaudit.sources.sweep import (
    FIELD,
    FIXED,
    SWEEP_KEYS,
    SWEPT,
    combinations,
    skipped_summary,
)
from gradaudit.sources.user_modules import FunctionImportError, definition, resolve_checked
from gradaudit.sources.yaml_nodes import (
    kind_name,
    mapping_items,
    node_location,
    parse_file,
    parse_text,
    scalar_value,
    sequence_items,
)


@dataclass
class LoadResult:
    """Everything loaded from the given paths: the valid scenarios and every input error."""

    scenarios: list[Scenario] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What loading decided without an error: sweep sizes and the combinations it skipped."""


TOP_LEVEL_KEYS = ("defaults", "scenarios", "sweep", "modules")
COMMON_KEYS = fields.shared()
SELECT_N_KEYS = tuple(k for k in fields.keys(SelectN) if k not in COMMON_KEYS)
FUNCTION_KEYS = tuple(k for k in fields.keys(FunctionCall) if k not in COMMON_KEYS)
SCENARIO_KEYS = fields.keys()
REQUIRED_KEYS = {kind: fields.keys(kind, required=True) for kind in TARGET_KINDS}
KIND_KEYS = {kind: fields.keys(kind) for kind in TARGET_KINDS}
DEFAULT_KEYS = tuple(k for k in SCENARIO_KEYS if k != "name")
SELECTOR_KEYS = ("dtype", "value")
TOLERANCE_KEYS = ("rtol", "atol")
INPUT_KEYS = ("dtype", "value", "shape", "fill", "seed", "held")
EXPECT_KEYS = ("status", "exception")
YAML_SUFFIXES = (".yaml", ".yml")
PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")
"""Files a newcomer may hand `run` that are not scenario files: refused saying what to do instead."""
MAX_DEPTH = 32
"""Deepest nesting of a value list."""
MAX_LEAVES = 1_000_000
"""Most elements one value may have once YAML aliases are expanded."""


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
                    f"unknown key '{key}' in {what}{did_you_mean(key, allowed)} (allowed: {_allowed(allowed)})",
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

    def number(
        self, node: yaml.Node, what: str, positive: bool = False, signed: bool = False, finite: bool = True
    ) -> float:
        value = scalar_value(self.file, node)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(node, f"{what} must be a number, got {kind_name(node)}")
        value = float(value)
        if not np.isfinite(value):
            if not finite:
                return value
            raise self.fail(node, f"{what} must be finite, got {value}")
        if (value < 0 and not signed) or (positive and value == 0):
            raise self.fail(node, f"{what} must be {'> 0' if positive else '>= 0'}, got {value:g}")
        return value

    def choice(self, node: yaml.Node, what: str, allowed: Sequence[str]) -> str:
        value = scalar_value(self.file, node)
        if not isinstance(value, str) or value not in allowed:
            shown = value if isinstance(value, str) else kind_name(node)
            hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
            raise self.fail(node, f"{what} must be one of {_allowed(allowed)}, got '{shown}'{hint}")
        return value

    def field(self, node: yaml.Node, key: str):
        """A scenario key's value, checked against its rule (`model.fields`)."""
        rule = fields.BY_KEY[key].rule
        if rule.kind == "integer":
            return self.integer(node, key, minimum=None if rule.minimum is None else int(rule.minimum))
        if rule.kind == "number":
            return self.number(node, key, positive=rule.strictly)
        if rule.kind == "choice" and all(isinstance(a, str) for a in rule.allowed):
            return self.choice(node, key, rule.allowed)
        value = scalar_value(self.file, node)
        if not rule.accepts(value):
            raise self.fail(node, f"{key} must be {rule.describe()}, got {kind_name(node)}")
        return value

    def discrete(self, node: yaml.Node, dtype: str, noun: str) -> int | bool:
        """A boolean, or an integer representable in `dtype`; `noun` names it ('selector', 'input')."""
        value = scalar_value(self.file, node)
        if dtype == "bool":
            if not isinstance(value, bool):
                raise self.fail(node, f"a bool {noun} value must be true or false, got {kind_name(node)}")
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, f"an {dtype} {noun} value must be an integer, got {kind_name(node)}")
        low, high = dtypes.integer_range(dtype)
        if not low <= value <= high:
            raise self.fail(node, f"{noun} value {value} is not representable in {dtype} ({low}..{high})")
        return value

    def nested(
        self, node: yaml.Node, what: str, element: Callable[[yaml.Node], Any]
    ) -> tuple[NestedValue, tuple[int, ...]]:
        """A scalar or rectangular nested list, each leaf checked by `element`; returns (value, shape).

        Aliases may make a list contain itself or expand exponentially: both are refused with
        the place named, before any work is done on them.
        """
        leaves = self._leaves(node, what, (), {})
        if leaves > MAX_LEAVES:
            raise self.fail(
                node, f"{what} has {leaves:,} elements once its YAML aliases are expanded (at most {MAX_LEAVES:,})"
            )
        return self._nested(node, what, element)

    def _leaves(self, node: yaml.Node, what: str, ancestors: tuple, memo: dict[int, int]) -> int:
        """How many scalars a value holds with aliases expanded, counting each shared node once."""
        if not isinstance(node, yaml.SequenceNode):
            return 1
        if any(node is ancestor for ancestor in ancestors):
            raise self.fail(node, f"{what} contains itself through a YAML alias")
        if len(ancestors) >= MAX_DEPTH:
            raise self.fail(node, f"{what} is nested more than {MAX_DEPTH} levels deep")
        if id(node) not in memo:
            memo[id(node)] = sum(self._leaves(item, what, (*ancestors, node), memo) for item in node.value)
        return memo[id(node)]

    def _nested(
        self, node: yaml.Node, what: str, element: Callable[[yaml.Node], Any]
    ) -> tuple[NestedValue, tuple[int, ...]]:
        if not isinstance(node, yaml.SequenceNode):
            return element(node), ()
        items = sequence_items(self.file, node, what)
        parts = [self._nested(item, what, element) for item in items]
        shapes = {shape for _, shape in parts}
        if len(shapes) > 1:
            shown = " and ".join(str(list(shape)) for shape in sorted(shapes))
            raise self.fail(node, f"{what} is not rectangular: its rows have shapes {shown}")
        inner = shapes.pop() if shapes else ()
        return [value for value, _ in parts], (len(parts), *inner)


class _ScenarioFile:
    """Turns one parsed file into Scenarios."""

    def __init__(self, display: str, suite: str, user_code: bool = True):
        self.check = _FileChecker(display)
        self.user_code = user_code
        """Whether `fn:` may import and run Python code (false: function scenarios are refused)."""
        self.file = display
        self.suite = suite
        self.names: list[tuple[str, Location]] = []
        """Every valid name with its scenario's location, invalid scenarios included."""
        self.notes: list[str] = []
        self.modules = Path(display).parent
        """The folder user modules (`fn: module:function`) are imported from: the file's, or its `modules` key."""

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
        if "modules" in top:
            check.checked(self.module_folder, top["modules"][1])
        defaults: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        if "defaults" in top:
            defaults = check.checked(lambda n: check.mapping(n, "defaults", DEFAULT_KEYS), top["defaults"][1]) or {}
        if "scenarios" not in top and "sweep" not in top:
            check.error(root, "missing key 'scenarios' (a list of scenarios to audit) or 'sweep' (a space of them)")
            return []
        scenarios = []
        if "scenarios" in top:
            entries = check.checked(lambda n: sequence_items(self.file, n, "'scenarios'"), top["scenarios"][1]) or []
            if not entries and isinstance(top["scenarios"][1], yaml.SequenceNode):
                check.error(top["scenarios"][1], "'scenarios' is empty: nothing to audit")
            for entry in entries:
                scenario = self.scenario(entry, defaults)
                if scenario is not None:
                    scenarios.append(scenario)
        if "sweep" in top:
            node = top["sweep"][1]
            for sweep in node.value if isinstance(node, yaml.SequenceNode) else [node]:
                scenarios += check.checked(lambda n: self.sweep(n, defaults), sweep) or []
        return scenarios

    def sweep(self, node: yaml.Node, defaults: dict[str, tuple[yaml.Node, yaml.Node]]) -> list[Scenario]:
        """Expand a sweep (see sweep.py); combinations that cannot be scenarios are skipped and counted."""
        check = self.check
        items = check.mapping(node, "a sweep", SWEEP_KEYS)
        if "name" not in items:
            raise check.fail(
                node, "a sweep needs a 'name' template, e.g. \"{selector.dtype}-{selector.value}-n{cases}\""
            )
        name_node = items["name"][1]
        if not isinstance(scalar_value(self.file, name_node), str):
            raise check.fail(name_node, f"a sweep's name must be a template string, got {kind_name(name_node)}")
        assert isinstance(name_node, yaml.ScalarNode), "scalar_value refused any other node"
        flat = {k: v[1] for k, v in items.items() if k not in ("name", "selector")}
        if "selector" in items:
            selector = check.mapping(items["selector"][1], "a sweep's selector", SELECTOR_KEYS)
            flat.update({f"selector.{k}": v[1] for k, v in selector.items()})
        axes: dict[str, list[yaml.Node]] = {}
        plain: dict[str, list] = {}
        fixed = {k: v for k, v in flat.items() if k in FIXED}
        errors_before = len(check.errors)
        for key in SWEPT:
            if key not in flat:
                continue
            alternatives = flat[key]
            if not isinstance(alternatives, yaml.SequenceNode) or not alternatives.value:
                raise check.fail(
                    alternatives,
                    f"in a sweep, '{key}' lists its alternatives, e.g. {key.split('.')[-1]}: [a, b]; got "
                    f"{kind_name(alternatives)}",
                )
            axes[key] = list(alternatives.value)
            plain[key] = [check.checked(functools.partial(self.alternative, key), n) for n in axes[key]]
        if len(check.errors) > errors_before:
            return []
        unknown = [m.group(1) for m in FIELD.finditer(name_node.value) if m.group(1) not in axes]
        if unknown:
            raise check.fail(
                name_node,
                f"the name template uses '{{{unknown[0]}}}', which the sweep does not sweep (swept: {', '.join(axes)})",
            )
        combos = combinations(name_node, axes, fixed, plain)
        names = Counter(c.name for c in combos)
        repeated = [n for n, count in names.items() if count > 1]
        if repeated:
            raise check.fail(
                name_node,
                f"the name template gives {names[repeated[0]]} combinations the name '{repeated[0]}': include every "
                "swept key",
            )
        scenarios: list[Scenario] = []
        skipped: Counter = Counter()
        for combo in combos:
            errors, names_before = check.errors, len(self.names)
            check.errors = []
            scenario = self.scenario(combo.node, defaults)
            problems, check.errors = check.errors, errors
            if scenario is None:
                skipped[problems[0].message if problems else "invalid"] += 1
                del self.names[names_before:]
            else:
                scenarios.append(scenario)
        self.notes.append(skipped_summary(str(node_location(self.file, node)), len(combos), skipped))
        return scenarios

    def alternative(self, key: str, node: yaml.Node):
        """One alternative of a swept key, checked on its own; its Python value names the combination."""
        check = self.check
        if key == "shape":
            return list(self.shape(node))
        if key == "selector.dtype":
            return check.choice(node, "selector dtype", dtypes.SELECTOR_DTYPES)
        if key == "selector.value":

            def element(item: yaml.Node):
                value = scalar_value(self.file, item)
                if not isinstance(value, int):
                    raise check.fail(item, f"a selector value must be an integer or a boolean, got {kind_name(item)}")
                return value

            return check.nested(node, "selector value", element)[0]
        return check.field(node, key)

    def scenario(self, node: yaml.Node, defaults: dict[str, tuple[yaml.Node, yaml.Node]]) -> Scenario | None:
        check = self.check
        errors_before = len(check.errors)
        try:
            own, errors = mapping_items(self.file, node, "a scenario")
            check.errors.extend(errors)
        except InvalidInput as exc:
            check.errors.append(exc.error)
            return None
        # A scenario's own keys decide its kind; a `fn` in defaults only applies to scenarios that say nothing else.
        kind: type[SelectN | FunctionCall]
        # The key that names what is differentiated decides first, so a key of the other kind is
        # reported as not applying, not as the whole scenario being the other kind.
        if "fn" in own or "selector" in own:
            kind = FunctionCall if "fn" in own else SelectN
        elif any(k in own for k in FUNCTION_KEYS):
            kind = FunctionCall
        elif any(k in own for k in SELECT_N_KEYS):
            kind = SelectN
        else:
            kind = FunctionCall if "fn" in defaults else SelectN
        allowed, described = KIND_KEYS[kind], kind.described
        for key in list(own):
            key_node = own[key][0]
            if key not in SCENARIO_KEYS:
                del own[key]
                check.error(
                    key_node,
                    f"unknown key '{key}' in a scenario{did_you_mean(key, allowed)} (allowed in {described}: "
                    f"{_allowed(allowed)})",
                )
            elif key not in allowed:
                check.error(key_node, f"'{key}' does not apply to {described} (allowed: {_allowed(allowed)})")
        # Defaults may serve both kinds in one file; keys of the other kind are simply not used.
        items = {**{k: v for k, v in defaults.items() if k in KIND_KEYS[kind]}, **own}
        missing = [key for key in REQUIRED_KEYS[kind] if key not in items]
        if missing:
            names = ", ".join(f"'{k}'" for k in missing)
            check.error(node, f"scenario is missing {names} (required: {_allowed(REQUIRED_KEYS[kind])})")
        value = {key: value_node for key, (_, value_node) in items.items() if key in KIND_KEYS[kind]}

        def get(key: str, fn: Callable[[yaml.Node], Any]) -> Any:
            return check.checked(fn, value[key]) if key in value else None

        name = get("name", self.name)
        if name is not None:
            self.names.append((name, node_location(self.file, node)))
        seed = get("seed", lambda n: check.field(n, "seed"))
        tolerance = get("tolerance", self.tolerance)
        eps = get("eps", lambda n: check.field(n, "eps"))
        order = get("order", lambda n: check.field(n, "order"))
        expect = get("expect", self.expectation)
        target = self.select_n(get) if kind is SelectN else self.function_call(get, 0 if seed is None else seed)
        if len(check.errors) > errors_before:
            return None
        return Scenario(
            name=name,
            source=node_location(self.file, node),
            target=target,
            seed=0 if seed is None else seed,
            tolerance=tolerance,
            eps=eps,
            order=1 if order is None else order,
            suite=self.suite,
            expect=expect,
            reduction=target.reduction,
        )

    def select_n(self, get: Callable[[str, Callable[[yaml.Node], Any]], Any]) -> SelectN:
        """A select_n scenario's target from its keys (`get` checks each and reads it, or gives None)."""
        check = self.check
        cases = get("cases", lambda n: check.field(n, "cases"))
        shape = get("shape", self.shape)
        return SelectN(
            selector=get("selector", lambda n: self.selector(n, cases, shape)),
            cases=cases,
            shape=shape,
            dtype=get("dtype", lambda n: check.field(n, "dtype")),
            values=get("values", lambda n: self.values(n, cases, shape)),
            output=get("output", lambda n: check.field(n, "output")) or "identity",
        )

    def function_call(self, get: Callable[[str, Callable[[yaml.Node], Any]], Any], seed: int) -> FunctionCall:
        """A function scenario's target from its keys (`get` as for `select_n`)."""
        fn = get("fn", self.function)
        return FunctionCall(
            fn=fn,
            root=str(self.modules),
            inputs=get("inputs", lambda n: self.inputs(n, seed)),
            bind=get("bind", lambda n: self.check.field(n, "bind")) or "both",
            kwargs=get("kwargs", self.kwargs) or (),
            defined_at=definition(fn, str(self.modules)) if fn else None,
            directions=get("directions", lambda n: self.check.field(n, "directions")) or 0,
        )

    def expectation(self, node: yaml.Node) -> Expectation:
        """`expect: mismatch`, or `expect: {status: error, exception: IndexError}`."""
        check = self.check
        if isinstance(node, yaml.MappingNode):
            items = check.mapping(node, "expect", EXPECT_KEYS)
            if "status" not in items:
                raise check.fail(node, f"expect needs a 'status' ({_allowed(EXPECTED_STATUSES)})")
            status = check.choice(items["status"][1], "expect status", EXPECTED_STATUSES)
            exception = None
            if "exception" in items:
                exception = scalar_value(self.file, items["exception"][1])
                if not isinstance(exception, str) or not exception.isidentifier():
                    raise check.fail(
                        items["exception"][1],
                        "exception must be an exception type name such as IndexError, got "
                        f"{kind_name(items['exception'][1])}",
                    )
                if status != "error":
                    raise check.fail(
                        items["exception"][1], f"an exception can only be expected with status 'error', not '{status}'"
                    )
            return Expectation(status=status, exception=exception)
        return Expectation(status=check.choice(node, "expect", EXPECTED_STATUSES))

    def module_folder(self, node: yaml.Node) -> None:
        """`modules: ../src`: import user modules from this folder (relative to the file, or absolute)."""
        value = scalar_value(self.file, node)
        if not isinstance(value, str) or not value:
            raise self.check.fail(node, f"'modules' must be a folder, relative to this file, got {kind_name(node)}")
        folder = Path(self.file).parent / value
        if not folder.is_dir():
            raise self.check.fail(node, f"'modules' names {folder}, which is not a folder")
        self.modules = folder

    def function(self, node: yaml.Node) -> str:
        spec = scalar_value(self.file, node)
        module, colon, attribute = spec.partition(":") if isinstance(spec, str) else ("", "", "")
        if not colon or not module or not attribute:
            raise self.check.fail(node, f"fn must be 'module:function' (e.g. 'losses:huber'), got {kind_name(node)}")
        try:
            resolve_checked(spec, str(self.modules), self.user_code)
        except FunctionImportError as exc:
            raise self.check.fail(
                node, f"{exc}" + (f" (modules are imported from {self.modules})" if self.user_code else "")
            ) from None
        return spec

    def kwargs(self, node: yaml.Node) -> tuple[tuple[str, Any], ...]:
        """`kwargs: {mode: clip, axis: 0}`: static keyword arguments, passed to the function as they are
        (plain values, or lists of them, which arrive as tuples)."""
        items, errors = mapping_items(self.file, node, "kwargs")
        self.check.errors.extend(errors)
        taken = []
        for key, (key_node, value_node) in items.items():
            if not key.isidentifier():
                self.check.error(key_node, f"kwargs keys must be keyword names, got '{key}'")
                continue
            value = self.check.checked(self._static, value_node)
            if value is not None or (isinstance(value_node, yaml.ScalarNode) and value_node.tag.endswith(":null")):
                taken.append((key, value))
        return tuple(taken)

    def _static(self, node: yaml.Node):
        if isinstance(node, yaml.SequenceNode):
            return tuple(self._static(item) for item in sequence_items(self.file, node, "a kwargs value"))
        return scalar_value(self.file, node)

    def inputs(self, node: yaml.Node, scenario_seed: int) -> tuple[InputSpec, ...]:
        entries = sequence_items(self.file, node, "inputs")
        specs = []
        for entry in entries:
            spec = self.check.checked(lambda n: self.input(n, scenario_seed), entry)
            specs.append(spec)
        if any(spec is None for spec in specs):
            return ()
        if not any(spec.differentiable for spec in specs):
            held = " not marked `held: true`" if any(spec.held for spec in specs) else ""
            raise self.check.fail(
                node,
                f"no input to differentiate: give at least one input of a floating dtype{held} "
                f"({_allowed(dtypes.FLOAT_DTYPES)})",
            )
        return tuple(specs)

    def input(self, node: yaml.Node, scenario_seed: int) -> InputSpec:
        check = self.check
        items = check.mapping(node, "an input", INPUT_KEYS)
        if "dtype" not in items:
            raise check.fail(node, f"an input needs a 'dtype' (one of {_allowed(dtypes.INPUT_DTYPES)})")
        dtype = check.choice(items["dtype"][1], "input dtype", dtypes.INPUT_DTYPES)
        shape = self.shape(items["shape"][1]) if "shape" in items else None
        seed = check.field(items["seed"][1], "seed") if "seed" in items else scenario_seed
        held = False
        if "held" in items:
            held = scalar_value(self.file, items["held"][1])
            if not isinstance(held, bool):
                raise check.fail(items["held"][1], f"held must be true or false, got {kind_name(items['held'][1])}")
            if held and dtype not in dtypes.FLOAT_DTYPES:
                raise check.fail(items["held"][1], f"held applies to floating inputs ({dtype} inputs are held anyway)")
        if ("value" in items) == ("fill" in items):
            raise check.fail(
                node,
                f"an input needs either a 'value' or a 'fill' ({_allowed(FILLS)}), not "
                f"{'both' if 'value' in items else 'neither'}",
            )
        if "fill" in items:
            fill = check.choice(items["fill"][1], "fill", FILLS)
            if fill == "normal" and dtype not in dtypes.FLOAT_DTYPES:
                raise check.fail(items["fill"][1], f"fill 'normal' needs a floating dtype, but dtype is {dtype}")
            return InputSpec(dtype=dtype, shape=shape or (), fill=fill, seed=seed, held=held)
        element: Callable[[yaml.Node], object]
        if dtype in dtypes.FLOAT_DTYPES:
            element = functools.partial(check.number, what="an input value", signed=True, finite=False)
        else:
            element = functools.partial(check.discrete, dtype=dtype, noun="input")
        value, value_shape = check.nested(items["value"][1], "an input value", element)
        if shape is not None and value_shape != shape:
            raise check.fail(
                items["value"][1], f"input value has shape {list(value_shape)}, but shape is {list(shape)}"
            )
        return InputSpec(dtype=dtype, value=value, shape=value_shape, seed=seed, held=held)

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
            raise check.fail(
                node, f"selector is missing {', '.join(repr(k) for k in missing)} (required: dtype, value)"
            )
        dtype_node = items["dtype"][1]
        dtype_value = scalar_value(self.file, dtype_node)
        if dtype_value in dtypes.FLOAT_DTYPES:
            raise check.fail(
                dtype_node,
                f"selector dtype must be bool or an integer dtype, got floating '{dtype_value}' (allowed: "
                f"{_allowed(dtypes.SELECTOR_DTYPES)})",
            )
        dtype = check.choice(dtype_node, "selector dtype", dtypes.SELECTOR_DTYPES)
        value, value_shape = check.nested(
            items["value"][1], "selector value", lambda n: check.discrete(n, dtype, "selector")
        )
        if dtype == "bool" and cases is not None and cases > 2:
            raise check.fail(
                items["dtype"][1],
                f"a bool selector chooses between at most 2 cases, but cases is {cases}; use an integer dtype",
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
            raise self.check.fail(
                node, f"tolerance is missing {', '.join(repr(k) for k in missing)} (required: rtol, atol)"
            )
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


def _suite(path: Path, root: Path | None) -> str:
    """A file's suite: its top folder below the folder given on the command line, else its own folder."""
    if root is not None:
        parts = path.relative_to(root).parts
        if len(parts) > 1:
            return parts[0]
    return (root or path.parent).resolve().name or "."


def collect_files(paths: Iterable[str]) -> tuple[list[tuple[Path, str]], list[InputError]]:
    """Files to load, each with its suite: named files as given, folders searched recursively for *.yaml and *.yml,
    sorted."""
    files: dict[Path, str] = {}
    seen: set[Path] = set()
    errors: list[InputError] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file())
            if not found:
                errors.append(
                    InputError(Location(raw, 1, 1), "no *.yaml or *.yml files in this folder: nothing to audit")
                )
            for file in found:
                if file.resolve() not in seen:
                    seen.add(file.resolve())
                    files.setdefault(file, _suite(file, path))
        elif path.is_file() and path.suffix in PYTHON_SUFFIXES:
            errors.append(
                InputError(
                    Location(raw, 1, 1),
                    f"a Python file, not a scenario file: gradaudit run reads YAML ({', '.join(YAML_SUFFIXES)}); "
                    f"name a function of it in a scenario (`fn: {path.stem}:loss`, docs/scenario-files.md) or "
                    "audit it from Python (`gradaudit.audit(loss, x)`)",
                )
            )
        elif path.is_file():
            if path.resolve() not in seen:
                seen.add(path.resolve())
                files.setdefault(path, _suite(path, None))
        else:
            errors.append(InputError(Location(raw, 1, 1), "no such file or folder"))
    return list(files.items()), errors


def load_text(text: str, display: str, suite: str = "") -> tuple[list[Scenario], list[InputError]]:
    """Scenarios from YAML text as if it were the file `display` (whose folder user modules are imported from)."""
    loader = _ScenarioFile(display, suite)
    try:
        root, errors = parse_text(text, display)
    except InvalidInput as exc:
        return [], [exc.error]
    scenarios = loader.load(root)
    return scenarios, errors + loader.check.errors


def load_paths(paths: Iterable[str], user_code: bool = True) -> LoadResult:
    """Load and validate every scenario under `paths`, reporting every problem in every file.

    Args:
        paths: scenario files (*.yaml, *.yml) and folders holding them.
        user_code: whether `fn:` may import and run Python code; False refuses function scenarios
            as input errors without importing anything.

    Returns:
        A LoadResult: `scenarios` (every valid scenario, in file order), `errors` (every problem as
        file:line:col and what is allowed; nothing raises for bad input) and `files` (those read).
    """
    files, errors = collect_files(paths)
    result = LoadResult(errors=errors)
    seen: dict[str, Location] = {}
    for path, suite in files:
        display = str(path)
        result.files.append(display)
        loader = _ScenarioFile(display, suite, user_code)
        try:
            root, errors = parse_file(path, display)
        except InvalidInput as exc:
            result.errors.append(exc.error)
            continue
        scenarios = loader.load(root)
        errors += loader.check.errors
        result.notes += loader.notes
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
