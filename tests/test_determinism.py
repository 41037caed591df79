"""The same inputs give the same report, apart from timing fields."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]


def _without_timing(report: dict) -> dict:
    for result in report["results"]:
        result.pop("seconds")
    return report


def test_two_runs_give_the_same_report():
    args = ("run", str(ROOT / "scenarios" / "select_n" / "representative.yaml"), str(ROOT / "scenarios" / "where"), "--json", "-")
    first, second = run_cli(*args), run_cli(*args)
    assert first.exit_code == second.exit_code == 1
    assert _without_timing(first.json()) == _without_timing(second.json())
