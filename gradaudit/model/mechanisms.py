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


def non_finite_inside(met: frozenset[str]) -> str | None:
    """The primitive whose equation first gave inf or NaN from finite operands (`NON_FINITE_INSIDE`), or None."""
    prefix = NON_FINITE_INSIDE + ":"
    return next((m.removeprefix(prefix) for m in sorted(met) if m.startswith(prefix)), None)
