"""What a new user met in the first hour: a module of their own (a custom_jvp softplus with a wrong
rule and its correct twin, a Huber loss, an embedding lookup out of range, code that raises), the
CI features and a handful of mistakes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gradaudit.render.failure import failure_text
from gradaudit.service import audit_one
from gradaudit.sources.scenario_files import load_paths
from tests.helpers import ROOT, run_cli, write_yaml

SOFTPLUS = '''
import jax
import jax.numpy as jnp
from jax import lax


def _softplus_with(rule):
    @jax.custom_jvp
    def softplus(x):
        return jnp.logaddexp(x, 0.0)

    @softplus.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), rule(x) * t

    return softplus


softplus_right = _softplus_with(jax.nn.sigmoid)
softplus = _softplus_with(lambda x: jax.nn.sigmoid(-x))  # RULE


def huber(x):
    return jnp.sum(jnp.where(jnp.abs(x) < 1.0, 0.5 * x**2, jnp.abs(x) - 0.5))


def embed(table, idx):
    return table[idx]


def choose(which, a, b):
    return lax.select_n(which, a, b)


def clamp(lo, x, hi):
    return lax.clamp(lo, x, hi)


def stopped(x):
    """Wrong by stop_gradient (relu, a library custom_jvp, is only a bystander)."""
    return jax.nn.relu(x) + x * lax.stop_gradient(x)


def sqrt_of_square(x):
    """NaN gradient at 0 from sqrt, not from a where (softplus selects inside its own rule)."""
    return jnp.sqrt(x * x) + jax.nn.softplus(x)


@jax.custom_vjp
def reads_with_zero_rule(x, i):
    return x[i] * 2.0


reads_with_zero_rule.defvjp(lambda x, i: (reads_with_zero_rule(x, i), None), lambda _, g: (jnp.zeros(2, g.dtype), None))


def raises(x):
    return helper(x)


def helper(x):
    raise ValueError("the user's code is broken")
'''

SUITE = """
scenarios:
  - name: softplus-wrong
    fn: userlib:softplus
    inputs: [{dtype: float32, value: [-3.0, -0.5, 0.7, 30.0]}]
  - name: softplus-right
    fn: userlib:softplus_right
    inputs: [{dtype: float32, value: [-3.0, -0.5, 0.7, 30.0]}]
  - name: huber
    fn: userlib:huber
    inputs: [{dtype: float32, value: [-2.0, 0.3, 1.5]}]
  - name: embed-out-of-range
    fn: userlib:embed
    inputs: [{dtype: float32, fill: arange, shape: [4, 2]}, {dtype: int32, value: [0, 5]}]
  - name: select-out-of-range
    fn: userlib:choose
    inputs: [{dtype: int32, value: 2}, {dtype: float32, value: 1.0}, {dtype: float32, value: 2.0}]
  - name: clamp-inverted
    fn: userlib:clamp
    inputs: [{dtype: float32, value: 1.0}, {dtype: float32, value: -3.0}, {dtype: float32, value: -1.0}]
  - name: user-raises
    fn: userlib:raises
    inputs: [{dtype: float32, value: 1.0}]
  - name: stop-gradient
    fn: userlib:stopped
    inputs: [{dtype: float32, value: [1.0, 2.0]}]
  - name: sqrt-at-zero
    fn: userlib:sqrt_of_square
    inputs: [{dtype: float32, value: [0.0, 2.0]}]
  - name: custom-vjp-in-range-read
    fn: userlib:reads_with_zero_rule
    inputs: [{dtype: float32, value: [1.0, 2.0]}, {dtype: int32, value: 1}]
    bind: traced
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "userlib.py").write_text(SOFTPLUS)
    write_yaml(tmp_path, "audit.yaml", SUITE)
    return tmp_path


def test_diagnoses_claim_only_what_their_evidence_shows(project):
    result = run_cli("run", "audit.yaml", "--json", "report.json")
    assert result.exit_code == 1
    import json

    report = {r["name"]: r for r in json.loads((project / "report.json").read_text())["results"]}
    diagnoses = {name: (r["diagnosis"] or {}).get("id") for name, r in report.items()}
    assert diagnoses == {
        "softplus-wrong": "GA012",  # a custom_jvp rule: AD paths agree, finite differences do not
        "softplus-right": None,
        "huber": None,
        "embed-out-of-range": "GA010",  # gather, reverse-only: not select_n's GA002
        "select-out-of-range": "GA002",  # select_n with an integer selector, reverse-only
        "clamp-inverted": "GA011",  # forward and reverse alike: not GA002's reverse-mode claim
        "user-raises": None,
        "stop-gradient": None,  # relu is a custom_jvp of JAX's, not the user's: no GA012
        "sqrt-at-zero": None,  # softplus's select_n is inside its own rule: no GA006
        "custom-vjp-in-range-read": "GA007",  # forward mode did not run: no GA010, however reverse routes
    }
    assert {name: r["status"] for name, r in report.items()} == {
        "softplus-wrong": "mismatch",
        "softplus-right": "consistent",
        "huber": "consistent",
        "embed-out-of-range": "mismatch",
        "select-out-of-range": "mismatch",
        "clamp-inverted": "mismatch",
        "user-raises": "error",
        "stop-gradient": "mismatch",
        "sqrt-at-zero": "mismatch",
        "custom-vjp-in-range-read": "mismatch",
    }


def test_default_output_leads_with_the_largest_disagreement_and_counts_the_rest(project):
    result = run_cli("run", "audit.yaml", "-k", "softplus-wrong or embed")
    lines = [line for line in result.stdout.splitlines() if line.startswith("audit.yaml:")]
    softplus = [line.split(": ", 2)[2] for line in lines if "softplus-wrong" in line]
    # First the largest disagreement (at x = -3: sigmoid(3) against sigmoid(-3)), then the routing.
    assert softplus[0].startswith(
        "[wrong] jacfwd, jit(jacfwd), jacrev and jit(jacrev) disagree with finite differences on 4 of 16 entries; "
        "largest at d out[0]/d x0[0]: 0.0474"
    )
    assert "0.952574 from jacfwd" in softplus[0]
    assert softplus[1].startswith("[wrong] element [3]: value from x0")
    embed = [line.split(": ", 2)[2] for line in lines if "embed-out-of-range" in line]
    assert embed[-2] == "+1 more finding (-v)"
    verbose = run_cli("run", "audit.yaml", "-k", "embed", "-v")
    assert "more finding" not in verbose.stdout
    assert (
        len(
            [
                line
                for line in verbose.stdout.splitlines()
                if re.match(r"audit\.yaml:\d+:5: embed-out-of-range: \[\w+\] jac", line)
            ]
        )
        == 2
    )


def test_exceptions_in_user_code_carry_file_line_and_function_everywhere(project):
    line = SOFTPLUS.splitlines().index('    raise ValueError("the user\'s code is broken")') + 1
    where = f"(at userlib.py:{line} in helper)"
    terminal = run_cli("run", "audit.yaml", "-k", "raises", "--junit", "junit.xml")
    assert f"evaluating the function raised ValueError: the user's code is broken {where}" in terminal.stdout
    failure = ET.parse(project / "junit.xml").find(".//failure")
    assert where in failure.get("message") and where in failure.text
    github = run_cli("run", "audit.yaml", "-k", "raises", "--format", "github")
    # the annotation goes on the user's function, the scenario named
    assert re.search(
        r"^::error file=userlib\.py,line=\d+,.*" + re.escape(where) + r".*\(scenario audit\.yaml:\d+\)$",
        github.stdout,
        re.MULTILINE,
    ), github.stdout
    (scenario,) = [s for s in load_paths(["audit.yaml"]).scenarios if s.name == "user-raises"]
    assert where in failure_text(audit_one(scenario))


def test_a_baseline_does_not_accept_another_wrong_rule(project):
    assert run_cli("baseline", "audit.yaml", "-k", "softplus-wrong", "-o", "baseline.json").exit_code == 0
    assert run_cli("run", "audit.yaml", "-k", "softplus-wrong", "--baseline", "baseline.json").exit_code == 0
    # Another wrong rule in its place: same paths disagree, but the wrong values are of another class.
    userlib = project / "userlib.py"
    userlib.write_text(
        SOFTPLUS.replace("lambda x: jax.nn.sigmoid(-x))  # RULE", "lambda x: 3 * jax.nn.sigmoid(x))  # RULE")
    )
    # In a fresh worker process: this test process imported the first userlib already.
    swapped = run_cli(
        "run",
        "audit.yaml",
        "-k",
        "softplus-wrong",
        "--baseline",
        "baseline.json",
        "--json",
        "swapped.json",
        "--jobs",
        "1",
    )
    assert swapped.exit_code == 1
    assert "1 new, 0 known, 2 resolved" in swapped.stdout, swapped.stdout
    import json

    (result,) = json.loads((project / "swapped.json").read_text())["results"]
    (new,) = result["outcome"]["new"]
    assert result["findings"][new]["fingerprint"].startswith(
        "wrong:disagreement:finite_difference+jacfwd+jacrev+jit_jacfwd+jit_jacrev|x3|4/16#"
    )


def test_an_old_baseline_is_refused_with_what_to_do(project):
    (project / "old.json").write_text(
        '{"schema": "gradaudit.report/1", "results": [{"name": "huber", "findings": []}]}'
    )
    result = run_cli("run", "audit.yaml", "-k", "huber", "--baseline", "old.json")
    assert result.exit_code == 2
    assert "fingerprints were of another form" in result.stderr and "gradaudit baseline" in result.stderr


def test_names_are_written_as_users_write_them(project):
    table = run_cli("run", "audit.yaml", "-k", "embed or huber", "-v")
    assert "float32[4,2] int32[2]" in table.stdout and "f32" not in table.stdout
    listing = run_cli("list", "audit.yaml")
    assert "huber [.] fn userlib:huber(float32[3])\n" in listing.stdout.replace(f"[{project.name}]", "[.]")
    assert "embed-out-of-range" in listing.stdout and "bind both" in listing.stdout
    write_yaml(
        project,
        "typo.yaml",
        "scenarios:\n  - {name: t, fn: 'userlib:huber', inputz: [], inputs: [{dtype: float32, value: 1.0}]}\n",
    )
    typo = run_cli("run", "typo.yaml")
    assert typo.exit_code == 2
    assert "unknown key 'inputz' in a scenario; did you mean 'inputs'? (allowed in a function scenario" in typo.stderr
    assert "selector" not in typo.stderr


def test_did_you_mean_for_a_module_name(project):
    write_yaml(
        project, "bad.yaml", "scenarios:\n  - {name: t, fn: 'userlb:huber', inputs: [{dtype: float32, value: 1.0}]}\n"
    )
    result = run_cli("run", "bad.yaml")
    assert result.exit_code == 2
    assert (
        "bad.yaml:2:19: cannot import module 'userlb': No module named 'userlb'; did you mean 'userlib'?"
        in result.stderr
    )


def test_findings_end_with_what_exit_1_means(project):
    result = run_cli("run", "audit.yaml", "-k", "clamp")
    assert result.exit_code == 1
    last = result.stdout.rstrip().splitlines()[-1]
    assert last.startswith("exit 1: 1 scenario fails (findings, not a broken install).")
    assert "--baseline" in last and "expect:" in last and "--exit-zero" in last
    clean = run_cli("run", "audit.yaml", "-k", "huber")
    assert clean.exit_code == 0 and "exit 1" not in clean.stdout


def test_profile_counts_what_worker_processes_did(project):
    result = run_cli("run", "audit.yaml", "-k", "huber", "--profile", "--jobs", "1", "--no-cache")
    assert result.exit_code == 0
    line = next(line for line in result.stderr.splitlines() if line.startswith("profile, worker processes"))
    programs = int(re.search(r"(\d+) programs", line).group(1))
    compile_seconds = float(re.search(r"compile ([0-9.]+)s", line).group(1))
    assert programs >= 10 and compile_seconds > 0


@pytest.mark.slow
def test_compare_runs_on_every_catalog_suite():
    result = run_cli("compare", str(ROOT / "scenarios"), "--rules", "legacy", "fixed")
    assert result.exception is None and result.exit_code == 1, result.stderr
    # One table of select_n scenarios and one of functions, then a summary per rule.
    assert "selector" in result.stdout and "function" in result.stdout
    assert re.search(r"^legacy: 71 scenarios: 43 consistent, 23 mismatch, 5 error", result.stdout, re.MULTILINE)
    assert re.search(r"^fixed: 71 scenarios: 56 consistent, 12 mismatch, 3 error", result.stdout, re.MULTILINE)
