"""--jobs: scenarios that abort or hang take down only their worker; every scenario gets an outcome."""

from __future__ import annotations

import time

from tests.helpers import run_cli, write_yaml

HAZARDS = """
import os
import time


def aborts(x):
    os.abort()


def hangs(x):
    time.sleep(120)
    return x


def square(x):
    return x * x
"""


def test_crashing_and_hanging_scenarios_are_errors_and_the_others_finish(tmp_path):
    (tmp_path / "hazards.py").write_text(HAZARDS)
    path = write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: aborts, fn: "hazards:aborts", inputs: [{dtype: float32, value: 1.0}]}
          - {name: hangs, fn: "hazards:hangs", inputs: [{dtype: float32, value: 1.0}]}
          - {name: fine, fn: "hazards:square", inputs: [{dtype: float32, value: 2.0}]}
          - {name: seed, selector: {dtype: int32, value: 2}, cases: 2, shape: [], dtype: float32}
        """,
    )
    start = time.perf_counter()
    result = run_cli("run", str(path), "--jobs", "2", "--timeout", "4", "--rule", "legacy", "--json", "-")
    assert time.perf_counter() - start < 60
    assert result.exit_code == 1
    by_name = {r["name"]: r for r in result.json()["results"]}
    assert by_name["aborts"]["status"] == "error"
    assert by_name["aborts"]["findings"][0]["message"] == "crashed: SIGABRT (also when retried in a fresh worker)"
    assert by_name["hangs"]["status"] == "error"
    assert by_name["hangs"]["findings"][0]["message"] == "timed out after 4 s"
    assert by_name["fine"]["status"] == "consistent"
    assert by_name["seed"]["status"] == "mismatch" and by_name["seed"]["diagnosis"]["id"] == "GA002"
