"""`--profile`: where a run's time went (load, trace, lower, compile, execute and judge, report)
and how many programs XLA compiled (and how many of those came from the persistent compilation
cache), read from JAX's own monitoring events."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from gradaudit.results import AuditReport

JAX_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
CACHE_HIT = "/jax/compilation_cache/cache_hits"


class JaxEvents:
    """Seconds JAX spent tracing, lowering and compiling in this process, programs compiled and
    cache reads, from JAX's monitoring events (listening costs nothing until JAX reports)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.compiled = 0
        self.cached = 0
        self.background = 0.0
        """Seconds of compiling in other threads (the compiled literal path compiles while it traces)."""
        from jax import monitoring

        monitoring.register_event_duration_secs_listener(self._record)
        monitoring.register_event_listener(self._count)

    def _count(self, event: str, **kwargs) -> None:
        self.cached += event == CACHE_HIT

    def _record(self, event: str, duration: float, **kwargs) -> None:
        name = JAX_EVENTS.get(event)
        if name:
            self.seconds[name] += duration
            self.compiled += name == "compile"
            if name == "compile" and threading.current_thread() is not threading.main_thread():
                self.background += duration

    def take(self) -> dict[str, float]:
        """What was recorded since the last take, as plain numbers (what a worker sends its parent)."""
        taken = {**self.seconds, "programs": self.compiled, "cached": self.cached}
        self.seconds, self.compiled, self.cached = defaultdict(float), 0, 0
        return taken


class Profile:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.phases: dict[str, float] = {}
        self.events = JaxEvents() if enabled else None

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - start

    def print(self, console: Console, report: AuditReport) -> None:
        if not self.enabled:
            return
        events = self.events
        audit = self.phases.get("audit", 0.0)
        judge = report.timings.get("judge", 0.0)
        waited = report.timings.get("waited", 0.0)
        # The main thread traced, lowered, compiled what it compiled itself, waited for the rest, ran and judged.
        in_main = events.seconds["trace"] + events.seconds["lower"] + events.seconds["compile"] - events.background + waited
        execute = max(0.0, audit - in_main - judge)
        alongside = max(0.0, events.background - waited)
        failed = report.timings.get("failed_bundles", 0)
        methods = defaultdict(int)
        for result in report.results:
            methods[result.method] += 1
        workers = report.timings.get("workers") or {}
        console.print(
            f"profile: load {self.phases.get('load', 0):.2f}s, trace {events.seconds['trace']:.2f}s, lower {events.seconds['lower']:.2f}s, "
            f"compile {events.seconds['compile']:.2f}s"
            + (f" ({alongside:.2f}s of it alongside tracing)" if alongside >= 0.005 else "")
            + f", execute and the rest {execute:.2f}s, judge {judge:.2f}s, "
            f"report {self.phases.get('report', 0):.2f}s; {events.compiled} programs, "
            f"{events.cached} of them read from the compilation cache; "
            f"{methods['batched']} scenarios from the fast path in {report.timings.get('groups', 0):g} groups, "
            f"{methods['compiled']} compiled literally in {report.timings.get('bundles', 0):g} bundles"
            + (f" ({failed:g} more failed as a whole)" if failed else "")
            + f", {methods['literal']} one by one on the literal path",
            highlight=False,
            soft_wrap=True,
        )
        if workers:
            console.print(
                f"profile, worker processes together (alongside each other): trace {workers.get('trace', 0):.2f}s, "
                f"lower {workers.get('lower', 0):.2f}s, compile {workers.get('compile', 0):.2f}s, "
                f"judge {workers.get('judge', 0):.2f}s, audit {workers.get('audit', 0):.2f}s in all; "
                f"{workers.get('programs', 0):g} programs, {workers.get('cached', 0):g} of them read from the compilation cache",
                highlight=False,
                soft_wrap=True,
            )
