"""Safe YAML parsing that keeps every node's position, so each input error can say file:line:col.

PyYAML's `compose()` gives nodes with marks; plain `safe_load` would lose them and silently keep
the last of two duplicate keys. Only the tags `safe_load` understands for scalars are accepted.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml

from gradaudit.model.errors import InputError, InvalidInput, Location

try:  # The C loader is several times faster and gives the same nodes and marks.
    _SafeLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _SafeLoader = yaml.SafeLoader


@functools.lru_cache(maxsize=65536)
def _plain_scalar_tag(text: str) -> str:
    return yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False))


class _Loader(_SafeLoader):
    """The safe loader, resolving each distinct plain scalar's tag once: a 10,000-scenario file
    repeats the same few hundred texts, and resolving them took a third of reading it."""

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode:
            return _plain_scalar_tag(value) if implicit[0] else self.DEFAULT_SCALAR_TAG
        return super().resolve(kind, value, implicit)


_SCALAR_TAGS = {
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:bool": "bool",
    "tag:yaml.org,2002:int": "int",
    "tag:yaml.org,2002:float": "float",
    "tag:yaml.org,2002:str": "str",
}
_MAPPING_TAG = "tag:yaml.org,2002:map"
_EXPONENT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+$")
_SEQUENCE_TAG = "tag:yaml.org,2002:seq"


def node_location(file: str, node: yaml.Node) -> Location:
    mark = node.start_mark
    return Location(file, mark.line + 1, mark.column + 1)


def _offset_location(file: str, text: str, offset: int) -> Location:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Location(file, line, col)


def _char_at(text: str, line: int, column: int) -> str:
    lines = text.splitlines()
    return lines[line][column : column + 1] if line < len(lines) else ""


def parse_file(path: Path, display: str) -> tuple[yaml.Node | None, list[InputError]]:
    """Read and compose the file's YAML document (None for an empty file), with any extra documents as errors.

    Raises InvalidInput for unreadable files, bad encodings and syntax errors, where nothing can be checked.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(InputError(Location(display, 1, 1), f"cannot read file: {exc.strerror}")) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = _offset_location(display, data[: exc.start].decode("utf-8", "replace"), exc.start)
        raise InvalidInput(
            InputError(where, f"not UTF-8 text (byte 0x{data[exc.start]:02x}); scenario files must be UTF-8")
        ) from None
    return parse_text(text, display)


def parse_text(text: str, display: str) -> tuple[yaml.Node | None, list[InputError]]:
    """Compose YAML text as parse_file does, naming `display` in every error."""
    try:
        documents = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        began = exc.context_mark
        if began is not None and exc.problem_mark is not None and began.line < exc.problem_mark.line:
            # PyYAML notices an unclosed bracket or a key without its colon on a later line: point
            # at where the construct began, which is where the mistake is
            noticed = exc.problem_mark
            problem = f"{exc.context}, {problem} (noticed at line {noticed.line + 1}, column {noticed.column + 1})"
            mark = began
        where = Location(display, mark.line + 1, mark.column + 1) if mark else Location(display, 1, 1)
        if mark is not None and _char_at(text, mark.line, mark.column) == "\t":
            problem += " (a tab: YAML indents with spaces only)"
        raise InvalidInput(InputError(where, f"YAML syntax error: {problem}")) from None
    except yaml.reader.ReaderError as exc:
        where = _offset_location(display, text, exc.position)
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise InvalidInput(InputError(where, f"invalid character U+{code:04X} in YAML: {exc.reason}")) from None
    except yaml.YAMLError as exc:
        raise InvalidInput(InputError(Location(display, 1, 1), f"YAML error: {exc}")) from None
    except RecursionError:
        raise InvalidInput(InputError(Location(display, 1, 1), "YAML nested too deeply")) from None
    documents = [d for d in documents if d is not None]
    extra = [
        InputError(node_location(display, d), "a scenario file holds one YAML document; found another one after '---'")
        for d in documents[1:]
    ]
    return (documents[0] if documents else None), extra


def scalar_value(file: str, node: yaml.Node):
    """The Python value of a scalar node, as `safe_load` would give it."""
    if not isinstance(node, yaml.ScalarNode):
        kind = "a mapping" if isinstance(node, yaml.MappingNode) else "a list"
        raise InvalidInput(InputError(node_location(file, node), f"expected a single value, got {kind}"))
    if node.tag not in _SCALAR_TAGS:
        raise InvalidInput(
            InputError(node_location(file, node), f"unsupported YAML tag {node.tag!r}; only plain values are allowed")
        )
    if node.tag == "tag:yaml.org,2002:str" and not node.style and _EXPONENT.match(node.value):
        return float(node.value)  # YAML 1.1 reads 1e-3 as a string; a plain scalar like that means a number
    try:
        value = _SafeScalars.yaml_constructors[node.tag](_SCALARS, node)
    except (yaml.YAMLError, ValueError, OverflowError) as exc:
        raise InvalidInput(InputError(node_location(file, node), f"cannot read value {node.value!r}: {exc}")) from None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > LARGEST_INTEGER:
        raise InvalidInput(
            InputError(
                node_location(file, node),
                f"integer too large: {len(str(abs(value)))} digits (at most {LARGEST_INTEGER:.0e}, past uint64's "
                "range)",
            )
        )
    return value


_SafeScalars = yaml.constructor.SafeConstructor
_SCALARS = _SafeScalars()
"""safe_load's own constructors for plain scalars, one instance for every node: they keep no state
for scalars (a loader made per scalar took half of reading a 10,000-scenario file)."""

LARGEST_INTEGER = 10**20
"""No dtype holds more (uint64 ends at 1.8e19), and larger integers overflow the float conversions of
eps, tolerances and values."""


def kind_name(node: yaml.Node) -> str:
    """How a node reads to a user: 'a mapping', 'a list' (with a tag other than the plain one named)
    or the scalar's own kind."""
    if isinstance(node, yaml.MappingNode):
        return "a mapping" if node.tag == _MAPPING_TAG else f"a mapping tagged {node.tag}"
    if isinstance(node, yaml.SequenceNode):
        return "a list" if node.tag == _SEQUENCE_TAG else f"a list tagged {node.tag}"
    kind = _SCALAR_TAGS.get(node.tag)
    if kind == "str":
        return f"'{node.value}'"
    if kind is None:
        return f"{node.tag} {node.value!r}"
    return "null" if kind == "null" else node.value


def mapping_items(
    file: str, node: yaml.Node, what: str
) -> tuple[dict[str, tuple[yaml.Node, yaml.Node]], list[InputError]]:
    """Keys of a mapping node with their key and value nodes; duplicate and non-string keys are errors.

    The first occurrence of a duplicated key is kept so later checks still run on it.
    """
    if not isinstance(node, yaml.MappingNode) or node.tag != _MAPPING_TAG:
        raise InvalidInput(InputError(node_location(file, node), f"{what} must be a mapping, got {kind_name(node)}"))
    items: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    errors: list[InputError] = []
    for key_node, value_node in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            errors.append(
                InputError(node_location(file, key_node), "YAML merge keys ('<<') are not supported; use 'defaults'")
            )
            continue
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
            errors.append(
                InputError(node_location(file, key_node), f"keys of {what} must be names, got {kind_name(key_node)}")
            )
            continue
        key = key_node.value
        if key in items:
            first = node_location(file, items[key][0])
            errors.append(
                InputError(
                    node_location(file, key_node), f"duplicate key '{key}' in {what} (first given at line {first.line})"
                )
            )
            continue
        items[key] = (key_node, value_node)
    return items, errors


def sequence_items(file: str, node: yaml.Node, what: str) -> list[yaml.Node]:
    if not isinstance(node, yaml.SequenceNode) or node.tag != _SEQUENCE_TAG:
        raise InvalidInput(InputError(node_location(file, node), f"{what} must be a list, got {kind_name(node)}"))
    return list(node.value)
