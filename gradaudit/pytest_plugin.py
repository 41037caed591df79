"""pytest plugin: `pytest --gradaudit scenarios/` collects every scenario as a test item, and the
`gradaudit` fixture audits functions from a test.

Registered through the `pytest11` entry point, so users get -k, -x, xdist and their JUnit setup
for free. Scenario files (*.yaml, *.yml) are collected with --gradaudit, or when they lie under a
folder the `gradaudit_paths` ini option names; never otherwise (a project's other YAML files are
not tests). An item passes when `gradaudit run` would pass the scenario; a finding an expectation
or baseline accepts is reported as xfailed; a failure shows the findings, provenance and
diagnosis. Items and the fixture read `[tool.gradaudit]` (tolerances, limits, rule, ...) as the
command line does. Nothing heavy (no JAX) is imported until a scenario or the fixture is used.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

YAML_SUFFIXES = (".yaml", ".yml")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradaudit", "gradient consistency audits")
    group.addoption(
        "--gradaudit", action="store_true", help="Collect gradaudit scenario files (*.yaml, *.yml) as tests."
    )
    group.addoption(
        "--gradaudit-rule",
        default=None,
        choices=("installed", "legacy", "fixed"),
        help="select_n transpose rule to audit under (default: [tool.gradaudit] rule, else installed).",
    )
    group.addoption("--gradaudit-baseline", metavar="REPORT", help="A gradaudit JSON report whose findings are known.")
    parser.addini(
        "gradaudit_paths",
        type="paths",
        default=[],
        help="Folders (or files) whose gradaudit scenario files are collected without --gradaudit.",
    )


def _collected(config: pytest.Config, file_path: Path) -> bool:
    if file_path.suffix not in YAML_SUFFIXES:
        return False
    if config.getoption("gradaudit"):
        return True
    return any(
        file_path == folder or folder in file_path.parents for folder in map(Path, config.getini("gradaudit_paths"))
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if _collected(parent.config, file_path):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def gradaudit(pytestconfig: pytest.Config):
    """An auditor bound to the session's options (`[tool.gradaudit]`, --gradaudit-rule,
    --gradaudit-baseline): `gradaudit.audit(fn, *args)`, `.assert_consistent(...)`, `.check_grads(...)`."""
    from gradaudit.api import Auditor

    options = _options(pytestconfig)
    return Auditor.from_options(options)


class ScenarioInputError(Exception):
    """A scenario file with input errors: reported as a collection error, each as file:line:col."""


class ScenarioFailed(Exception):
    """A scenario that fails the gate; carries the text to show."""


def _options(config: pytest.Config):
    """The run's Options: `[tool.gradaudit]` (tolerances, limits, rule, cache), then the plugin's flags;
    audited in this process, as pytest runs tests. JAX's compilation cache only where `cache` is
    configured: turning it on points the whole session's JAX at it, the user's own programs too."""
    from gradaudit.model.options import check, resolve
    from gradaudit.sources.config import load_config

    key = "_gradaudit_options"
    if not hasattr(config, key):
        settings, _ = load_config(Path(config.rootpath))
        given = {
            "rule": config.getoption("gradaudit_rule"),
            "baseline": config.getoption("gradaudit_baseline"),
            "jobs": 0,
        }
        options = resolve(settings, check({k: v for k, v in given.items() if v is not None}, "keyword"))
        if "cache" not in settings:  # a test session's JAX is the user's: no compilation cache unless asked
            options = replace(options, cache=None)
        setattr(config, key, options)
    return getattr(config, key)


def _shown(path: Path, invoked_in: Path) -> str:
    """A scenario file as failures name it: relative to where pytest was started, as `gradaudit run`
    names the files it is given (absolute where the file lies elsewhere)."""
    try:
        return str(path.relative_to(invoked_in))
    except ValueError:
        return str(path)


class ScenarioFile(pytest.File):
    def collect(self):
        from gradaudit.sources.scenario_files import load_paths

        loaded = load_paths([_shown(self.path, Path(self.config.invocation_params.dir))])
        if loaded.errors:
            raise ScenarioInputError("\n".join(str(error) for error in loaded.errors))
        for scenario in loaded.scenarios:
            yield ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)

    def repr_failure(self, excinfo, style=None):
        if excinfo.errisinstance(ScenarioInputError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # a collector's takes no style


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario, **kwargs):
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        from gradaudit.service import audit

        report = audit([self.scenario], _options(self.config))
        if report.errors:
            raise ScenarioInputError("\n".join(str(error) for error in report.errors))
        (result,) = report.results
        if not result.passed:
            from gradaudit.render.failure import failure_text

            raise ScenarioFailed(failure_text(result))
        if result.findings:
            assert result.outcome is not None, "audit gates every result (apply_gate)"
            pytest.xfail(result.outcome.reason)

    def repr_failure(self, excinfo, style=None):
        if excinfo.errisinstance((ScenarioFailed, ScenarioInputError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, self.scenario.source.line - 1, f"scenario {self.name}"
