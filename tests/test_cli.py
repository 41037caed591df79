"""The real command line: exit codes, the seed suite's counts, the JSON report, stdout and stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

import gradaudit.service
from tests.helpers import run_cli, write_yaml

ROOT = Path(__file__).resolve().parents[1]
SEED_SUITE = str(ROOT / "scenarios" / "select_n")

CONSISTENT_FILE = """
scenarios:
  - name: in-range
    selector: {dtype: int32, value: 1}
    cases: 2
    shape: []
    dtype: float32
  - name: bool-vector
    selector: {dtype: bool, value: [true, false, true]}
    cases: 2
    shape: [3]
    dtype: float64
"""


def test_consistent_scenarios_exit_0_with_summary(tmp_path):
    path = write_yaml(tmp_path, "ok.yaml", CONSISTENT_FILE)
    result = run_cli("run", str(path), "--json", str(tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    # float64 cases switch x64 on for that run only.
    assert report["environment"]["x64"] is True and not jax.config.jax_enable_x64
    assert report["results"][1]["inputs"]["case 0"] != report["results"][1]["inputs"]["case 1"]
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("2 scenarios: 2 consistent, 0 mismatch, 0 error")
    assert "in-range" not in result.stdout  # only non-consistent rows without -v
    verbose = run_cli("run", "-v", str(path))
    assert "in-range" in verbose.stdout and "bool-vector" in verbose.stdout


def test_seed_suite_has_nine_mismatches_and_two_index_errors(tmp_path):
    out = tmp_path / "report.json"
    result = run_cli("run", SEED_SUITE, "--rule", "legacy", "--json", str(out))
    assert result.exit_code == 1
    assert "17 scenarios: 6 consistent, 9 mismatch, 2 error" in result.stdout
    assert result.stdout.count("raised IndexError") == 2
    assert "int32-above-two-cases: [wrong] value from case 1 · jacrev and jit(jacrev) send it nowhere" in result.stdout
    report = json.loads(out.read_text())
    assert report["summary"] == {"total": 17, "consistent": 6, "mismatch": 9, "error": 2}
    errors = [r for r in report["results"] if r["status"] == "error"]
    assert {r["paths"]["jacrev"]["error"]["type"] for r in errors} == {"IndexError"}


def test_json_report_fields_for_the_seed_example(tmp_path):
    path = write_yaml(
        tmp_path,
        "seed.yaml",
        """
        scenarios:
          - name: seed
            selector: {dtype: int32, value: 2}
            cases: 2
            shape: []
            dtype: float32
            values: [2.0, 5.0]
        """,
    )
    result = run_cli("run", str(path), "--rule", "legacy", "--json", "-")
    assert result.exit_code == 1
    report = result.json()
    assert report["schema"] == "gradaudit.report/2"
    env = report["environment"]
    assert set(env) >= {"jax", "jaxlib", "python", "backend", "rule"} and env["rule"] == "legacy"
    assert report["summary"] == {"total": 1, "consistent": 0, "mismatch": 1, "error": 0}
    assert report["errors"] == []
    (entry,) = report["results"]
    assert entry["name"] == "seed" and entry["source"] == f"{path}:2" and entry["status"] == "mismatch"
    assert entry["scenario"]["selector"] == {"dtype": "int32", "value": 2}
    assert entry["scenario"]["values"] == [2.0, 5.0]
    assert entry["inputs"] == {"case 0": 2.0, "case 1": 5.0}
    paths = entry["paths"]
    first_device = f"{jax.devices()[0].platform}:{jax.devices()[0].id}"
    # A single select_n scenario goes to the bundle engine, its selector captured as a user writes it;
    # its eager paths ran eagerly, its jit paths under jit: no path repeats another's answer.
    assert entry["method"] == "bundle" and entry["binding"] == "constant" and entry["device"] == first_device
    # Where and how paths ran is said once per result; a path whose numbers equal an earlier
    # path's says so instead of repeating them (--json-detail full writes every array).
    assert paths["value"] == {"status": "ok", "value": 5.0}
    assert paths["jit_value"] == {"status": "ok", "equals": "value"}
    assert paths["jacfwd"]["jacobians"] == {"case 0": 0.0, "case 1": 1.0}
    assert paths["jacrev"]["jacobians"] == {"case 0": 0.0, "case 1": 0.0}
    assert paths["jit_jacrev"] == {"status": "ok", "equals": "jacrev"}
    assert paths["finite_difference"] == {"status": "ok", "equals": "jacfwd"}
    full = run_cli("run", str(path), "--rule", "legacy", "--json", "-", "--json-detail", "full").json()["results"][0][
        "paths"
    ]
    assert full["jit_value"] == {"status": "ok", "value": 5.0}
    assert full["jit_jacrev"]["jacobians"] == {"case 0": 0.0, "case 1": 0.0}
    assert full["finite_difference"]["jacobians"] == {"case 0": 0.0, "case 1": 1.0}
    assert entry["provenance"] == [
        {
            "elements": [[]],
            "value_from": ["case 1"],
            "jacfwd": ["case 1"],
            "jit_jacfwd": ["case 1"],
            "jacrev": [],
            "jit_jacrev": [],
        }
    ]
    kinds = {(f["kind"], tuple(f["paths"])) for f in entry["findings"]}
    assert ("routing", ("jacrev", "jit_jacrev")) in kinds
    assert ("disagreement", ("jacrev", "jit_jacrev", "finite_difference")) in kinds
    fd = next(f for f in entry["findings"] if f["paths"] == ["jacrev", "jit_jacrev", "finite_difference"])
    assert fd["values"] == {"finite_difference": 1.0, "jacrev": 0.0, "jit_jacrev": 0.0}
    assert fd["location"] == "d out/d case 1"
    # With the JSON on stdout, the human report goes to stderr.
    assert "1 scenario: 0 consistent, 1 mismatch, 0 error" in result.stderr


def test_json_file_is_complete_and_no_temporary_file_is_left(tmp_path):
    path = write_yaml(tmp_path, "ok.yaml", CONSISTENT_FILE)
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    assert run_cli("run", str(path), "--json", str(out)).exit_code == 0
    assert json.loads(out.read_text())["summary"]["consistent"] == 2
    assert os.listdir(out.parent) == ["report.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


def test_unwritable_report_location_is_exit_2_before_any_work(tmp_path, monkeypatch):
    path = write_yaml(tmp_path, "ok.yaml", CONSISTENT_FILE)
    monkeypatch.setattr(gradaudit.service, "_run", lambda *a, **k: pytest.fail("audit ran"))
    result = run_cli("run", str(path), "--json", str(tmp_path / "missing" / "r.json"))
    assert result.exit_code == 2
    assert "folder" in result.stderr and "does not exist" in result.stderr


def test_internal_error_is_exit_3_with_a_short_message(tmp_path, monkeypatch):
    path = write_yaml(tmp_path, "ok.yaml", CONSISTENT_FILE)

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(gradaudit.service, "_run", explode)
    result = run_cli("run", str(path))
    assert result.exit_code == 3
    assert "internal error: RuntimeError: boom" in result.stderr
    assert "Traceback" not in result.stderr


def test_usage_errors_are_exit_2():
    assert run_cli("run").exit_code == 2
    assert run_cli("run", "--no-such-flag", "x.yaml").exit_code == 2
    assert run_cli("frobnicate").exit_code == 2


def test_module_entry_point_runs_as_a_process(tmp_path):
    path = write_yaml(tmp_path, "bad.yaml", "scenarios: [1]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "gradaudit", "run", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
    )
    assert proc.returncode == 2
    assert f"{path}:1:13: a scenario must be a mapping, got 1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_ctrl_c_writes_what_finished_marks_the_rest_and_exits_2(tmp_path, monkeypatch):
    from gradaudit.engines import literal
    from gradaudit.jaxenv import installed_rule

    original_rule = installed_rule()
    real = literal.compute
    out = tmp_path / "report.json"
    seen_partial = []

    def interrupt_third(scenario, *args, **kwargs):
        if len(seen_partial) == 2:
            seen_partial.append(Path(str(out) + ".partial").read_text().splitlines())
            raise KeyboardInterrupt
        seen_partial.append(scenario.name)
        return real(scenario, *args, **kwargs)

    monkeypatch.setattr(literal, "compute", interrupt_third)
    result = run_cli("run", SEED_SUITE, "--rule", "fixed", "--literal", "--json", str(out))
    assert result.exit_code == 2
    assert "interrupted: 2 of 17 scenarios had finished" in result.stderr
    partial_lines = seen_partial[2]
    assert [json.loads(line)["name"] for line in partial_lines] == seen_partial[:2]
    report = json.loads(out.read_text())
    assert report["summary"] == {"total": 17, "consistent": 2, "mismatch": 0, "error": 0, "interrupted": 15}
    assert not Path(str(out) + ".partial").exists()
    assert installed_rule() is original_rule


def test_a_ctrl_c_swallowed_where_python_ignores_exceptions_still_stops_the_run(tmp_path, monkeypatch):
    """JAX's garbage-collection hook prints and drops a KeyboardInterrupt raised inside it; the run
    must stop at its next result all the same."""
    import signal
    import time

    from gradaudit.engines import literal

    real = literal.compute
    audited = []
    handler = signal.getsignal(signal.SIGINT)  # the default one, or SIG_IGN in a background job

    def swallow_during_second(scenario, *args, **kwargs):
        audited.append(scenario.name)
        if len(audited) == 2:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            except KeyboardInterrupt:
                pass  # what Python does to an exception raised inside a gc callback
        return real(scenario, *args, **kwargs)

    monkeypatch.setattr(literal, "compute", swallow_during_second)
    out = tmp_path / "report.json"
    result = run_cli("run", SEED_SUITE, "--rule", "fixed", "--literal", "--jobs", "0", "--json", str(out))
    assert result.exit_code == 2
    assert "interrupted: 2 of 17 scenarios had finished" in result.stderr
    assert len(audited) == 2
    assert json.loads(out.read_text())["summary"]["interrupted"] == 15
    assert signal.getsignal(signal.SIGINT) is handler  # the run put back what it found


def test_brackets_in_names_are_printed_as_written(tmp_path):
    path = write_yaml(
        tmp_path,
        "m.yaml",
        'scenarios:\n  - {name: "a[/x] [bold]b", selector: {dtype: int32, value: 2}, cases: 2, shape: [], '
        "dtype: float32}\n",
    )
    result = run_cli("run", str(path), "-v")
    assert result.exit_code == 1 and result.exception is None
    assert "a[/x] [bold]b" in result.stdout


def test_the_report_takes_the_rows_rendered_for_the_partial_file_as_they_are(tmp_path):
    """Rows rendered while the run goes on (the .partial file) are reused by the report at the end:
    the report is the same text as one rendered from scratch, gate outcomes included."""
    from gradaudit.model.options import Options
    from gradaudit.render.json_report import JsonFormat, RenderedRows
    from gradaudit.sources.scenario_files import load_paths

    scenarios = load_paths([SEED_SUITE]).scenarios
    options = Options(rule="legacy", jobs=0, cache=None)
    baseline = tmp_path / "baseline.json"
    baseline.write_text("".join(JsonFormat("findings").render(gradaudit.service.audit(scenarios[:6], options))))
    rendered = RenderedRows()
    lines = []
    report = gradaudit.service.audit(
        scenarios, options.updated(baseline=str(baseline)), on_result=lambda r: lines.append(rendered.line(r))
    )
    assert len(lines) == len(scenarios) and all("outcome" not in json.loads(line) for line in lines)
    outcomes = {bool(r.outcome.known) for r in report.results if r.findings}
    assert outcomes == {True, False}  # some findings known from the baseline, some new
    assert all(rendered.row(r, "findings") is not None for r in report.results)
    assert all(rendered.row(r, "full") is None for r in report.results)
    fresh = "".join(JsonFormat("findings").render(report))
    assert "".join(JsonFormat("findings", rendered).render(report)) == fresh
    assert all(row["outcome"]["passed"] in (True, False) for row in json.loads(fresh)["results"])


def test_a_python_file_given_to_run_is_refused_saying_what_to_do_instead(tmp_path):
    script = tmp_path / "losses.py"
    script.write_text("import jax.numpy as jnp\n\ndef loss(x):\n    return jnp.sum(x**2)\n")
    result = run_cli("run", str(script))
    assert result.exit_code == 2
    assert "a Python file, not a scenario file" in result.stderr and "fn: losses:loss" in result.stderr


@pytest.mark.parametrize(
    "content, message",
    [
        ("[tool.gradaudit]\npaths = [1]\n", "'paths' must be a list of strings"),
        ("[tool]\ngradaudit = 1\n", "[tool.gradaudit] must be a table"),
        ("tool = 1\n", None),
        (b"\xff\xfe", "cannot read"),
        ("[tool.gradaudit]\ntolerance = {rtol = true}\n", "'tolerance' must be"),
    ],
)
def test_broken_configuration_is_exit_2_never_a_traceback(tmp_path, monkeypatch, content, message):
    path = write_yaml(
        tmp_path,
        "ok.yaml",
        "scenarios:\n  - {name: a, selector: {dtype: int32, value: 1}, cases: 2, shape: [], dtype: float32}\n",
    )
    target = tmp_path / "pyproject.toml"
    target.write_bytes(content) if isinstance(content, bytes) else target.write_text(content)
    monkeypatch.chdir(tmp_path)
    result = run_cli("list", str(path))
    assert result.exception is None
    if message is None:
        assert result.exit_code == 0
    else:
        assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_json_on_stdout_stays_parseable_under_github_actions(tmp_path, monkeypatch):
    path = write_yaml(
        tmp_path,
        "ok.yaml",
        "scenarios:\n  - {name: a, selector: {dtype: int32, value: 2}, cases: 2, shape: [], dtype: float32}\n",
    )
    from click.testing import CliRunner

    from gradaudit.cli import main

    result = CliRunner().invoke(
        main, ["run", str(path), "--rule", "legacy", "--json", "-"], env={"GITHUB_ACTIONS": "true"}
    )
    assert json.loads(result.stdout)["summary"]["mismatch"] == 1
    both = run_cli("run", str(path), "--json", "-", "--format", "github")
    assert both.exit_code == 2 and "cannot both go to stdout" in both.stderr
