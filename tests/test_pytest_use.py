"""gradaudit inside users' pytest sessions: the docs' examples run as written, the fixture and the
collected scenario files read `[tool.gradaudit]`, and only the folders a project names are collected."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from tests.helpers import ROOT, write_yaml

EXAMPLE = re.compile(r"```python\n# (?P<file>[\w.]+); expect: (?P<expect>[^\n]+)\n(?P<code>.*?)```", re.DOTALL)


def _examples() -> dict[str, tuple[str, str]]:
    """The Python API page's examples: file name -> (expected outcome, code)."""
    text = (ROOT / "docs" / "python-api.md").read_text()
    return {m["file"]: (m["expect"], m["code"]) for m in EXAMPLE.finditer(text)}


def _pytest(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
        timeout=600,
    )


@pytest.mark.slow
def test_the_python_api_pages_examples_pass_and_fail_as_the_page_says(tmp_path):
    examples = _examples()
    test_files = {name: value for name, value in examples.items() if name.startswith("test_")}
    assert {"test_gradients.py", "test_properties.py", "test_drop_in.py", "test_model.py", "notebook"} <= set(examples)
    for name, (_, code) in test_files.items():
        (tmp_path / name).write_text(code)
    run = _pytest(tmp_path, "--junitxml", "junit.xml", *test_files)
    outcomes: dict[str, Counter] = {name: Counter() for name in test_files}
    for case in ET.parse(tmp_path / "junit.xml").iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        outcomes[case.get("classname") + ".py"]["failed" if failed else "passed"] += 1
    for name, (expect, _) in test_files.items():
        said = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes[name].items()))
        assert said == expect, (name, run.stdout[-3000:])
    # The failing test shows what `gradaudit run` prints: where it was called, the finding, the diagnosis.
    assert re.search(r"test_gradients\.py:\d+:1: softplus_wrong: mismatch", run.stdout), run.stdout[-3000:]
    page = (ROOT / "docs" / "python-api.md").read_text()
    shown = (
        page.split("provenance of small outputs, and the diagnosis with its fixes:\n\n```\n", 1)[1]
        .split("```", 1)[0]
        .splitlines()
    )
    for line in shown:
        assert line == "..." or line.strip() == "..." or line.strip() in run.stdout, line


def test_the_notebook_example_shows_html_and_text(tmp_path):
    _, code = _examples()["notebook"]
    script = (
        code + "\nhtml = result._repr_html_()\nassert '<!DOCTYPE html>' in html and 'GA002' in html\n"
        "print('status', result.status)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "status mismatch" in run.stdout and "send it nowhere" in run.stdout


def test_the_fixture_and_scenario_files_read_tool_gradaudit_and_only_named_folders_are_collected(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.gradaudit]\nrule = "legacy"\nlimits = {elements = 4}\n\n'
        '[tool.pytest.ini_options]\ngradaudit_paths = ["audits"]\n'
    )
    write_yaml(
        tmp_path,
        "audits/select.yaml",
        "scenarios:\n"
        "  - {name: past-the-end, selector: {dtype: int32, value: 2}, cases: 2, shape: [3], dtype: float32}\n",
    )
    write_yaml(tmp_path, "settings.yaml", "key: value\n")  # a project's other YAML: never a test
    write_yaml(
        tmp_path,
        "test_fixture.py",
        """
        import numpy as np
        import pytest
        import jax.numpy as jnp
        from jax import lax

        from gradaudit import InputRejected


        def test_the_rule_comes_from_the_configuration(gradaudit):
            assert gradaudit.options.rule == "legacy" and gradaudit.options.jobs == 0
            with pytest.raises(AssertionError, match="send it nowhere"):
                gradaudit.check_grads(lambda *c: lax.select_n(np.int32(2), *c), \
(jnp.arange(3.0), jnp.arange(3.0) + 10), 1)


        def test_the_limits_come_from_the_configuration(gradaudit):
            with pytest.raises(InputRejected, \
match=r"an input of 5 elements exceeds the limit of 4 \\(limits.elements\\)"):
                gradaudit.audit(jnp.sin, jnp.arange(5.0))


        def test_the_session_jax_gets_no_compilation_cache_it_did_not_ask_for(gradaudit):
            import jax

            before = jax.config.jax_compilation_cache_dir
            gradaudit.audit(jnp.sin, jnp.arange(3.0))
            assert jax.config.jax_compilation_cache_dir == before
        """,
    )
    run = _pytest(tmp_path, "-rA")
    assert re.search(r"^1 failed, 3 passed", run.stdout, re.MULTILINE), run.stdout[-3000:]
    assert not (tmp_path / ".gradaudit" / "cache").exists()
    # named relative to where pytest started, as `gradaudit run` names them
    assert "\naudits/select.yaml:2:5: past-the-end: mismatch" in run.stdout and str(tmp_path) not in run.stdout
    assert "settings.yaml" not in run.stdout
    fixed = _pytest(tmp_path, "audits", "--gradaudit-rule", "fixed")
    assert re.search(r"^1 passed", fixed.stdout, re.MULTILINE), fixed.stdout[-3000:]


def test_a_failing_test_shows_the_users_line_and_the_finding_not_gradaudits_frames(tmp_path):
    (tmp_path / "test_user.py").write_text(
        "import jax, jax.numpy as jnp, gradaudit\n"
        "\n"
        "@jax.custom_jvp\n"
        "def wrong(x):\n"
        "    return jnp.sin(x)\n"
        "\n"
        "wrong.defjvp(lambda p, t: (jnp.sin(p[0]), t[0] * 2.0 * jnp.cos(p[0])))\n"
        "\n"
        "def test_rule():\n"
        "    gradaudit.assert_consistent(wrong, jnp.array([0.3, 0.7]))\n"
        "\n"
        "def test_drop_in():\n"
        "    gradaudit.check_grads(wrong, (jnp.array([0.3, 0.7]),), 1)\n"
        "\n"
        "def test_bad_argument():\n"
        "    gradaudit.audit(wrong, jnp.array([1, 2]))\n"
    )
    run = _pytest(tmp_path, "test_user.py")
    assert "3 failed" in run.stdout, run.stdout[-3000:]
    assert "gradaudit/api.py" not in run.stdout and "gradaudit/service.py" not in run.stdout, run.stdout
    assert run.stdout.count("test_user.py:10: ") + run.stdout.count("test_user.py:13: ") == 2, run.stdout
    assert "InputRejected: nothing to differentiate" in run.stdout and "test_user.py:16: InputRejected" in run.stdout
