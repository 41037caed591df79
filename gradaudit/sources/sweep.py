"""Sweeps: a scenario space written as lists of alternatives, expanded to their product.

    sweep:
      name: "{selector.dtype}-{selector.value}-n{cases}-{shape}"
      selector: {dtype: [int8, int32, uint32], value: [-1, 0, 1, 2, 255]}
      cases: [1, 2, 6]
      shape: [[], [3], [2, 3]]

Each swept key holds a list of alternatives; other keys are fixed. A combination that cannot be
a valid scenario (255 in int8, a bool selector with 6 cases) is skipped and counted with its
reason; an alternative that is wrong on its own (a misspelt dtype) is an input error.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from dataclasses import dataclass

import yaml

SWEPT = ("selector.dtype", "selector.value", "cases", "shape", "dtype", "output", "order", "seed")
"""Keys whose value in a sweep is a list of alternatives."""
FIXED = ("tolerance", "eps", "expect")
"""Keys a sweep may fix for every combination."""
SWEEP_KEYS = ("name", "selector", "cases", "shape", "dtype", "output", "order", "seed", *FIXED)
FIELD = re.compile(r"\{([a-z_.]+)\}")

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"


@dataclass(frozen=True)
class Combination:
    """One point of the product: its scenario node (built from the original nodes, so marks stay) and its name."""

    name: str
    node: yaml.MappingNode


def render_value(value) -> str:
    """How a value reads in a generated name: 2x3 for shapes, scalar for (), true/false for booleans."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        if not value:
            return "scalar"
        return "x".join(render_value(v) for v in value) if all(not isinstance(v, list) for v in value) else str(value)
    return str(value)


def _field(values: dict[str, object], match: re.Match[str]) -> str:
    """A name template's `{key}` as the combination's value of that key reads; any other `{...}` as written."""
    return render_value(values[match.group(1)]) if match.group(1) in values else match.group(0)


def _key(node: yaml.Node, text: str) -> yaml.ScalarNode:
    return yaml.ScalarNode(_STR, text, node.start_mark, node.end_mark)


def combinations(
    name_node: yaml.ScalarNode, axes: dict[str, list[yaml.Node]], fixed: dict[str, yaml.Node], plain: dict[str, list]
) -> list[Combination]:
    """The product of the axes as scenario nodes, named by the template in `name_node`.

    `plain` holds each alternative's Python value, for the name.
    """
    keys = list(axes)
    result = []
    for picks in itertools.product(*(range(len(axes[k])) for k in keys)):
        chosen = {k: axes[k][i] for k, i in zip(keys, picks, strict=True)}
        values = {k: plain[k][i] for k, i in zip(keys, picks, strict=True)}
        name = FIELD.sub(functools.partial(_field, values), name_node.value)
        items: list[tuple[yaml.Node, yaml.Node]] = [
            (_key(name_node, "name"), yaml.ScalarNode(_STR, name, name_node.start_mark, name_node.end_mark))
        ]
        selector = [(_key(chosen[k], k.split(".")[1]), chosen[k]) for k in keys if k.startswith("selector.")]
        selector += [(_key(node, k.split(".")[1]), node) for k, node in fixed.items() if k.startswith("selector.")]
        if selector:
            items.append(
                (
                    _key(selector[0][1], "selector"),
                    yaml.MappingNode(_MAP, selector, selector[0][1].start_mark, selector[0][1].end_mark),
                )
            )
        items += [(_key(chosen[k], k), chosen[k]) for k in keys if not k.startswith("selector.")]
        items += [(_key(node, k), node) for k, node in fixed.items() if not k.startswith("selector.")]
        result.append(
            Combination(name=name, node=yaml.MappingNode(_MAP, items, name_node.start_mark, name_node.end_mark))
        )
    return result


def skipped_summary(where: str, total: int, reasons: Counter) -> str:
    """'file:line: sweep gives 27 scenarios; skipped 9 (value 255 is not representable in int8: 9)'."""
    kept = total - sum(reasons.values())
    text = f"{where}: sweep gives {kept} scenario{'s' if kept != 1 else ''}"
    if reasons:
        detail = "; ".join(f"{reason}: {count}" for reason, count in reasons.most_common())
        text += f", skipped {sum(reasons.values())} ({detail})"
    return text
