"""Strict JAX flags for every test: implicit rank promotion is a bug in our code, not a feature.

One JAX compilation cache for the whole test session: the tests audit the same programs many times
over (the catalog under several routes and rules, the seed suite in most files, worker processes
that start cold), and XLA's compiling is most of their time. The cache holds compiled programs
keyed by the program itself, so a hit is the very executable a compile would give: no verdict can
change. It lives in a fresh folder per session (removed at its end), shared with every process
the tests start (workers, subprocesses, pytest-xdist's workers) through JAX's environment
variables; a test that names its own cache folder (--cache-dir, or the default .gradaudit/cache
of a subprocess in tmp_path) still gets that folder, as a user would, and one run with --no-cache
compiles everything itself, its workers too; a command-line run in a test about something else than
compiling takes the session's cache with `session_cache()`.
"""

import json
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import jax
import pytest
from filelock import FileLock

from tests.helpers import SESSION_CACHE

jax.config.update("jax_numpy_rank_promotion", "raise")


def pytest_configure(config):
    from gradaudit.jaxenv import cache_unsupported

    if cache_unsupported() is not None:
        return  # an old jaxlib (make matrix) reloads cached programs with errors: no cache there
    if not os.environ.get(SESSION_CACHE):
        folder = tempfile.mkdtemp(prefix="gradaudit-test-cache-")
        os.environ[SESSION_CACHE] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    _use_session_cache()


def _use_session_cache() -> None:
    from gradaudit.jaxenv import enable_cache

    if os.environ.get(SESSION_CACHE):
        enable_cache(Path(os.environ[SESSION_CACHE]))


@pytest.fixture(autouse=True)
def _session_cache():
    """Each test starts with the session's cache, also for the processes it starts: a run before it
    that named another folder (the CLI's default .gradaudit/cache of its working directory) moved
    JAX's environment variables there."""
    _use_session_cache()


def _made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder `make` fills once a session: under pytest-xdist the first worker that asks makes it
    while the others wait at its lock, then all read it, so a shared run costs one worker, not each."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's folder, above each worker's own
    folder = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a worker that failed left half made
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


@pytest.fixture(scope="session")
def catalog_report(tmp_path_factory):
    """The whole catalog audited once, as a default run does (groups, bundles, literal functions),
    under the legacy rule, in a test process: shared by the tests that compare other routes with it."""

    def make(folder: Path) -> None:
        from gradaudit.model.options import Options
        from gradaudit.service import audit
        from gradaudit.sources.scenario_files import load_paths
        from tests.helpers import ROOT

        scenarios = load_paths([str(ROOT / "scenarios")]).scenarios
        report = audit(scenarios, Options(rule="legacy", jobs=0, cache=None))
        (folder / "report.pickle").write_bytes(pickle.dumps(report))

    return pickle.loads((_made_once(tmp_path_factory, "catalog", make) / "report.pickle").read_bytes())


@pytest.fixture(scope="session")
def legacy_survey(tmp_path_factory):
    """`gradaudit survey` of select_n (one, two and three cases) and clamp under select_n's legacy rule,
    as a user runs it, with every output it writes (reproducers, scripts, JSON, DEFECTS.md, HTML):
    the tests of the survey, its defects and its page each read what they check from this one run."""
    from tests.helpers import CliResult, run_cli

    def make(folder: Path) -> None:
        result = run_cli(
            "survey",
            "jax.lax.select_n",
            "jax.lax.clamp",
            "--budget",
            "12",
            "--rule",
            "legacy",  # select_n's pre-#40814 rule, whatever the installed JAX has
            "--out",
            str(folder / "found"),
            "--json",
            str(folder / "survey.json"),
            "--defects",
            str(folder / "DEFECTS.md"),
            "--html",
            str(folder / "survey.html"),
        )
        said = {"exit_code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}
        (folder / "cli.json").write_text(json.dumps({**said, "exception": repr(result.exception)}))

    folder = _made_once(tmp_path_factory, "legacy-survey", make)
    said = json.loads((folder / "cli.json").read_text())
    exception = said.pop("exception")
    return CliResult(**said, exception=None if exception == "None" else RuntimeError(exception)), folder
