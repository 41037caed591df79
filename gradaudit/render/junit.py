"""JUnit XML: one testcase per scenario (per scenario and rule under `compare`), as GitHub, GitLab and Jenkins read it.

A scenario that fails the gate is a <failure> carrying its findings; one whose findings an
expectation or a baseline accepts is <skipped>, as pytest writes xfail; a consistent one passes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from gradaudit.model.results import AuditReport, RuleComparison, ScenarioResult
from gradaudit.render import FileFormat


def _findings_text(result: ScenarioResult) -> str:
    lines = []
    for finding in result.ranked_findings:
        lines.append(f"{result.scenario.source}: {result.scenario.name}: {finding.labelled}")
        if finding.reason:
            lines.append(f"  why: {finding.reason}")
    if result.diagnosis is not None:
        lines.append(f"{result.diagnosis.id}: {result.diagnosis.title}")
        lines += [f"  fix: {fix}" for fix in result.diagnosis.fixes]
    return "\n".join(lines)


def _testcase(result: ScenarioResult, suffix: str = "") -> ET.Element:
    scenario = result.scenario
    case = ET.Element(
        "testcase",
        {
            "classname": f"gradaudit.{scenario.suite or 'scenarios'}",
            "name": scenario.name + suffix,
            "file": scenario.source.file,
            "line": str(scenario.source.line),
            "time": f"{result.seconds:.3f}",
        },
    )
    reason = result.outcome.reason if result.outcome else result.status
    if not result.passed:
        message = f"{reason}: {result.ranked_findings[0].labelled}" if result.findings else reason
        failure = ET.SubElement(case, "failure", {"message": message, "type": result.status})
        failure.text = _findings_text(result) or reason
    elif result.findings:
        ET.SubElement(case, "skipped", {"message": reason, "type": "pytest.xfail"}).text = _findings_text(result)
    return case


def _suite(name: str, results: Sequence[ScenarioResult], suffix: str = "") -> ET.Element:
    cases = [_testcase(r, suffix) for r in results]
    failures = sum(not r.passed for r in results)
    skipped = sum(r.passed and bool(r.findings) for r in results)
    suite = ET.Element(
        "testsuite",
        {
            "name": name,
            "tests": str(len(results)),
            "failures": str(failures),
            "errors": "0",
            "skipped": str(skipped),
            "time": f"{sum(r.seconds for r in results):.3f}",
        },
    )
    suite.extend(cases)
    return suite


def _document(suites: list[ET.Element]) -> str:
    root = ET.Element("testsuites")
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


class JunitFormat(FileFormat):
    def render(self, report: AuditReport) -> str:
        return _document([_suite("gradaudit", report.results)])

    def render_comparison(self, comparison: RuleComparison) -> str:
        return _document(
            [
                _suite(f"gradaudit[{rule}]", r.results, f"[{rule}]")
                for rule, r in zip(comparison.rules, comparison.reports, strict=True)
            ]
        )
