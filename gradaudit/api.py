"""The Python API: audit a JAX function where a test calls it, arguments as pytrees, up to model sizes.

`audit(fn, *args)` puts the question a scenario file puts to every derivative path, through the
same audit service (same engines, judge, diagnoses, gate), so the same function at the same inputs
gets the same verdict either way. Floating leaves of the arguments are differentiated, integer and
boolean leaves held fixed (as traced arguments and as captured constants, `bind`); findings name
leaves by their pytree path (`params['w'][2, 0]`). Above `directional_above` Jacobian entries the
paths are compared along seeded directions instead (`numerics.directions`).

The function runs in this process (`jobs` 0), as the test calling it does; gradaudit turns on no
compilation cache unless `cache` names one, and leaves JAX's own settings in the process as they are.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from gradaudit.function_caches import held, per_function
from gradaudit.model import dtypes, fields
from gradaudit.model.computed import Failure
from gradaudit.model.errors import Location, did_you_mean
from gradaudit.model.findings import Finding, Note
from gradaudit.model.options import KEYS, OptionError, Options, check
from gradaudit.model.paths import PathResult
from gradaudit.model.results import AuditReport, ScenarioResult
from gradaudit.model.scenario import MODES, ORDERS, FunctionCall, InputSpec, Scenario
from gradaudit.numerics.directions import Directions

SCENARIO_KEYWORDS = (*fields.KEYWORDS, "probes", "modes", "argnums")
"""What one audit asks, as a scenario file says it; every other keyword is an option (`KEYS`)."""
API_DEFAULTS: dict[str, Any] = {"jobs": 0, "cache": None}
"""The Python API audits in the calling process and turns on no compilation cache unless asked."""


class GradientInconsistency(AssertionError):
    """The derivative paths disagree (or fail): the message is the findings, provenance and
    diagnosis a failing test shows; `audit` is the whole result."""

    def __init__(self, audit: Audit):
        super().__init__(audit.failure_text())
        self.audit = audit


class InputRejected(ValueError):
    """Arguments or a function gradaudit cannot audit (a dtype it cannot differentiate or hold,
    nothing floating to differentiate, a size over a limit); the message says what is allowed."""


@dataclass(frozen=True, eq=False)
class Audit:
    """One function audited at one point: its status, findings, notes, diagnosis and every path's answer."""

    result: ScenarioResult
    report: AuditReport
    directions: Directions | None = None
    """What a directional audit compared along (None: whole Jacobians)."""
    programs: int = 0
    """Programs XLA compiled for this audit (a warm process, or a warm compilation cache, compiles fewer)."""

    @property
    def status(self) -> str:
        """consistent, mismatch or error."""
        return self.result.status

    @property
    def passed(self) -> bool:
        return self.result.passed

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.result.findings

    @property
    def notes(self) -> tuple[Note, ...]:
        return self.result.notes

    @property
    def diagnosis(self):
        """The catalog entry that explains the findings (`gradaudit explain ID`), or None."""
        return self.result.diagnosis

    @property
    def paths(self) -> dict[str, PathResult]:
        """Every path's answer by name (`jacrev`, `jit_jacrev:const`, ...): its arrays or its exception."""
        return self.result.paths

    def reproducers(self, directory: str | os.PathLike) -> list[Path]:
        """Write each `wrong` or `eager-jit` finding into `directory` as a standalone script in plain
        JAX and NumPy that prints the disagreeing numbers (what an upstream bug report needs); the
        paths written. A function that cannot be imported by name (a lambda, a closure, code in
        `__main__`) gets none."""
        from gradaudit.render.repro import write_reproducers

        written, _ = write_reproducers([self.result], directory)
        return written

    def failure_text(self) -> str:
        """Findings, provenance and diagnosis as plain text (what `assert_consistent` raises with)."""
        from gradaudit.render.failure import failure_text

        return failure_text(self.result)

    def show(self, console=None) -> None:
        """Print the command line's table, findings and diagnosis (to `console`, a rich Console, or the terminal)."""
        from rich.console import Console

        from gradaudit.render.terminal import print_report

        print_report(console or Console(), self.report, verbose=True)

    def _recorded(self):
        from rich.console import Console

        with open(os.devnull, "w") as nowhere:
            console = Console(record=True, width=160, file=nowhere, color_system="truecolor")
            self.show(console)
        return console

    def __str__(self) -> str:
        return self._recorded().export_text()

    def _repr_html_(self) -> str:
        """Jupyter shows the terminal's table and findings, in colour."""
        return self._recorded().export_html(inline_styles=True)

    def __repr__(self) -> str:
        return f"<gradaudit.Audit {self.result.scenario.name}: {self.status}, {len(self.findings)} finding(s)>"


class Auditor:
    """Audits with options bound once (the pytest fixture's: `[tool.gradaudit]` and the session's
    flags); keywords given to a call override them for that call."""

    def __init__(self, **options):
        self.options = Options(**API_DEFAULTS).updated(**_checked_options(options))

    @classmethod
    def from_options(cls, options: Options) -> Auditor:
        """An auditor with `options` as they are (the pytest fixture's, read from `[tool.gradaudit]`), in this
        process."""
        auditor = cls()
        auditor.options = replace(options, jobs=0)
        return auditor

    def audit(self, fn: Callable, *args, **keywords) -> Audit:
        """Audit `fn` at `args` (see `gradaudit.audit`)."""
        # gradaudit's refusals (bad options or arguments) are raised as from the user's call: a new
        # exception whose traceback starts here, in a frame pytest hides, so a failing test shows the
        # user's line and the message, not gradaudit's insides
        __tracebackhide__ = True
        try:
            return _audit(fn, args, self._options(keywords), _scenario_keywords(keywords))
        except (InputRejected, OptionError) as exc:
            raise type(exc)(*exc.args) from None

    def assert_consistent(self, fn: Callable, *args, **keywords) -> Audit:
        """Audit `fn` at `args`; raise GradientInconsistency unless it passes (see `gradaudit.assert_consistent`)."""
        __tracebackhide__ = True
        result = self.audit(fn, *args, **keywords)
        if not result.passed:
            raise GradientInconsistency(result)
        return result

    def check_grads(
        self, f: Callable, args: Sequence, order: int, modes: Iterable[str] = MODES, atol=None, rtol=None, eps=None
    ) -> None:
        """`jax.test_util.check_grads`, as a drop-in (see `gradaudit.check_grads`)."""
        __tracebackhide__ = True
        modes = tuple(modes) if not isinstance(modes, str) else (modes,)
        if not modes or set(modes) - set(MODES):
            raise ValueError(f"modes must be some of {', '.join(MODES)}, got {list(modes)!r}")
        if order not in ORDERS:
            raise ValueError(f"gradaudit checks orders {' and '.join(map(str, ORDERS))}, got order={order!r}")
        keywords = {
            "order": order,
            "modes": tuple(m for m in MODES if m in modes),
            "eps": eps,
            "rtol": rtol,
            "atol": atol,
        }
        self.assert_consistent(f, *args, **{k: v for k, v in keywords.items() if v is not None})

    def _options(self, keywords: Mapping) -> Options:
        return self.options.updated(
            **_checked_options({k: v for k, v in keywords.items() if k not in SCENARIO_KEYWORDS})
        )


def _checked_options(options: Mapping) -> dict:
    """Option keywords checked by name (with a did-you-mean over every keyword) and value."""
    allowed = (*SCENARIO_KEYWORDS, *KEYS)
    for name in options:
        if name not in allowed:
            raise OptionError(f"unknown keyword '{name}'{did_you_mean(name, allowed)} (allowed: {', '.join(allowed)})")
    taken = check({k: v for k, v in options.items() if k not in SCENARIO_KEYWORDS}, "keyword")
    if taken.get("jobs"):
        raise OptionError("the Python API audits in the calling process: 'jobs' must be 0")
    return taken


def _scenario_keywords(keywords: Mapping) -> dict:
    """The scenario's own keywords, checked as a scenario file's fields are."""
    given = {k: v for k, v in keywords.items() if k in SCENARIO_KEYWORDS and v is not None}
    for key in fields.KEYWORDS:
        rule = fields.BY_KEY[key].rule
        if key in given and rule is not fields.OWN and not rule.accepts(given[key]):
            raise OptionError(f"'{key}' must be {rule.describe()}, got {given[key]!r}")
    modes = tuple(given.get("modes", MODES))
    if not modes or set(modes) - set(MODES):
        raise OptionError(f"'modes' must be some of {', '.join(MODES)}, got {list(modes)!r}")
    argnums = given.get("argnums")
    if argnums is not None:
        argnums = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) else argnums
        if (
            isinstance(argnums, str)
            or not isinstance(argnums, Iterable)
            or not all(isinstance(a, int) and not isinstance(a, bool) for a in argnums)
        ):
            raise OptionError(
                f"'argnums' must be an integer or a tuple of integers, as jax.grad takes, got {argnums!r}"
            )
        given["argnums"] = tuple(argnums)
    probes = given.get("probes", ())
    if isinstance(probes, str) or not all(isinstance(p, str) for p in probes):
        raise OptionError(f"'probes' must be a list of elements such as \"params['w'][2, 0]\", got {probes!r}")
    return {**given, "modes": modes, "probes": tuple(probes)}


def _call_site() -> Location:
    """Where the user called the API: the first frame outside gradaudit's own API."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:
        return Location("<python>", 1, 1)
    file = frame.f_code.co_filename
    try:
        file = os.path.relpath(file)
    except ValueError:  # another drive (Windows)
        pass
    return Location(file, frame.f_lineno, 1)


def _display_name(fn: Callable) -> str:
    module = getattr(fn, "__module__", None) or "?"
    return f"{module}:{getattr(fn, '__qualname__', None) or type(fn).__name__}"


def _parameter_names(fn: Callable, count: int) -> list[str]:
    """Names for the first `count` positional arguments: the function's own parameter names where it
    has them (`*args` continue as `args[i]`), else `args[i]`."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [f"args[{i}]" for i in range(count)]
    names: list[str] = []
    for parameter in parameters:
        if parameter.kind == parameter.VAR_POSITIONAL:
            names += [f"{parameter.name}[{i}]" for i in range(count - len(names))]
        elif parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
    names += [f"args[{i}]" for i in range(len(names), count)]
    return names[:count]


def _argnums(argnums: tuple[int, ...] | None, count: int) -> frozenset[int]:
    """The positional arguments to differentiate (jax.grad's `argnums`, negative counting from the
    end); None: every one."""
    if argnums is None:
        return frozenset(range(count))
    for index in argnums:
        if not -count <= index < count:
            raise OptionError(f"'argnums' {index} is out of range for {count} argument{'s' * (count != 1)}")
    return frozenset(index % count for index in argnums)


@dataclass(frozen=True)
class _Leaves:
    """The arguments' leaves as an audit takes them (`_leaves`)."""

    arrays: list[np.ndarray]
    """The array leaves as JAX would see them (`jnp.asarray`: Python floats are float32 unless x64 is on)."""
    names: list[str]
    """Each array leaf's pytree-path name."""
    treedef: object
    keys: tuple[tuple[int, str], ...]
    """Typed PRNG keys among the leaves (position among all leaves, implementation): held fixed as
    their key data, made keys again for the call, as `jax.random.key(0)` or a `flax.nnx.Rngs` stream passes them."""
    statics: tuple[tuple[int, str, object], ...]
    """Leaves that are not arrays (position among all leaves, name, the leaf): an equinox Module's
    activation, a string option; held fixed, passed to the function as they are."""
    arguments: list[int]
    """Which positional argument each array leaf belongs to."""

    def held_note(self) -> str | None:
        if not self.statics:
            return None
        named = ", ".join(f"{name} ({_kind_of(value)})" for _, name, value in self.statics)
        return f"held fixed, not arrays: {named}"


def _holds_arrays(leaf: object) -> bool:
    """Whether a leaf is a dataclass with an array among its fields."""
    fields: dict = getattr(leaf, "__dataclass_fields__", None) or {}
    return any(hasattr(getattr(leaf, name, None), "__array__") for name in fields)


def _kind_of(value: object) -> str:
    return getattr(value, "__name__", None) or type(value).__name__


class _Same:
    """A non-array leaf as part of a cache key: the same object, whatever its `__eq__` (many are unhashable)."""

    def __init__(self, value: object):
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.value is self.value


def _leaves(fn: Callable, args: tuple) -> _Leaves:
    """The arguments' leaves (`_Leaves`): arrays to differentiate or hold, keys, and leaves that are not arrays."""
    import jax
    import jax.numpy as jnp

    with_paths, treedef = jax.tree_util.tree_flatten_with_path(args)
    parameters = _parameter_names(fn, len(args))
    arrays, names, keys, statics, arguments = [], [], [], [], []
    allowed = (*dtypes.FLOAT_DTYPES, *dtypes.SELECTOR_DTYPES)
    for position, (path, leaf) in enumerate(with_paths):
        name = parameters[path[0].idx] + jax.tree_util.keystr(tuple(path[1:]))
        if jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key):
            keys.append((position, str(jax.random.key_impl(leaf))))
            leaf = jax.random.key_data(leaf)
        try:
            array = np.asarray(jnp.asarray(leaf))
        except TypeError as exc:
            if _holds_arrays(leaf):  # its arrays are meant to be differentiated: holding them would hide them
                raise InputRejected(
                    f"argument {name} is a dataclass holding arrays but not a pytree ({type(leaf).__name__}): "
                    f"register its class as one (jax.tree_util.register_dataclass) to differentiate them ({exc})"
                ) from None
            statics.append((position, name, leaf))
            continue
        if array.dtype.name not in allowed:
            raise InputRejected(
                f"argument {name} has dtype {array.dtype.name}: gradaudit differentiates floating inputs "
                f"({', '.join(dtypes.FLOAT_DTYPES)}) and holds integer and boolean ones fixed"
            )
        arrays.append(array)
        names.append(name)
        arguments.append(path[0].idx)
    if not any(a.dtype.name in dtypes.FLOAT_DTYPES for a in arrays):
        raise InputRejected(f"nothing to differentiate: no argument of {_display_name(fn)} has a floating leaf")
    return _Leaves(arrays, names, treedef, tuple(keys), tuple(statics), arguments)


@per_function(maxsize=256)
def _on_leaves(
    fn: Callable, treedef, keys: tuple[tuple[int, str], ...] = (), statics: tuple[tuple[int, _Same], ...] = ()
) -> Callable:
    """`fn` called on the array leaves of its arguments, the leaves that are not arrays put back
    where they were and the key data at `keys` made typed keys again (made once per function, tree
    and held leaves, so JAX's caches of traced programs serve every audit of it)."""
    import jax

    def on_leaves(*arrays):
        leaves = list(arrays)
        for position, same in statics:  # ascending: each goes in before the later ones count it
            leaves.insert(position, same.value)
        for position, impl in keys:
            leaves[position] = jax.random.wrap_key_data(leaves[position], impl=impl)
        return fn(*jax.tree_util.tree_unflatten(treedef, leaves))

    # read by render/repro.py: fn(*leaves) is the call itself
    plain = not keys and not statics and treedef.num_nodes == treedef.num_leaves + 1
    on_leaves.leaves_are_arguments = plain  # type: ignore[attr-defined]
    on_leaves.__qualname__ = getattr(fn, "__qualname__", "fn")
    # a function takes any __module__ at run time, None included; typeshed says str
    on_leaves.__module__ = getattr(fn, "__module__", None)  # type: ignore[assignment]
    return on_leaves


def _spec(array: np.ndarray, name: str, held: bool = False) -> InputSpec:
    return InputSpec(dtype=array.dtype.name, value=array, shape=array.shape, name=name, held=held)


def _target(
    fn: Callable, args: tuple, options: Options, keywords: dict
) -> tuple[FunctionCall, Directions | None, list[Note], Failure | None]:
    """The function call to audit: the leaves themselves, or (over `directional_above` Jacobian
    entries) the function along directions; notes on how the arguments were taken; and the timeout
    where tracing the function for its size ran past it."""
    from gradaudit.service import output_shape
    from gradaudit.targets.function import along_directions, flat_output

    leaves = _leaves(fn, args)
    arrays, names, arguments = leaves.arrays, leaves.names, leaves.arguments
    held_note = leaves.held_note()
    notes = [Note(held_note)] if held_note else []
    on_leaves = _on_leaves(fn, leaves.treedef, leaves.keys, tuple((i, _Same(v)) for i, _, v in leaves.statics))
    display, bind = _display_name(fn), keywords.get("bind", "both")
    chosen_arguments = _argnums(keywords.get("argnums"), len(args))
    # floating leaves of the arguments `argnums` names are differentiated; the other floating ones held
    held = [
        a.dtype.name in dtypes.FLOAT_DTYPES and i not in chosen_arguments
        for a, i in zip(arrays, arguments, strict=True)
    ]
    floating = [a.dtype.name in dtypes.FLOAT_DTYPES and not h for a, h in zip(arrays, held, strict=True)]
    if not any(floating):
        raise InputRejected(
            f"nothing to differentiate: the arguments argnums={keywords.get('argnums')} names have no floating leaf"
        )
    points = [a for a, f in zip(arrays, floating, strict=True) if f]
    flat = flat_output(on_leaves)
    out = output_shape(flat, arrays, options.timeout)
    hung = out if isinstance(out, Failure) else None
    # a function that cannot be traced (in time): every path reports why, as small as it can be
    n_out, out_dtype = (
        (1, np.dtype("float32")) if out is None or hung else (int(np.prod(out.shape, dtype=int)), out.dtype)
    )
    entries = n_out * sum(int(a.size) for a in points)
    specs = tuple(_spec(a, n, held=h) for a, n, h in zip(arrays, names, held, strict=True))
    if entries <= options.directional_above or hung:
        described = ", ".join(f"{s.name}: {s.describe()}" for s in specs)
        call = FunctionCall(fn=display, root="", inputs=specs, bind=bind, function=on_leaves, description=described)
        return call, None, notes, hung
    try:
        specs, chosen, along = along_directions(
            flat, specs, n_out, out_dtype, options.directions, keywords.get("seed", 0), keywords.get("probes", ())
        )
    except ValueError as exc:
        raise InputRejected(str(exc)) from None
    described = ", ".join(f"{n}: {_spec(a, n).describe()}" for a, n in zip(arrays, names, strict=True))
    described += f" along {len(chosen.names)} directions"
    call = FunctionCall(fn=display, root="", inputs=specs, bind=bind, function=along, description=described)
    return call, chosen, [*notes, Note(chosen.describe())], None


def _audit(fn: Callable, args: tuple, options: Options, keywords: dict) -> Audit:
    """One audit, every cache of what it makes from `fn` emptied when it returns (`function_caches`):
    a loss closing over a dataset is freed with the user's last reference to it."""
    events = _compile_events()
    events.take()
    with held():
        audited = _audit_held(fn, args, options, keywords)
    return replace(audited, programs=int(events.take()["programs"]))


@functools.cache
def _compile_events():
    """JAX's compile events in this process, listened to from the first audit on (`jaxenv.JaxEvents`)."""
    from gradaudit.jaxenv import JaxEvents

    return JaxEvents()


def _audit_held(fn: Callable, args: tuple, options: Options, keywords: dict) -> Audit:
    from gradaudit import service

    if not callable(fn):
        raise TypeError(f"gradaudit.audit needs a function to audit, got {type(fn).__name__}")
    target, chosen, notes, hung = _target(fn, args, options, keywords)
    eps = keywords.get("eps")
    scenario = Scenario(
        name=keywords.get("name") or getattr(fn, "__name__", None) or type(fn).__name__,
        source=_call_site(),
        target=target,
        seed=keywords.get("seed", 0),
        eps=None if eps is None else float(eps),
        order=keywords.get("order", 1),
        modes=keywords["modes"],
        reduction=1 if chosen is None else sum(int(np.size(t)) for t in chosen.tangents[0]),
    )
    # a function that hung while traced for its size would only hang again: it timed out
    report = service.failed_before(scenario, hung, options) if hung else service.audit([scenario], options)
    if report.errors:
        raise InputRejected("; ".join(error.message for error in report.errors))
    (result,) = report.results
    if notes:
        result = replace(result, notes=(*result.notes, *notes))
        report = replace(report, results=(result,))
    return Audit(result=result, report=report, directions=chosen)


def audit(fn: Callable, *args, **options) -> Audit:
    """Ask every derivative path of `fn` at `args` the same question, and say where they disagree.

    Args:
        fn: a JAX-traceable function of positional arguments; its output may be any pytree (its
            floating leaves are compared).
        *args: the point, as pytrees of arrays (dicts, tuples, registered dataclasses): floating
            leaves are differentiated, integer and boolean leaves held fixed.
        **options: what a scenario file says of one scenario (`name`, `order` 1 or 2, `bind`
            traced/constant/both, `eps`, `seed`, `probes` for directional audits, `modes`) and any
            option of `[tool.gradaudit]` (`rule`, `rtol`, `atol`, `devices`, `backend`, `timeout`,
            `limits`, `directions`, `directional_above`, ...).

    Returns:
        An `Audit`: `status`, `passed`, `findings`, `notes`, `diagnosis`, `paths` (every path's
        arrays or exception) and `directions` (what a directional audit compared along); it prints
        as the command line's table and shows as HTML in Jupyter.

    Raises:
        OptionError: an unknown keyword or a value it does not take.
        InputRejected: arguments it cannot audit (a dtype, nothing floating, a size over a limit).
    """
    __tracebackhide__ = True
    return Auditor().audit(fn, *args, **options)


def assert_consistent(fn: Callable, *args, **options) -> Audit:
    """`audit(fn, *args, **options)`, raising when it does not pass.

    Args:
        fn, *args, **options: as `audit` takes them.

    Returns:
        The `Audit`, when every path agrees.

    Raises:
        GradientInconsistency: an AssertionError whose message is the findings, the provenance of
            each output element and the diagnosis, as the command line prints them.
    """
    __tracebackhide__ = True
    return Auditor().assert_consistent(fn, *args, **options)


def check_grads(
    f: Callable, args: Sequence, order: int, modes: Iterable[str] = MODES, atol=None, rtol=None, eps=None
) -> None:
    """A drop-in for `jax.test_util.check_grads(f, args, order, modes, atol, rtol, eps)`, its
    parameters in its order (a call written for JAX, positionally, means the same here).

    Like it, finite differences check each mode up to `order` (1 or 2 here); unlike it, every entry
    is compared, not one random direction, and forward is compared with reverse and eager with jit,
    so a reverse rule that routes a derivative to the wrong input fails even where finite
    differences cannot see the input (a captured selector).

    Args:
        f: the function, of positional arguments (pytrees, as `audit` takes them).
        args: its arguments, a tuple or list.
        order: 1, or 2 for the Hessian paths too.
        modes: "fwd", "rev" or both: paths that need a mode not named are not run.
        atol, rtol: tolerances against finite differences; None: the dtype's defaults.
        eps: the finite-difference step (relative to max(1, |x|)); None: the dtype's default.

    Raises:
        GradientInconsistency: the paths disagree (an AssertionError, as check_grads raises).
        ValueError: an order other than 1 or 2, or modes other than fwd and rev.
    """
    __tracebackhide__ = True
    Auditor().check_grads(f, args, order, modes, atol, rtol, eps)
