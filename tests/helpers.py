"""Shared test helpers: run the real CLI, write scenario files, build scenarios in code."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from gradaudit.cli import main
from gradaudit.model.errors import Location
from gradaudit.model.paths import PathError, PathResult
from gradaudit.model.scenario import Scenario, SelectN, Selector

ROOT = Path(__file__).resolve().parents[1]
"""The repository: its catalog under scenarios/, its README."""


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None

    def json(self) -> dict:
        return json.loads(self.stdout)


WRONG_SLOPE = """
import jax
import jax.numpy as jnp


@jax.custom_jvp
def double_slope(x):
    return jnp.sin(x)


@double_slope.defjvp
def _double_slope_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return double_slope(x), 2.0 * jnp.cos(x) * t  # a wrong rule: every AD path agrees, finite differences do not
"""
"""A user's module whose `double_slope` has a wrong derivative rule, twice the true slope."""


SESSION_CACHE = "GRADAUDIT_TEST_CACHE"
"""The environment variable naming the test session's compilation cache (conftest.py makes it)."""


def session_cache() -> list[str]:
    """Flags that give a command-line run the session's compilation cache, for a test about something
    else than compiling: its workers read what other tests compiled instead of compiling it all again."""
    folder = os.environ.get(SESSION_CACHE)
    return ["--cache-dir", folder] if folder else ["--no-cache"]


def run_cli(*args: str) -> CliResult:
    """Invoke `gradaudit ARGS` in-process, as a user would from a shell (no colour); scenarios are
    audited in this process (GRADAUDIT_JOBS=0) unless a test asks for workers with --jobs."""
    result = CliRunner().invoke(main, list(args), env={"NO_COLOR": "1", "COLUMNS": "200", "GRADAUDIT_JOBS": "0"})
    exception = result.exception if not isinstance(result.exception, SystemExit) else None
    return CliResult(result.exit_code, result.stdout, result.stderr, exception)


def write_yaml(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def run_one(folder: Path, name: str, text: str) -> tuple[CliResult, dict]:
    """`gradaudit run` of a one-scenario file written to `folder`: the run, and its result as the JSON report has it."""
    ran = run_cli("run", str(write_yaml(folder, name, text)), "--json", "-")
    (result,) = ran.json()["results"]
    return ran, result


def make_scenario(
    selector_dtype: str = "int32",
    value=0,
    cases: int = 2,
    shape: tuple[int, ...] = (),
    dtype: str = "float32",
    seed: int = 0,
    values=None,
    name: str = "s",
    order: int = 1,
    output: str = "identity",
) -> Scenario:
    """A select_n Scenario built in code, as if loaded from `test.yaml:1:1`."""
    target = SelectN(
        selector=Selector(dtype=selector_dtype, value=value),
        cases=cases,
        shape=shape,
        dtype=dtype,
        values=values,
        output=output,
    )
    return Scenario(name=name, source=Location("test.yaml", 1, 1), target=target, seed=seed, order=order)


def path_results(per_path: dict) -> dict[str, PathResult]:
    """Hand-made path results: per path name, its arrays (float32) or the PathError it raised."""
    return {
        name: PathResult(name=name, arrays=None, error=arrays)
        if isinstance(arrays, PathError)
        else PathResult(name=name, arrays=tuple(np.asarray(a, dtype=np.float32) for a in arrays))
        for name, arrays in per_path.items()
    }


_SCRIPT_RUNNER = r"""
import json, os, runpy, sys, tempfile, traceback
import jax, numpy  # once, here: each script's process is forked from this one, JAX's backend not started

for line in sys.stdin:
    script = json.loads(line)
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:  # as `python SCRIPT` runs it, from the script's folder: a module named __main__, argv[0]
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        os.chdir(os.path.dirname(script))
        sys.argv, sys.path[0] = [script], os.path.dirname(script)
        code = 0
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if not isinstance(stop.code, (int, type(None))):
                print(stop.code, file=sys.stderr)  # as the interpreter prints sys.exit("why")
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    said = []
    for stream in (out, err):
        stream.seek(0)
        said.append(stream.read().decode(errors="replace"))
    print(json.dumps([os.waitstatus_to_exitcode(status), *said]), flush=True)
"""


class _ScriptRunner:
    """A process that imported JAX and NumPy, and nothing of gradaudit, forking one fresh process a script."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT_RUNNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        atexit.register(self.process.kill)

    def run(self, script: Path) -> tuple[int, str, str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(str(Path(script).resolve())) + "\n")
        self.process.stdin.flush()
        returncode, stdout, stderr = json.loads(self.process.stdout.readline())
        return returncode, stdout, stderr


_runner: list[_ScriptRunner] = []


def run_script(script: Path | str):
    """A plain-JAX script run as `python SCRIPT` runs it, from its folder, in a fresh process of its own: one
    forked from a process that imported JAX and NumPy once, so that each script does not import them
    again. Returns a subprocess.CompletedProcess."""
    if not _runner or _runner[0].process.poll() is not None:
        _runner[:] = [_ScriptRunner()]
    returncode, stdout, stderr = _runner[0].run(Path(script))
    return subprocess.CompletedProcess([str(script)], returncode, stdout, stderr)


def off_by(f, factor: float):
    """`f` with a custom_jvp rule `factor` times its own derivative: a planted wrong rule."""
    import jax

    wrapped = jax.custom_jvp(f)
    wrapped.defjvp(lambda primals, tangents: (f(*primals), factor * jax.jvp(f, primals, tangents)[1]))
    return wrapped


def sin_of_pi_times(x):
    """sin(pi x): at 1e6, period 2 against float32's spacing 0.0625 and pi x = 3.1e6 rounded in either dtype."""
    import jax.numpy as jnp

    return jnp.sin(jnp.pi * x)


def sinc(x):
    """jnp.sinc as a plain function of ours (an audit names it, and off_by wraps it)."""
    import jax.numpy as jnp

    return jnp.sinc(x)
