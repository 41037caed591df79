"""A failed scenario as plain text: what a failing test shows (the pytest plugin, `assert_consistent`).

The findings, the provenance of each output element (where its value came from and where each
reverse path sent its derivative) and the diagnosis with its fixes, without colour or tables.
"""

from __future__ import annotations

from gradaudit.model.results import ScenarioResult

MAX_ELEMENTS_SHOWN = 12
"""Provenance is listed element by element only for outputs this small."""


def failure_text(result: ScenarioResult) -> str:
    """`file:line: name: status (why)`, then the findings, provenance and diagnosis, indented."""
    scenario = result.scenario
    reason = result.outcome.reason if result.outcome is not None else result.status
    detail = f" ({reason})" if reason != result.status else ""
    lines = [f"{scenario.source}: {scenario.name}: {result.status}{detail}"]
    for finding in result.ranked_findings:
        lines.append(f"  {finding.labelled}")
        if finding.reason:
            lines.append(f"    why: {finding.reason}")
    if result.provenance is not None and len(result.provenance.value_from) <= MAX_ELEMENTS_SHOWN:
        for entry in result.provenance.to_list(result.arg_names):
            routes = "; ".join(
                f"{path} -> {', '.join(to) or 'nowhere'}"
                for path, to in entry.items()
                if path not in ("element", "value_from")
            )
            lines.append(
                f"  provenance out{entry['element'] or ''}: value from {', '.join(entry['value_from']) or 'no input'}; "
                f"{routes}"
            )
    lines += [f"  note: {note.message}" for note in result.notes]
    if result.diagnosis is not None:
        lines.append(f"  {result.diagnosis.id}: {result.diagnosis.title}")
        lines += [f"    fix: {fix}" for fix in result.diagnosis.fixes]
    return "\n".join(lines)
