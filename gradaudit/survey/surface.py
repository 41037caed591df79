"""JAX's public surface, accounted for: every public callable of the surveyed modules is either a
surveyed entry or left out with its reason.

Entries come from introspection: a function's positional arguments become floating arrays, the
shapes it is drawn at are those a plain call takes (`probe`), its boolean keyword arguments and
`axis` become static options with their alternatives, and a kernel that refuses float16 is drawn
in float32 and float64 only. What introspection cannot tell is written as data in `overrides.yaml`.
`python -m gradaudit.survey.surface` (`make surface`) probes everything and writes `surface.json`,
which the survey reads; a public function of a newer JAX that the file does not account for is
listed by `gradaudit survey --list` as not yet surveyed.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

HERE = Path(__file__).parent
OVERRIDES = HERE / "overrides.yaml"
SURFACE = HERE / "surface.json"

MODULES: tuple[str, ...] = (
    "jax.numpy",
    "jax.numpy.linalg",
    "jax.numpy.fft",
    "jax.lax",
    "jax.lax.linalg",
    "jax.scipy.special",
    "jax.scipy.linalg",
    "jax.scipy.stats",
    "jax.nn",
    "jax.ops",
)
"""The surveyed modules; jax.scipy.stats with its distributions' modules (`jax.scipy.stats.norm`)."""

PROBE_SHAPES: tuple[tuple[str, tuple[tuple[int, ...], ...]], ...] = (
    ("any", ((), (3,), (2, 3))),
    ("array", ((3,), (2, 3))),
    ("square", ((3, 3),)),
    ("vector", ((4,),)),
    ("matrix", ((2, 3),)),
)
"""Shape classes (survey/table.py's SHAPES) in the order tried: the first whose every shape a plain call takes."""

PROMISES = ("sorted", "unique", "assume", "promise", "check", "overwrite", "inplace", "debug", "return_", "full_output")
"""Boolean keyword arguments that promise something of the input (a wrong promise is the caller's
error, not a derivative's) or change what is returned: not toggled."""

PLAIN = (0.62, -1.37, 0.25, 1.81, -0.44, 1.09, 0.93, -1.72, 0.38)
"""A plain call's values: distinct, of both signs, no square matrix of them singular."""


def public_callables() -> dict[str, object]:
    """Every public callable of MODULES by dotted path, in sorted order."""
    found: dict[str, object] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        for attribute in sorted(dir(module)):
            if attribute.startswith("_"):
                continue
            value = getattr(module, attribute)
            if inspect.ismodule(value):
                if name == "jax.scipy.stats":  # a distribution's module: its functions are public
                    for inner in sorted(dir(value)):
                        if not inner.startswith("_") and callable(getattr(value, inner)):
                            found[f"{name}.{attribute}.{inner}"] = getattr(value, inner)
                continue
            if callable(value):
                found[f"{name}.{attribute}"] = value
    return dict(sorted(found.items()))


def _positional(function) -> int | None:
    """How many arrays a plain call passes: the required positional parameters (a ufunc's `nin`)."""
    if isinstance(getattr(function, "nin", None), int):
        return function.nin
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    required = [
        p
        for p in parameters
        if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if not required and any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return 1
    return len(required)


def _options(function) -> dict[str, tuple]:
    """Boolean keyword arguments (not promises) with both values, and `axis` at its default, 0 and -1."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return {}
    options: dict[str, tuple] = {}
    for p in parameters:
        if p.default is inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if isinstance(p.default, bool) and not any(word in p.name.lower() for word in PROMISES):
            options[p.name] = (p.default, not p.default)
        elif p.name == "axis" and (p.default is None or isinstance(p.default, int)):
            options[p.name] = tuple(dict.fromkeys((p.default, 0, -1)))
    return options


def _plain_arrays(count: int, shape: tuple[int, ...], dtype) -> list:
    import numpy as np

    size = int(np.prod(shape, dtype=int))
    values = [PLAIN[(k + n) % len(PLAIN)] for n in range(count) for k in range(size)]
    return [np.asarray(values[n * size : (n + 1) * size], dtype=dtype).reshape(shape) for n in range(count)]


def probe(function, count: int, shape: tuple[int, ...], dtype="float32", **kwargs) -> str | None:
    """None when a forward-mode derivative of `function` at plain arrays of `shape` runs and gives a
    floating output; else why not, in a line."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    arrays = [
        jnp.asarray(a) for a in _plain_arrays(count, shape, np.dtype(dtype) if dtype != "bfloat16" else jnp.bfloat16)
    ]
    try:
        output = function(*arrays, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any refusal is a reason, told in a line
        return _why(exc)
    leaves = jax.tree_util.tree_leaves(output)
    if not any(hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.inexact) for leaf in leaves):
        kinds = sorted({str(getattr(leaf, "dtype", type(leaf).__name__)) for leaf in leaves}) or ["nothing"]
        return f"returns no floating array ({', '.join(kinds)})"
    try:
        jax.jvp(lambda *a: function(*a, **kwargs), tuple(arrays), tuple(jnp.ones_like(a) for a in arrays))
    except Exception as exc:  # noqa: BLE001
        if _declared_underivable(exc):
            return f"not differentiable: {_why(exc)}"
        # any other failure of a derivative is what the survey is for: the audit reports it
    return None


def _declared_underivable(exc: BaseException) -> bool:
    """Whether JAX says it does not differentiate this (a rule not implemented, a gradient not
    supported): the only derivative failures that leave a function out."""
    text = str(exc)
    return ("Differentiation rule" in text and "not implemented" in text) or (
        "gradient" in text and "not supported" in text
    )


def _probe_order(function) -> tuple[tuple[str, tuple[tuple[int, ...], ...]], ...]:
    """PROBE_SHAPES, arrays first for a function with an `axis` (a reduction, a scan): its plainest
    case is then a vector, so the edge sweep meets a NaN or a tie among ordinary values, not alone."""
    try:
        reduces = "axis" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        reduces = False
    if not reduces:
        return PROBE_SHAPES
    return tuple(sorted(PROBE_SHAPES, key=lambda item: item[0] != "array"))


def _why(exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:160]}"


def introspect(path: str, function, on_progress: Callable[[str], None] = lambda message: None) -> dict:
    """An entry for `function` (roles, shapes, options, floats), or `{"left_out": reason}`."""
    if inspect.isclass(function):
        return {"left_out": "a type (a dtype, an enum or a class), not a function"}
    count = _positional(function)
    if count is None:
        return {"left_out": "no signature to read"}
    if count == 0:
        return {"left_out": "takes no positional array"}
    on_progress(path)
    reasons: dict[tuple[int, ...], str | None] = {}

    def taken(shapes: tuple[tuple[int, ...], ...]) -> bool:
        for shape in shapes:
            if shape not in reasons:
                reasons[shape] = probe(function, count, shape)
            if reasons[shape] is not None:
                return False
        return True

    shapes_name, shapes = next(((name, shapes) for name, shapes in _probe_order(function) if taken(shapes)), ("", ()))
    if not shapes:
        said = [reason for reason in reasons.values() if reason]
        ran = [reason for reason in said if reason.startswith(("returns no floating", "not differentiable"))]
        if ran:  # a shape the call took tells more than those it refused
            return {"left_out": ran[-1]}
        return {"left_out": f"no plain call with {count} floating array(s) of a probed shape runs ({said[0]})"}
    plainest, richest = shapes[0], shapes[-1]
    options = {
        name: [
            alternative
            for alternative in alternatives
            if probe(function, count, richest, **{name: alternative}) is None
        ]
        for name, alternatives in _options(function).items()
    }
    entry: dict = {"roles": " ".join(["x"] * count), "shapes": shapes_name}
    kept = {name: alternatives for name, alternatives in options.items() if len(alternatives) > 1}
    if kept:
        entry["options"] = kept
    if probe(function, count, plainest, "float16") is not None:
        entry["floats"] = "wide"
    return entry


def _canonical(paths: list[str], function) -> str:
    """Among paths naming one function, the one its own name matches (else the first)."""
    own = getattr(function, "__name__", None)
    return next((path for path in paths if path.rpartition(".")[2] == own), paths[0])


@functools.cache
def overrides() -> dict:
    """overrides.yaml: `functions` (path to an entry or a list of entries) and `left_out` (path to reason)."""
    document = yaml.safe_load(OVERRIDES.read_text(encoding="utf-8"))
    return {"functions": document.get("functions") or {}, "left_out": document.get("left_out") or {}}


def written_paths() -> dict[str, str]:
    """The public functions overrides.yaml surveys, each with the table entry that surveys it (a
    written-out call's `surveys`)."""
    found: dict[str, str] = {}
    for path, data in overrides()["functions"].items():
        for one in data if isinstance(data, list) else [data]:
            found.setdefault(one.get("surveys", path), path)
    return found


CALLBACKS = (
    "fun",
    "f",
    "func",
    "func1d",
    "body_fun",
    "cond_fun",
    "true_fun",
    "false_fun",
    "branches",
    "solve",
    "callback",
)
"""Parameter names that take a function: such a public function is surveyed only through a call written out in
wrappers.py."""


def _by_signature(function) -> str | None:
    """A reason to leave a function out that its signature already gives: it takes a function, or a named axis."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return None
    required = [name for name, p in parameters.items() if p.default is inspect.Parameter.empty]
    if "axis_name" in required:
        return "a collective over a named axis: it runs only under pmap or shard_map"
    if any(name in CALLBACKS for name in required):
        return "takes a function (a callback): not yet written out in wrappers.py"
    return None


def generate(on_progress: Callable[[str], None] = lambda message: None) -> dict:
    """The surface document: JAX's version, each generated entry and each function left out with its reason."""
    import jax

    written = overrides()
    surveyed = written_paths()
    callables = public_callables()
    same: dict[int, list[str]] = {}
    for path, function in callables.items():
        same.setdefault(id(function), []).append(path)
    entries: dict[str, dict] = {}
    left_out: dict[str, str] = {}
    for path, function in callables.items():
        if path in surveyed:
            continue
        if path in written["left_out"]:
            left_out[path] = written["left_out"][path]
            continue
        canonical = _canonical(same[id(function)], function)
        if canonical != path:
            left_out[path] = f"the same function as {canonical}"
            continue
        found = {"left_out": reason} if (reason := _by_signature(function)) else introspect(path, function, on_progress)
        if "left_out" in found:
            left_out[path] = found["left_out"]
        else:
            entries[path] = found
    return {"jax": jax.__version__, "modules": list(MODULES), "entries": entries, "left_out": left_out}


@functools.cache
def surface() -> dict:
    """The committed surface.json."""
    return json.loads(SURFACE.read_text(encoding="utf-8"))


def accounted() -> dict[str, str]:
    """Every path the survey accounts for: `surveyed` or the reason it is left out."""
    document = surface()
    written = overrides()
    found = {path: "surveyed" for path in document["entries"]}
    found.update(
        {path: "surveyed" if path == entry else f"surveyed as {entry}" for path, entry in written_paths().items()}
    )
    found.update({path: reason for path, reason in {**document["left_out"], **written["left_out"]}.items()})
    return found


def not_yet_surveyed() -> list[str]:
    """Public callables of this JAX that neither the survey nor its list of left-out functions names."""
    known = accounted()
    return [path for path in public_callables() if path not in known]


def main() -> int:
    document = generate(lambda path: print(path, file=sys.stderr, flush=True))
    SURFACE.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{len(document['entries'])} entries, {len(document['left_out'])} left out", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
