"""Shared test helpers: run the real CLI, write scenario files, probe the installed JAX rule."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
from click.testing import CliRunner
from jax import lax

from gradaudit.cli import main
from gradaudit.scenario import Scenario, Selector
from gradaudit.yaml_nodes import Location


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None

    def json(self) -> dict:
        return json.loads(self.stdout)


def run_cli(*args: str) -> CliResult:
    """Invoke `gradaudit ARGS` in-process, as a user would from a shell (no colour)."""
    result = CliRunner().invoke(main, list(args), env={"NO_COLOR": "1", "COLUMNS": "200"})
    exception = result.exception if not isinstance(result.exception, SystemExit) else None
    return CliResult(result.exit_code, result.stdout, result.stderr, exception)


def write_yaml(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def installed_rule_is_legacy() -> bool:
    """Whether the installed JAX still has the pre-#40814 select_n transpose rule (zero gradient above range)."""
    grads = jax.grad(lambda a, b: lax.select_n(jnp.int32(2), a, b), argnums=(0, 1))(1.0, 2.0)
    return float(grads[1]) == 0.0


LEGACY_ONLY = dict(
    condition=not installed_rule_is_legacy(),
    reason="the installed JAX already has PR #40814's select_n rule",
)


def make_scenario(
    selector_dtype: str = "int32",
    value=0,
    cases: int = 2,
    shape: tuple[int, ...] = (),
    dtype: str = "float32",
    seed: int = 0,
    values=None,
    name: str = "s",
) -> Scenario:
    """A select_n Scenario built in code, as if loaded from `test.yaml:1:1`."""
    return Scenario(
        name=name,
        source=Location("test.yaml", 1, 1),
        selector=Selector(dtype=selector_dtype, value=value),
        cases=cases,
        shape=shape,
        dtype=dtype,
        seed=seed,
        values=values,
    )
