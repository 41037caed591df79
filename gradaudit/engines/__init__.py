"""The engines that compute a scenario's paths (base.py describes the protocol)."""

GROUP_MIN = 4
"""Smaller groups go to bundles (select_n) or the literal engine (functions). A group compiles
about eight programs whatever its size; a bundle's cost grows with its scenarios. Measured here
(two workers): the 100-scenario grid, groups of one or two, took 25 s in groups and 15 s in
bundles; the 1,000-scenario grid, groups of about 11, 26 s in groups and 63 s in bundles."""
