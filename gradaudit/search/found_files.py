"""What a search found, written as scenario files: numbered per space, refusing to replace files it did not write."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from gradaudit.model.found import SearchOutcome
from gradaudit.search.drawing import scenario_text
from gradaudit.search.explore import SHRINK_COST, TIMED_OUT_COST
from gradaudit.search.spaces import SearchSpace


def database_folder(space_path: Path, rule: str, storage: Path) -> Path:
    """Where hypothesis keeps this space's examples: one folder per space file content and rule."""
    digest = hashlib.sha256(space_path.read_bytes() + rule.encode()).hexdigest()[:16]
    return storage / "examples" / digest


FOUND_HEADER = "# Found by `gradaudit "
"""How a file written by a search or a survey begins (`how` is the command, in backquotes)."""


def numbered(out: Path, name: str, suffix: str = ".yaml") -> list[Path]:
    """The files a search of space `name` writes in `out`: `<name>-<n>.yaml` (and a survey's plain-JAX
    scripts beside them, `<name>-<n>.py`)."""
    pattern = re.compile(re.escape(name) + r"-[0-9]+" + re.escape(suffix))
    return [path for path in out.glob(f"{name}-*{suffix}") if pattern.fullmatch(path.name)]


def foreign_files(out: Path, name: str, scripts: bool = False) -> list[Path]:
    """Files in `out` with the names a search of `name` writes that no search wrote: never overwritten.
    With `scripts`, also any `<name>-<n>.py` not beside a scenario file a search wrote (a survey
    writes its scripts only there)."""
    ours = {path for path in numbered(out, name) if _written_by_us(path)}
    foreign = [path for path in numbered(out, name) if path not in ours]
    if scripts:
        foreign += [path for path in numbered(out, name, ".py") if path.with_suffix(".yaml") not in ours]
    return foreign


def _written_by_us(path: Path) -> bool:
    return path.read_text(encoding="utf-8", errors="replace").startswith(FOUND_HEADER)


def write_found(outcome: SearchOutcome, space: SearchSpace, out: Path, how: str) -> list[Path]:
    """Each minimal scenario as `out/<space name>-<n>.yaml`, with a comment saying how it was found."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in numbered(out, space.name):
        # an earlier search's file of this space (foreign_files refused any other): its kinds may be gone
        stale.unlink()
    home = Path(space.file).parent.resolve()
    modules = os.path.relpath(home, out.resolve()) if space.fn and home != out.resolve() else None
    written = []
    for number, found in enumerate(outcome.found, 1):
        name = f"{space.name}-{number}"
        entry = {**found.entry, "name": name}
        status = found.result.status
        if found.swept:
            shrunk = "as the edge sweep drew it: the plainest case with one edge changed"
        elif found.shrunk and found.spent:
            shrunk = (
                f"shrunk by hypothesis until what it may spend ({SHRINK_COST}: an audit counts 1, or "
                f"{TIMED_OUT_COST} for a kind that timed out; any other kind's first audit that timed out spends the "
                "rest) was spent, perhaps short of minimal"
            )
        elif found.shrunk:
            shrunk = "shrunk by hypothesis to this minimal scenario"
        else:
            shrunk = "not shrunk (hypothesis did not meet it again)"
        lines = [f"# Found by {how}", f"# and {shrunk}.", f"# Status: {status}. Findings:"]
        lines += [f"#   {f.fingerprint}: {f.message}" for f in found.result.findings]
        path = out / f"{name}.yaml"
        path.write_text(scenario_text(entry, "\n".join(lines) + "\n", modules), encoding="utf-8")
        written.append(path)
    return written
