"""The HTML report: one self-contained page people look at (`--html PATH`).

Styles, the small script and every picture are inline: the page loads nothing over the network
(its Content-Security-Policy forbids it). Jinja2 renders the templates in `templates/`, which
draw the pictures as inline SVG from the numbers `pictures.py` prepares. Jinja2 is imported only
when a page is rendered, so `gradaudit --help`, `diff` and `merge` stay light.

A large run stays a reasonable file: every scenario with findings is listed, but only the first
`PICTURED` of them get a section with their findings and pictures, and pictures stop once
`PICTURE_CELLS` cells have been drawn (the page says where either limit cut in).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gradaudit.model.findings import CONSISTENT, STATUSES
from gradaudit.model.paths import label
from gradaudit.model.results import AuditReport, RuleComparison, ScenarioResult
from gradaudit.model.scenario import Scenario
from gradaudit.render import FileFormat
from gradaudit.render.pictures import FamilyPictures, Heatmap, Routing, routing, scenario_pictures

if TYPE_CHECKING:
    from gradaudit.judging.diagnoses import Diagnosis

PICTURED = 200
"""Scenarios with findings that get a section of their own (findings, diagnosis, pictures); the rest are listed."""
PICTURE_CELLS = 300_000
"""SVG cells drawn in one page at most (its size: docs/html-report.md); scenarios after that keep their findings,
without pictures."""
FLOAT_ORDER = ("float16", "bfloat16", "float32", "float64")
"""The survey matrix's columns, least precise first (other dtypes after these)."""


@functools.lru_cache(maxsize=1)
def _templates():
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.globals.update(
        heatmap_geometry=heatmap_geometry,
        routing_geometry=routing_geometry,
        path_label=label,
        statuses=STATUSES,
    )
    return environment


def _render(template: str, **context) -> Iterator[str]:
    """The page, piece by piece (pictures are made as the template reaches them)."""
    yield from _templates().get_template(template).generate(**context)


# --- what the templates read ------------------------------------------------------------------


class Budget:
    """Pictures drawn so far: a page stops drawing at `PICTURE_CELLS` cells."""

    def __init__(self, cells: int = PICTURE_CELLS):
        self.left = cells
        self.skipped = 0

    def spend(self, cells: int) -> None:
        self.left -= cells


@dataclass
class Drawn:
    """A scenario's pictures, or why there are none."""

    routing: Routing | None = None
    families: list[FamilyPictures] = field(default_factory=list)
    withheld: str = ""


@dataclass
class ScenarioView:
    """One scenario (under one rule, for `compare`) as the page shows it."""

    result: ScenarioResult
    anchor: str
    budget: Budget
    rule: str = ""

    @property
    def scenario(self) -> Scenario:
        return self.result.scenario

    @property
    def name(self) -> str:
        return self.result.scenario.name

    @property
    def source(self) -> str:
        return f"{self.scenario.source.file}:{self.scenario.source.line}"

    @property
    def describe(self) -> str:
        return self.scenario.describe()

    @property
    def headline(self) -> str:
        if self.result.findings:
            return self.result.ranked_findings[0].labelled
        return self.result.outcome.reason if self.result.outcome is not None else ""

    def findings(self) -> list[dict]:
        return [
            {
                "kind": str(f.kind),
                "class": str(f.finding_class),
                "reason": f.reason,
                "message": f.message,
                "paths": [label(p) if p != "value" else "value" for p in f.paths],
                "count": f.count,
                "of": f.of,
                "location": f.location,
                "said": [(label(p) if p != "value" else "value", _number(v)) for p, v in f.values.items()],
                "fingerprint": f.fingerprint,
            }
            for f in self.result.ranked_findings
        ]

    def draw(self) -> Drawn:
        """The pictures, if the page's budget allows them (spent as they are made)."""
        if self.budget.left <= 0:
            self.budget.skipped += 1
            return Drawn(
                withheld=f"pictures left out: this page already draws {PICTURE_CELLS:,} cells (its size limit)"
            )
        drawn = Drawn(routing=routing(self.result), families=scenario_pictures(self.result))
        cells = sum(family.cells for family in drawn.families) + (
            len(drawn.routing.panels) * drawn.routing.rows * drawn.routing.cols if drawn.routing else 0
        )
        self.budget.spend(cells)
        return drawn


def _number(value: float) -> str:
    return "nan" if isinstance(value, float) and math.isnan(value) else f"{value:.6g}"


def _notable(result: ScenarioResult) -> bool:
    return result.status != CONSISTENT or not result.passed or bool(result.findings)


CHAR = 6.2
"""Pixels a character of the pictures' 11-pixel text takes, about: what decides whether a label fits."""


def heatmap_geometry(h: Heatmap) -> dict:
    """Pixel sizes of a heatmap: cells as large as fit 480×360 (4 to 28 pixels), its blocks'
    labels above (slanted where one does not fit its block) and, for a Hessian, to the left."""
    cell = max(4, min(28, int(min(480 / max(h.cols, 1), 360 / max(h.rows, 1)))))
    left = 78 if h.row_spans else 6
    slanted = any(len(span.label) * CHAR > (span.end - span.start) * cell - 4 for span in h.col_spans)
    longest = max((len(span.label) for span in h.col_spans), default=0) * CHAR
    top = int(10 + longest * 0.71) if slanted else 18
    labels: list[dict[str, Any]] = []
    for span in h.col_spans:
        if slanted:
            x = left + (span.start + span.end) / 2 * cell
            labels.append(
                {"x": round(x, 1), "y": top - 4, "text": span.label, "rotate": f"rotate(-45 {round(x, 1)} {top - 4})"}
            )
        else:
            labels.append({"x": round(left + span.start * cell + 2, 1), "y": top - 5, "text": span.label, "rotate": ""})
    reach = max((label["x"] + (len(label["text"]) * CHAR * 0.71 if slanted else 0) for label in labels), default=0)
    width = int(max(left + h.cols * cell + 8, reach + 8, 300))
    bottom = top + h.rows * cell
    return {
        "cell": cell,
        "left": left,
        "top": top,
        "width": width,
        "height": bottom + (34 if h.downsampled else 18),
        "bottom": bottom,
        "labels": labels,
    }


def routing_geometry(r: Routing) -> dict:
    """Pixel sizes of a routing picture: cells 6 to 26 pixels; panels side by side when they fit
    in 960 pixels, else one under another; the legend below."""
    cell = max(6, min(26, int(min(420 / max(r.cols, 1), 200 / max(r.rows, 1)))))
    grid_height = r.rows * cell
    widths = [int(max(r.cols * cell, len(panel.label) * CHAR)) + 18 for panel in r.panels]
    across = sum(widths) <= 960
    places, x, y = [], 6, 6
    for width in widths:
        places.append((x, y))
        if across:
            x += width
        else:
            y += 18 + grid_height + 12
    legend_top = (6 + 18 + grid_height + 12) if across else y
    legend = []
    at = 6
    for cls, text in r.legend:
        legend.append({"x": at, "cls": cls, "text": text})
        at += 24 + int(len(text) * CHAR)
    width = max(x if across else 6 + max(widths, default=0), at, 300)
    return {
        "cell": cell,
        "places": places,
        "width": int(width),
        "legend_top": legend_top,
        "legend": legend,
        "height": legend_top + 22 + (16 if r.downsampled else 0),
        "font": max(7, int(cell * 0.55)),
    }


def _environment_items(environment: Mapping) -> list[tuple[str, str]]:
    items = []
    for key, value in environment.items():
        if key == "devices" and isinstance(value, list):
            value = ", ".join(
                " ".join(str(v) for v in (d.get("platform"), d.get("id"), d.get("kind")) if v is not None)
                if isinstance(d, dict)
                else str(d)
                for d in value
            )
        items.append((str(key), str(value)))
    return items


def _diagnoses(results: Sequence[ScenarioResult]) -> list:
    found: dict[str, Diagnosis] = {}
    for result in results:
        if result.diagnosis is not None:
            found.setdefault(result.diagnosis.id, result.diagnosis)
    return [found[key] for key in sorted(found)]


def _views(
    results: Sequence[ScenarioResult], budget: Budget, prefix: str = "s"
) -> tuple[list[ScenarioView], list[ScenarioView]]:
    """(scenarios with a section of their own, scenarios with findings only listed)."""
    notable = [
        ScenarioView(result, f"{prefix}{number}", budget) for number, result in enumerate(results) if _notable(result)
    ]
    return notable[:PICTURED], notable[PICTURED:]


# --- the pages -----------------------------------------------------------------------------


def report_html(report: AuditReport) -> Iterator[str]:
    """The page of one run."""
    budget = Budget()
    detailed, listed = _views(report.results, budget)
    consistent = [r.scenario.name for r in report.results if not _notable(r)]
    summary = report.summary
    yield from _render(
        "report.html",
        title=(
            f"gradaudit: {summary['total']} scenarios, {summary.get('mismatch', 0)} mismatch, "
            f"{summary.get('error', 0)} error"
        ),
        report=report,
        summary=summary,
        suites=report.suite_summaries(),
        gate=report.gate_summary(),
        environment=_environment_items(report.environment),
        detailed=detailed,
        listed=listed,
        consistent=consistent,
        pictured=PICTURED,
        budget=budget,
        diagnoses=_diagnoses(report.results),
    )


@dataclass
class ComparedRow:
    name: str
    source: str
    anchor: str
    statuses: list[str]
    views: list[ScenarioView]
    detailed: bool = False

    @property
    def changed(self) -> bool:
        return len(set(self.statuses)) > 1


def comparison_html(comparison: RuleComparison) -> Iterator[str]:
    """The page of a `compare` run: what each rule gives, and per scenario with findings under any rule, each rule's
    findings and pictures."""
    from gradaudit.render.terminal import change_line

    budget = Budget()
    rows = []
    for number, row in enumerate(comparison.rows()):
        first = row[0]
        views = [
            ScenarioView(result, f"c{number}-{rule}", budget, rule)
            for rule, result in zip(comparison.rules, row, strict=True)
        ]
        rows.append(
            ComparedRow(
                first.scenario.name,
                f"{first.scenario.source.file}:{first.scenario.source.line}",
                f"c{number}",
                [r.status for r in row],
                views,
            )
        )
    notable = [row for row in rows if any(_notable(view.result) for view in row.views)]
    for compared in notable[:PICTURED]:
        compared.detailed = True
    changes = [str(change_line(comparison, before, before + 1)) for before in range(len(comparison.rules) - 1)]
    yield from _render(
        "compare.html",
        title=f"gradaudit compare: {' → '.join(comparison.rules)}",
        comparison=comparison,
        summaries=[(rule, report.summary) for rule, report in zip(comparison.rules, comparison.reports, strict=True)],
        changes=changes,
        rows=rows,
        detailed=notable[:PICTURED],
        listed=notable[PICTURED:],
        pictured=PICTURED,
        budget=budget,
        environment=_environment_items(
            {key: value for key, value in comparison.reports[0].environment.items() if key != "rule"}
        )
        if comparison.reports
        else [],
        diagnoses=_diagnoses([r for report in comparison.reports for r in report.results]),
    )


@dataclass
class SurveyKind:
    function: str
    number: int
    anchor: str
    status: str
    signatures: list[str]
    file: str
    shrunk: bool
    swept: bool
    dtype: str
    messages: list[str]
    view: ScenarioView | None


@dataclass
class SurveyRow:
    name: str
    function: str
    audited: int
    skipped: int
    not_audited: int
    """Drawn scenarios left unaudited further out than audits that timed out (`SearchOutcome.not_audited`)."""
    worst: str
    problem: str | None
    cells: dict[str, list[SurveyKind]]
    kinds: list[SurveyKind]


def _dtype_key(dtype: str) -> tuple[int, str]:
    return (FLOAT_ORDER.index(dtype), "") if dtype in FLOAT_ORDER else (len(FLOAT_ORDER), dtype)


def survey_html(document: Mapping, results: Mapping[str, ScenarioResult] | None = None) -> Iterator[str]:
    """The page of a survey: a function × dtype matrix coloured by the worst status found, each
    cell linking to its kinds; per kind its findings and, where its minimal scenario's result is
    given (`results`, by reproducer file), its pictures."""
    results = results or {}
    budget = Budget()
    rows, dtypes, pictured = [], set(FLOAT_ORDER), 0
    for fn_number, function in enumerate(document.get("functions", [])):
        kinds = []
        for kind_number, kind in enumerate(function.get("kinds", [])):
            result = results.get(str(kind.get("file")))
            dtype = result.scenario.precision_dtype if result is not None else "unknown"
            dtypes.add(dtype)
            anchor = f"k{fn_number}-{kind_number}"
            view = None
            if result is not None and pictured < PICTURED:
                view, pictured = ScenarioView(result, anchor + "-s", budget), pictured + 1
            messages = [f["message"] for f in kind.get("findings", [])]
            kinds.append(
                SurveyKind(
                    function["name"],
                    kind_number + 1,
                    anchor,
                    kind["status"],
                    list(kind.get("signatures", [])),
                    str(kind.get("file", "")),
                    bool(kind.get("shrunk")),
                    bool(kind.get("swept")),
                    dtype,
                    messages,
                    view,
                )
            )
        cells: dict[str, list[SurveyKind]] = {}
        for kind in kinds:
            cells.setdefault(kind.dtype, []).append(kind)
        rows.append(
            SurveyRow(
                function["name"],
                function.get("function", ""),
                int(function.get("audited", 0)),
                sum(function.get("skipped", {}).values()),
                sum(function.get("not_audited", {}).values()),
                function.get("worst", CONSISTENT),
                function.get("problem"),
                cells,
                kinds,
            )
        )
    columns = sorted(dtypes, key=_dtype_key)
    kinds_total = sum(len(row.kinds) for row in rows)
    anchors = {kind.file: kind.anchor for row in rows for kind in row.kinds}
    defects = [(defect, anchors.get(str(defect.get("reproducer")))) for defect in document.get("defects", [])]
    yield from _render(
        "survey.html",
        defects=defects,
        title=f"gradaudit survey: {len(rows)} functions, {kinds_total} kinds",
        document=document,
        rows=rows,
        columns=columns,
        kinds_total=kinds_total,
        budget=budget,
        environment=_environment_items(document.get("environment", {})),
        worst=lambda kinds: max((k.status for k in kinds), key=lambda s: STATUSES.index(s) if s in STATUSES else 0),
        diagnoses=_diagnoses([kind.view.result for row in rows for kind in row.kinds if kind.view is not None]),
        pictured=PICTURED,
    )


class HtmlFormat(FileFormat):
    """The self-contained HTML page (`--html PATH`)."""

    def render(self, report: AuditReport) -> Iterator[str]:
        return report_html(report)

    def render_comparison(self, comparison: RuleComparison) -> Iterator[str]:
        return comparison_html(comparison)
