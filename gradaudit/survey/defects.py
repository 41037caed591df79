"""One entry per defect: the survey's kinds that share a mechanism, ranked.

A kind is what a search tells apart (a status and its findings' signatures); many kinds are one
defect met in several places: select_n out of range with one, two and three cases, a narrow index
read wrongly through `x[i]` and `dynamic_slice`. Kinds are one defect when they are alike in the
class of their most severe finding, the form of its wrong value and the neighbourhood of the regime
that showed it, and they are the same function or lower to one primitive that is not plumbing
(`group`: the primitive most of them share, never a chain of pairwise likenesses).
Defects rank by class (crashes, then wrong derivatives at finite inputs, eager/jit splits, NaN
leaking into finite results, then the rest), then by how many functions show them.

Everything here reads a survey report's kinds and their reproducer files, so a merged report is
grouped as one survey's is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gradaudit.model import dtypes
from gradaudit.model.findings import CLASSES, FindingClass
from gradaudit.search.drawing import flat

PLUMBING = frozenset(
    {
        "pjit",
        "jit",
        "closed_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "convert_element_type",
        "broadcast_in_dim",
        "reshape",
        "squeeze",
        "expand_dims",
        "transpose",
        "copy",
        "copy_p",
        "stop_gradient",
        "add",
        "sub",
        "mul",
        "div",
        "neg",
        "select_n",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "and",
        "or",
        "not",
        "abs",
        "sign",
        "iota",
        "concatenate",
        "slice",
        "reduce_sum",
        "integer_pow",
        "square",
        "max",
        "min",
    }
)
"""Primitives nearly every function lowers to: sharing one of them says nothing of a shared defect."""

RAN = "(seen as it ran)"
"""Listed with the primitives of a function that cannot be traced, read as it ran eagerly with jit off
(`primitives_of`): its loops' bodies, not `scan` or `while`, so its set is compared only with sets read
the same way, never with a traced function's."""

SEVERITY: dict[str, str] = {
    FindingClass.CRASHED.value: "crashes",
    FindingClass.TIMED_OUT.value: "crashes",
    FindingClass.RAISED.value: "crashes",
    FindingClass.WRONG.value: "wrong derivatives at finite inputs",
    FindingClass.EAGER_JIT.value: "eager and jit apart",
    FindingClass.LEAK.value: "NaN leaking into finite results",
}
"""The headings defects rank under, by their class; every other class is `the rest`."""

IEEE_EDGES = ("a NaN input", "an infinite input", "an input near its dtype's largest")
AT_NON_FINITE = "wrong derivatives, eager/jit splits and NaN leaks at NaN, inf or next to the largest float"
"""A defect of those classes whose plainest reproducer holds NaN, inf or a number within a factor
of four of its dtype's largest: ranked after every one in ordinary regimes (IEEE arithmetic at its
edges, inf - inf and overflow, is where most of them come from), before the rest."""
AT_NON_FINITE_CLASSES = (FindingClass.WRONG.value, FindingClass.EAGER_JIT.value, FindingClass.LEAK.value)

NEIGHBOURHOODS = {
    "an exact zero": "at or near zero",
    "a subnormal input": "at or near zero",
    "a tiny nonzero input (1e-10 or less)": "at or near zero",
    "an integer at its dtype's limit": "an integer at or past a limit",
    "an index out of range": "an integer at or past a limit",
    "a negative index": "an integer at or past a limit",
}
"""Regimes that are one place for a rule: shrinking lands a defect at zero on one seed and at a
subnormal on another, a narrow index at its dtype's limit or past the axis; every other regime is
its own neighbourhood."""


def form_of(wrong: str) -> str:
    """The form of a wrong value a defect keeps wherever it is met: a derivative lost (`zero`, or a
    routing that sends it `nowhere`), `nan`, `inf`, some other value (a constant factor `x<r>`, a
    routing `elsewhere` or `mixed`, `value`: numbers that differ from one shrunk input to another),
    or the type of what a path raised."""
    if wrong in ("zero", "nowhere"):
        return "zero"
    if wrong in ("elsewhere", "mixed", "value") or re.fullmatch(r"x-?[0-9.e+-]+", wrong):
        return "value"
    return wrong


def error_words(message: str) -> str:
    """What a finding says was raised, without the paths that raised it or the numbers in it: one error
    met through different paths, shapes or dtypes."""
    said = message.split(" raised ", 1)[1].strip().splitlines()[0]
    return re.sub(r"\b[0-9]+(?:\.[0-9]+)?\b", "N", said)


HEADINGS = (*dict.fromkeys(SEVERITY.values()), AT_NON_FINITE, "the rest")
"""The headings in rank order."""


@dataclass(frozen=True)
class Variant:
    """One kind of a defect: where it was met, its reproducer file and its most severe finding."""

    function: str
    file: str
    status: str
    finding_class: str
    kind: str
    paths: tuple[str, ...]
    wrong: str
    regime: str
    primitives: frozenset[str]
    size: int
    """How many numbers its reproducer's inputs hold: the plainest variant has fewest."""
    message: str = ""
    """Its leading finding as the report words it (numbers first)."""

    @property
    def neighbourhood(self) -> str:
        return NEIGHBOURHOODS.get(self.regime, self.regime)

    @property
    def place(self) -> tuple[str, str, str, str]:
        """What one function's kinds of one defect share: shrinking the same defect on another seed may
        reach other paths (jacrev alone, or with jacfwd), never another class, form or neighbourhood. What a
        path raised is its error's words, wherever the inputs were: a rule that is missing or refuses a
        loop raises when it is traced, whatever the values."""
        if self.finding_class == FindingClass.RAISED.value and " raised " in self.message:
            return _base(self.function), self.finding_class, error_words(self.message), ""
        return _base(self.function), self.finding_class, form_of(self.wrong), self.neighbourhood

    @property
    def culprits(self) -> frozenset[str]:
        return self.primitives - PLUMBING - {RAN}

    @property
    def ran(self) -> bool:
        return RAN in self.primitives


@dataclass
class Defect:
    """Kinds that share a mechanism: the plainest first."""

    variants: list[Variant] = field(default_factory=list)

    @property
    def plainest(self) -> Variant:
        return min(self.variants, key=lambda v: (v.size, v.function, v.file))

    @property
    def functions(self) -> list[str]:
        return sorted({v.function for v in self.variants})

    @property
    def severity(self) -> str:
        first = self.plainest
        if first.finding_class in AT_NON_FINITE_CLASSES and first.regime in IEEE_EDGES:
            return AT_NON_FINITE
        return SEVERITY.get(first.finding_class, "the rest")

    def sort_key(self) -> tuple:
        first = self.plainest
        rank = (
            CLASSES.index(FindingClass(first.finding_class)) if first.finding_class in _CLASS_VALUES else len(CLASSES)
        )
        return HEADINGS.index(self.severity), rank, -len(self.functions), first.function, first.file

    def to_dict(self, rank: int, scripts: dict[str, str]) -> dict:
        first = self.plainest
        return {
            "rank": rank,
            "severity": self.severity,
            "class": first.finding_class,
            "kind": first.kind,
            "paths": list(first.paths),
            "wrong": first.wrong,
            "regime": first.regime,
            "message": first.message,
            "primitives": sorted(self.shared_primitives()),
            "functions": self.functions,
            "reproducer": first.file,
            "script": scripts.get(first.file),
            "variants": [{"function": v.function, "file": v.file} for v in self.variants],
        }

    def shared_primitives(self) -> frozenset[str]:
        sets = [v.culprits for v in self.variants]
        return frozenset.intersection(*sets) if sets else frozenset()


_CLASS_VALUES = {c.value for c in CLASSES}


def parse_fingerprint(fingerprint: str) -> tuple[str, str, tuple[str, ...], str]:
    """(class, kind, paths without their binding, form of the wrong value) of a finding's fingerprint;
    a raised finding's form is the type of what it raised."""
    head, *rest = fingerprint.split("|")
    finding_class, _, tail = head.partition(":")
    if finding_class not in _CLASS_VALUES:
        finding_class, tail = "", head
    kind, _, paths_text = tail.partition(":")
    # paths are `+`-joined, each perhaps with its binding's `:const`; a raised finding ends in `:ErrorType`
    names = [name.split(":")[0] for name in paths_text.split("+")]
    paths = tuple(sorted(set(names)))
    raised = paths_text.rsplit(":", 1)[1] if ":" in paths_text and not paths_text.endswith(":const") else ""
    wrong = rest[0] if rest and "/" not in rest[0] else raised
    return finding_class, kind, paths, wrong


def regime_of(entry: dict) -> str:
    """The regime a reproducer's inputs are in, from their values alone: what makes them unusual."""
    floats: list[tuple[float, str]] = []
    integers: list[tuple[int, str]] = []
    for spec in entry.get("inputs", []):
        values = list(flat(spec.get("value", [])))
        if spec["dtype"] in dtypes.FLOAT_DTYPES:
            floats += [(float(v), spec["dtype"]) for v in values]
        elif spec["dtype"] != "bool":
            integers += [(int(v), spec["dtype"]) for v in values]
    length = _leading(entry)
    checks = (
        ("a NaN input", any(math.isnan(v) for v, _ in floats)),
        ("an infinite input", any(math.isinf(v) for v, _ in floats)),
        ("an input near its dtype's largest", any(_near_largest(v, d) for v, d in floats)),
        ("a subnormal input", any(_subnormal(v, d) for v, d in floats)),
        ("an integer at its dtype's limit", any(v in dtypes.integer_range(d) and v != 0 for v, d in integers)),
        ("an index out of range", length is not None and any(v >= length or v < -length for v, _ in integers)),
        ("a large finite input (1e10 or more)", any(abs(v) >= 1e10 for v, _ in floats if math.isfinite(v))),
        ("a tiny nonzero input (1e-10 or less)", any(0 < abs(v) <= 1e-10 for v, _ in floats)),
        ("an exact zero", any(v == 0 for v, _ in floats)),
        ("tied inputs", len({v for v, _ in floats}) < len(floats)),
        ("a negative index", any(v < 0 for v, _ in integers)),
        ("near an integer or half-integer", any(_near_half(v) for v, _ in floats)),
    )
    return next((name for name, holds in checks if holds), "ordinary inputs")


def _leading(entry: dict) -> int | None:
    """The leading axis of the first floating input: what an index into it ranges over."""
    for spec in entry.get("inputs", []):
        if spec["dtype"] in dtypes.FLOAT_DTYPES:
            shape = spec.get("shape") or np.shape(spec.get("value"))
            return int(shape[0]) if len(shape) else None
    return None


def _near_largest(value: float, dtype: str) -> bool:
    import ml_dtypes

    return math.isfinite(value) and abs(value) >= float(ml_dtypes.finfo(dtypes.numpy_dtype(dtype)).max) / 4


def _subnormal(value: float, dtype: str) -> bool:
    import ml_dtypes

    return 0 < abs(value) < float(ml_dtypes.finfo(dtypes.numpy_dtype(dtype)).tiny)


def _near_half(value: float) -> bool:
    """Within 2^-7 of an integer or half-integer of at most 16 (poles, branch points, zeros of sin)."""
    return value != 0 and abs(value) <= 16 and abs(value * 2 - round(value * 2)) <= 2.0**-7 * max(1.0, abs(value))


def primitives_of(file: str) -> frozenset[str]:
    """Every primitive the reproducer's function lowers to at its inputs (nested programs too): traced,
    or where tracing cannot (the function needs its inputs' values: jnp.unique without `size=`), the
    primitives it binds as it runs on them; empty where neither works here."""
    try:
        return _primitives(file)
    except Exception:  # noqa: BLE001 - a function that cannot run shares nothing; its kind stays its own
        return frozenset()


def _primitives(file: str) -> frozenset[str]:
    import functools

    import jax

    from gradaudit.jaxenv import x64_for
    from gradaudit.model.scenario import FunctionCall
    from gradaudit.sources.scenario_files import load_text
    from gradaudit.sources.user_modules import resolve

    scenarios, errors = load_text(Path(file).read_text(encoding="utf-8"), file)
    if errors or not scenarios or not isinstance(scenarios[0].target, FunctionCall):
        return frozenset()
    target = scenarios[0].target
    function = functools.partial(resolve(target.fn, target.root), **dict(target.kwargs))
    arrays = [spec.array() for spec in target.inputs]
    found: set[str] = set()
    with x64_for(scenarios[0]):
        try:
            jaxpr = jax.make_jaxpr(function)(*arrays)
        except (
            jax.errors.ConcretizationTypeError,
            jax.errors.TracerIntegerConversionError,
            jax.errors.TracerArrayConversionError,
            jax.errors.NonConcreteBooleanIndexError,
        ):
            found.add(RAN)
            for name, params in _bound(function, arrays):
                found.add(name)
                _walk_params(params, found)
        else:
            _walk(jaxpr.jaxpr, found)
    return frozenset(found)


def _bound(function, arrays) -> list[tuple[str, dict]]:
    """Each primitive `function` binds as it runs eagerly on `arrays`, with its parameters. JAX has no
    public hook for that, so `Primitive.bind` is wrapped for the call, with jit off: a jitted function
    called again runs its compiled program without binding anything in Python, so what is seen would
    depend on what ran before. Loops run as Python loops there: their bodies' primitives are seen."""
    import jax
    from jax._src import core

    bound: list[tuple[str, dict]] = []
    original = core.Primitive.bind

    def recording(self, *args, **params):
        bound.append((self.name, params))
        return original(self, *args, **params)

    core.Primitive.bind = recording  # type: ignore[method-assign]
    try:
        with jax.disable_jit():
            function(*arrays)
    finally:
        core.Primitive.bind = original  # type: ignore[method-assign]
    return bound


def _walk(jaxpr, found: set[str]) -> None:
    for equation in jaxpr.eqns:
        found.add(equation.primitive.name)
        _walk_params(equation.params, found)


def _walk_params(params: dict, found: set[str]) -> None:
    """The primitives of the programs nested in a primitive's parameters (jit's, scan's, cond's branches)."""
    for value in params.values():
        for inner in value if isinstance(value, list | tuple) else (value,):
            nested = getattr(inner, "jaxpr", inner)
            if hasattr(nested, "eqns"):
                _walk(nested, found)


def describe(file: str) -> dict:
    """What groups a kind into a defect, read from its reproducer file: the regime of its inputs, how
    many numbers they hold (the plainest variant holds fewest), and the primitives its function
    lowers to there."""
    import yaml

    entry = (yaml.safe_load(Path(file).read_text(encoding="utf-8")) or {}).get("scenarios", [{}])[0]
    size = sum(1 for spec in entry.get("inputs", []) for _ in flat(spec.get("value", [])))
    return {"regime": regime_of(entry), "size": size, "primitives": sorted(primitives_of(file))}


def variants(document: dict) -> list[Variant]:
    """Every kind of a survey report, described: its mechanism, regime and primitives (as the report
    holds them; from the reproducer file for a report written before it did)."""
    found = []
    for function in document["functions"]:
        for kind in function["kinds"]:
            top = kind["findings"][0]
            finding_class, kind_name, paths, wrong = parse_fingerprint(top["fingerprint"])
            info = kind if "regime" in kind else describe(kind["file"])
            found.append(
                Variant(
                    function["name"],
                    kind["file"],
                    kind["status"],
                    top.get("class", finding_class) or FindingClass.WRONG.value,
                    kind_name,
                    paths,
                    wrong,
                    info["regime"],
                    frozenset(info["primitives"]),
                    info["size"],
                    top.get("message", ""),
                )
            )
    return found


def group(found: Sequence[Variant]) -> list[Defect]:
    """Variants that are one defect, ranked: one function's kinds at one place (`Variant.place`), and
    the places of several functions alike in class, form and neighbourhood that lower to one primitive
    beyond plumbing, the culprit. The primitive most of a class's functions share is taken first, and
    a place joins one culprit only, so no chain of pairwise likenesses (a with b through `log`, b with
    c through `pow`) makes one defect of functions that share nothing. Primitives seen as a function ran
    (`RAN`) are compared only with others seen so."""
    culprits: dict[tuple, frozenset[str]] = {}
    ran: dict[tuple, bool] = {}
    for variant in found:
        culprits[variant.place] = culprits.get(variant.place, frozenset()) | variant.culprits
        ran[variant.place] = ran.get(variant.place, False) or variant.ran
    owner: dict[tuple, tuple] = {place: place for place in culprits}
    alike: dict[tuple, list[tuple]] = {}
    for place in culprits:
        alike.setdefault((*place[1:], ran[place]), []).append(place)
    for places in alike.values():
        free = set(places)
        while True:
            holders: dict[str, set[tuple]] = {}
            for place in free:
                for primitive in culprits[place]:
                    holders.setdefault(primitive, set()).add(place)
            best = min(holders, key=lambda p: (-len({place[0] for place in holders[p]}), p), default=None)
            if best is None or len({place[0] for place in holders[best]}) < 2:
                break
            first = min(holders[best])
            for place in holders[best]:
                owner[place] = first
            free -= holders[best]
    defects: dict[tuple, Defect] = {}
    for variant in found:
        defects.setdefault(owner[variant.place], Defect()).variants.append(variant)
    return sorted(defects.values(), key=Defect.sort_key)


def _base(name: str) -> str:
    """A function's name without the number a second entry of it gets (`lax.select_n.2`)."""
    head, _, tail = name.rpartition(".")
    return head if tail.isdigit() else name
