"""gradaudit: ask every derivative path in JAX the same question and report where they disagree.

The public names are imported lazily: `import gradaudit` imports no JAX (a pytest session with
the plugin installed pays nothing until it audits).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gradaudit")
except PackageNotFoundError:  # a checkout used without installing it
    __version__ = "0+unknown"

_PUBLIC = {
    "AuditReport": "gradaudit.model.results",
    "ScenarioResult": "gradaudit.model.results",
    "Finding": "gradaudit.model.findings",
    "Note": "gradaudit.model.findings",
    "Status": "gradaudit.model.findings",
    "PathResult": "gradaudit.model.paths",
    "Scenario": "gradaudit.model.scenario",
    "Options": "gradaudit.model.options",
    "OptionError": "gradaudit.model.options",
    "load_paths": "gradaudit.sources.scenario_files",
    "run": "gradaudit.service",
    "audit": "gradaudit.api",
    "assert_consistent": "gradaudit.api",
    "check_grads": "gradaudit.api",
    "Audit": "gradaudit.api",
    "Auditor": "gradaudit.api",
    "GradientInconsistency": "gradaudit.api",
    "InputRejected": "gradaudit.api",
}
"""Public name -> the module that defines it (`run` is the service's `audit`)."""

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'gradaudit' has no attribute {name!r}")
    module = importlib.import_module(_PUBLIC[name])
    return getattr(module, "audit" if name == "run" else name)
