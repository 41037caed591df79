"""The CI gate: baselines, expectations, JUnit, annotations, selection, merge, configuration, pytest plugin."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest
import yaml

from gradaudit.cli import main
from gradaudit.sources.selection import in_shard, matches
from tests.helpers import run_cli, write_yaml

ROOT = Path(__file__).resolve().parents[1]
REPRESENTATIVE = str(ROOT / "scenarios" / "select_n" / "representative.yaml")

ONE = """
scenarios:
  - name: {name}
    selector: {{dtype: int32, value: {value}}}
    cases: 2
    shape: []
    dtype: float32
{extra}"""


def scenario(name: str, value: int, extra: str = "") -> str:
    return ONE.format(name=name, value=value, extra=extra)


def test_a_run_with_its_own_report_as_baseline_passes_and_a_new_finding_fails(tmp_path):
    write_yaml(tmp_path, "suite/a.yaml", scenario("old-finding", 2) + scenario("fine", 1).split("scenarios:\n")[1])
    baseline = tmp_path / "base.json"
    written = run_cli("baseline", str(tmp_path / "suite"), "-o", str(baseline), "--rule", "legacy")
    assert written.exit_code == 0
    assert json.loads(baseline.read_text())["summary"]["mismatch"] == 1
    again = run_cli("run", str(tmp_path / "suite"), "--rule", "legacy", "--baseline", str(baseline))
    assert again.exit_code == 0, again.stdout
    assert "0 new, 3 known, 0 resolved" in again.stdout
    # known findings are a line each, not their findings and diagnosis in full (-v shows them)
    assert "old-finding: passes: known findings (baseline): 3 findings (-v shows them)" in again.stdout
    assert "send it nowhere" not in again.stdout and "GA002" not in again.stdout.split("└")[-1]
    verbose = run_cli("run", str(tmp_path / "suite"), "--rule", "legacy", "--baseline", str(baseline), "-v")
    assert "send it nowhere" in verbose.stdout and "\nGA002 " in verbose.stdout
    write_yaml(tmp_path, "suite/b.yaml", scenario("new-finding", -1))
    worse = run_cli(
        "run",
        str(tmp_path / "suite"),
        "--rule",
        "legacy",
        "--baseline",
        str(baseline),
        "--json",
        str(tmp_path / "r.json"),
    )
    assert worse.exit_code == 1
    assert "new-finding: FAILED: 3 new findings" in worse.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    by_name = {r["name"]: r["outcome"] for r in report["results"]}
    assert by_name["old-finding"]["passed"] and not by_name["new-finding"]["passed"]
    assert report["gate"]["failed"] == 1 and report["gate"]["baseline"] == str(baseline)
    fixed = run_cli("run", str(tmp_path / "suite" / "a.yaml"), "--rule", "fixed", "--baseline", str(baseline))
    assert fixed.exit_code == 0
    assert "resolved since the baseline: old-finding: wrong:routing:jacrev+jit_jacrev" in fixed.stdout


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "baseline is not JSON"),
        ('{"schema": "other"}', "baseline must be a gradaudit JSON report"),
        (None, "cannot read baseline"),
    ],
)
def test_unusable_baselines_are_exit_2(tmp_path, content, message):
    path = tmp_path / "base.json"
    if content is not None:
        path.write_text(content)
    result = run_cli("run", REPRESENTATIVE, "--baseline", str(path))
    assert result.exit_code == 2 and message in result.stderr


def test_expectations_have_strict_xfail_semantics(tmp_path):
    text = (
        scenario("expected-mismatch", 2, "    expect: mismatch\n")
        + "  - {name: expected-error, selector: {dtype: bool, value: false}, cases: 1, shape: [], dtype: float32,"
        " expect: {status: error, exception: IndexError}}\n"
        + "  - {name: wrong-exception, selector: {dtype: bool, value: false}, cases: 1, shape: [], dtype: float32,"
        " expect: {status: error, exception: KeyError}}\n"
    )
    path = write_yaml(tmp_path, "expect.yaml", text)
    legacy = run_cli("run", str(path), "--rule", "legacy", "--json", str(tmp_path / "legacy.json"))
    outcomes = {r["name"]: r["outcome"] for r in json.loads((tmp_path / "legacy.json").read_text())["results"]}
    assert outcomes["expected-mismatch"] == {
        "passed": True,
        "reason": "expected mismatch",
        "new": [],
        "known": outcomes["expected-mismatch"]["known"],
        "reported": [],
    }
    assert outcomes["expected-error"]["passed"]
    assert outcomes["wrong-exception"] == {
        "passed": False,
        "reason": "expected error (KeyError), got error (IndexError)",
        "new": [0],
        "known": [],
        "reported": [],
    }
    wrong = next(
        r for r in json.loads((tmp_path / "legacy.json").read_text())["results"] if r["name"] == "wrong-exception"
    )
    assert wrong["findings"][0]["fingerprint"] == "raised:raised:jacrev+jit_jacrev:IndexError"
    assert legacy.exit_code == 1
    fixed = run_cli("run", str(path), "--rule", "fixed")
    assert fixed.exit_code == 1
    assert "expected-mismatch: FAILED: stale expectation: expected mismatch, but every path agrees" in fixed.stdout
    bad = write_yaml(tmp_path, "bad.yaml", scenario("x", 1, "    expect: sometimes\n"))
    result = run_cli("run", str(bad))
    assert (
        result.exit_code == 2 and "expect must be one of consistent, mismatch, error, got 'sometimes'" in result.stderr
    )


def test_junit_has_a_testcase_per_scenario_and_failures_with_findings(tmp_path):
    out = tmp_path / "junit.xml"
    result = run_cli("run", REPRESENTATIVE, "--rule", "legacy", "--junit", str(out))
    assert result.exit_code == 1
    suite = ET.parse(out).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "int32-above-two-cases",
        "int32-negative-two-cases",
        "uint32-max-two-cases",
        "bool-false-one-case",
        "int32-in-range-two-cases",
    ]
    assert (suite.get("tests"), suite.get("failures")) == ("5", "4")
    failure = cases[0].find("failure")
    assert "value from case 1 · jacrev and jit(jacrev) send it nowhere" in failure.text
    # The message leads with numbers, as the terminal does: the largest disagreement, not the routing line.
    assert re.search(r"jacrev and jit\(jacrev\) disagree .*\(difference 1, relative 1", failure.get("message"))
    assert cases[0].get("file") == REPRESENTATIVE and cases[0].get("line") == "12"
    assert cases[4].find("failure") is None
    compared = run_cli("compare", REPRESENTATIVE, "--rules", "legacy", "fixed", "--junit", "-")
    root = ET.fromstring(compared.stdout)
    names = [c.get("name") for c in root.iter("testcase")]
    assert len(names) == 10 and "bool-false-one-case[legacy]" in names and "bool-false-one-case[fixed]" in names
    assert [s.get("failures") for s in root.findall("testsuite")] == ["4", "0"]


def test_github_annotations_point_at_the_scenario(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = CliRunnerGithub.invoke(["run", "scenarios/select_n/representative.yaml", "--rule", "legacy"])
    lines = [line for line in result.splitlines() if line.startswith("::")]
    assert lines[0].startswith(
        "::error file=scenarios/select_n/representative.yaml,line=12,col=5,title=gradaudit wrong%3A "
        "int32-above-two-cases::[wrong] jacrev and jit(jacrev) disagree with jacfwd and jit(jacfwd)"
    )
    assert "(difference 1, relative 1" in lines[0] and "[GA002" in lines[0]
    assert any("[wrong] value from case 1 · jacrev and jit(jacrev) send it nowhere" in line for line in lines)
    assert any(
        line.startswith("::error file=scenarios/select_n/representative.yaml,line=31,") and "IndexError" in line
        for line in lines
    )
    only = run_cli("run", "scenarios/select_n/representative.yaml", "--rule", "legacy", "--format", "github")
    assert only.stdout and all(line.startswith("::error ") for line in only.stdout.splitlines())


class CliRunnerGithub:
    @staticmethod
    def invoke(args):
        from click.testing import CliRunner

        result = CliRunner().invoke(main, args, env={"GITHUB_ACTIONS": "true", "NO_COLOR": "1", "GRADAUDIT_JOBS": "0"})
        return result.stdout


def test_keyword_and_shards_select_and_merge_equals_the_full_run(tmp_path):
    suite = str(ROOT / "scenarios" / "select_n")
    listed = run_cli("list", suite, "-k", "two-cases and not in-range")
    names = [line.split(": ")[1].split(" [")[0] for line in listed.stdout.splitlines()[:-1]]
    assert names == [
        "bool-true-two-cases-vector",
        "bool-per-element-two-cases-matrix",
        "uint8-max-two-cases-vector",
        "int32-per-element-mixed-two-cases-vector",
        "int32-above-two-cases",
        "int32-negative-two-cases",
        "uint32-max-two-cases",
    ]
    assert listed.stdout.splitlines()[-1] == "7 scenarios"
    full = run_cli("run", suite, "--rule", "legacy", "--json", str(tmp_path / "full.json"))
    shards = []
    for k in (1, 2, 3):
        target = tmp_path / f"shard-{k}.json"
        run_cli("run", suite, "--rule", "legacy", "--shard", f"{k}/3", "--json", str(target))
        shards.append(str(target))
    shard_names = [{r["name"] for r in json.loads(Path(s).read_text())["results"]} for s in shards]
    assert sum(map(len, shard_names)) == 17 and len(set().union(*shard_names)) == 17
    merged = run_cli("merge", *shards, "-o", str(tmp_path / "merged.json"))
    assert merged.exit_code == 1 == full.exit_code
    merged_report = json.loads((tmp_path / "merged.json").read_text())
    full_report = json.loads((tmp_path / "full.json").read_text())
    assert (
        merged_report["summary"] == full_report["summary"] == {"total": 17, "consistent": 6, "mismatch": 9, "error": 2}
    )
    assert merged_report["suites"] == full_report["suites"]
    assert merged_report["gate"]["failed"] == full_report["gate"]["failed"] == 11
    overlap = run_cli("merge", shards[0], shards[0], "-o", str(tmp_path / "x.json"))
    assert overlap.exit_code == 2 and "shards must not overlap" in overlap.stderr
    assert run_cli("run", suite, "--shard", "4/3").exit_code == 2
    assert run_cli("run", suite, "-k", "no-such-scenario").exit_code == 2


def test_shard_and_keyword_rules():
    assert matches("int32-above-two-cases", "ABOVE") and not matches("int32-above-two-cases", "not above")
    assert matches("a-b", "(x or b) and not c")
    names = [f"s{i}" for i in range(200)]
    split = [[n for n in names if in_shard(n, k, 4)] for k in range(1, 5)]
    assert sorted(sum(split, [])) == sorted(names) and all(len(part) > 25 for part in split)


def test_pyproject_configuration_is_honoured_and_flags_override_it(tmp_path, monkeypatch):
    write_yaml(tmp_path, "cases/a.yaml", scenario("above", 2))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.gradaudit]\npaths = ["cases"]\nrule = "legacy"\njunit = "out.xml"\n'
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # found from the working directory upwards
    configured = run_cli("run")
    assert configured.exit_code == 1 and "1 scenario: 0 consistent, 1 mismatch" in configured.stdout
    assert (tmp_path / "out.xml").exists()
    overridden = run_cli("run", "--rule", "fixed")
    assert overridden.exit_code == 0
    (tmp_path / "pyproject.toml").write_text('[tool.gradaudit]\npaths = ["cases"]\nrulez = "legacy"\n')
    bad = run_cli("run")
    assert bad.exit_code == 2
    assert f"{tmp_path / 'pyproject.toml'}:3: [tool.gradaudit] unknown key 'rulez'; did you mean 'rule'?" in bad.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.gradaudit]\nrule = "newest"\n')
    assert "'rule' must be one of installed, legacy, fixed" in run_cli("run").stderr


@pytest.mark.slow
def test_quiet_exit_zero_colour_and_timeout(tmp_path):
    quiet = run_cli("run", REPRESENTATIVE, "--rule", "legacy", "-q", "--exit-zero")
    assert quiet.exit_code == 0
    assert quiet.stdout.strip().splitlines() == [quiet.stdout.strip()] and "5 scenarios" in quiet.stdout
    coloured = run_cli("run", REPRESENTATIVE, "--rule", "legacy", "-q", "--color", "always")
    assert "\x1b[" in coloured.stdout
    (tmp_path / "slow.py").write_text("import time\n\ndef slow(x):\n    time.sleep(30)\n    return x\n")
    path = write_yaml(
        tmp_path, "slow.yaml", "scenarios:\n  - {name: slow, fn: 'slow:slow', inputs: [{dtype: float32, value: 1.0}]}\n"
    )
    timed = run_cli("run", str(path), "--timeout", "0.5", "--json", "-")
    entry = timed.json()["results"][0]
    # it says where: before any path, tracing (the limits check traces the function), in the user's line
    message = entry["findings"][0]["message"]
    assert entry["status"] == "error" and message.startswith("timed out after 0.5 s tracing the function, before any")
    assert message.endswith("slow.py:4 in slow)")
    assert entry["findings"][0]["class"] == "timed-out"


@pytest.mark.slow
def test_pytest_plugin_collects_one_item_per_scenario_with_the_same_split(tmp_path):
    def pytest_run(*args):
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--gradaudit", *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=600,
        )

    legacy = pytest_run("scenarios/select_n", "--gradaudit-rule", "legacy")
    assert re.search(r"^11 failed, 6 passed", legacy.stdout, re.MULTILINE), legacy.stdout[-2000:]
    assert "scenarios/select_n/representative.yaml:31:5: bool-false-one-case: error" in legacy.stdout
    assert "GA001" in legacy.stdout
    fixed = pytest_run("scenarios/select_n/representative.yaml", "--gradaudit-rule", "fixed", "-k", "two-cases")
    assert re.search(r"^4 passed, 1 deselected", fixed.stdout, re.MULTILINE), fixed.stdout[-2000:]
    bad = write_yaml(tmp_path, "bad.yaml", scenario("x", 300).replace("int32", "int8", 1))
    broken = pytest_run(str(bad))
    assert broken.returncode != 0 and f"{bad}:3:36: selector value 300 is not representable in int8" in broken.stdout


def test_the_ci_page_workflow_is_valid_and_its_commands_parse():
    section = (ROOT / "docs" / "ci.md").read_text()
    workflow = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    audit, gate = workflow["jobs"]["audit"], workflow["jobs"]["gate"]
    assert audit["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    assert gate["needs"] == "audit"
    commands = [step["run"] for job in (audit, gate) for step in job["steps"] if "gradaudit " in step.get("run", "")]
    assert any("--shard ${{ matrix.shard }}/4" in c and "--baseline" in c and "--junit" in c for c in commands)
    assert any(c.startswith("gradaudit merge") for c in commands)
    assert any("junit" in step.get("uses", "") and "xml" in step["with"]["report_paths"] for step in gate["steps"])
    # gradaudit is not on the package index: both jobs install it from its git repository
    assert workflow["env"]["GRADAUDIT"].startswith("gradaudit @ git+https://")
    assert all(
        any(step.get("run") == 'python -m pip install "$GRADAUDIT"' for step in job["steps"]) for job in (audit, gate)
    )

    def parse(args: list[str]) -> None:
        """Parse a command line as gradaudit would, without running it: a usage error raises."""
        ctx = click.Context(main, info_name="gradaudit")
        main.get_command(ctx, args[0]).make_context(args[0], args[1:], parent=ctx)

    for command in commands:
        parse(command.replace("${{ matrix.shard }}", "1").split()[1:])
    with pytest.raises(click.UsageError):
        parse(["run", "x", "--no-such-option"])


def test_fail_on_chooses_the_classes_that_fail_from_flag_configuration_and_keyword(tmp_path, monkeypatch):
    """sin at inf splits only at non-finite numbers (reported); a NaN gradient from an unselected
    branch at finite numbers is `wrong` (failed). `fail_on` moves the line."""
    monkeypatch.chdir(tmp_path)
    write_yaml(
        tmp_path,
        "suite.yaml",
        "scenarios:\n"
        "  - {name: sin-at-inf, fn: 'jax.numpy:sin', inputs: [{dtype: float32, value: [0.0, 0.5, .inf]}]}\n",
    )
    default = run_cli("run", "suite.yaml", "--json", "report.json", "--sarif", "report.sarif")
    assert default.exit_code == 0, default.stdout
    assert "reported, not failed (non-finite; --fail-on chooses)" in default.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    (result,) = report["results"]
    assert result["status"] == "mismatch" and result["outcome"]["passed"]
    assert report["gate"]["reported"] == len(result["outcome"]["reported"]) > 0
    assert {f["class"] for f in result["findings"]} == {"non-finite"}
    sarif = json.loads((tmp_path / "report.sarif").read_text())
    assert {r["level"] for r in sarif["runs"][0]["results"]} == {"warning"}
    assert run_cli("run", "suite.yaml", "--fail-on", "non-finite").exit_code == 1
    assert run_cli("run", "suite.yaml", "--fail-on", "all", "-q").exit_code == 1
    bad = run_cli("run", "suite.yaml", "--fail-on", "wrng")
    assert bad.exit_code == 2 and "did you mean 'wrong'?" in bad.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.gradaudit]\nfail_on = ["wrong", "non-finite"]\n')
    assert run_cli("run", "suite.yaml", "-q").exit_code == 1
    assert run_cli("run", "suite.yaml", "-q", "--fail-on", "wrong").exit_code == 0
    import jax.numpy as jnp

    import gradaudit

    x = jnp.array([0.0, 0.5, jnp.inf], dtype=jnp.float32)
    assert gradaudit.audit(jnp.sin, x, cache=False).passed
    assert not gradaudit.audit(jnp.sin, x, fail_on="all", cache=False).passed


def test_a_report_written_before_classes_is_still_a_baseline_and_diffs_clean(tmp_path):
    """Reports of schema gradaudit.report/1 (fingerprint form 2, no class) are matched with the class
    left out, `raised` (a class and a kind) included; a form older than that is refused."""
    assert run_cli("run", REPRESENTATIVE, "--rule", "legacy", "--json", str(tmp_path / "new.json"), "-q").exit_code == 1
    document = json.loads((tmp_path / "new.json").read_text())
    from gradaudit.model.findings import without_class

    document["schema"], document["fingerprints"] = "gradaudit.report/1", 2
    for result in document["results"]:
        for finding in result["findings"]:
            finding["fingerprint"] = without_class(finding["fingerprint"])
            assert not finding["fingerprint"].startswith(("wrong:", "raised:raised:"))
    (tmp_path / "old.json").write_text(json.dumps(document))
    gated = run_cli("run", REPRESENTATIVE, "--rule", "legacy", "--baseline", str(tmp_path / "old.json"), "-q")
    assert gated.exit_code == 0 and " 0 new, " in gated.stdout and " 0 resolved" in gated.stdout, gated.stdout
    diffed = run_cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "-q")
    assert diffed.exit_code == 0 and "0 new findings, 0 resolved" in diffed.stdout, diffed.stdout
    document["fingerprints"] = 1
    (tmp_path / "older.json").write_text(json.dumps(document))
    refused = run_cli("run", REPRESENTATIVE, "--baseline", str(tmp_path / "older.json"), "-q")
    assert refused.exit_code == 2 and "another form" in refused.stderr


def test_every_output_leads_with_the_terminals_finding(tmp_path):
    """JUnit, SARIF, the HTML summary and the terminal all lead with one finding: the largest
    disagreement of the most severe class, with its numbers (not the routing line)."""
    junit, sarif, html = tmp_path / "junit.xml", tmp_path / "out.sarif", tmp_path / "out.html"
    result = run_cli(
        "run", REPRESENTATIVE, "--rule", "legacy", "--junit", str(junit), "--sarif", str(sarif), "--html", str(html)
    )
    assert result.exit_code == 1
    lead = re.compile(r"jacrev and jit\(jacrev\) disagree .*\(difference 1, relative 1")
    first_failure = ET.parse(junit).getroot().find("testsuite").findall("testcase")[0].find("failure")
    assert lead.search(first_failure.get("message"))
    sarif_results = [r for r in json.loads(sarif.read_text())["runs"][0]["results"]]
    first = next(r for r in sarif_results if r["message"]["text"].startswith("int32-above-two-cases:"))
    assert lead.search(first["message"]["text"]) and "send it nowhere" not in first["message"]["text"]
    summary_row = next(
        line for line in html.read_text().splitlines() if "<tr data-filter" in line and "int32-above-two-cases" in line
    )
    # the summary's cell is the same text, cut at 160 characters
    headline = re.search(r"<td>(\[wrong\][^<]*?)…?</td></tr>", summary_row)
    assert headline and first["message"]["text"].split(": ", 1)[1].startswith(headline.group(1)), summary_row
    assert lead.search(result.stdout.replace("\n", " "))
