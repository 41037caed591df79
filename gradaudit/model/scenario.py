"""The Scenario model: one question put to every derivative path, as plain frozen data.

A scenario's target is either the seed's `select_n` family or a user's function; loading
(`loading.py`) builds these from YAML and knows nothing of JAX transforms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np

from gradaudit.model import dtypes
from gradaudit.model.errors import Location

NestedValue = Any
"""A scalar or a (rectangular) nested list of scalars, as written in YAML."""

OUTPUT_EXPRESSIONS = {"identity": "y", "square": "y * y", "sum_of_squares": "jnp.sum(y * y)"}
"""What a select_n scenario applies to the selected value `y`, as Python over `jnp`: the one text both
the target (targets/select_n.py) and a reproducer script (render/repro.py) are made from."""
OUTPUTS = tuple(OUTPUT_EXPRESSIONS)
"""Their names: itself, its square, the sum of squares."""
FILLS = ("arange", "zeros", "ones", "normal")
"""How a function input without a `value` is filled."""
BINDS = ("traced", "constant", "both")
"""How a function's fixed (integer or boolean) inputs reach it: as traced arguments, captured constants, or both."""
ORDERS = (1, 2)
MODES = ("fwd", "rev")
"""Forward and reverse mode."""
EXPECTED_STATUSES = ("consistent", "mismatch", "error")


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
class Expectation:
    """The outcome a scenario is known to have (pytest's strict xfail): meeting it passes, anything else fails."""

    status: str
    """consistent, mismatch or error."""
    exception: str | None = None
    """For `error`: the exception type some path must raise (e.g. IndexError)."""

    def to_dict(self) -> dict:
        return {"status": self.status, "exception": self.exception}


@dataclass(frozen=True)
class SelectN:
    """`lax.select_n(selector, *cases)` with a captured selector; the cases are differentiated."""

    selector: Selector
    cases: int
    shape: tuple[int, ...]
    dtype: str
    values: tuple[NestedValue, ...] | None = None
    """Explicit case values, one per case; None: deterministic, pairwise distinct values from the seed."""
    output: str = "identity"
    """What is applied to the selected value before differentiation (see OUTPUTS)."""

    kind: ClassVar[Literal["select_n"]] = "select_n"
    described: ClassVar[str] = "a select_n scenario (one with 'selector')"
    refereed: ClassVar[bool] = False
    """A select_n scenario asks where values are routed, not how precisely: no float64 referee."""
    bundled: ClassVar[bool] = True
    """Its literal paths can run many selectors in one program (engines/bundle.py), a group's jit paths
    are one program (engines/group.py), and its findings may come from either (judging.assess.one_story):
    selections, a case times a constant, which such a program computes as a program of each path's own does."""
    reduction: ClassVar[int] = 1

    @property
    def named_dtypes(self) -> tuple[str, ...]:
        return (self.dtype, self.selector.dtype)

    @property
    def float_dtypes(self) -> tuple[str, ...]:
        return (self.dtype,)

    def family(self) -> tuple:
        """What scenarios sharing traced and compiled programs have in common (see `Scenario.family`)."""
        return ("select_n", self.selector.dtype, self.cases, self.shape, self.dtype, self.output)

    def limits_key(self) -> None:
        """None: a select_n scenario's sizes are known without tracing, so it is checked in full before any audit."""
        return None

    def sizes(self) -> tuple[list[int], int]:
        """(elements of each case, elements of the output): known from the scenario alone."""
        size = int(np.prod(self.shape, dtype=np.int64))
        return [size] * self.cases, 1 if self.output == "sum_of_squares" else size

    def untraced_sizes(self) -> tuple[list[int], int]:
        return self.sizes()

    def bindings(self) -> int:
        """Bindings each path is computed under: the selector is always captured."""
        return 1

    def over_limits(self, cases: int) -> list[str]:
        """What exceeds a limit that only this kind has (the number of cases)."""
        return [f"{self.cases} cases exceed the limit of {cases:,} (limits.cases)"] if self.cases > cases else []

    def widened(self, narrow: tuple[str, ...]) -> None:
        """None: a select_n scenario asks where values are routed, not how precisely."""
        return None

    def describe(self) -> str:
        selector = f"{self.selector.dtype} {self.selector.value}"
        text = f"select_n {selector}, {self.cases} cases, shape {shape_text(self.shape)}, {self.dtype}"
        return text + (f", output {self.output}" if self.output != "identity" else "")

    def to_dict(self) -> dict:
        return {
            "selector": {"dtype": self.selector.dtype, "value": self.selector.value},
            "cases": self.cases,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "values": None if self.values is None else list(self.values),
            "output": self.output,
        }


@dataclass(frozen=True)
class InputSpec:
    """One positional argument of a user's function: floating inputs are differentiated, others held fixed."""

    dtype: str
    value: NestedValue = None
    shape: tuple[int, ...] = ()
    fill: str | None = None
    """When no value is given: arange, zeros, ones or normal."""
    seed: int = 0
    """For `fill: normal`."""
    name: str | None = None
    """How findings name it (a pytree path from the Python API); None: `x<position>`."""
    held: bool = False
    """A floating input passed in but never differentiated (a point and its directions, when the
    Python API compares along directions)."""

    @property
    def differentiable(self) -> bool:
        return self.dtype in dtypes.FLOAT_DTYPES and not self.held

    def array(self) -> np.ndarray:
        dtype = dtypes.numpy_dtype(self.dtype)
        if isinstance(self.value, np.ndarray) and self.value.dtype == dtype:
            return self.value  # the Python API's arrays, taken as they are (a model's parameters are large)
        if self.value is not None:
            with np.errstate(
                over="ignore", invalid="ignore"
            ):  # a value past a narrow dtype's range becomes inf, as in JAX
                return np.asarray(self.value, dtype=np.float64 if self.differentiable else None).astype(dtype)
        size = int(np.prod(self.shape, dtype=np.int64))
        if self.fill == "arange":
            values = np.arange(size, dtype=np.float64)
        elif self.fill == "ones":
            values = np.ones(size)
        elif self.fill == "normal":
            values = np.random.default_rng(self.seed).standard_normal(size)
        else:
            values = np.zeros(size)
        return values.reshape(self.shape).astype(dtype)

    def describe(self) -> str:
        """Short form for tables, dtypes named as scenario files name them: `float32[300]`, `uint8=100`."""
        if self.value is not None and np.ndim(self.value) == 0:
            return f"{self.dtype}={str(self.value).lower() if isinstance(self.value, bool) else self.value}"
        shape = np.shape(self.value) if self.value is not None else self.shape
        return f"{self.dtype}[{','.join(map(str, shape))}]"

    def to_dict(self) -> dict:
        value = self.value.tolist() if isinstance(self.value, np.ndarray) else self.value
        named = {"name": self.name} if self.name is not None else {}
        held = {"held": True} if self.held else {}
        return {
            "dtype": self.dtype,
            "value": value,
            "shape": list(self.shape),
            "fill": self.fill,
            "seed": self.seed,
            **named,
            **held,
        }


def shape_text(shape: tuple[int, ...]) -> str:
    """A shape as Python writes a tuple: `()`, `(3,)`, `(2, 3)`."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _plain(value):
    """A static argument as a scenario file writes it (tuples as lists)."""
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


@dataclass(frozen=True)
class FunctionCall:
    """A user's function `module:function`, imported with the scenario file's folder on the path, or
    a callable handed to the Python API."""

    fn: str
    root: str
    """The scenario file's folder, from which `fn`'s module is imported."""
    inputs: tuple[InputSpec, ...]
    bind: str = "both"
    kwargs: tuple[tuple[str, Any], ...] = ()
    """Static keyword arguments (`mode='clip'`, `axis=0`), passed as they are, never differentiated or traced."""
    function: Callable | None = field(default=None, compare=False, repr=False)
    """The callable itself (the Python API); None: import `fn` from `root`. `fn` then only names it."""
    description: str | None = field(default=None, compare=False)
    """How tables show the inputs (the Python API names them by pytree path); None: each input's `describe`."""
    defined_at: Location | None = field(default=None, compare=False)
    """Where `fn` is defined when its module lies beside the scenario file (the user's own code): SARIF
    and annotations point there, with the scenario as the related place."""
    directions: int = 0
    """Compare along this many seeded random directions (`numerics/directions.py`) instead of whole
    Jacobians (a scenario file's `directions:`; the Python API builds its directional call itself);
    0: whole Jacobians."""

    kind: ClassVar[Literal["function"]] = "function"
    described: ClassVar[str] = "a function scenario (one with 'fn')"
    refereed: ClassVar[bool] = True
    """Narrow floating inputs may be judged again in float64 (judging/referee.py)."""
    bundled: ClassVar[bool] = False
    """A user's function's paths each run as their own program for what they report: no bundles, and
    a group's finding is audited again path by path (judging.assess.one_story)."""

    @property
    def named_dtypes(self) -> tuple[str, ...]:
        return tuple(spec.dtype for spec in self.inputs)

    @property
    def fixed(self) -> tuple[InputSpec, ...]:
        """The discrete inputs, held fixed and bound as `bind` says (held floating ones are always passed)."""
        return tuple(spec for spec in self.inputs if not spec.differentiable and not spec.held)

    def family(self) -> tuple:
        """What scenarios sharing traced and compiled programs have in common (see `Scenario.family`)."""
        return ("function", self.fn, self.root, tuple(s.dtype for s in self.inputs), self.bind)

    def limits_key(self) -> tuple:
        """What the limits depend on: the target with the values of traced inputs taken out (tracing
        sees their shapes and dtypes only); a captured input's values stay in, as they may decide an
        output's shape."""
        captured = self.bind != "traced"
        inputs = tuple(
            (s.dtype, s.array().shape, s.array().tobytes() if captured and not s.differentiable else None)
            for s in self.inputs
        )
        return (self.fn, self.root, self.bind, repr(self.kwargs), inputs)

    def differentiated_sizes(self) -> list[int]:
        """Elements of each differentiated input, from the scenario alone."""
        return [
            int(np.prod(s.shape if s.value is None else np.shape(s.value), dtype=np.int64))
            for s in self.inputs
            if s.differentiable
        ]

    def untraced_sizes(self) -> tuple[list[int], int]:
        """(elements of each differentiated input, 0): the output's size needs the function traced.
        Along directions, one coefficient per direction is differentiated."""
        return ([1] * self.directions if self.directions else self.differentiated_sizes()), 0

    @property
    def reduction(self) -> int:
        """Elements each compared entry sums over beyond the function's own work (`Scenario.reduction`):
        along directions, every differentiated element."""
        return sum(self.differentiated_sizes()) if self.directions else 1

    def bindings(self) -> int:
        """Bindings each path is computed under: both, where there are discrete inputs to bind both ways."""
        return 2 if self.bind == "both" and self.fixed else 1

    def over_limits(self, cases: int) -> list[str]:
        return []

    def widened(self, narrow: tuple[str, ...]) -> FunctionCall | None:
        """This call with every input of a `narrow` dtype float64 at the same values (widened
        exactly); None where there is none."""
        if not any(spec.dtype in narrow for spec in self.inputs):
            return None
        inputs = tuple(
            replace(spec, dtype="float64", value=spec.array().astype(np.float64), fill=None)
            if spec.dtype in narrow
            else spec
            for spec in self.inputs
        )
        return replace(self, inputs=inputs)

    def describe(self) -> str:
        text = f"fn {self.label}({self.description or ', '.join(s.describe() for s in self.inputs)})"
        text += f" along {self.directions} directions" if self.directions else ""
        return text + (f", bind {self.bind}" if any(not s.differentiable for s in self.inputs) else "")

    @property
    def label(self) -> str:
        """`fn` with its static keyword arguments, as tables show it: `jax.numpy:take[mode=clip]`."""
        return self.fn + (f"[{', '.join(f'{k}={_plain(v)}' for k, v in self.kwargs)}]" if self.kwargs else "")

    def describe_inputs(self) -> str:
        return self.description or " ".join(spec.describe() for spec in self.inputs)

    @property
    def float_dtypes(self) -> tuple[str, ...]:
        """Differentiated inputs' dtypes and held floating ones' (a directional audit's point)."""
        return tuple(spec.dtype for spec in self.inputs if spec.dtype in dtypes.FLOAT_DTYPES)

    def to_dict(self) -> dict:
        static: dict[str, Any] = {"kwargs": {k: _plain(v) for k, v in self.kwargs}} if self.kwargs else {}
        static.update({"directions": self.directions} if self.directions else {})
        return {"fn": self.fn, "inputs": [spec.to_dict() for spec in self.inputs], "bind": self.bind, **static}


TARGET_KINDS = (SelectN, FunctionCall)
"""Every kind of target, in the order runs audit and reports show them: each answers its own
questions (family, limits key, sizes, bindings, description), so nothing else tells kinds apart
by name."""


@dataclass(frozen=True)
class Scenario:
    """One question put to every derivative path."""

    name: str
    source: Location
    target: SelectN | FunctionCall
    seed: int = 0
    tolerance: Tolerance | None = None
    """None: the least precise floating dtype's default (see `dtypes.default_tolerance`)."""
    eps: float | None = None
    """Finite-difference step relative to max(1, |x|); None: each input dtype's default."""
    order: int = 1
    """Highest derivative order checked: 2 adds the Hessian paths."""
    suite: str = ""
    """The catalog suite (top folder) the scenario came from, for per-suite summaries."""
    expect: Expectation | None = None
    modes: tuple[str, ...] = MODES
    """The AD modes audited (the Python API's check_grads may ask for one): a path needing a mode
    not here is not run."""
    reduction: int = 1
    """Elements each compared entry sums over beyond the function's own work (a directional
    audit's dot products with its directions): two AD paths may round apart by its square root
    times more."""

    def family(self) -> tuple:
        """What scenarios calling one function with one shape have in common (captured values
        aside): audited one after another in one process, they share its traced and compiled programs."""
        return (*self.target.family(), self.order)

    def limits_key(self) -> tuple | None:
        """What the limits of a scenario checked without tracing depend on: draws alike in it are
        alike over or under them; None where the scenario is checked in full before any audit."""
        key = self.target.limits_key()
        return None if key is None else (*key, self.order)

    def describe(self) -> str:
        """The scenario's parameters in one line, as `gradaudit list` and the HTML report show them."""
        text = self.target.describe() + (f", order {self.order}" if self.order > 1 else "")
        if self.expect is not None:
            text += f", expect {self.expect.status}" + (f" ({self.expect.exception})" if self.expect.exception else "")
        return text

    @property
    def precision_dtype(self) -> str:
        """The least precise floating dtype among the differentiated inputs; tolerances follow it."""
        floats = self.target.float_dtypes or ("float32",)
        return max(floats, key=dtypes.machine_epsilon)

    def to_dict(self) -> dict:
        """The normalized scenario, as loaded, for reports."""
        return {
            "name": self.name,
            "kind": self.target.kind,
            **self.target.to_dict(),
            "seed": self.seed,
            "tolerance": None if self.tolerance is None else {"rtol": self.tolerance.rtol, "atol": self.tolerance.atol},
            "eps": self.eps,
            "order": self.order,
            "suite": self.suite,
            "expect": None if self.expect is None else self.expect.to_dict(),
            **({"modes": list(self.modes)} if self.modes != MODES else {}),
            **({"reduction": self.reduction} if self.reduction != 1 else {}),
        }
