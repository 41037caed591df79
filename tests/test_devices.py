"""--backend and --devices: every AD path on each chosen device, compared across devices.

Two host devices come from XLA_FLAGS=--xla_force_host_platform_device_count=2, which must be set
before JAX starts, so these tests run gradaudit as a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import run_cli, session_cache, write_yaml

ROOT = Path(__file__).resolve().parents[1]

DEVICE_DEPENDENT = '''
import jax


def scaled(x):
    """Multiplies by 3 on device 1 and by 2 elsewhere: a stand-in for a backend that lowers differently."""
    device = jax.config.jax_default_device
    second = device is not None and (getattr(device, "id", None) == 1 or str(device).endswith(":1"))
    return x * (3.0 if second else 2.0)
'''

SCENARIOS = """
scenarios:
  - name: scaled
    fn: device_fns:scaled
    inputs:
      - {dtype: float32, value: [1.0, 2.0]}
  - {name: past-the-end, selector: {dtype: int32, value: 2}, cases: 2, shape: [3], dtype: float32}
"""


def _gradaudit(tmp_path: Path, *args: str, devices: int = 2) -> tuple[subprocess.CompletedProcess, dict | None]:
    report = tmp_path / "report.json"
    report.unlink(missing_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gradaudit",
            "run",
            *args,
            "--json",
            str(report),
            "--json-detail",
            "full",
            *session_cache(),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "NO_COLOR": "1",
            "GRADAUDIT_JOBS": "0",
            "PYTHONPATH": str(ROOT),
            "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
        },
        timeout=300,
    )
    return proc, json.loads(report.read_text()) if report.exists() else None


def _by_name(report: dict) -> dict:
    return {r["name"]: r for r in report["results"]}


def test_two_devices_run_every_ad_path_on_each_and_a_difference_is_a_finding(tmp_path):
    (tmp_path / "device_fns.py").write_text(DEVICE_DEPENDENT)
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    proc, report = _gradaudit(tmp_path, "s.yaml", "--devices", "all")
    assert proc.returncode == 1, proc.stderr
    assert [d["name"] for d in report["environment"]["devices"]] == ["cpu:0", "cpu:1"]
    scaled = _by_name(report)["scaled"]
    paths = scaled["paths"]
    # A path names its device where it is not the result's own.
    assert (
        scaled["device"] == "cpu:0" and "device" not in paths["jacrev"] and paths["jacrev@cpu:1"]["device"] == "cpu:1"
    )
    assert "finite_difference@cpu:1" not in paths
    assert paths["jacrev"]["jacobians"]["x0"] == [[2.0, 0.0], [0.0, 2.0]]
    assert paths["jacrev@cpu:1"]["jacobians"]["x0"] == [[3.0, 0.0], [0.0, 3.0]]
    assert scaled["status"] == "mismatch"
    across = {tuple(f["paths"]) for f in scaled["findings"]}
    for path in ("value", "jit_value", "jacfwd", "jit_jacfwd", "jacrev", "jit_jacrev"):
        assert (f"{path}@cpu:1", path) in across
    messages = " ".join(f["message"] for f in scaled["findings"])
    assert "jit(jacrev) on cpu:1 disagrees with jit(jacrev) on 2 of 4 entries" in messages
    # The seed's defect is the same on both devices: found once per device, no cross-device finding.
    seed = _by_name(report)["past-the-end"]
    assert seed["status"] == "mismatch"
    assert not [f for f in seed["findings"] if any("@" in p for p in f["paths"])]
    assert seed["paths"]["jacrev@cpu:1"]["jacobians"] == seed["paths"]["jacrev"]["jacobians"]


def test_one_chosen_device_runs_everything_there_also_in_workers(tmp_path):
    (tmp_path / "device_fns.py").write_text(DEVICE_DEPENDENT)
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    for extra in ((), ("--jobs", "2")):
        proc, report = _gradaudit(tmp_path, "s.yaml", "--devices", "1", *extra)
        assert proc.returncode == 1, proc.stderr
        assert [d["name"] for d in report["environment"]["devices"]] == ["cpu:1"]
        scaled = _by_name(report)["scaled"]
        assert scaled["status"] == "consistent"
        assert {p.get("device", scaled["device"]) for p in scaled["paths"].values()} == {"cpu:1"}
        assert scaled["paths"]["jacfwd"]["jacobians"]["x0"] == [[3.0, 0.0], [0.0, 3.0]]


def test_an_unavailable_backend_or_device_is_exit_2_naming_what_is_here(tmp_path):
    (tmp_path / "device_fns.py").write_text(DEVICE_DEPENDENT)
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    proc, report = _gradaudit(tmp_path, "s.yaml", "--backend", "gpu")
    assert proc.returncode == 2
    assert "backend 'gpu' is not available here; available: cpu (devices: cpu:0, cpu:1)" in proc.stderr
    assert "Traceback" not in proc.stderr and report is None
    proc, _ = _gradaudit(tmp_path, "s.yaml", "--devices", "0,7")
    assert proc.returncode == 2
    assert (
        "--devices: '7' is not a cpu device id here; allowed: 'all' or ids among 0, 1, comma-separated" in proc.stderr
    )


def test_bad_device_ids_in_process(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "device_fns.py").write_text(DEVICE_DEPENDENT)
    write_yaml(tmp_path, "s.yaml", SCENARIOS)
    result = run_cli("run", "s.yaml", "--devices", "first")
    assert result.exit_code == 2 and "--devices: 'first' is not a cpu device id here" in result.stderr
    result = run_cli("run", "s.yaml", "--backend", "quantum")
    assert result.exit_code == 2 and "'quantum' is not one of 'cpu', 'gpu', 'tpu'" in result.stderr
