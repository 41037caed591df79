"""JAX's persistent compilation cache: a rerun reads its programs instead of compiling them, and says so."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gradaudit.jaxenv import cache_unsupported as unsupported
from tests.helpers import run_cli, write_yaml

needs_cache = pytest.mark.skipif(unsupported() is not None, reason=str(unsupported()))

ROOT = Path(__file__).resolve().parents[1]

SCENARIOS = """
scenarios:
  - {name: past-the-end, selector: {dtype: int32, value: 2}, cases: 2, shape: [3], dtype: float32}
  - {name: in-range, selector: {dtype: int8, value: [0, 1, 1]}, cases: 2, shape: [3], dtype: float32}
"""


def _run(tmp_path: Path, *options: str, **environment: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gradaudit",
            "run",
            str(tmp_path / "s.yaml"),
            "--profile",
            "--json",
            str(report),
            *options,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1", "GRADAUDIT_JOBS": "0", "PYTHONPATH": str(ROOT), **environment},
        timeout=300,
    )
    return proc, json.loads(report.read_text())


def _cached(stderr: str) -> int:
    return int(re.search(r"(\d+) of them read from the compilation cache", stderr).group(1))


def _verdicts(report: dict) -> list[tuple]:
    return [(r["name"], r["status"], [f["message"] for f in r["findings"]]) for r in report["results"]]


@needs_cache
def test_a_rerun_reads_every_program_from_the_cache_and_reports_the_same(tmp_path):
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    first, first_report = _run(tmp_path)
    assert first.returncode == 1, first.stderr
    assert (tmp_path / ".gradaudit" / "cache").is_dir()
    assert (tmp_path / ".gradaudit" / ".gitignore").read_text().splitlines()[-1] == "*"
    first_programs = int(re.search(r"(\d+) programs,", first.stderr).group(1))
    assert _cached(first.stderr) < first_programs
    second, second_report = _run(tmp_path)
    assert second.returncode == 1
    programs = int(re.search(r"(\d+) programs,", second.stderr).group(1))
    assert programs == first_programs and _cached(second.stderr) == programs
    assert _verdicts(second_report) == _verdicts(first_report)
    assert [r["status"] for r in second_report["results"]] == ["mismatch", "consistent"]


@needs_cache
def test_no_cache_writes_nothing_and_cache_dir_moves_it(tmp_path):
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    proc, _ = _run(tmp_path, "--no-cache")
    assert proc.returncode == 1 and not (tmp_path / ".gradaudit").exists()
    # Not JAX's own cache either, where its environment names one, in this process or a worker.
    own = tmp_path / "jax-own"
    for jobs in ("0", "1"):
        proc, _ = _run(tmp_path, "--no-cache", "--jobs", jobs, JAX_COMPILATION_CACHE_DIR=str(own))
        assert proc.returncode == 1 and _cached(proc.stderr) == 0, proc.stderr
        assert not own.exists() or not any(own.iterdir()), jobs
    proc, _ = _run(tmp_path, "--cache-dir", "elsewhere")
    assert proc.returncode == 1 and any((tmp_path / "elsewhere").iterdir())
    assert not (tmp_path / ".gradaudit").exists()


def test_config_turns_the_cache_off_or_moves_it(tmp_path, monkeypatch):
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.gradaudit]\ncache = false\n")
    assert run_cli("run", "s.yaml", "-q").exit_code == 1
    assert not (tmp_path / ".gradaudit").exists()
    (tmp_path / "pyproject.toml").write_text("[tool.gradaudit]\ncache = 3\n")
    bad = run_cli("run", "s.yaml", "-q")
    assert (
        bad.exit_code == 2
        and "'cache' must be a folder for JAX's compilation cache, or false for none, got 3" in bad.stderr
    )


@needs_cache
def test_an_unusable_cache_folder_is_a_warning_not_a_failure(tmp_path, monkeypatch):
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "blocker").write_text("a file where the cache folder would go")
    result = run_cli("run", "s.yaml", "-q", "--cache-dir", "blocker/cache")
    assert result.exit_code == 1
    assert "warning: cannot use blocker/cache as the compilation cache" in result.stderr
    assert "running without it" in result.stderr


@pytest.mark.skipif(unsupported() is None, reason="this jaxlib can use the cache")
def test_an_old_jaxlib_runs_without_the_cache_and_says_so_only_when_asked(tmp_path, monkeypatch):
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    monkeypatch.chdir(tmp_path)
    quiet = run_cli("run", "s.yaml", "-q")
    assert quiet.exit_code == 1 and "warning" not in quiet.stderr
    asked = run_cli("run", "s.yaml", "-q", "--cache-dir", "c")
    assert asked.exit_code == 1 and "the compilation cache needs jaxlib 0.10 or newer" in asked.stderr
    assert not (tmp_path / "c").exists() and not (tmp_path / ".gradaudit").exists()
