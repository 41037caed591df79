"""The JSON Schemas (draft 2020-12) of the report formats gradaudit writes, as shipped in the package
(`gradaudit/schemas/*.schema.json`).

Read through importlib.resources, so they are found wherever gradaudit is installed (a wheel, a zip,
an editable checkout); plain JSON files and no JAX import, so a tool or a test can take them
without starting JAX, and validate with any JSON Schema implementation (gradaudit needs none).
"""

from __future__ import annotations

import json
from importlib import resources

NAMES: dict[str, str] = {
    "gradaudit.report/1": "report-1",
    "gradaudit.report/2": "report-2",
    "gradaudit.compare/1": "compare-1",
    "gradaudit.survey/1": "survey-1",
}
"""A report's `schema` field -> its schema's name (`report-1.schema.json`)."""


def schema(name: str) -> dict:
    """The schema `name`: `report-2` (`report-1`: before classes), `compare-1` or `survey-1`, or a
    report's `schema` field (`gradaudit.report/1`). A fresh dict each call. ValueError for any other name."""
    short = NAMES.get(name, name)
    if short not in NAMES.values():
        raise ValueError(f"no schema named {name!r} (known: {', '.join(NAMES.values())}, or {', '.join(NAMES)})")
    text = resources.files("gradaudit").joinpath("schemas").joinpath(f"{short}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)
