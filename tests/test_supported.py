"""The supported JAX range: refused outside it with a clear message and exit 2, before any JAX is imported."""

from __future__ import annotations

import pytest

from gradaudit import supported
from tests.helpers import run_cli


@pytest.mark.parametrize(
    ("installed", "refused"),
    [
        ("0.9.0.1", False),
        ("0.10.2", False),
        ("0.11.2", False),
        ("0.11.9.dev20261130", False),
        ("0.9.0", True),
        ("0.4.30", True),
        ("0.12.0", True),
        ("1.0", True),
    ],
)
def test_the_range_includes_its_oldest_release_and_excludes_the_first_untested(monkeypatch, installed, refused):
    monkeypatch.setattr(supported, "version", lambda name: installed)
    monkeypatch.delenv(supported.ANY_JAX, raising=False)
    problem = supported.jax_problem()
    assert (problem is not None) == refused
    if refused:
        assert (
            f"JAX {installed} is outside" in problem
            and ">= 0.9.0.1, < 0.12" in problem
            and supported.ANY_JAX in problem
        )
        with pytest.raises(supported.UnsupportedJax):
            supported.require_supported_jax()
    monkeypatch.setenv(supported.ANY_JAX, "1")
    assert supported.jax_problem() is None


def test_the_command_line_refuses_an_unsupported_jax_with_exit_2(monkeypatch):
    monkeypatch.setattr(supported, "version", lambda name: "0.13.1")
    monkeypatch.delenv(supported.ANY_JAX, raising=False)
    refused = run_cli("run", "scenarios/select_n")
    assert refused.exit_code == 2 and "JAX 0.13.1 is outside the releases gradaudit supports" in refused.stderr
    assert "Traceback" not in refused.stderr and refused.stdout == ""
