"""`gradaudit diff`: new, resolved and changed findings between two reports, as after a JAX upgrade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
SEED = str(ROOT / "scenarios" / "select_n")


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("reports")
    paths = {}
    for rule in ("legacy", "fixed"):
        paths[rule] = folder / f"{rule}.json"
        assert run_cli("run", SEED, "--rule", rule, "-q", "--exit-zero", "--json", str(paths[rule])).exit_code == 0
    return paths


def _fingerprints(report: dict) -> set[tuple[str, str]]:
    return {(r["name"], f["fingerprint"]) for r in report["results"] for f in r["findings"]}


def test_legacy_to_fixed_resolves_every_finding_and_exits_0(reports, tmp_path):
    legacy = json.loads(reports["legacy"].read_text())
    out = tmp_path / "diff.json"
    result = run_cli("diff", str(reports["legacy"]), str(reports["fixed"]), "--json", str(out))
    assert result.exit_code == 0, result.stderr
    document = json.loads(out.read_text())
    assert document["schema"] == "gradaudit.diff/1"
    assert document["environment"] == {"rule": {"before": "legacy", "after": "fixed"}}
    assert {(c["scenario"], c["fingerprint"]) for c in document["resolved"]} == _fingerprints(legacy)
    assert document["new"] == []
    failing = {r["name"]: r["status"] for r in legacy["results"] if r["status"] != "consistent"}
    assert {c["name"]: c["before"] for c in document["changed"]} == failing
    assert {c["after"] for c in document["changed"]} == {"consistent"}
    assert document["summary"]["unchanged"] == len(legacy["results"]) - len(failing)
    assert (
        f"{len(_fingerprints(legacy))} resolved, {len(failing)} scenarios changed, 0 added, 0 removed" in result.stdout
    )


def test_fixed_to_legacy_names_each_new_finding_and_exits_1(reports):
    legacy = json.loads(reports["legacy"].read_text())
    result = run_cli("diff", str(reports["fixed"]), str(reports["legacy"]))
    assert result.exit_code == 1
    assert f"{len(_fingerprints(legacy))} new findings, 0 resolved" in result.stdout
    assert "new: bool-false-one-case: jacrev and jit(jacrev) raised IndexError" in result.stdout
    assert "consistent → error" in result.stdout
    assert run_cli("diff", str(reports["fixed"]), str(reports["legacy"]), "--exit-zero").exit_code == 0


def test_an_upgrade_shows_the_versions_and_added_and_removed_scenarios(reports, tmp_path):
    before = json.loads(reports["fixed"].read_text())
    after = json.loads(reports["fixed"].read_text())
    before["environment"]["jax"] = "0.4.1"
    gone = after["results"].pop(0)["name"]
    before_path, after_path = tmp_path / "old.json", tmp_path / "new.json"
    before_path.write_text(json.dumps(before))
    after_path.write_text(json.dumps(after))
    result = run_cli("diff", str(before_path), str(after_path), "--json", "-")
    assert result.exit_code == 0
    document = result.json()
    assert document["environment"]["jax"]["before"] == "0.4.1"
    assert document["removed"] == [gone] and document["added"] == []
    assert document["summary"]["unchanged"] == len(after["results"])
    assert "jax: 0.4.1 →" in result.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{\n  nope", ":2:3: not JSON"),
        ('{"schema": "something/1"}', "not a gradaudit report"),
        (
            '{"schema": "gradaudit.report/1", "environment": {}, "results": [{"name": "x"}]}',
            "results[0] needs 'name', 'status', 'scenario' and 'findings'",
        ),
    ],
)
def test_unusable_reports_are_exit_2_with_the_file_named(reports, tmp_path, content, message):
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    result = run_cli("diff", str(reports["fixed"]), str(bad))
    assert result.exit_code == 2
    assert f"{bad}" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["results"][0].update(findings=None), "'findings' must be a list of objects"),
        (lambda d: d["results"][0].update(findings="x"), "'findings' must be a list of objects"),
        (lambda d: d["results"][0].update(findings=[1, 2]), "'findings' must be a list of objects"),
        (lambda d: d["results"][0].pop("findings"), "needs 'name', 'status', 'scenario' and 'findings'"),
        (lambda d: d["results"][0].update(name=["x"]), "'name' and 'status' must be strings"),
        (lambda d: d["environment"].update(devices=5), "environment.devices must be a list of objects"),
        (lambda d: d["results"][0].update(status="interrupted"), "was interrupted: the run did not finish"),
        (lambda d: d.update(errors=[{"message": "bad"}]), "had 1 input error(s)"),
        (lambda d: d["results"].append(dict(d["results"][0])), "appears twice"),
        (lambda d: d["results"][0].update(status="weird"), "unknown status 'weird'"),
        (lambda d: d["results"][0]["scenario"].update(suite=[1]), "whose 'suite' is a string"),
        (lambda d: d["results"][0].update(outcome=5), "'outcome' must be null or an object"),
        (lambda d: d.update(gate=5), "'gate' must be an object"),
        (lambda d: d.update(resolved="abc"), "'resolved' must be a list of objects"),
        (lambda d: d["environment"].update(big=float("inf")), "not a usable report"),
    ],
)
def test_damaged_or_unfinished_reports_are_refused(reports, tmp_path, edit, message):
    document = json.loads(reports["legacy"].read_text())
    edit(document)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))  # json.dumps writes inf as Infinity, which reports never hold
    for args in (("diff", str(reports["legacy"]), str(bad)), ("merge", str(bad), "-o", str(tmp_path / "m.json"))):
        result = run_cli(*args)
        assert result.exit_code == 2, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr


def test_a_binary_file_is_not_a_report(reports, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe")
    result = run_cli("diff", str(reports["fixed"]), str(bad))
    assert result.exit_code == 2 and "not UTF-8 text" in result.stderr
