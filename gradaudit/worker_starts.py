"""How worker processes start: forked from multiprocessing's fork server, which imported JAX and the
worker's modules once, or spawned, each importing them itself (docs/architecture.md, "Worker isolation")."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Mapping
from multiprocessing.process import BaseProcess
from typing import Any

WORKER_MODULES = (
    "jax",
    "gradaudit.engines.bundle",
    "gradaudit.engines.group",
    "gradaudit.engines.literal",
    "gradaudit.jaxenv",
    "gradaudit.judging.assess",
    "gradaudit.refereeing",
    "gradaudit.screening",
)
"""What a worker imports before it is ready (`_serve`): a fork server imports them once, and each
worker forked from it starts with them imported instead of importing JAX itself. None of them may
start JAX's backend: its threads would not survive the fork (a test checks). Not `__main__`, which
multiprocessing's server imports by default: a user's script may compute with JAX as it is imported;
each worker imports it after the fork, as a spawned one does."""

NOT_READ_ON_IMPORT = frozenset({"PYTEST_CURRENT_TEST", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "GRADAUDIT_JOBS"})
"""Variables that change while a process runs and that nothing a worker imports reads (which test
pytest is on, how a run's output looks, its worker count): a fork server started under other values
of them still serves. So do JAX's cache variables, which each worker sets itself (`use_cache_config`)."""


def _imports_alike(server: dict[str, str], now: Mapping[str, str]) -> bool:
    """Whether a worker forked from a server started under `server` imported what it would under `now`."""
    differ = {name for name in server.keys() | now.keys() if server.get(name) != now.get(name)} - NOT_READ_ON_IMPORT
    if not differ:
        return True  # no need to import JAX here to read its cache's names (a run may still be loading)
    from gradaudit.jaxenv import CACHE_SETTINGS

    return differ <= {name.upper() for name in CACHE_SETTINGS}


class _Starts:
    """How this process starts workers: forked from multiprocessing's fork server, which imported
    WORKER_MODULES once, where the platform has one; spawned (each importing them itself) where it
    has none, where the fork server could not start (a broken environment: it is not tried again),
    and where the environment is no longer the one the server started under (JAX reads its
    variables as it is imported: a worker must import it under the run's). A fork server another
    part of the program started first is used as it is."""

    def __init__(self) -> None:
        self.environment: dict[str, str] | None = None
        """The environment the fork server started under (None: not started by us yet)."""
        self.broken = False

    def context(self) -> Any:
        spawn = multiprocessing.get_context("spawn")
        if self.broken or "forkserver" not in multiprocessing.get_all_start_methods():
            return spawn
        if self.environment is None:
            self.environment = dict(os.environ)
            multiprocessing.get_context("forkserver").set_forkserver_preload(list(WORKER_MODULES))
        return multiprocessing.get_context("forkserver") if _imports_alike(self.environment, os.environ) else spawn

    def warm_up(self) -> bool:
        """Start the fork server now, where workers will fork from it, without waiting for it: it imports
        WORKER_MODULES while this process goes on (a worker's start waits for that import). False where workers
        will be spawned, or the server cannot start (a worker's start then says why)."""
        from multiprocessing import forkserver

        if self.context().get_start_method() != "forkserver":
            return False
        try:
            forkserver.ensure_running()
        except Exception:  # noqa: BLE001 - as `start`'s: the first worker's start meets it again and falls back
            return False
        return True

    def start(self, process_of: Callable[[Any], BaseProcess]) -> BaseProcess:
        """`process_of(context)`, started; spawned if the fork server cannot start."""
        context = self.context()
        process = process_of(context)
        try:
            process.start()
        except Exception:  # the fork server died as it started (it runs sitecustomize, imports JAX)
            if context.get_start_method() != "forkserver":
                raise
            self.broken = True
            process = process_of(self.context())
            process.start()
        return process


starts = _Starts()
"""How this process starts its workers."""
