"""merge.merge_reports: shards of one run merge into the report one run writes, and nothing else merges."""

from __future__ import annotations

import json

import pytest

from gradaudit.merge import merge_reports
from gradaudit.sources.saved_reports import ReportError
from tests.helpers import ROOT, run_cli

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
