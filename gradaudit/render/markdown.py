"""The diagnosis catalog as a Markdown page (docs/diagnoses.md is this page, regenerated with
`gradaudit explain --markdown`; a test keeps the two equal, so the docs follow the code)."""

from __future__ import annotations

from collections.abc import Sequence

from gradaudit.judging.diagnoses import Diagnosis


def diagnoses_page(catalog: Sequence[Diagnosis]) -> str:
    """Every diagnosis: its id and title, what must be seen for it, what it means, fixes and references."""
    lines = [
        "# Diagnoses",
        "",
        "<!-- Generated from gradaudit/judging/diagnoses.py by `gradaudit explain --markdown > docs/diagnoses.md`; do "
        "not edit. -->",
        "",
        "A scenario with findings is matched against this catalog; the first diagnosis whose evidence it shows",
        "is named in the table, the JSON report (`diagnosis`), JUnit, SARIF (as the rule) and the HTML page.",
        "`gradaudit explain ID` prints one in the terminal.",
        "",
        "| id | title |",
        "| --- | --- |",
        *(f"| [{d.id}](#{d.id.lower()}) | {d.title} |" for d in catalog),
    ]
    for diagnosis in catalog:
        lines += ["", f"## {diagnosis.id}", "", f"**{diagnosis.title}**", ""]
        if diagnosis.evidence:
            lines += [f"*Matches when:* {diagnosis.evidence}", ""]
        lines += [diagnosis.explanation, ""]
        lines += [f"{n}. {fix}" for n, fix in enumerate(diagnosis.fixes, 1)]
        if diagnosis.references:
            lines += [
                "",
                "See: " + ", ".join(f"<{r}>" if r.startswith("http") else f"`{r}`" for r in diagnosis.references),
            ]
    return "\n".join(lines) + "\n"
