"""The trust boundary: `fn:` imports and runs Python code, as a conftest does; with user code off
(`--no-user-code`, `user_code = false`) function scenarios are refused before anything is imported."""

from __future__ import annotations

from tests.helpers import run_cli, write_yaml

MODULE = """
import pathlib
pathlib.Path(__file__).with_name("imported.marker").write_text("ran")

def double(x):
    return 2.0 * x
"""


def test_no_user_code_refuses_function_scenarios_before_importing_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "untrusted.py").write_text(MODULE)
    write_yaml(
        tmp_path,
        "functions.yaml",
        "scenarios:\n  - name: doubled\n    fn: untrusted:double\n    inputs:\n"
        "      - {dtype: float32, value: [1.0, 2.0]}\n",
    )
    write_yaml(
        tmp_path,
        "selects.yaml",
        "scenarios:\n  - name: in-range\n    selector: {dtype: int32, value: 1}\n    cases: 2\n"
        "    shape: [3]\n    dtype: float32\n",
    )
    refused = run_cli("run", "functions.yaml", "selects.yaml", "--no-user-code", "--json", "r.json")
    assert refused.exit_code == 2
    assert (
        "functions.yaml:3:9: fn 'untrusted:double' would import and run Python code, and user code is off"
        in refused.stderr
    )
    assert "1 input error" in refused.stderr and "nothing was audited" in refused.stderr
    assert not (tmp_path / "imported.marker").exists()
    alone = run_cli("run", "selects.yaml", "--no-user-code")
    assert alone.exit_code == 0 and "1 scenario: 1 consistent" in alone.stdout
    for command in (
        ["list", "functions.yaml"],
        ["compare", "functions.yaml", "--rules", "legacy", "fixed"],
        ["baseline", "functions.yaml", "-o", "b.json"],
    ):
        (tmp_path / "pyproject.toml").write_text("[tool.gradaudit]\nuser_code = false\n")
        configured = run_cli(*command)
        assert configured.exit_code == 2 and "user code is off" in configured.stderr, command
    assert not (tmp_path / "imported.marker").exists()
    allowed = run_cli("run", "functions.yaml", "--user-code")
    assert allowed.exit_code == 0 and (tmp_path / "imported.marker").read_text() == "ran"


def test_a_search_over_a_function_space_is_refused_without_user_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "untrusted.py").write_text(MODULE)
    write_yaml(
        tmp_path,
        "space.yaml",
        "search:\n  name: doubled\n  fn: untrusted:double\n  inputs:\n    - {dtype: float32, shape: [[2]]}\n",
    )
    refused = run_cli("search", "space.yaml", "--out", "found", "--budget", "2", "--no-user-code")
    assert (
        refused.exit_code == 2
        and "space.yaml:3:7: fn 'untrusted:double' would import and run Python code" in refused.stderr
    )
    assert not (tmp_path / "imported.marker").exists()
