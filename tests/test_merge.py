"""merge.merge_reports: shards of one run merge into the report one run writes, and nothing else merges."""

from __future__ import annotations

import json

import pytest

from gradaudit.merge import merge_reports
from gradaudit.sources.saved_reports import ReportError
from tests.helpers import ROOT, run_cli, write_yaml

SUITE = str(ROOT / "scenarios" / "select_n" / "representative.yaml")


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    paths = {}
    for name, extra in (("whole", ()), ("1", ("--shard", "1/2")), ("2", ("--shard", "2/2")), ("fixed", ())):
        rule = "fixed" if name == "fixed" else "legacy"
        paths[name] = str(folder / f"{name}.json")
        run_cli("run", SUITE, "--rule", rule, "--json", paths[name], "--exit-zero", *extra)
    return paths


def test_shards_merge_into_the_whole_runs_counts_and_results(shards):
    merged = merge_reports([shards["1"], shards["2"]])
    whole = json.loads(open(shards["whole"]).read())
    for key in ("summary", "suites", "diagnoses"):
        assert merged[key] == whole[key], key
    assert {k: merged["gate"][k] for k in ("passed", "failed", "new")} == {
        k: whole["gate"][k] for k in ("passed", "failed", "new")
    }
    assert sorted(r["name"] for r in merged["results"]) == sorted(r["name"] for r in whole["results"])
    assert merged["merged_from"] == [shards["1"], shards["2"]]


def test_overlapping_shards_and_other_runs_are_refused_saying_which(shards):
    with pytest.raises(ReportError, match=r"'int32-above-two-cases' is also in .*1.json: shards must not overlap"):
        merge_reports([shards["1"], shards["whole"]])
    with pytest.raises(ReportError, match=r"rule is 'fixed', but .* has 'legacy': only shards of one run"):
        merge_reports([shards["1"], shards["fixed"]])


def test_merge_refuses_shards_with_input_errors_and_incomplete_reports(tmp_path):
    good = write_yaml(
        tmp_path,
        "good.yaml",
        "scenarios:\n  - {name: a, selector: {dtype: int32, value: 1}, cases: 2, shape: [], dtype: float32}\n",
    )
    bad = write_yaml(tmp_path, "bad.yaml", "scenarios: []\n")
    run_cli("run", str(good), "--json", str(tmp_path / "good.json"))
    assert run_cli("run", str(bad), "--json", str(tmp_path / "bad.json")).exit_code == 2
    merged = run_cli("merge", str(tmp_path / "good.json"), str(tmp_path / "bad.json"), "-o", str(tmp_path / "m.json"))
    assert merged.exit_code == 2 and "had 1 input error(s)" in merged.stderr
    (tmp_path / "min.json").write_text('{"schema": "gradaudit.report/1"}')
    incomplete = run_cli(
        "merge", str(tmp_path / "good.json"), str(tmp_path / "min.json"), "-o", str(tmp_path / "m.json")
    )
    assert incomplete.exit_code == 2 and "needs 'environment' and 'results'" in incomplete.stderr
    (tmp_path / "base.json").write_text('{"schema": "gradaudit.report/1", "results": "x"}')
    baseline = run_cli("run", str(good), "--baseline", str(tmp_path / "base.json"))
    assert baseline.exit_code == 2 and "'results' must be a list" in baseline.stderr
    missing = run_cli("merge", str(tmp_path / "good.json"), "-o", str(tmp_path / "no" / "m.json"))
    assert missing.exit_code == 2 and "-o" in missing.stderr
