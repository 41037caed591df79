"""The keys of a scenario, once for every reader: scenario files (`sources/scenario_files.py`),
search spaces (`search/spaces.py`) and the Python API's keywords (`api.py`).

Each key says which kinds of scenario take it, whether a scenario must give it, what a value of
it may be (`Rule`), what a search space does with it (an axis of alternatives, or one value fixed
for every draw) and whether the Python API takes it as a keyword. A reader takes its key lists and
rules from here and words its own messages (a file's point at a line and column).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradaudit.model import dtypes
from gradaudit.model.scenario import BINDS, ORDERS, OUTPUTS, FunctionCall, SelectN


@dataclass(frozen=True)
class Rule:
    """What one value of a key may be: one of `allowed`, an integer of at least `minimum`, a finite
    number (above `minimum` when `strictly`), a shape, or something its reader checks itself."""

    kind: str
    allowed: tuple = ()
    minimum: float | None = None
    strictly: bool = False

    def describe(self) -> str:
        """The rule in words, as messages finish 'must be ...'."""
        if self.kind == "choice":
            return f"one of {', '.join(map(str, self.allowed))}"
        bound = "" if self.minimum is None else f" {'>' if self.strictly else '>='} {self.minimum:g}"
        return {"integer": f"an integer{bound}", "number": f"a finite number{bound}", "shape": "a list of sizes >= 0"}[
            self.kind
        ]

    def accepts(self, value) -> bool:
        if self.kind == "choice":
            return any(value == a and type(value) is type(a) for a in self.allowed)  # 1.0 is not 1, True not 1
        if self.kind == "shape":
            return isinstance(value, list | tuple) and all(Rule("integer", minimum=0).accepts(d) for d in value)
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return False
        if self.kind == "integer" and not isinstance(value, int):
            return False
        return self.minimum is None or (value > self.minimum if self.strictly else value >= self.minimum)


OWN = Rule("own")
"""A value its reader checks itself (a name, a selector, inputs, a tolerance, an expectation)."""

AXIS, FIXED = "axis", "fixed"
"""What a search space does with a key: alternatives drawn from, or one value for every draw."""


@dataclass(frozen=True)
class Field:
    key: str
    kinds: tuple[type, ...]
    rule: Rule = OWN
    required: bool = False
    space: str = ""
    """AXIS, FIXED, or "" where a space does not take the key."""
    keyword: bool = False
    """Whether the Python API takes it as a keyword of one audit."""


BOTH = (SelectN, FunctionCall)
FIELDS: tuple[Field, ...] = (  # in the order messages list them
    Field("name", BOTH, required=True, keyword=True),
    Field("selector", (SelectN,), required=True, space=AXIS),
    Field("cases", (SelectN,), Rule("integer", minimum=1), required=True, space=AXIS),
    Field("shape", (SelectN,), Rule("shape"), required=True, space=AXIS),
    Field("dtype", (SelectN,), Rule("choice", dtypes.FLOAT_DTYPES), required=True, space=AXIS),
    Field("values", (SelectN,)),
    Field("output", (SelectN,), Rule("choice", OUTPUTS), space=AXIS),
    Field("fn", (FunctionCall,), required=True, space=AXIS),
    Field("inputs", (FunctionCall,), required=True, space=AXIS),
    Field("bind", (FunctionCall,), Rule("choice", BINDS), space=AXIS, keyword=True),
    Field("kwargs", (FunctionCall,)),
    Field("directions", (FunctionCall,), Rule("integer", minimum=1)),
    Field("order", BOTH, Rule("choice", ORDERS), space=AXIS, keyword=True),
    Field("seed", BOTH, Rule("integer", minimum=0), space=AXIS, keyword=True),
    Field("eps", BOTH, Rule("number", minimum=0, strictly=True), space=FIXED, keyword=True),
    Field("tolerance", BOTH, space=FIXED),
    Field("expect", BOTH),
)
BY_KEY = {field.key: field for field in FIELDS}


def keys(kind: type | None = None, *, required: bool = False, space: str | None = None) -> tuple[str, ...]:
    """The keys `kind` takes (every kind's: None), in the table's order; only required ones, or
    only those a space takes as `space`, when asked."""
    return tuple(
        f.key
        for f in FIELDS
        if (kind is None or kind in f.kinds) and (f.required or not required) and (space is None or f.space == space)
    )


def shared(kinds: tuple[type, ...] = BOTH) -> tuple[str, ...]:
    """The keys every one of `kinds` takes."""
    return tuple(f.key for f in FIELDS if all(kind in f.kinds for kind in kinds))


KEYWORDS = tuple(f.key for f in FIELDS if f.keyword)
"""The Python API's keywords that are a scenario's keys (it has its own besides: `modes`, ...)."""
