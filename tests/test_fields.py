"""model.fields: one table of a scenario's keys, read alike by scenario files, search spaces and the Python API."""

from __future__ import annotations

import pytest

from gradaudit.model import fields
from gradaudit.model.options import OptionError
from gradaudit.search import SpaceError, read_space
from gradaudit.sources.scenario_files import load_paths
from tests.helpers import write_yaml

BAD = {"choice": "nonsense", "integer": -3, "number": 0}
"""A value each kind of rule refuses for every key of the table that has one."""
RULED = [f for f in fields.FIELDS if f.rule is not fields.OWN and f.rule.kind in BAD]


def _file_errors(tmp_path, key: str, value) -> list[str]:
    entry = {"name": "s", "fn": "os:getcwd", "inputs": "[{dtype: float32, value: 1.0}]"}
    if fields.SelectN in fields.BY_KEY[key].kinds and fields.FunctionCall not in fields.BY_KEY[key].kinds:
        entry = {"name": "s", "selector": "{dtype: int32, value: 0}", "cases": 2, "shape": "[]", "dtype": "float32"}
    entry[key] = value if not isinstance(value, str) else f"'{value}'"
    path = write_yaml(
        tmp_path, f"{key}.yaml", "scenarios:\n  - {" + ", ".join(f"{k}: {v}" for k, v in entry.items()) + "}\n"
    )
    return [error.message for error in load_paths([str(path)]).errors]


@pytest.mark.parametrize("field", RULED, ids=lambda f: f.key)
def test_a_scenario_file_refuses_what_the_table_refuses_and_says_what_it_takes(tmp_path, field):
    errors = _file_errors(tmp_path, field.key, BAD[field.rule.kind])
    assert any(error.startswith(f"{field.key} must be") for error in errors), errors


@pytest.mark.parametrize("field", [f for f in RULED if f.keyword], ids=lambda f: f.key)
def test_the_python_api_refuses_the_same_values_in_the_same_words(field):
    import jax.numpy as jnp

    import gradaudit

    with pytest.raises(OptionError, match=f"'{field.key}' must be {field.rule.describe()}"):
        gradaudit.audit(jnp.sin, jnp.ones(2), **{field.key: BAD[field.rule.kind]})


@pytest.mark.parametrize("field", [f for f in RULED if f.space == fields.AXIS], ids=lambda f: f.key)
def test_a_search_space_refuses_the_same_values_in_the_same_words(tmp_path, field):
    space = {"name": "s", "selector": "{dtype: int32, value: [0]}", "cases": "[2]", "shape": "[[]]"}
    if fields.SelectN not in field.kinds:
        space = {"name": "s", "fn": "'os:getcwd'", "inputs": "[{dtype: float32}]"}
    space[field.key] = f"[{BAD[field.rule.kind]!r}]".replace('"', "'")
    path = write_yaml(tmp_path, "space.yaml", "search: {" + ", ".join(f"{k}: {v}" for k, v in space.items()) + "}\n")
    with pytest.raises(SpaceError, match=f"'{field.key}' must be {field.rule.describe()}"):
        read_space(path)


def test_the_readers_key_lists_come_from_the_table():
    from gradaudit import api
    from gradaudit.search import spaces as search
    from gradaudit.sources import scenario_files

    assert set(scenario_files.SCENARIO_KEYS) == {f.key for f in fields.FIELDS}
    assert set(search.SPACE_KEYS) - {"name"} == {f.key for f in fields.FIELDS if f.space}
    assert set(fields.KEYWORDS) <= set(api.SCENARIO_KEYWORDS)
