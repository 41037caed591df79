"""Check a survey's defects as a reader of reports/survey/DEFECTS.md would: every defect's plainest
reproducer scenario, run with `gradaudit run`, shows the defect again (same class and kind of
finding), and every plain-JAX script runs and prints its numbers. Writes reports/survey/CHECK.md.

    python bench/survey_check.py [reports/survey/survey.json]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gradaudit.survey.defects import parse_fingerprint
from gradaudit.survey.explore import SURVEY_TIMEOUT

NUMBER = re.compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?|nan|inf", re.IGNORECASE)
SCRIPT_SECONDS = 300
RUN_TIMEOUT = 2 * SURVEY_TIMEOUT
"""Seconds a reproducer may take: twice a survey draw's, so a defect that timed out in the survey
times out again (rather than after `run`'s default ten minutes)."""


def reproduced(report: dict) -> list[tuple[dict, str]]:
    """Each defect with what `gradaudit run` of its reproducer said ('' when it shows the defect again)."""
    defects = report["defects"]
    files = sorted({d["reproducer"] for d in defects})
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run.json"
        rule = report["environment"].get("rule", "installed")
        command = [sys.executable, "-m", "gradaudit", "run", *files, "--rule", rule, "--json", str(out), "--exit-zero"]
        command += ["--timeout", str(RUN_TIMEOUT)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            return [(d, f"gradaudit run exited {done.returncode}: {done.stderr.strip()[-300:]}") for d in defects]
        results = {
            str(Path(r["source"].rsplit(":", 1)[0]).resolve()): r for r in json.loads(out.read_text())["results"]
        }
    verdicts = []
    for defect in defects:
        result = results.get(str(Path(defect["reproducer"]).resolve()))
        if result is None:
            verdicts.append((defect, "no result for its file"))
            continue
        seen = {parse_fingerprint(f["fingerprint"])[:2] for f in result.get("findings", [])}
        wanted = (defect["class"], defect["kind"])
        verdicts.append((defect, "" if wanted in seen else f"{result['status']}, findings {sorted(seen)}"))
    return verdicts


def script_output(path: str) -> str:
    """'' when the script ran and printed numbers; otherwise what went wrong."""
    try:
        done = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=SCRIPT_SECONDS)
    except subprocess.TimeoutExpired:
        return f"still running after {SCRIPT_SECONDS} s"
    if done.returncode != 0:
        return f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}"
    return "" if NUMBER.search(done.stdout) else "printed no numbers"


def main(path: str = "reports/survey/survey.json") -> int:
    report = json.loads(Path(path).read_text())
    verdicts = reproduced(report)
    scripts = [d["script"] for d in report["defects"] if d.get("script")]
    with ThreadPoolExecutor(2) as pool:
        outputs = dict(zip(scripts, pool.map(script_output, scripts), strict=True))
    bad_runs = [(d, why) for d, why in verdicts if why]
    bad_scripts = [(s, why) for s, why in outputs.items() if why]
    lines = [
        "# The survey's defects, checked",
        "",
        f"`python bench/survey_check.py {path}`: {len(verdicts) - len(bad_runs)} of {len(verdicts)} defects' "
        "reproducers show their defect again under `gradaudit run`; "
        f"{len(scripts) - len(bad_scripts)} of {len(scripts)} plain-JAX scripts run and print their numbers "
        f"({len(report['defects']) - len(scripts)} defects have no script: nothing a script can show).",
        "",
    ]
    lines += [f"- reproducer {d['reproducer']} (defect {d['rank']}): {why}" for d, why in bad_runs]
    lines += [f"- script {s}: {why}" for s, why in bad_scripts]
    target = Path(path).with_name("CHECK.md")
    target.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if bad_runs or bad_scripts else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
