"""--jobs: scenarios that abort or hang take down only their worker; every scenario gets an outcome."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.helpers import ROOT, run_cli, session_cache, write_yaml

WHOSE = (
    "import os\nfrom pathlib import Path\n\n\ndef f(x):\n"
    "    with Path(__file__).with_name('pids').open('a') as pids:\n"
    "        pids.write(f'{os.getpid()}\\n')\n    return x * x\n"
)
"""A module whose `f` records, in `pids` beside it, the process that called it."""

HAZARDS = """
import os
import time

from jax import lax


def aborts(x):
    os.abort()


def hangs(x):
    time.sleep(120)
    return x


def square(x):
    return x * x


def slice3(x, start):
    return lax.dynamic_slice(x, (start,), (3,))
"""


def test_crashing_and_hanging_scenarios_are_errors_and_the_others_finish(tmp_path):
    (tmp_path / "hazards.py").write_text(HAZARDS)
    path = write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: aborts, fn: "hazards:aborts", inputs: [{dtype: float32, value: 1.0}]}
          - {name: hangs, fn: "hazards:hangs", inputs: [{dtype: float32, value: 1.0}]}
          - {name: fine, fn: "hazards:square", inputs: [{dtype: float32, value: 2.0}]}
          - name: int8-start-100-into-256
            fn: "hazards:slice3"
            inputs: [{dtype: float32, fill: arange, shape: [256]}, {dtype: int8, value: 100}]
          - {name: seed, selector: {dtype: int32, value: 2}, cases: 2, shape: [], dtype: float32}
        """,
    )
    start = time.perf_counter()
    result = run_cli("run", str(path), "--jobs", "2", "--timeout", "4", "--rule", "legacy", "--json", "-")
    assert time.perf_counter() - start < 60
    assert result.exit_code == 1
    by_name = {r["name"]: r for r in result.json()["results"]}
    assert by_name["aborts"]["status"] == "error"
    assert by_name["aborts"]["findings"][0]["message"] == "crashed: SIGABRT (also when retried in a fresh worker)"
    assert by_name["aborts"]["findings"][0]["class"] == "crashed"
    assert by_name["hangs"]["status"] == "error"
    assert by_name["hangs"]["findings"][0]["message"].startswith("timed out after 4 s")
    assert by_name["hangs"]["findings"][0]["class"] == "timed-out"
    assert by_name["fine"]["status"] == "consistent"
    # JAX 0.10.2's reverse mode loses this derivative and has been seen to abort the interpreter:
    # either way it is reported, and it takes no other scenario with it.
    smashed = by_name["int8-start-100-into-256"]
    assert smashed["status"] in ("mismatch", "error")
    if smashed["status"] == "error":
        assert smashed["findings"][0]["message"].startswith("crashed: ")
    assert by_name["seed"]["status"] == "mismatch" and by_name["seed"]["diagnosis"]["id"] == "GA002"


def test_a_function_output_too_large_is_refused_by_its_worker_and_the_others_still_run(tmp_path, monkeypatch):
    (tmp_path / "big.py").write_text("import jax.numpy as jnp\n\n\ndef outer(x):\n    return jnp.outer(x, x)\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.gradaudit]\nlimits = {jacobian = 5000}\n")
    write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: outer, fn: "big:outer", inputs: [{dtype: float32, shape: [20], fill: arange}]}
          - {name: small, fn: "big:outer", inputs: [{dtype: float32, value: [1.0, 2.0]}]}
        """,
    )
    out = tmp_path / "report.json"
    result = run_cli("run", "s.yaml", "--jobs", "2", "--json", str(out))
    assert result.exit_code == 2
    message = (
        "scenario 'outer' is too large: its derivatives have 8,000 entries, over the limit of 5,000 (limits.jacobian)"
    )
    assert f"s.yaml:2:5: {message}" in result.stderr
    assert "1 input error in 1 file; the other scenarios were audited" in result.stderr
    report = json.loads(out.read_text())
    assert [e["message"] for e in report["errors"]] == [message]
    assert {r["name"]: r["status"] for r in report["results"]} == {"small": "consistent"}
    assert report["summary"]["total"] == 1 and report["gate"]["failed"] == 0


def test_one_worker_serves_every_engine_of_a_run(tmp_path):
    # Four calls of one shape (a group), a select_n scenario (a bundle) and a second-order one (the
    # literal engine): with --jobs 1, one worker process computes them all, started once.
    (tmp_path / "whose.py").write_text(WHOSE)
    rows = "".join(
        f"  - {{name: g{i}, fn: 'whose:f', inputs: [{{dtype: float32, value: [{i}.0, 1.0]}}]}}\n" for i in range(4)
    )
    rows += "  - {name: second, fn: 'whose:f', order: 2, inputs: [{dtype: float32, value: 2.0}]}\n"
    rows += "  - {name: pick, selector: {dtype: int32, value: 1}, cases: 2, dtype: float32, shape: []}\n"
    path = write_yaml(tmp_path, "s.yaml", "scenarios:\n" + rows)
    result = run_cli("run", str(path), "--jobs", "1", *session_cache(), "--json", "-")
    assert result.exit_code in (0, 1), result.stderr
    methods = {r["name"]: r["method"] for r in result.json()["results"]}
    assert methods["g0"] == "group" and methods["second"] == "literal", methods
    assert len(set((tmp_path / "pids").read_text().split())) == 1


@pytest.mark.skipif(
    not os.path.exists("/proc/self/cmdline"), reason="tells worker processes apart by /proc/self/cmdline"
)
def test_workers_that_cannot_start_blame_no_scenario_and_the_run_says_why(tmp_path):
    # Every worker process dies as it starts, before it is ready (a broken environment, not a scenario):
    # the fork server workers are forked from, and each worker spawned instead.
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(
        "import os\ncommand = open('/proc/self/cmdline', 'rb').read()\n"
        "if b'spawn_main' in command or b'multiprocessing.forkserver' in command:\n    os._exit(3)\n"
    )
    write_yaml(
        tmp_path,
        "s.yaml",
        "defaults: {dtype: float32, cases: 2, shape: []}\nscenarios:\n"
        + "".join(f"  - {{name: s{i}, selector: {{dtype: int32, value: {i}}}}}\n" for i in range(3)),
    )
    write_yaml(
        tmp_path, "space.yaml", "search: {name: x, selector: {dtype: [int8], value: [0, 1]}, cases: [1], shape: [[]]}\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{ROOT}", "NO_COLOR": "1"}

    def gradaudit(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "gradaudit", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    run = gradaudit("run", "s.yaml", "--jobs", "2", "--literal", *session_cache(), "--json", "-")
    assert run.returncode == 1, run.stderr
    findings = [(r["status"], r["findings"][0]["message"]) for r in json.loads(run.stdout)["results"]]
    assert all(
        status == "error" and message.startswith("no worker process could start (crashed: exit code 3, ")
        for status, message in findings
    ), findings
    search = gradaudit("search", "space.yaml", "--budget", "3", "--jobs", "1", "--out", "found", "--no-database")
    assert (
        search.returncode == 2
        and "no worker process could start (crashed: exit code 3, 3 times in a row); --jobs 0 audits without them"
        in search.stderr
    )
    assert not (tmp_path / "found").exists() or not list((tmp_path / "found").iterdir())


def test_workers_are_forked_from_one_server_that_imported_jax_without_starting_it(tmp_path):
    # A spawned worker imports JAX itself; forked from multiprocessing's fork server, which imported it
    # once, each starts with it. JAX warns at a fork once its backend (and its threads) started.
    (tmp_path / "whose.py").write_text(WHOSE.replace("os.getpid()}", "os.getpid()} {os.getppid()}"))
    rows = "".join(f"  - {{name: s{i}, fn: 'whose:f', inputs: [{{dtype: float32, value: {i}.0}}]}}\n" for i in range(4))
    write_yaml(tmp_path, "s.yaml", "scenarios:\n" + rows)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    command = [sys.executable, "-m", "gradaudit", "run", "s.yaml", "--jobs", "2", "--literal", "--json", "-"]
    run = subprocess.Popen(
        [*command, *session_cache()],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 0, stderr
    assert [r["status"] for r in json.loads(stdout)["results"]] == ["consistent"] * 4
    assert "os.fork()" not in stderr
    callers = {tuple(line.split()) for line in (tmp_path / "pids").read_text().splitlines()}
    workers, parents = {pid for pid, _ in callers}, {parent for _, parent in callers}
    assert len(workers) == 2 and len(parents) == 1 and str(run.pid) not in parents | workers, callers


def test_a_worker_imports_jax_under_the_environment_of_its_run(tmp_path, monkeypatch):
    # JAX reads its variables as it is imported: a worker started after one changed does not come from a
    # fork server that imported JAX before.
    (tmp_path / "reads.py").write_text(
        "from pathlib import Path\n\nimport jax\n\n\ndef f(x):\n"
        "    Path(__file__).with_name('read').write_text(jax.config.jax_default_prng_impl)\n    return x * x\n"
    )
    path = write_yaml(
        tmp_path, "s.yaml", "scenarios:\n  - {name: s, fn: 'reads:f', inputs: [{dtype: float32, value: 2.0}]}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("JAX_DEFAULT_PRNG_IMPL", raising=False)
    first = run_cli("run", str(path), "--jobs", "1", "--literal", *session_cache())
    assert first.exit_code == 0 and (tmp_path / "read").read_text() == "threefry2x32", first.stderr
    monkeypatch.setenv("JAX_DEFAULT_PRNG_IMPL", "rbg")
    second = run_cli("run", str(path), "--jobs", "1", "--literal", *session_cache())
    assert second.exit_code == 0 and (tmp_path / "read").read_text() == "rbg", second.stderr


def test_only_large_files_start_workers_ahead_of_loading(tmp_path, monkeypatch):
    from gradaudit import isolation
    from gradaudit.model.options import Options
    from gradaudit.service import START_AHEAD_BYTES, start_workers
    from gradaudit.worker_starts import starts

    monkeypatch.setattr(starts, "broken", True)  # spawned workers, which start ahead as workers (see below)

    small = write_yaml(
        tmp_path,
        "small.yaml",
        "scenarios:\n  - {name: s, selector: {dtype: int32, value: 0}, cases: 2, shape: [], dtype: float32}\n",
    )
    start_workers(Options(jobs=2), [str(small)])
    assert isolation.taken_ahead() == []
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "big.yaml").write_text(small.read_text() + "#" * START_AHEAD_BYTES + "\n")
    start_workers(Options(jobs=0), [str(tmp_path / "big")])
    assert isolation.taken_ahead() == []
    for selection in ({"keyword": "s"}, {"shard": "1/2"}):  # might leave fewer scenarios than workers
        start_workers(Options(jobs=2, **selection), [str(tmp_path / "big")])
        assert isolation.taken_ahead() == []
    start_workers(Options(jobs=2), [str(tmp_path / "big")])
    ahead = isolation.taken_ahead()
    try:
        assert len(ahead) == 2 and all(w.process.is_alive() and w.settings is None for w in ahead)
        assert isolation.taken_ahead() == []  # handed out once
    finally:
        isolation.stop_workers(ahead)


def test_workers_started_ahead_get_the_runs_cache_and_serve_every_engine(tmp_path):
    # A file large enough that its workers start before the run turns its cache on: they are told the
    # cache folder (a rerun reads every program of theirs from it), and one worker serves the run.
    from gradaudit.jaxenv import cache_unsupported
    from gradaudit.service import START_AHEAD_BYTES

    if cache_unsupported() is not None:
        pytest.skip(cache_unsupported())
    (tmp_path / "whose.py").write_text(WHOSE)
    rows = "".join(
        f"  - {{name: g{i}, fn: 'whose:f', inputs: [{{dtype: float32, value: [{i}.0, 1.0]}}]}}\n" for i in range(4)
    )
    rows += "  - {name: second, fn: 'whose:f', order: 2, inputs: [{dtype: float32, value: 2.0}]}\n"
    write_yaml(tmp_path, "s.yaml", "scenarios:\n" + rows + "#" * START_AHEAD_BYTES + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1")
    read = []
    for _ in range(2):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "gradaudit",
                "run",
                "s.yaml",
                "--jobs",
                "1",
                "--cache-dir",
                "cache",
                "--profile",
                "-q",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        programs, cached = map(
            int, re.search(r"worker processes.*?(\d+) programs, (\d+) of them read", proc.stderr).groups()
        )
        read.append((programs, cached))
        assert len(set((tmp_path / "pids").read_text().split())) == len(read)  # one worker process a run
    assert read[0][0] > 0 and read[1] == (read[0][0], read[0][0])


def test_a_worker_started_ahead_counts_its_start_up_from_its_settings_and_serves_the_run(tmp_path, monkeypatch):
    # However long the load took, a worker started ahead is not taken for hung: its start-up clock
    # (STARTUP_SECONDS until it says READY) starts when the run gives it its settings, and it is
    # the worker that audits, not a fresh one.
    from gradaudit import isolation
    from gradaudit.model.options import Options
    from gradaudit.service import audit
    from gradaudit.sources.scenario_files import load_paths
    from gradaudit.worker_starts import starts

    (tmp_path / "whose.py").write_text(WHOSE)
    write_yaml(
        tmp_path,
        "s.yaml",
        "scenarios:\n  - {name: one, fn: 'whose:f', inputs: [{dtype: float32, value: [1.0, 2.0]}]}\n",
    )
    options = Options(jobs=1, cache=None)
    monkeypatch.setattr(starts, "broken", True)  # spawned: a worker started ahead (forked ones start the server alone)
    isolation.start_ahead(1)
    worker = isolation.taken_ahead()[0]
    loaded = time.monotonic()
    worker.configure(isolation._settings(options, ()))
    assert worker.started >= loaded and not worker.ready
    isolation._ahead.append(worker)  # as if not yet taken: the run takes it
    report = audit(load_paths([str(tmp_path / "s.yaml")]).scenarios, options)
    assert [r.status for r in report.results] == ["consistent"]
    assert set((tmp_path / "pids").read_text().split()) == {str(worker.process.pid)}


def test_starting_ahead_from_the_fork_server_starts_the_server_alone_and_the_run_forks_its_workers_from_it(tmp_path):
    # Starting a worker from the fork server waits for the server to import JAX: start_ahead starts the server
    # alone (the caller loads meanwhile) and hands no worker to the run, whose workers fork from it. Where workers
    # are spawned, start_ahead starts them (the test above).
    from multiprocessing import forkserver

    from gradaudit import isolation
    from gradaudit.model.options import Options
    from gradaudit.service import audit
    from gradaudit.sources.scenario_files import load_paths
    from gradaudit.worker_starts import starts

    if starts.context().get_start_method() != "forkserver":
        pytest.skip("workers are spawned here")
    (tmp_path / "whose.py").write_text(WHOSE)
    write_yaml(
        tmp_path,
        "s.yaml",
        "scenarios:\n  - {name: one, fn: 'whose:f', inputs: [{dtype: float32, value: [1.0, 2.0]}]}\n",
    )
    isolation.start_ahead(1)
    assert isolation.taken_ahead() == []
    server = forkserver._forkserver._forkserver_pid
    assert server is not None and not isolation._ahead
    report = audit(load_paths([str(tmp_path / "s.yaml")]).scenarios, Options(jobs=1, cache=None))
    assert [r.status for r in report.results] == ["consistent"]
    assert forkserver._forkserver._forkserver_pid == server  # the run's worker forked from the server started ahead


def test_group_batches_are_queued_kin_next_to_each_other_and_two_workers_take_a_stretch_each():
    # Kin (groups whose eager computations share programs) are queued next to each other, and
    # whatever order two workers ask in, the first takes from the front and the second from the
    # back: each computes a stretch of kin of its own.
    import random

    from gradaudit.engines.group import GroupEngine
    from gradaudit.isolation import _stretch
    from tests.helpers import make_scenario

    written = [
        make_scenario(selector_dtype=dtype, shape=shape, name=f"{dtype}{shape}")
        for dtype in ("int8", "bool")
        for shape in ((3,), (2, 3), ())
    ]
    queued = GroupEngine.queued(written, [[i] for i in range(len(written))], 2)
    assert [written[b[0]].target.shape for b in queued] == [(), (), (2, 3), (2, 3), (3,), (3,)]
    assert [written[b[0]].target.selector.dtype for b in queued] == ["bool", "int8"] * 3
    rng = random.Random(0)
    for length in range(1, 30):
        queue, taken = list(range(length)), {0: [], 1: []}
        while queue:
            worker = rng.randrange(2)
            taken[worker].append(queue.pop(_stretch(worker, 2, len(queue))))
        assert taken[0] == list(range(len(taken[0]))) and taken[1] == list(range(length - 1, len(taken[0]) - 1, -1))


def test_a_batch_of_many_captured_values_is_split_between_the_workers_and_costly_batches_start_first(tmp_path):
    # A group compiles a program per value its members capture: a batch of very many values is
    # split between the two workers, values whole, one half at each end of the queue where the
    # workers start; a batch of a few values comes next; the rest keep kin next to each other.
    from gradaudit.engines.group import SPLIT_VALUES, GroupEngine
    from gradaudit.isolation import _stretch
    from gradaudit.sources.scenario_files import load_paths
    from gradaudit.targets import captured

    many = 2 * SPLIT_VALUES + 3
    entries = [
        f"  - {{name: many-{v}, fn: 'fns:take', "
        f"inputs: [{{dtype: float32, value: [1.0, 2.0]}}, {{dtype: int32, value: {v}}}]}}"
        for v in range(many)
    ]
    entries += [
        f"  - {{name: few-{k}, fn: 'fns:window', "
        f"inputs: [{{dtype: float32, value: [1.0, 2.0, 3.0]}}, {{dtype: int32, value: {k % 3}}}]}}"
        for k in range(6)
    ]
    entries += [
        f"  - {{name: {fn}-{k}, fn: 'fns:{fn}', inputs: [{{dtype: float32, value: [1.0, 2.0]}}]}}"
        for fn in ("soft", "huber")
        for k in range(4)
    ]
    (tmp_path / "fns.py").write_text(
        "def take(x, i):\n    return x[i % 2]\n\n\nwindow = take\n\n\n"
        "def soft(x):\n    return x * x\n\n\nhuber = soft\n"
    )
    loaded = load_paths([str(write_yaml(tmp_path, "grid.yaml", "scenarios:\n" + "\n".join(entries) + "\n"))])
    assert not loaded.errors
    scenarios = loaded.scenarios
    positions = {}
    for index, scenario in enumerate(scenarios):
        positions.setdefault(scenario.name.split("-")[0], []).append(index)
    queued = GroupEngine.queued(scenarios, list(positions.values()), 2)
    first, last = queued[0], queued[-1]
    values = [{captured(scenarios[i]) for i in half} for half in (first, last)]
    assert sorted(first + last) == positions["many"] and not values[0] & values[1]
    assert {len(v) for v in values} <= {many // 2, many - many // 2}
    assert queued[1] == positions["few"]
    assert [scenarios[b[0]].name.split("-")[0] for b in queued[2:-1]] == ["huber", "soft"]
    assert queued.pop(_stretch(0, 2, len(queued))) == first and queued.pop(_stretch(1, 2, len(queued))) == last


def test_workers_started_ahead_see_the_folders_loading_added(tmp_path):
    # A function importing a module that only another scenario folder provides: loading puts that
    # folder on the run's sys.path after the workers started ahead, and they must see it too.
    from gradaudit.service import START_AHEAD_BYTES

    write_yaml(
        tmp_path / "a",
        "s.yaml",
        "scenarios:\n  - {name: uses-b, fn: 'mod_a:f', inputs: [{dtype: float32, value: [1.0, 2.0]}]}\n"
        + "#" * START_AHEAD_BYTES
        + "\n",
    )
    (tmp_path / "a" / "mod_a.py").write_text("def f(x):\n    import helper_b\n\n    return x * helper_b.k()\n")
    write_yaml(
        tmp_path / "b",
        "s.yaml",
        "scenarios:\n  - {name: in-b, fn: 'helper_b:g', inputs: [{dtype: float32, value: 3.0}]}\n",
    )
    (tmp_path / "b" / "helper_b.py").write_text("def k():\n    return 2.0\n\n\ndef g(x):\n    return x * k()\n")
    result = run_cli("run", str(tmp_path / "a"), str(tmp_path / "b"), "--jobs", "1", *session_cache(), "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert {r["name"]: r["status"] for r in result.json()["results"]} == {"uses-b": "consistent", "in-b": "consistent"}


def test_a_search_screens_many_scenarios_in_the_worker_that_screened_one(tmp_path, monkeypatch):
    # A search screens a draw at a time while shrinking and its sweep all at once: the worker that
    # screened one serves the batches next, started once, and every verdict is its scenario's.
    from gradaudit.model.options import Options
    from gradaudit.service import isolated
    from gradaudit.sources.scenario_files import load_text

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "whose.py").write_text(WHOSE)
    rows = "".join(
        f"  - {{name: s{i}, fn: 'whose:f', inputs: [{{dtype: float32, value: {i}.5}}]}}\n" for i in range(40)
    )
    scenarios, errors = load_text("scenarios:\n" + rows, "s.yaml")
    assert not errors
    pool = isolated(Options(jobs=1, timeout=30.0))
    try:
        assert pool.screen(scenarios[0]).status == "consistent"
        screened = list(pool.screen_all(scenarios))
        assert pool.screen(scenarios[1]).status == "consistent"
    finally:
        pool.close()
    assert [r.scenario.name for r in screened] == [s.name for s in scenarios]
    assert all(r.status == "consistent" and not r.notes for r in screened), [r.notes for r in screened if r.notes]
    assert [float(r.inputs[0]) for r in screened] == [i + 0.5 for i in range(40)]
    assert len(set((tmp_path / "pids").read_text().split())) == 1


def test_a_one_scenario_run_audits_in_its_own_process_unless_jobs_is_chosen(tmp_path):
    from click.testing import CliRunner

    from gradaudit.cli import main

    path = write_yaml(
        tmp_path,
        "one.yaml",
        "scenarios:\n  - {name: s, selector: {dtype: int32, value: 2}, cases: 2, shape: [], dtype: float32}\n",
    )

    def profile(*more: str) -> str:
        args = ["run", str(path), "--rule", "legacy", "--no-cache", "--profile", "-q", *more]
        result = CliRunner().invoke(main, args, env={"NO_COLOR": "1", "GRADAUDIT_JOBS": None})
        assert result.exit_code == 1, result.output
        return result.output

    assert "worker processes" not in profile()  # one scenario, no worker count chosen: this process
    assert "profile, worker processes together" in profile("--jobs", "1")  # chosen: isolated in a worker


BRANCHY = """import jax.numpy as jnp
from jax import lax


def f(x):
    # Called on its own, x > 0 takes the first branch. Batched (vmap), lax.cond runs both branches
    # for every entry, and the second loops for ever where x > 0 (x + 1 == x once x is large).
    return lax.cond(x > 0, lambda x: x * x, lambda x: x - jnp.sign(looped(lax.stop_gradient(x))), x)


def looped(x):
    return lax.while_loop(lambda v: v > 0, lambda v: v + 1, x)
"""


def _screened_in_a_worker(folder, monkeypatch, module: str, source: str, count: int, timeout: float) -> list:
    """`module:f` at 0.5, 1.5, ... (`count` scenarios) screened as a search screens them, in one worker."""
    from gradaudit.model.options import Options
    from gradaudit.service import isolated
    from gradaudit.sources.scenario_files import load_text

    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    (folder / f"{module}.py").write_text(source)
    rows = "".join(
        f"  - {{name: s{k}, fn: '{module}:f', inputs: [{{dtype: float32, value: {k}.5}}]}}\n" for k in range(count)
    )
    scenarios, errors = load_text("scenarios:\n" + rows, "s.yaml")
    assert not errors
    pool = isolated(Options(jobs=1, timeout=timeout, cache=None))
    try:
        return list(pool.screen_all(scenarios))
    finally:
        pool.close()


def test_a_search_screens_a_function_that_loops_only_when_batched_in_moments(tmp_path, monkeypatch):
    """A search's screen evaluates a group's finite-difference points one call each, as the function
    is called: one that loops for ever only when vmapped (lax.cond runs both branches) is screened by
    the group engine within the timeout, not handed to the literal engine after it."""
    screened = _screened_in_a_worker(tmp_path, monkeypatch, "branchy", BRANCHY, 4, timeout=20.0)
    assert [(r.status, r.method, r.notes) for r in screened] == [("consistent", "group", ())] * 4


HANGS_AT = """import jax.numpy as jnp
from jax import lax


def f(x):
    # Loops for ever at x == 2.5 (v + 1 == v once v is large), under jit as eagerly.
    start = lax.stop_gradient(jnp.where(x == 2.5, 1.0, -1.0))
    return x * x - jnp.sign(lax.while_loop(lambda v: v > 0, lambda v: v + 1, start))
"""


def test_a_screen_batch_that_hangs_blames_its_hanging_member_and_screens_the_others(tmp_path, monkeypatch):
    """A search screens a sweep as one batch; one member hangs: it is a timeout of its own, and the
    others are screened as they would have been without it (by the group engine, not the literal)."""
    screened = _screened_in_a_worker(tmp_path, monkeypatch, "hangs_at", HANGS_AT, 6, timeout=5.0)
    assert [r.status for r in screened] == ["consistent"] * 2 + ["error"] + ["consistent"] * 3
    assert screened[2].findings[0].message.startswith("timed out after 5 s")
    assert [r.method for k, r in enumerate(screened) if k != 2] == ["group"] * 5


STUCK_AT = """import signal
import time
from pathlib import Path

import jax


def f(x):
    inner = x
    while hasattr(inner, "primal"):  # eager jacfwd and jacrev trace with the value inside
        inner = inner.primal
    if isinstance(inner, jax.core.Tracer):
        bool(x > 100)  # under jit: Python control flow on a traced value, which jit cannot compile
    elif float(inner) == 2.5:
        with Path(__file__).with_name('stuck').open('a') as stuck:
            stuck.write('2.5\\n')
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # as code inside XLA: no alarm stops it
        time.sleep(120)
    return x * x
"""


def test_a_screen_member_stuck_past_its_timeout_is_blamed_once_and_the_others_screened_together(tmp_path, monkeypatch):
    """A screen batch's member computed on its own (jit cannot compile its function), stuck where no
    signal reaches: the worker said it started that member, so the parent blames it alone after one
    timeout (before, every member was screened again alone and the stuck one hung a second time),
    and the others are screened as a batch in a fresh worker."""
    screened = _screened_in_a_worker(tmp_path, monkeypatch, "stuck_at", STUCK_AT, 5, timeout=3.0)
    assert [r.status for r in screened] == ["consistent"] * 2 + ["error"] + ["consistent"] * 2
    assert screened[2].findings[0].message.startswith("timed out after 3 s")
    assert (tmp_path / "stuck").read_text().splitlines() == ["2.5"], "stuck once, not again alone"


SLEEPS_AT = """import os
import time
from pathlib import Path

import jax


def f(x):
    concrete = not isinstance(x, jax.core.Tracer)
    if concrete:
        with Path(__file__).with_name('pids').open('a') as pids:
            pids.write(f'{float(x)} {os.getpid()}\\n')
    if concrete and float(x) == 2.5:
        time.sleep(120)  # called eagerly at 2.5: runs past any timeout
    return x * x
"""


def test_a_worker_whose_own_time_limit_fired_is_replaced_and_blames_no_other_scenario(tmp_path):
    """A scenario's time limit interrupts Python, not what XLA runs for it, which then holds up every
    later computation in that process; so a worker where a limit fired takes no further scenario: the
    one that ran past it is timed out, the next is audited by a fresh worker and is consistent."""
    (tmp_path / "sleeps_at.py").write_text(SLEEPS_AT)
    path = write_yaml(
        tmp_path,
        "s.yaml",
        """
        scenarios:
          - {name: sleeps, fn: "sleeps_at:f", inputs: [{dtype: float32, value: 2.5}]}
          - {name: after, fn: "sleeps_at:f", inputs: [{dtype: float32, value: 3.5}]}
        """,
    )
    result = run_cli("run", str(path), "--jobs", "1", "--timeout", "3", "--json", "-", *session_cache())
    by_name = {r["name"]: r for r in result.json()["results"]}
    assert by_name["sleeps"]["status"] == "error", by_name["sleeps"]
    assert by_name["sleeps"]["findings"][0]["message"].startswith("timed out after 3 s")
    assert by_name["after"]["status"] == "consistent"
    calls = [line.split() for line in (tmp_path / "pids").read_text().splitlines()]
    slept = {pid for value, pid in calls if value == "2.5"}
    assert slept and not slept & {pid for value, pid in calls if value == "3.5"}


TRACED = """from pathlib import Path


def _traced(name, x):
    with Path(__file__).with_name('traced').open('a') as traced:
        traced.write(name + '\\n')
    return x * x


def f0(x):
    return _traced('f0', x)


def f1(x):
    return _traced('f1', x) + 1


def f2(x):
    return _traced('f2', x) * 2


def f3(x):
    return _traced('f3', x) - 1
"""


def test_a_search_hears_each_screened_result_as_soon_as_it_and_those_before_it_are_known(tmp_path, monkeypatch):
    """Screening many draws in workers, the first verdict reaches the search (and its progress line)
    while later draws are still to be computed, not once every draw is."""
    from gradaudit.model.options import Options
    from gradaudit.service import isolated
    from gradaudit.sources.scenario_files import load_text

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "traced_fns.py").write_text(TRACED)
    rows = "".join(
        f"  - {{name: s{k}, fn: 'traced_fns:f{k}', inputs: [{{dtype: float32, value: 1.5}}]}}\n" for k in range(4)
    )
    scenarios, errors = load_text("scenarios:\n" + rows, "s.yaml")
    assert not errors
    pool = isolated(Options(jobs=1, timeout=60, cache=None))
    try:
        screened = pool.screen_all(scenarios)
        first = next(screened)
        traced_by_then = set((tmp_path / "traced").read_text().split())
        rest = list(screened)
    finally:
        pool.close()
    assert first.status == "consistent" and "f0" in traced_by_then and "f3" not in traced_by_then
    assert [r.status for r in rest] == ["consistent"] * 3
    assert set((tmp_path / "traced").read_text().split()) == {"f0", "f1", "f2", "f3"}
