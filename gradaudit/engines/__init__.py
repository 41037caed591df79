"""The engines that compute a scenario's paths (base.py describes the protocol)."""

GROUP_MIN = 4
"""Smaller groups go to bundles (select_n) or the literal engine (functions). A group compiles
about eight programs whatever its size; a bundle's cost grows with its scenarios, so small groups
are cheaper as bundles and large ones as groups (docs/performance.md has the measurements)."""
