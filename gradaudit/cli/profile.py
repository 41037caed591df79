"""`--profile`: where a run's time went (load, trace, lower, compile, execute and judge, report) and
how many programs XLA compiled (and how many came from the persistent compilation cache), read
from JAX's own monitoring events, in this process and in the worker processes."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from gradaudit.model.results import AuditReport


class Profile:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.phases: dict[str, float] = {}
        if enabled:
            from gradaudit.jaxenv import JaxEvents

            self.events = JaxEvents()

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
        in_main = (
            events.seconds["trace"] + events.seconds["lower"] + events.seconds["compile"] - events.background + waited
        )
        execute = max(0.0, audit - in_main - judge)
        alongside = max(0.0, events.background - waited)
        failed = report.timings.get("failed_bundles", 0)
        methods: dict[str, int] = defaultdict(int)
        for result in report.results:
            methods[result.method] += 1
        workers = report.timings.get("workers") or {}
        console.print(
            f"profile: load {self.phases.get('load', 0):.2f}s, trace {events.seconds['trace']:.2f}s, lower "
            f"{events.seconds['lower']:.2f}s, "
            f"compile {events.seconds['compile']:.2f}s"
            + (f" ({alongside:.2f}s of it alongside tracing)" if alongside >= 0.005 else "")
            + f", execute and the rest {execute:.2f}s, judge {judge:.2f}s, "
            f"report {self.phases.get('report', 0):.2f}s; {events.compiled} programs, "
            f"{events.cached} of them read from the compilation cache; "
            f"{methods['group']} scenarios from {report.timings.get('groups', 0):g} groups, "
            f"{methods['bundle']} from {report.timings.get('bundles', 0):g} bundles"
            + (f" ({failed:g} more failed as a whole)" if failed else "")
            + f", {methods['literal']} one by one on the literal engine",
            highlight=False,
            soft_wrap=True,
        )
        if workers:
            console.print(
                f"profile, worker processes together (alongside each other): trace {workers.get('trace', 0):.2f}s, "
                f"lower {workers.get('lower', 0):.2f}s, compile {workers.get('compile', 0):.2f}s, "
                f"judge {workers.get('judge', 0):.2f}s, audit {workers.get('audit', 0):.2f}s in all; "
                f"{workers.get('programs', 0):g} programs, {workers.get('cached', 0):g} of them read from the "
                "compilation cache",
                highlight=False,
                soft_wrap=True,
            )
