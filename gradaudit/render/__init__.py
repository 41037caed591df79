"""Renderers: each turns an AuditReport into one output format and only reads the report.

File formats share one small interface, `FileFormat.render(report)`, the text whole or piece by piece (and
`render_comparison` for `compare`), chosen by the `ReportFormat` enum; `formatter_for` fails
loudly if a format is added without a renderer.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Iterable

from gradaudit.model.results import AuditReport, RuleComparison


class ReportFormat(enum.StrEnum):
    """The file formats: JSON and JUnit XML for machines, SARIF for code scanning, GitHub Actions
    annotations on stdout, and a self-contained HTML page for people."""

    JSON = "json"
    JUNIT = "junit"
    GITHUB = "github"
    HTML = "html"
    SARIF = "sarif"


class FileFormat(ABC):
    """A report format written to a file (or stdout) as text."""

    @abstractmethod
    def render(self, report: AuditReport) -> str | Iterable[str]:
        """The whole report in this format: its text, or its pieces in order (a large report is
        written as it is made, never whole in memory)."""

    @abstractmethod
    def render_comparison(self, comparison: RuleComparison) -> str | Iterable[str]:
        """A `compare` run (one audit per rule) in this format."""


def formatter_for(fmt: ReportFormat, json_detail: str = "findings", rendered=None) -> FileFormat:
    """The renderer of `fmt`; `rendered`: JSON rows already rendered during the run (json_report.RenderedRows)."""
    from gradaudit.render.github import GithubFormat
    from gradaudit.render.html_report import HtmlFormat  # imports jinja2 only when it renders
    from gradaudit.render.json_report import JsonFormat
    from gradaudit.render.junit import JunitFormat
    from gradaudit.render.sarif import SarifFormat

    formatters: dict[ReportFormat, FileFormat] = {
        ReportFormat.JSON: JsonFormat(json_detail, rendered),
        ReportFormat.JUNIT: JunitFormat(),
        ReportFormat.GITHUB: GithubFormat(),
        ReportFormat.HTML: HtmlFormat(),
        ReportFormat.SARIF: SarifFormat(),
    }
    missing = set(ReportFormat) - set(formatters)
    assert not missing, f"no renderer for {missing}"
    return formatters[fmt]
