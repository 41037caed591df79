"""The failure mechanisms a diagnosis may blame, by name: a primitive met with the operands that trigger it.

`targets.triggers` finds which of them a function meets at its inputs; `judging.diagnoses` names a
diagnosis only when its mechanism is among them.
"""

CLAMP_INVERTED = "clamp:inverted"
"""lax.clamp with lo > hi at some element."""
SELECT_OUT_OF_RANGE = "select_n:out-of-range"
"""lax.select_n with an integer selector below 0 or past the last case."""
READ_OUT_OF_RANGE = "read:out-of-range"
"""gather or dynamic_slice at a start outside the operand, or with an index dtype too narrow for its every start."""
NON_FINITE_UNSELECTED = "select_n:non-finite-unselected"
"""A select_n case that is not selected but whose tangent is inf or NaN: 0 × inf in reverse mode."""
NON_FINITE_INSIDE = "inside:non-finite"
"""An equation of the function gives inf or NaN from finite operands while the function's value stays
finite (`sqrt` of a negative number `jnp.where` then discards): a derivative that multiplies it in
(0 × NaN) is NaN where the value is not. Recorded with `NON_FINITE_INSIDE:<primitive>`, the first such
equation's primitive (`non_finite_inside`)."""
TANGENT_TRIGGERS = frozenset({NON_FINITE_UNSELECTED, NON_FINITE_INSIDE})
"""Mechanisms that need tangents pushed through the function (the others need its values alone)."""
PRIMITIVES = {
    CLAMP_INVERTED: frozenset({"clamp"}),
    SELECT_OUT_OF_RANGE: frozenset({"select_n"}),
    READ_OUT_OF_RANGE: frozenset({"gather", "dynamic_slice"}),
    NON_FINITE_UNSELECTED: frozenset({"select_n"}),
}
"""The primitives whose operands decide each mechanism (`NON_FINITE_INSIDE`: any equation's)."""


CONVENTIONS = {
    "reduce_precision": "reduce_precision's straight-through 1 (the function is a staircase, flat between its steps)",
    "floor": "floor's zero where it returns its operand (every float there is an integer)",
    "ceil": "ceil's zero where it returns its operand (every float there is an integer)",
    "round": "round's zero where it returns its operand (every float there is an integer)",
    "rem": "rem's 1 in x and -trunc(x / y) in y where x / y is beyond every float's fraction (its sawtooth is "
    "finer than the float grid there, and the function's own derivative 0)",
}
"""Primitives whose derivative in JAX is a convention, not the float function's own, each with that
convention: `targets.triggers.conventional_column` gives them the function's own derivative where they
differ, and `judging.classes.settle` names them where that derivative is the one finite differences see.
Not stop_gradient: a function that calls it asks AD for a derivative other than the function's, and
whether that is the one its author meant is not for numbers to say (a finding says so)."""


def non_finite_inside(met: frozenset[str]) -> str | None:
    """The primitive whose equation first gave inf or NaN from finite operands (`NON_FINITE_INSIDE`), or None."""
    prefix = NON_FINITE_INSIDE + ":"
    return next((m.removeprefix(prefix) for m in sorted(met) if m.startswith(prefix)), None)
