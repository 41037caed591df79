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
TANGENT_TRIGGERS = frozenset({NON_FINITE_UNSELECTED})
"""Mechanisms that need tangents pushed through the function (the others need its values alone)."""
