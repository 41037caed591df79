"""sources.yaml_nodes: YAML read as nodes with their places, so every later error says file:line:col."""

from __future__ import annotations

import pytest

from gradaudit.model.errors import InvalidInput
from gradaudit.sources.yaml_nodes import mapping_items, node_location, parse_text, scalar_value, sequence_items


def _root(text: str):
    root, extra = parse_text(text, "f.yaml")
    assert extra == []
    return root


def test_nodes_keep_their_places_and_values_read_as_safe_load_reads_them():
    root = _root("a: 1\nb:\n  - 2.5\n  - 1e-3\n  - yes\n  - '1e-3'\n")
    items, errors = mapping_items("f.yaml", root, "the file")
    assert errors == [] and list(items) == ["a", "b"]
    values = sequence_items("f.yaml", items["b"][1], "b")
    assert [scalar_value("f.yaml", v) for v in values] == [2.5, 0.001, True, "1e-3"]  # a plain 1e-3 is a number
    assert str(node_location("f.yaml", values[1])) == "f.yaml:4:5"


def test_duplicate_and_merge_keys_are_errors_at_their_own_lines_the_first_kept():
    items, errors = mapping_items("f.yaml", _root("a: 1\nb: 2\na: 3\n<<: {c: 4}\n"), "the file")
    assert scalar_value("f.yaml", items["a"][1]) == 1
    assert [(e.location.line, e.message) for e in errors] == [
        (3, "duplicate key 'a' in the file (first given at line 1)"),
        (4, "YAML merge keys ('<<') are not supported; use 'defaults'"),
    ]


@pytest.mark.parametrize(
    "text, where, says",
    [
        ("a: [1, 2\nb: 3\n", "f.yaml:1:4", "did not find expected ',' or ']' (noticed at line 2"),
        ("a:\n\t- 1\n", "f.yaml:2:1", "a tab: YAML indents with spaces only"),
        ("a: !!python/object:os.system x\n", "f.yaml:1:4", "unsupported YAML tag"),
        ("a: 123456789012345678901234\n", "f.yaml:1:4", "integer too large: 24 digits"),
    ],
)
def test_bad_yaml_says_where_and_what(text, where, says):
    with pytest.raises(InvalidInput) as raised:
        root = _root(text)
        items, _ = mapping_items("f.yaml", root, "the file")
        scalar_value("f.yaml", items["a"][1])
    assert str(raised.value.error.location) == where and says in raised.value.error.message


def test_a_second_document_is_an_error_where_it_starts():
    root, extra = parse_text("a: 1\n---\nb: 2\n", "f.yaml")
    assert root is not None and [str(e.location) for e in extra] == ["f.yaml:3:1"]
