"""GitHub Actions annotations: a `::error file=…,line=…,col=…,title=…::message` line per finding.

Findings that fail the gate are errors, findings an expectation or a baseline accepts are notices;
each points at the scenario in its YAML file, relative to the working directory, as ruff's do.
"""

from __future__ import annotations

import os

from gradaudit.model.results import AuditReport, RuleComparison
from gradaudit.render import FileFormat


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _relative(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path


def annotation_lines(report: AuditReport, title_suffix: str = "") -> list[str]:
    lines = []
    for result in report.results:
        scenario = result.scenario.source
        # a function of the user's own: the annotation goes on its definition, naming the scenario
        source = getattr(result.scenario.target, "defined_at", None) or scenario
        at_scenario = "" if source is scenario else f" (scenario {_relative(scenario.file)}:{scenario.line})"
        failing = set(result.outcome.new) if result.outcome is not None else set()
        for finding in result.ranked_findings:
            level = (
                "error"
                if not result.passed and (finding.fingerprint in failing or result.outcome is None)
                else "notice"
            )
            message = finding.labelled
            if result.diagnosis is not None:
                message += f" [{result.diagnosis.id}: {result.diagnosis.title}]"
            message += at_scenario
            properties = ",".join(
                f"{key}={_escape_property(value)}"
                for key, value in (
                    ("file", _relative(source.file)),
                    ("line", str(source.line)),
                    ("col", str(source.col)),
                    ("title", f"gradaudit {finding.finding_class}: {result.scenario.name}{title_suffix}"),
                )
            )
            lines.append(f"::{level} {properties}::{_escape_data(message)}")
        if result.outcome is not None and not result.passed and not result.findings:
            lines.append(
                f"::error file={_escape_property(_relative(source.file))},line={source.line},col={source.col},"
                f"title={_escape_property('gradaudit: ' + result.scenario.name)}::{_escape_data(result.outcome.reason)}"
            )
    return lines


class GithubFormat(FileFormat):
    def render(self, report: AuditReport) -> str:
        return "".join(line + "\n" for line in annotation_lines(report))

    def render_comparison(self, comparison: RuleComparison) -> str:
        return "".join(line + "\n" for line in annotation_lines(comparison.reports[-1], f" [{comparison.rules[-1]}]"))
