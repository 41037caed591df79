"""A finding as a standalone script in plain JAX and NumPy: what a bug report upstream needs.

For each `wrong` or `eager-jit` disagreement, a script rebuilds the function and its inputs exactly
(values written out in full, integers bound as the finding's paths bound them), computes each path
the finding names with the JAX call that path stands for, and prints what each gives at the
finding's entry. It imports nothing of gradaudit, so a maintainer can run it without installing it.
A finding gets no script where the function cannot be imported by name (a lambda, a closure, code
in `__main__`, pytree arguments given to the Python API) or a path ran on a further device:
`reproducers` says why. A Hessian's finite differences are those of the Jacobian's block by jacfwd.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from gradaudit.model import dtypes
from gradaudit.model.findings import DISAGREEMENT, Finding, FindingClass, parse_location
from gradaudit.model.paths import (
    CONSTANT_SUFFIX,
    FINITE_DIFFERENCE,
    HESSIAN_FINITE_DIFFERENCE,
    HESSIAN_FWD_FWD,
    HESSIAN_FWD_REV,
    HESSIAN_REV_REV,
    JACFWD,
    JACREV,
    JIT_HESSIAN_FWD_FWD,
    JIT_HESSIAN_FWD_REV,
    JIT_HESSIAN_REV_REV,
    JIT_JACFWD,
    JIT_JACREV,
    JIT_VALUE,
    NOT_APPLICABLE,
    VALUE,
    base_name,
    block_names,
    label,
    primary_name,
)
from gradaudit.model.results import ScenarioResult
from gradaudit.model.scenario import OUTPUT_EXPRESSIONS, FunctionCall, SelectN
from gradaudit.numerics.finite_differences import step_size

REPRODUCED = (FindingClass.WRONG, FindingClass.EAGER_JIT)
"""The classes a reproducer is written for: defects a maintainer can act on."""

CALLS = {
    VALUE: "{f}(*INPUTS, *{fixed})",
    JIT_VALUE: "jax.jit({f})(*INPUTS, *{fixed})",
    JACFWD: "jax.jacfwd({f}, argnums=ARGNUMS)(*INPUTS, *{fixed}){block}",
    JIT_JACFWD: "jax.jit(jax.jacfwd({f}, argnums=ARGNUMS))(*INPUTS, *{fixed}){block}",
    JACREV: "jax.jacrev({f}, argnums=ARGNUMS)(*INPUTS, *{fixed}){block}",
    JIT_JACREV: "jax.jit(jax.jacrev({f}, argnums=ARGNUMS))(*INPUTS, *{fixed}){block}",
    FINITE_DIFFERENCE: "finite_difference({f}, {fixed}, {k}, {at}, {out}, {step!r})",
    JIT_HESSIAN_FWD_REV: "jax.jit(jax.jacfwd(jax.jacrev({f}, argnums=ARGNUMS), argnums=ARGNUMS))"
    "(*INPUTS, *{fixed}){block}",
    HESSIAN_REV_REV: "jax.jacrev(jax.jacrev({f}, argnums=ARGNUMS), argnums=ARGNUMS)(*INPUTS, *{fixed}){block}",
    HESSIAN_FWD_REV: "jax.jacfwd(jax.jacrev({f}, argnums=ARGNUMS), argnums=ARGNUMS)(*INPUTS, *{fixed}){block}",
    HESSIAN_FWD_FWD: "jax.jacfwd(jax.jacfwd({f}, argnums=ARGNUMS), argnums=ARGNUMS)(*INPUTS, *{fixed}){block}",
    JIT_HESSIAN_FWD_FWD: "jax.jit(jax.jacfwd(jax.jacfwd({f}, argnums=ARGNUMS), argnums=ARGNUMS))"
    "(*INPUTS, *{fixed}){block}",
    JIT_HESSIAN_REV_REV: "jax.jit(jax.jacrev(jax.jacrev({f}, argnums=ARGNUMS), argnums=ARGNUMS))"
    "(*INPUTS, *{fixed}){block}",
    HESSIAN_FINITE_DIFFERENCE: "finite_difference(jacobian_block({f}, {fixed}, {first}), {fixed}, {k}, {at}, {out}, "
    "{step!r})",
}
"""The JAX call each path stands for (as engines/literal.py makes it), on the script's names."""

FLAT = '''
def flat(out):
    """The function's floating outputs in one vector (an array stays as it is): what was differentiated."""
    leaves = []
    for leaf in jax.tree_util.tree_leaves(out):
        leaves += [jnp.real(leaf), jnp.imag(leaf)] if jnp.iscomplexobj(leaf) else [leaf]
    floating = [leaf for leaf in leaves if jnp.issubdtype(jnp.result_type(leaf), jnp.floating)]
    if len(leaves) == 1 and len(floating) == 1:
        return floating[0]
    return jnp.concatenate([jnp.ravel(leaf) for leaf in floating]) if len(floating) > 1 else jnp.ravel(floating[0])
'''

FINITE_DIFFERENCE_CODE = '''
def finite_difference(f, fixed, k, at, out, h):
    """Central differences of jit(f) at steps h and h/2, extrapolated (4 c(h/2) - c(h)) / 3: the
    derivative of out with respect to INPUTS[k][at] from evaluations of the function alone.
    Where jit cannot compile f (it needs an input's concrete value), f itself, as the audit does."""
    g = jax.jit(f)
    try:
        g(*INPUTS, *fixed)
    except ({uncompilable}
    ):
        g = f

    def central(step):
        values = []
        for sign in (1.0, -1.0):
            moved = [np.array(x) for x in INPUTS]
            moved[k][at] = (np.float64(moved[k][at]) + sign * step).astype(moved[k].dtype)
            values.append(np.float64(np.asarray(g(*moved, *fixed))[out]))
        return (values[0] - values[1]) / (2 * step)

    return (4 * central(h / 2) - central(h)) / 3
'''.replace(
    "{uncompilable}", "".join(f"\n        {rule.exception_name}," for rule in NOT_APPLICABLE if rule.compiled_only)
)


JACOBIAN_BLOCK_CODE = '''
def jacobian_block(f, fixed, k):
    """Block k of f's Jacobian by jacfwd (jacrev where forward mode does not apply: a custom_vjp
    function), whose finite differences give the Hessian's row of blocks k, as the audit takes them."""
    try:
        jax.jacfwd(f, argnums=ARGNUMS)(*INPUTS, *fixed)
        transform = jax.jacfwd
    except TypeError:
        transform = jax.jacrev
    return lambda *args: transform(f, argnums=ARGNUMS)(*args)[k]
'''


@dataclass(frozen=True)
class Reproducer:
    """A finding's script (`text`), or why it has none (`why_not`)."""

    file: str
    finding: Finding
    text: str = ""
    why_not: str = ""


def reproducers(result: ScenarioResult, file: str | None = None) -> list[Reproducer]:
    """One per `wrong` or `eager-jit` disagreement of the result, numbered in the result's order and
    named after the scenario (`file`: the one name every script is written as, which it tells how to run)."""
    chosen = [f for f in result.ranked_findings if f.kind == DISAGREEMENT and f.finding_class in REPRODUCED]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", result.scenario.name).strip("_") or "scenario"
    return [_reproducer(result, finding, file or f"{stem}-{number}.py") for number, finding in enumerate(chosen, 1)]


def write_reproducers(results: Sequence[ScenarioResult], directory: str | os.PathLike) -> tuple[list[Path], list[str]]:
    """Each result's reproducers written into `directory` (made if missing): the paths written, and
    for each finding without a script, why."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []
    for result in results:
        for reproducer in reproducers(result):
            if reproducer.text:
                path = folder / reproducer.file
                path.write_text(reproducer.text, encoding="utf-8")
                written.append(path)
            else:
                skipped.append(
                    f"{result.scenario.name}: {reproducer.finding.labelled}: no reproducer ({reproducer.why_not})"
                )
    return written, skipped


def write_beside(results: Sequence[tuple[ScenarioResult, Path]]) -> dict[str, Path]:
    """Each result's first script written beside its scenario file, with its name and `.py` (a
    survey's kind `lax.clamp-1.yaml` gets `lax.clamp-1.py`): scenario file -> script, where it has one."""
    written = {}
    for result, path in results:
        target = Path(path).with_suffix(".py")
        script = next((r for r in reproducers(result, target.name) if r.text), None)
        if script is not None:
            target.write_text(script.text, encoding="utf-8")
            written[str(path)] = target
    return written


def _reproducer(result: ScenarioResult, finding: Finding, file: str) -> Reproducer:
    entry = _entry(result, finding.location or "")
    if entry is None:
        return Reproducer(file, finding, why_not=f"its location {finding.location!r} names no entry of a path")
    if any(primary_name(p) != p for p in finding.paths):
        return Reproducer(file, finding, why_not="a path on a further device")
    target = result.scenario.target
    function = _select_n(target, result.inputs) if isinstance(target, SelectN) else _function(target)
    if function is None:
        why = (
            f"{getattr(target, 'fn', 'the function')} cannot be imported by name (a lambda, a closure, code in "
            "__main__, or pytree arguments): put it in a module"
        )
        return Reproducer(file, finding, why_not=why)
    said = ", ".join(f"{label(p)} {finding.values[p]:g}" for p in finding.paths if p in finding.values)
    prints = [f"print({label(p)!r}, entry({_call(p, entry)}, {_index(p, entry)!r}), sep=': ')" for p in finding.paths]
    header = [
        f'"""{result.scenario.name}: [{finding.finding_class}] {_one_line(finding.message)}',
        "",
        *([f"Why: {_one_line(finding.reason)}", ""] if finding.reason else []),
        f"gradaudit {_version('gradaudit')} (JAX {_version('jax')}) reported at {finding.location}: {said}.",
        f"Written from {result.scenario.source}; needs only JAX and NumPy: python {file}",
        '"""',
    ]
    x64 = ['jax.config.update("jax_enable_x64", True)'] if _wide(result) else []
    body = [
        "import numpy as np",
        "",
        "import jax",
        "import jax.numpy as jnp",
        "",
        *x64,
        FLAT,
        FINITE_DIFFERENCE_CODE,
        *([JACOBIAN_BLOCK_CODE] if entry.order == 2 else []),
        "",
        "def entry(block, index):",
        "    return float(np.asarray(block)[index])",
        "",
        "",
        function,
        "",
        f"print({'at ' + str(finding.location) + ':'!r})",
        *prints,
        "",
    ]
    return Reproducer(file, finding, text="\n".join([*header, "", *body]))


@dataclass(frozen=True)
class Entry:
    """The entry a finding names: of the value (order 0), the Jacobian block of input `k` (order 1),
    or the Hessian block of inputs (`first`, `k`) (order 2); `at` indexes input `k`, `out` the
    output (for a Hessian, followed by the index into input `first`)."""

    order: int
    out: tuple[int, ...]
    k: int
    at: tuple[int, ...]
    step: float
    """The finite-difference step gradaudit took at that element of input `k`."""
    first: int = 0


def _entry(result: ScenarioResult, location: str) -> Entry | None:
    """The entry `location` names, or None where it names none (a block name that is no input's)."""
    names = result.arg_names
    where = parse_location(location, names) or parse_location(location, block_names(names, 2))
    if where is None:
        return None
    order, out, name, at = where
    if order < 2:
        k = names.index(name) if name else 0
        return Entry(order, out, k, at, _step(result, k, at))
    first, k = divmod(block_names(names, 2).index(name), len(names))
    split = np.ndim(result.inputs[first]) if first < len(result.inputs) else 0
    return Entry(order, out + at[:split], k, at[split:], _step(result, k, at[split:]), first)


def _index(path: str, entry: Entry) -> tuple[int, ...]:
    """Where the entry is in what the path's call returns (finite differences return it alone)."""
    base = base_name(path)
    return () if base in (FINITE_DIFFERENCE, HESSIAN_FINITE_DIFFERENCE) else entry.out + entry.at


def _call(path: str, entry: Entry) -> str:
    """The JAX call `path` stands for, under its binding (`with_constants` for the constant one)."""
    constant = primary_name(path).endswith(CONSTANT_SUFFIX)
    f, fixed = ("with_constants", "HELD") if constant else ("traced", "PASSED")
    block = f"[{entry.first}][{entry.k}]" if entry.order == 2 else f"[{entry.k}]" if entry.order == 1 else ""
    return CALLS[base_name(path)].format(
        f=f, fixed=fixed, block=block, k=entry.k, first=entry.first, at=entry.at, out=entry.out, step=entry.step
    )


def _step(result: ScenarioResult, k: int, at: tuple[int, ...]) -> float:
    """The finite-difference step gradaudit took at that input element (`step_size`)."""
    x = np.asarray(result.inputs[k]) if k < len(result.inputs) else np.zeros((), np.float32)
    dtype = x.dtype if x.dtype.kind in "fV" else np.dtype("float32")
    eps = result.scenario.eps if result.scenario.eps is not None else dtypes.default_eps(dtype.name)
    value = np.asarray(x, dtype=np.float64)[at] if x.ndim == len(at) else 0.0
    return float(step_size(np.nan_to_num(np.asarray(value)), eps, dtype))


def _wide(result: ScenarioResult) -> bool:
    """Whether the scenario holds a 64-bit input, which JAX keeps only with x64 on."""
    return any(dtype in dtypes.WIDE_DTYPES for dtype in result.scenario.target.named_dtypes)


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace('"' * 3, "'" * 3)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


def _select_n(target: SelectN, cases: Sequence[np.ndarray]) -> str:
    values = ",\n    ".join(_array(c) for c in cases)
    expression = OUTPUT_EXPRESSIONS[target.output]
    return "\n".join(
        [
            "from jax import lax",
            "",
            f"SELECTOR = {_array(target.selector.array())}",
            "",
            "",
            "def traced(*cases):",
            f"    # lax.select_n with its selector a NumPy constant, as JAX's own tests write it; then {expression}.",
            "    y = lax.select_n(SELECTOR, *cases)",
            f"    return flat({expression})",
            "",
            "",
            "with_constants = traced",
            "PASSED = HELD = []",
            "INPUTS = [jnp.asarray(case) for case in [",
            f"    {values},",
            "]]",
            "ARGNUMS = tuple(range(len(INPUTS)))",
        ]
    )


FUNCTION_CODE = """import importlib
import sys

{root}function = importlib.import_module({module!r})
for attribute in {qualname!r}.split("."):
    function = getattr(function, attribute)
KWARGS = {kwargs!r}

# Each positional argument and how it reaches the function: d differentiated, h held fixed (passed
# as an argument), c an integer input: passed as an argument (traced), or captured as a constant.
PATTERN = {pattern!r}
ARGUMENTS = [
    {arguments},
]
CONSTANTS = [jnp.asarray(a) for a, kind in zip(ARGUMENTS, PATTERN) if kind == "c"]


def _called(inputs, passed, captured):
    d, p, c = iter(inputs), iter(passed), iter(CONSTANTS)
    arguments = [next(d) if kind == "d" else next(c) if kind == "c" and captured else next(p) for kind in PATTERN]
    return flat(function(*arguments, **KWARGS))


def traced(*inputs):
    # The differentiated inputs, then every other input, passed as arguments.
    n = PATTERN.count("d")
    return _called(inputs[:n], inputs[n:], captured=False)


def with_constants(*inputs):
    # The differentiated inputs, then the held ones, passed; the integer inputs captured as constants.
    n = PATTERN.count("d")
    return _called(inputs[:n], inputs[n:], captured=True)


INPUTS = [jnp.asarray(a) for a, kind in zip(ARGUMENTS, PATTERN) if kind == "d"]
PASSED = [jnp.asarray(a) for a, kind in zip(ARGUMENTS, PATTERN) if kind != "d"]
HELD = [jnp.asarray(a) for a, kind in zip(ARGUMENTS, PATTERN) if kind == "h"]
ARGNUMS = tuple(range(len(INPUTS)))"""
"""A user's function imported by name, its arguments written out, bound both ways the audit binds them."""


def _function(target: FunctionCall) -> str | None:
    """The script's function and inputs, or None where it cannot be imported by name."""
    module, _, qualname = target.fn.partition(":")
    if "<" in qualname or module in ("", "__main__", "?"):
        return None
    if target.function is not None and not getattr(target.function, "leaves_are_arguments", False):
        return None  # the Python API's pytree arguments (or directions): the script cannot rebuild the call
    return FUNCTION_CODE.format(
        root=_module_folder(module, target.root),
        module=module,
        qualname=qualname,
        kwargs=dict(target.kwargs),
        pattern="".join("d" if s.differentiable else "h" if s.held else "c" for s in target.inputs),
        arguments=",\n    ".join(_array(s.array()) for s in target.inputs),
    )


def _module_folder(module: str, root: str) -> str:
    """The line that puts a user's module beside its scenario on the path; none for a module of an
    installed package (JAX's own, gradaudit's survey wrappers), so a script written on one machine
    names no folder of it."""
    if not root or module.split(".")[0] in _installed_packages():
        return ""
    return f"sys.path.insert(0, {os.path.abspath(root)!r})\n"


@functools.cache
def _installed_packages() -> frozenset[str]:
    from importlib.metadata import packages_distributions

    return frozenset(packages_distributions())


def _array(value: np.ndarray) -> str:
    """NumPy source for an array, every value exact (float32 and narrower are exact in float64)."""
    array = np.asarray(value)
    dtype = array.dtype.name
    if array.dtype.kind == "b":
        return f"np.array({array.tolist()!r}, dtype=bool)"
    if array.dtype.kind in "iu":
        return f"np.array({array.tolist()!r}, dtype=np.{dtype})"
    text = _nested(np.asarray(array, dtype=np.float64).tolist())
    if dtype in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return f"np.array({text}, dtype=np.float64).astype(jnp.{dtype})"
    return f"np.array({text}, dtype=np.{dtype})"


def _nested(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(float(value))
