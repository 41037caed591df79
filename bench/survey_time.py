"""Where a survey's time went, from its report: the functions' seconds summed, by phase, the
timeouts, the median and the slowest functions. `make survey` appends it to reports/survey/TIME.md.

    python bench/survey_time.py [reports/survey/survey.json]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from gradaudit.model.found import HANGS_PER_ARGUMENT

SLOWEST = 10


def summary(document: dict) -> list[str]:
    functions = document["functions"]
    seconds = [f.get("seconds", 0.0) for f in functions]
    phases: dict[str, float] = {}
    for function in functions:
        for phase, spent in function.get("phases", {}).items():
            phases[phase] = phases.get(phase, 0.0) + spent
    by_phase = ", ".join(f"{phase} {spent:,.0f} s" for phase, spent in phases.items())
    recorded = all("timeouts" in f for f in functions)
    timeouts = f"{sum(f['timeouts'] for f in functions)} audits timed out" if recorded else "timeouts not recorded"
    left = {f["name"]: sum(f["not_audited"].values()) for f in functions if f.get("not_audited")}
    if left:
        timeouts += (
            f"; {sum(left.values())} drawn scenarios of {len(left)} functions not audited, further out than "
            f"{HANGS_PER_ARGUMENT} that timed out ("
            + ", ".join(f"`{name}` {n}" for name, n in sorted(left.items(), key=lambda i: -i[1]))
            + ")"
        )
    lines = [
        f"The {len(functions)} functions' times sum to {sum(seconds):,.0f} s ({by_phase or 'phases not recorded'}); "
        f"median {statistics.median(seconds) if seconds else 0:.1f} s; {timeouts}.",
        "",
        f"The {SLOWEST} slowest:",
        "",
    ]
    for function in sorted(functions, key=lambda f: -f.get("seconds", 0.0))[:SLOWEST]:
        parts = [f"{phase} {spent:.0f} s" for phase, spent in function.get("phases", {}).items()]
        if "timeouts" in function:
            parts.append(f"{function['timeouts']} timed out")
        if function.get("not_audited"):
            parts.append(f"{sum(function['not_audited'].values())} not audited")
        parts.append(f"{len(function['kinds'])} kinds")
        lines.append(f"- `{function['name']}` {function.get('seconds', 0.0):.0f} s ({', '.join(parts)})")
    return lines


def main(path: str = "reports/survey/survey.json") -> int:
    print("\n".join(summary(json.loads(Path(path).read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
