"""Mutated scenario files never crash loading: every outcome is scenarios or located input errors.

The normal test run tries a modest number of examples; `make fuzz` runs thousands
(GRADAUDIT_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradaudit.sources.scenario_files import load_paths

EXAMPLES = int(os.environ.get("GRADAUDIT_FUZZ_EXAMPLES", "150"))

VALID = b"""defaults: {dtype: float32}
scenarios:
  - name: above
    selector: {dtype: int32, value: 2}
    cases: 2
    shape: []
    values: [2.0, 5.0]
  - name: vector
    selector: {dtype: bool, value: [true, false, true]}
    cases: 2
    shape: [3]
    tolerance: {rtol: 1e-3, atol: 1e-3}
    expect: {status: error, exception: IndexError}
sweep:
  name: "s-{cases}-{selector.value}"
  selector: {dtype: [uint8], value: [0, 255]}
  cases: [1, 2]
  shape: [[], [2]]
"""

SNIPPETS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b"- ",
    b"\n",
    b"  ",
    b"\t",
    b"&a ",
    b"*a",
    b"!!python/object:os.system ",
    b"\x00",
    b"\xff",
    b"1e309",
    b"-1",
    b"9" * 40,
    b"null",
    b"'",
    b'"',
    b"#",
    b"---\n",
    b"<<: ",
    b".nan",
    b"true",
]


@st.composite
def mutated(draw) -> bytes:
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        if action == "insert":
            data[position:position] = draw(st.sampled_from(SNIPPETS) | st.binary(min_size=1, max_size=4))
        elif action == "delete":
            del data[position : position + draw(st.integers(1, 12))]
        elif action == "replace":
            data[position : position + 1] = draw(st.sampled_from(SNIPPETS))
        else:
            start = data.rfind(b"\n", 0, position) + 1
            end = data.find(b"\n", position)
            end = len(data) if end < 0 else end + 1
            data[end:end] = data[start:end]
    return bytes(data)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(mutated())
def test_mutated_files_load_or_fail_with_located_errors(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("fuzz") / "scenarios.yaml"
    path.write_bytes(content)
    loaded = load_paths([str(path)])  # must not raise
    assert loaded.scenarios or loaded.errors
    for error in loaded.errors:
        assert error.location.file == str(path) and error.location.line >= 1 and error.location.col >= 1
        assert error.message
