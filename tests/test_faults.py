"""Faults injected on purpose: a killed worker, SIGTERM, an unwritable or full report location, two
runs sharing a cache, a corrupt cache, a scenario file rewritten during the run. Each run must
still say what happened to every scenario, and never leave a half-written report."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradaudit.jaxenv import cache_unsupported
from tests.helpers import ROOT, run_cli, session_cache, write_yaml

KILLERS = """
import os
import signal
from pathlib import Path


def once(x):
    marker = Path(__file__).with_name("killed-once")
    if not marker.exists():
        marker.write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


def always(x):
    os.kill(os.getpid(), signal.SIGKILL)
    return x


def triple(x):
    return 3.0 * x
"""


def _verdicts(report: dict) -> list[tuple]:
    return [(r["name"], r["status"], [f["message"] for f in r["findings"]]) for r in report["results"]]


def _subprocess(*args: str, cwd: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "GRADAUDIT_JOBS": "0", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "gradaudit", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def _no_leftovers(folder: Path) -> list[str]:
    """Temporary files of an atomic write left behind (there must be none)."""
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


# --- 1. a worker killed with SIGKILL ------------------------------------------------------------


def test_a_killed_worker_is_retried_once_then_reported_as_crashed_and_the_run_goes_on(tmp_path):
    (tmp_path / "killers.py").write_text(KILLERS)
    path = write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: killed-once, fn: "killers:once", inputs: [{dtype: float32, value: 1.0}]}
          - {name: killed-always, fn: "killers:always", inputs: [{dtype: float32, value: 1.0}]}
          - {name: fine-a, fn: "killers:triple", inputs: [{dtype: float32, value: 2.0}]}
          - {name: fine-b, fn: "killers:triple", inputs: [{dtype: float32, value: [1.0, 2.0]}]}
        """,
    )
    result = run_cli("run", str(path), "--jobs", "2", *session_cache(), "--json", "-")
    assert result.exit_code == 1, result.stderr
    by_name = {r["name"]: r for r in result.json()["results"]}
    assert set(by_name) == {"killed-once", "killed-always", "fine-a", "fine-b"}
    assert by_name["killed-once"]["status"] == "consistent"
    assert [n["message"] for n in by_name["killed-once"]["notes"]] == [
        "retried in a fresh worker: the first one crashed: SIGKILL"
    ]
    assert by_name["killed-always"]["status"] == "error"
    assert (
        by_name["killed-always"]["findings"][0]["message"] == "crashed: SIGKILL (also when retried in a fresh worker)"
    )
    assert by_name["fine-a"]["status"] == by_name["fine-b"]["status"] == "consistent"


GROUPED = """
import os
import signal
import time
from pathlib import Path


def aborts_once(x):
    marker = Path(__file__).with_name("aborted-once")
    if not marker.exists():
        marker.write_text("aborted")
        os.abort()
    return x * x


def sleeps(x):
    time.sleep(120)  # a hang in Python, as soon as it is traced: SIGALRM interrupts it
    return x


def hangs(x):
    # SIGALRM blocked, as in a hung XLA compile (C code, which no Python signal interrupts): only
    # the parent's watchdog can end it.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(120)
    return x
"""


def _group_of(function: str, count: int) -> str:
    """`count` calls of one function with one shape: a group for the group engine."""
    rows = "".join(
        f'  - {{name: {function}-{i}, fn: "grouped:{function}", inputs: [{{dtype: float32, value: [{i}.0, 1.0]}}]}}\n'
        for i in range(count)
    )
    return "scenarios:\n" + rows


@pytest.mark.slow
def test_a_group_that_crashes_its_worker_falls_back_to_each_scenario_alone(tmp_path):
    (tmp_path / "grouped.py").write_text(GROUPED)
    path = write_yaml(tmp_path, "s.yaml", _group_of("aborts_once", 4))
    result = run_cli("run", str(path), "--jobs", "1", *session_cache(), "--json", "-")
    assert result.exit_code == 0, result.stderr
    results = result.json()["results"]
    assert [(r["status"], r["method"]) for r in results] == [("consistent", "literal")] * 4
    for row in results:
        assert [n["message"] for n in row["notes"]] == [
            "audited on the literal engine: its group's worker crashed: SIGABRT"
        ]
        assert row["paths"]["jacrev"]["status"] == "ok"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("function", "jobs", "timeout"),
    [
        ("hangs", "2", "2"),  # past any signal: only the parent's watchdog ends it
        ("sleeps", "0", "1"),  # in this process: SIGALRM, also while the group's batch size is learnt by tracing
    ],
)
def test_a_group_that_hangs_is_a_timeout_of_each_scenario_it_held_and_the_run_ends(tmp_path, function, jobs, timeout):
    (tmp_path / "grouped.py").write_text(GROUPED)
    path = write_yaml(tmp_path, "s.yaml", _group_of(function, 4))
    start = time.perf_counter()
    result = run_cli("run", str(path), "--jobs", jobs, "--timeout", timeout, *session_cache(), "--json", "-")
    assert time.perf_counter() - start < 90
    assert result.exit_code == 1, result.stderr
    results = result.json()["results"]
    assert len(results) == 4 and all(r["status"] == "error" and len(r["findings"]) == 1 for r in results)
    assert all(r["findings"][0]["message"].startswith(f"timed out after {timeout} s") for r in results)


TWO_CASES = "defaults: {dtype: float32, cases: 2, shape: []}\nscenarios:\n"
"""The head of a select_n file whose scenarios follow, one a line."""


def test_a_worker_that_died_while_idle_is_replaced_without_blaming_the_next_scenario(tmp_path):
    from gradaudit.isolation import IsolatedAuditor
    from gradaudit.model.options import Options
    from gradaudit.sources.scenario_files import load_paths

    path = write_yaml(
        tmp_path,
        "s.yaml",
        TWO_CASES + "".join(f"  - {{name: s{i}, selector: {{dtype: int32, value: {i}}}}}\n" for i in range(2)),
    )
    first, second = load_paths([str(path)], True).scenarios
    auditor = IsolatedAuditor(Options(jobs=1, rule="fixed"))
    try:
        assert auditor.audit(first).status == "consistent"
        assert auditor.worker is not None
        os.kill(auditor.worker.process.pid, signal.SIGKILL)  # the OOM killer, between two scenarios
        auditor.worker.process.join(timeout=10)
        again = auditor.audit(second)
        assert again.status == "consistent" and not again.notes
    finally:
        auditor.close()


def test_a_ctrl_c_while_a_result_is_being_reported_keeps_that_result(tmp_path):
    from gradaudit.model.options import Options
    from gradaudit.service import AuditInterrupted, audit
    from gradaudit.sources.scenario_files import load_paths

    path = write_yaml(
        tmp_path,
        "s.yaml",
        TWO_CASES + "".join(f"  - {{name: s{i}, selector: {{dtype: int32, value: {i % 2}}}}}\n" for i in range(3)),
    )
    reported = []

    def on_result(result) -> None:  # as the command line's: the .partial line written, then Ctrl-C
        reported.append(result.scenario.name)
        if len(reported) == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(AuditInterrupted) as stopped:
        audit(load_paths([str(path)], True).scenarios, Options(jobs=0, literal=True, rule="fixed"), on_result=on_result)
    statuses = [(r.scenario.name, str(r.status)) for r in stopped.value.report.results]
    assert statuses == [("s0", "consistent"), ("s1", "consistent"), ("s2", "interrupted")]


# --- 2. SIGTERM is Ctrl-C ------------------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_writes_the_report_of_what_finished_and_exits_as_ctrl_c_does(tmp_path):
    # Each call sleeps (eager paths call it, jit paths trace it): a scenario takes seconds.
    (tmp_path / "sleepy.py").write_text("import time\n\n\ndef slow(x):\n    time.sleep(0.5)\n    return x * x\n")
    write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: first, fn: "sleepy:slow", inputs: [{dtype: float32, value: 1.0}]}
          - {name: second, fn: "sleepy:slow", inputs: [{dtype: float32, value: 2.0}]}
          - {name: third, fn: "sleepy:slow", inputs: [{dtype: float32, value: 3.0}]}
        """,
    )
    report, partial = tmp_path / "out.json", tmp_path / "out.json.partial"
    proc = _subprocess("run", "s.yaml", "--json", "out.json", "--jobs", "1", "--no-cache", cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not (partial.exists() and partial.read_text().strip()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no result within 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 2, stderr  # as for Ctrl-C
    assert "Traceback" not in stderr, stderr
    assert "interrupted: 1 of 3 scenarios had finished" in stderr
    statuses = {r["name"]: r["status"] for r in json.loads(report.read_text())["results"]}
    assert statuses == {"first": "consistent", "second": "interrupted", "third": "interrupted"}
    assert not partial.exists()
    assert "1 consistent, 0 mismatch, 0 error, 2 interrupted" in stdout


def test_only_the_command_line_takes_sigterm_over_a_library_caller_keeps_its_own():
    from gradaudit.service import remembered_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with remembered_interrupt():  # the Python API, the pytest plugin: pytest, stopped, must stop
        assert signal.getsignal(signal.SIGTERM) is before
    with remembered_interrupt(sigterm=True):  # the command line
        assert signal.getsignal(signal.SIGTERM) is signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGTERM) is before


# --- 3. a report location that cannot be written -----------------------------------------------


@pytest.fixture
def mounted(tmp_path):
    """Mount a tmpfs at a folder (`options` as for mount -o); skip where mounting is not permitted."""
    mounts: list[Path] = []

    def mount(name: str, options: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root and mount permission): {done.stderr.strip()}")
        mounts.append(folder)
        return folder

    yield mount
    for folder in mounts:
        subprocess.run(["umount", str(folder)], check=False)


def _a_read_only_folder(tmp_path: Path, mounted) -> Path:
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):  # root writes anyway: a read-only file system stops root too
        folder.chmod(0o755)
        return mounted("read-only-mount", "ro,size=64k")
    return folder


def test_a_report_in_a_read_only_folder_is_exit_2_before_anything_is_audited(tmp_path, mounted):
    (tmp_path / "witness.py").write_text(
        f"from pathlib import Path\n\nPath({str(tmp_path / 'imported')!r}).write_text('yes')\n\n\n"
        "def f(x):\n    return x\n"
    )
    path = write_yaml(
        tmp_path, "s.yaml", 'scenarios:\n  - {name: f, fn: "witness:f", inputs: [{dtype: float32, value: 1.0}]}\n'
    )
    folder = _a_read_only_folder(tmp_path, mounted)
    try:
        result = run_cli("run", str(path), "--no-cache", "--json", str(folder / "out.json"))
    finally:
        if folder.name == "read-only":  # not the mount: that is read-only whatever its mode
            folder.chmod(0o755)
    assert result.exit_code == 2
    assert f"folder '{folder}' is not writable" in result.stderr
    assert not (tmp_path / "imported").exists(), "the scenario file was loaded before the report location was checked"
    assert list(folder.iterdir()) == []


SMALL = """
scenarios:
  - {name: past-the-end, selector: {dtype: int32, value: 2}, cases: 2, shape: [3], dtype: float32}
  - {name: in-range, selector: {dtype: int8, value: 1}, cases: 2, shape: [], dtype: float32}
"""


def test_a_disk_full_when_the_report_is_written_is_exit_2_naming_it_with_no_half_written_file(tmp_path, monkeypatch):
    path = write_yaml(tmp_path, "s.yaml", SMALL)
    report = tmp_path / "out.json"

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("gradaudit.cli.session.os.fsync", full)  # write_atomic syncs before it renames
    result = run_cli("run", str(path), "--no-cache", "--rule", "legacy", "--json", str(report))
    assert result.exit_code == 2, (result.stderr, result.exception)
    assert result.exception is None
    assert f"could not write the report {report}: No space left on device" in result.stderr
    assert not report.exists()
    assert _no_leftovers(tmp_path) == []
    assert "2 scenarios: 1 consistent, 1 mismatch, 0 error" in result.stdout  # the results are not lost
    # The .partial file, written as the results finished, is whole and kept: the message names it.
    assert f"the results that finished are in {report}.partial" in result.stderr
    assert [json.loads(line)["name"] for line in Path(f"{report}.partial").read_text().splitlines()] == [
        "past-the-end",
        "in-range",
    ]


def test_a_really_full_disk_is_exit_2_and_leaves_neither_a_report_nor_a_partial_file(tmp_path, mounted):
    path = write_yaml(tmp_path, "s.yaml", SMALL)
    disk = mounted("full", "size=64k")
    with open(disk / "filler", "wb", buffering=0) as filler:  # fill it up
        with pytest.raises(OSError) as full:
            while True:
                filler.write(b"x" * 4096)
        assert full.value.errno == errno.ENOSPC
    report = disk / "out.json"
    result = run_cli("run", str(path), "--no-cache", "--rule", "legacy", "--json", str(report))
    assert result.exit_code == 2, (result.stderr, result.exception)
    assert result.exception is None
    assert f"could not write the report {report}: No space left on device" in result.stderr
    assert f"stopped writing {report}.partial" in result.stderr
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]
    assert "2 scenarios: 1 consistent, 1 mismatch, 0 error" in result.stdout


# --- 4 and 5. the compilation cache: shared, and corrupt ----------------------------------------

needs_cache = pytest.mark.skipif(cache_unsupported() is not None, reason=str(cache_unsupported()))

CACHED = """
scenarios:
  - {name: past-the-end, selector: {dtype: int32, value: 2}, cases: 2, shape: [3], dtype: float32}
  - {name: in-range, selector: {dtype: int8, value: [0, 1, 1]}, cases: 2, shape: [3], dtype: float32}
  - {name: cube, fn: "fx:cube", inputs: [{dtype: float32, value: [1.0, 2.0]}]}
  - {name: soft, fn: "fx:soft", inputs: [{dtype: float32, value: 0.5}]}
"""

FX = "import jax.numpy as jnp\n\n\ndef cube(x):\n    return x * x * x\n\n\ndef soft(x):\n    return 2.0 * jnp.tanh(x)\n"


def _cached_run(tmp_path: Path, report: str, *options: str) -> subprocess.Popen:
    return _subprocess("run", "s.yaml", "--rule", "legacy", "--json", report, *options, cwd=tmp_path)


def _finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, stderr = proc.communicate(timeout=300)
    return proc.returncode, stderr


@needs_cache
@pytest.mark.slow
def test_two_runs_sharing_one_cache_folder_at_once_both_report_as_a_run_alone(tmp_path):
    (tmp_path / "fx.py").write_text(FX)
    write_yaml(tmp_path, "s.yaml", CACHED)
    alone = run_cli("run", str(tmp_path / "s.yaml"), "--rule", "legacy", "--no-cache", "--json", "-")
    assert alone.exit_code == 1, alone.stderr
    both = [_cached_run(tmp_path, name, "--cache-dir", "shared", "--jobs", "1") for name in ("a.json", "b.json")]
    for proc in both:
        code, stderr = _finish(proc)
        assert code == 1, stderr
        assert "Traceback" not in stderr, stderr
    assert _verdicts(json.loads((tmp_path / "a.json").read_text())) == _verdicts(alone.json())
    assert _verdicts(json.loads((tmp_path / "b.json").read_text())) == _verdicts(alone.json())
    assert any((tmp_path / "shared").iterdir())


@needs_cache
@pytest.mark.slow
def test_a_corrupt_cache_is_warned_about_recomputed_and_reports_the_same(tmp_path):
    (tmp_path / "fx.py").write_text(FX)
    write_yaml(tmp_path, "s.yaml", CACHED)
    code, stderr = _finish(_cached_run(tmp_path, "first.json", "--cache-dir", "cache"))
    assert code == 1, stderr
    entries = [p for p in (tmp_path / "cache").iterdir() if p.is_file()]
    assert entries
    for number, entry in enumerate(entries):  # garbage of several lengths, none of it a cache entry
        entry.write_bytes(os.urandom(1 + 97 * number % 500))
    code, stderr = _finish(_cached_run(tmp_path, "second.json", "--cache-dir", "cache"))
    assert code == 1, stderr
    assert "Traceback" not in stderr, stderr
    assert "Error reading persistent compilation cache entry" in stderr  # JAX's warning, one per entry read
    first, second = (json.loads((tmp_path / name).read_text()) for name in ("first.json", "second.json"))
    assert _verdicts(second) == _verdicts(first)


# --- 6. a scenario file rewritten during the run ------------------------------------------------

REWRITER = """
from pathlib import Path


def rewrite(x):
    scenarios = Path(__file__).with_name("s.yaml")
    if "rewritten" not in scenarios.read_text():
        scenarios.write_text("# rewritten during the run\\nscenarios: [this is: not valid\\n")
    return x * x
"""


def test_a_scenario_file_rewritten_during_the_run_reports_what_was_loaded_and_names_the_file(tmp_path):
    (tmp_path / "rewriter.py").write_text(REWRITER)
    path = write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: rewrites, fn: "rewriter:rewrite", inputs: [{dtype: float32, value: 1.0}]}
          - {name: after, selector: {dtype: int32, value: 2}, cases: 2, shape: [], dtype: float32}
        """,
    )
    result = run_cli("run", str(path), "--no-cache", "--rule", "legacy", "--json", "-")
    assert result.exception is None, result.exception
    assert result.exit_code == 1, result.stderr
    report = result.json()
    assert "rewritten" in path.read_text()
    assert [(r["name"], r["status"]) for r in report["results"]] == [("rewrites", "consistent"), ("after", "mismatch")]
    assert report["files"] == [str(path)]
    warning = f"{path} changed during the run: this report is of the scenarios as loaded when it started"
    assert report["warnings"] == [warning]
    assert warning in " ".join(result.stderr.split())


def test_a_function_calling_sys_exit_is_an_error_and_the_run_goes_on(tmp_path):
    folder = tmp_path
    (folder / "edge.py").write_text(
        "import sys\n\n\ndef exits(x):\n    sys.exit(0)\n\n\ndef square(x):\n    return x * x\n"
    )
    path = write_yaml(
        folder,
        "s.yaml",
        """
        scenarios:
          - {name: exits, fn: "edge:exits", inputs: [{dtype: float32, value: 1.0}]}
          - {name: square, fn: "edge:square", inputs: [{dtype: float32, value: 2.0}]}
        """,
    )
    result = run_cli("run", str(path), "--json", "-")
    assert result.exit_code == 1
    statuses = {r["name"]: r["status"] for r in result.json()["results"]}
    assert statuses == {"exits": "error", "square": "consistent"}


def test_a_module_exiting_on_import_is_an_input_error(tmp_path):
    folder = tmp_path
    (folder / "exits_on_import.py").write_text("import sys\nsys.exit(5)\n")
    path = write_yaml(
        folder, "s.yaml", 'scenarios:\n  - {name: x, fn: "exits_on_import:f", inputs: [{dtype: float32, value: 1.0}]}\n'
    )
    result = run_cli("run", str(path))
    assert result.exit_code == 2 and "importing 'exits_on_import' raised SystemExit" in result.stderr
