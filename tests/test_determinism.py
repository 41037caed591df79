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
    args = (
        "run",
        str(ROOT / "scenarios" / "select_n" / "representative.yaml"),
        str(ROOT / "scenarios" / "where"),
        "--json",
        "-",
    )
    first, second = run_cli(*args), run_cli(*args)
    assert first.exit_code == second.exit_code == 1
    assert _without_timing(first.json()) == _without_timing(second.json())


def test_shuffle_audits_in_a_seeded_order_records_it_and_reports_in_file_order():
    from gradaudit.model.options import Options
    from gradaudit.service import audit
    from gradaudit.sources.scenario_files import load_paths

    loaded = load_paths(
        [str(ROOT / "scenarios" / "select_n" / "representative.yaml"), str(ROOT / "scenarios" / "where")]
    )
    names = [s.name for s in loaded.scenarios]
    orders = {}
    for seed in (None, 1, 2, 1):
        seen = []
        report = audit(
            loaded.scenarios,
            Options(jobs=0, shuffle=seed),
            on_result=lambda result, seen=seen: seen.append(result.scenario.name),
        )
        assert [r.scenario.name for r in report.results] == names and report.shuffle == seed
        assert sorted(seen) == sorted(names)
        orders.setdefault(seed, seen)
        assert orders[seed] == seen  # the same seed, the same order
    assert orders[1] != orders[2] and orders[1] != orders[None]
    plain, shuffled = (
        run_cli("run", str(ROOT / "scenarios" / "where"), "--json", "-", *extra).json()
        for extra in ((), ("--shuffle", "7"))
    )
    assert shuffled.pop("shuffle") == 7 and plain.pop("shuffle") is None
    assert _without_timing(plain) == _without_timing(shuffled)
