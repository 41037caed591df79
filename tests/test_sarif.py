"""SARIF 2.1.0 (`--sarif PATH`): every finding of a failing scenario at its scenario's line, \
as GitHub code scanning reads it."""

from __future__ import annotations

import json

from tests.helpers import ROOT, run_cli


def _results(document: dict) -> list[dict]:
    (run,) = document["runs"]
    return run["results"]


def test_the_seed_suites_findings_are_sarif_results_at_their_scenarios_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "gradaudit.sarif"
    ran = run_cli(
        "run", "scenarios/select_n/representative.yaml", "--sarif", str(out), "--json", str(tmp_path / "r.json")
    )
    assert ran.exit_code == 1
    document = json.loads(out.read_text())
    assert document["version"] == "2.1.0" and document["$schema"].endswith("sarif-2.1.0.json")
    (run,) = document["runs"]
    assert run["tool"]["driver"]["name"] == "gradaudit"
    report = json.loads((tmp_path / "r.json").read_text())
    failing = [r for r in report["results"] if not r["outcome"]["passed"]]
    expected = sorted((r["source"], f["fingerprint"]) for r in failing for f in r["findings"])
    got = []
    for result in run["results"]:
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "scenarios/select_n/representative.yaml"
        line, column = physical["region"]["startLine"], physical["region"]["startColumn"]
        assert column == 5  # where `- name:` begins
        got.append(
            (
                f"{physical['artifactLocation']['uri']}:{line}",
                result["partialFingerprints"]["gradauditFinding/v1"].split("|", 1)[1],
            )
        )
        assert result["level"] == "error" and result["message"]["text"].startswith(
            result["properties"]["scenario"] + ": "
        )
    assert sorted(got) == expected and len(got) > 0
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert {result["ruleId"] for result in run["results"]} == set(rules)
    assert (
        "GA002" in rules
        and rules["GA002"]["helpUri"].startswith("https://")
        and "fix 1:" in rules["GA002"]["help"]["text"]
    )


def test_findings_a_baseline_knows_are_left_out_and_the_rest_are_new(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    baseline = tmp_path / "baseline.json"
    assert run_cli("baseline", "scenarios/select_n/representative.yaml", "-o", str(baseline)).exit_code == 0
    known = run_cli(
        "run",
        "scenarios/select_n/representative.yaml",
        "--baseline",
        str(baseline),
        "--sarif",
        str(tmp_path / "known.sarif"),
    )
    assert known.exit_code == 0 and _results(json.loads((tmp_path / "known.sarif").read_text())) == []
    fresh = run_cli(
        "run",
        "scenarios/select_n/representative.yaml",
        "--rule",
        "legacy",
        "--baseline",
        str(baseline),
        "--sarif",
        str(tmp_path / "new.sarif"),
    )
    results = _results(json.loads((tmp_path / "new.sarif").read_text()))
    if fresh.exit_code == 1:
        assert results and all(r["baselineState"] == "new" for r in results)
    else:
        assert results == []


def test_compare_writes_one_sarif_run_naming_each_rule(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    compared = run_cli(
        "compare",
        "scenarios/select_n/representative.yaml",
        "--rules",
        "legacy",
        "fixed",
        "--sarif",
        str(tmp_path / "c.sarif"),
    )
    assert compared.exit_code in (0, 1)
    messages = [r["message"]["text"] for r in _results(json.loads((tmp_path / "c.sarif").read_text()))]
    assert messages and all(" [legacy]: " in m for m in messages)  # the fixed rule clears the seed suite


def test_a_run_refused_for_bad_input_shows_each_input_error_at_its_place(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "scenarios:\n  - name: s\n    selector: {dtype: int33, value: 1}\n    cases: 2\n"
        "    shape: []\n    dtype: float32\n"
    )
    refused = run_cli("run", str(bad), "--sarif", str(tmp_path / "bad.sarif"))
    assert refused.exit_code == 2
    (result,) = _results(json.loads((tmp_path / "bad.sarif").read_text()))
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (
        result["ruleId"] == "input-error"
        and "int33" in result["message"]["text"]
        and (region["startLine"], region["startColumn"]) == (3, 23)
    )


def test_a_finding_in_the_users_own_function_points_at_its_definition_with_the_scenario_related(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "rules.py").write_text(
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.custom_jvp\ndef doubled(x):\n    return jnp.sin(x)\n\n\n"
        "doubled.defjvp(lambda p, t: (jnp.sin(p[0]), 2.0 * t[0] * jnp.cos(p[0])))\n"
    )
    (tmp_path / "suite" / "audit.yaml").write_text(
        "scenarios:\n"
        "  - {name: rule, fn: 'rules:doubled', inputs: [{dtype: float32, value: [0.3, 0.9]}]}\n"
        "  - {name: library, fn: 'jax.numpy:sin', inputs: [{dtype: float32, value: [0.3]}]}\n"
    )
    out = tmp_path / "out.sarif"
    ran = run_cli("run", "suite", "--sarif", str(out), "--format", "github")
    assert ran.exit_code == 1
    results = _results(json.loads(out.read_text()))
    assert results and all(r["properties"]["scenario"] == "rule" for r in results)
    for result in results:
        (place,) = result["locations"]
        assert place["physicalLocation"]["artifactLocation"]["uri"] == "suite/rules.py"
        assert place["physicalLocation"]["region"] == {"startLine": 6, "startColumn": 1}  # `def doubled`
        (related,) = result["relatedLocations"]
        assert related["physicalLocation"]["artifactLocation"]["uri"] == "suite/audit.yaml"
        assert related["physicalLocation"]["region"]["startLine"] == 2
    annotations = [line for line in ran.stdout.splitlines() if line.startswith("::error")]
    assert annotations and all(
        line.startswith("::error file=suite/rules.py,line=6,col=1,") and "(scenario suite/audit.yaml:2)" in line
        for line in annotations
    ), annotations
