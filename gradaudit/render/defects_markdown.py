"""A survey's defects as Markdown (`gradaudit survey --defects`, `reports/survey/DEFECTS.md`): what a
JAX maintainer reads first, each defect with its plainest reproducer and its plain-JAX script."""

from __future__ import annotations

from pathlib import Path

from gradaudit.model.found import HANGS_PER_ARGUMENT


def defects_markdown(document: dict, relative_to: Path | None = None) -> str:
    """The report's defects, grouped under their severity in rank order; paths relative to `relative_to`."""
    environment = document["environment"]
    defects = document.get("defects", [])
    kinds = sum(len(f["kinds"]) for f in document["functions"])

    def where(path: str | None) -> str:
        if path is None:
            return "none (no disagreement a script can show)"
        if relative_to is not None:
            try:
                return f"`{Path(path).resolve().relative_to(relative_to.resolve())}`"
            except ValueError:
                pass
        return f"`{path}`"

    lines = [
        "# Defects found by `gradaudit survey`",
        "",
        f"JAX {environment['jax']} ({environment['backend']}), rule `{environment['rule']}`, budget "
        f"{document['budget']}, seed {document['seed']}: {len(document['functions'])} function entries, {kinds} kinds "
        f"of disagreement, {len(defects)} defects. A defect is the kinds of one function alike in class, form of the "
        "wrong value and neighbourhood of regimes, or of several functions alike in those that lower to one "
        "primitive, the one most of them share (docs/survey.md). "
        "Reproduce one with `gradaudit run FILE`, or run its script with plain JAX.",
    ]
    left = {f["name"]: sum(f["not_audited"].values()) for f in document["functions"] if f.get("not_audited")}
    if left:
        functions = f"{len(left)} function" + ("s" if len(left) > 1 else "")
        listed = ", ".join(f"{name} {count}" for name, count in sorted(left.items(), key=lambda item: -item[1]))
        lines += [
            "",
            f"Not audited: {sum(left.values())} drawn scenarios of {functions}, each further out in an "
            f'input than {HANGS_PER_ARGUMENT} audits there that timed out (docs/survey.md, "Isolation"); defects '
            f"there are not listed: {listed}.",
        ]
    heading = None
    for defect in defects:
        if defect["severity"] != heading:
            heading = defect["severity"]
            lines += ["", f"## {heading[0].upper()}{heading[1:]}", ""]
        form = f", {defect['wrong']}" if defect["wrong"] else ""
        shared = f"; shared primitives: {', '.join(defect['primitives'])}" if defect["primitives"] else ""
        lines.append(
            f"{defect['rank']}. **[{defect['class']}] {defect['kind']}** of {'+'.join(defect['paths'])}{form}, at "
            f"{defect['regime']}: {', '.join(defect['functions'])} ({_kinds(len(defect['variants']))}{shared})  "
        )
        if defect.get("message"):
            lines.append(f"   {defect['message']}  ")
        lines.append(f"   reproducer {where(defect['reproducer'])}, script {where(defect['script'])}")
    return "\n".join(lines) + "\n"


def _kinds(count: int) -> str:
    return f"{count} kind" + ("s" if count != 1 else "")
