"""The layout keeps its promises: imports go one way between the parts, and what needs no JAX imports none."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap

import pytest

from gradaudit.model.scenario import TARGET_KINDS
from tests.helpers import ROOT, write_yaml

ALLOWED: dict[str, set[str]] = {
    "model": set(),
    "supported": set(),
    "collector": set(),
    "function_caches": set(),
    "sources": {"model"},
    "jaxenv": {"model", "supported"},
    "numerics": {"function_caches"},
    "targets": {"model", "sources", "numerics", "function_caches", "jaxenv"},
    "limits": {"model", "targets"},
    "engines": {"model", "sources", "targets", "numerics", "jaxenv", "limits", "function_caches"},
    "judging": {"model", "sources", "numerics"},
    "diff": {"model", "sources"},
    "merge": {"model", "sources"},
    "search": {"model", "sources", "limits"},
    "survey": {"model", "sources", "jaxenv", "search", "merge"},
    "screening": {"model", "engines", "judging"},
    "refereeing": {"model", "jaxenv", "targets", "engines", "judging"},
    "worker_starts": {"jaxenv"},
    "isolation": {"model", "targets", "engines", "jaxenv", "judging", "screening", "refereeing", "worker_starts"},
    "service": {
        "model",
        "collector",
        "sources",
        "jaxenv",
        "limits",
        "engines",
        "judging",
        "isolation",
        "screening",
        "refereeing",
    },
    "render": {"model", "numerics", "judging", "diff"},
    "api": {"model", "jaxenv", "numerics", "targets", "service", "render", "function_caches"},
    "pytest_plugin": {"model", "sources", "service", "api", "render"},
    "cli": {
        "model",
        "supported",
        "collector",
        "sources",
        "jaxenv",
        "judging",
        "service",
        "search",
        "survey",
        "render",
        "diff",
        "merge",
    },
}
"""What each part of gradaudit may import (beside itself): lower layers only, so data flows one way."""


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "gradaudit"


def _imports(tree: ast.AST) -> list[str]:
    """Modules of gradaudit a file imports at run time (imports under `if TYPE_CHECKING:` only name types)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gradaudit."):
            found.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.module == "gradaudit":
            found += [f"gradaudit.{alias.name}" for alias in node.names]
    return found


def test_imports_go_one_way_between_the_parts():
    package = ROOT / "gradaudit"
    wrong = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        part = _part(module)
        if part not in ALLOWED:
            assert part in ("__init__", "__main__"), f"{path}: a new part of gradaudit needs its place in ALLOWED"
            continue
        for imported in _imports(ast.parse(path.read_text())):
            other = _part(imported)
            if other != part and other not in ALLOWED[part]:
                wrong.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert not wrong, "\n".join(wrong)


def test_no_module_outside_targets_tells_kinds_of_scenario_apart_by_name():
    """Each kind answers its own questions (model/scenario.py): a comparison with a kind's name
    elsewhere is a branch a new kind would have to find."""
    kinds = "|".join(kind.kind for kind in TARGET_KINDS)
    compared = re.compile(rf"(==|!=) ?['\"]({kinds})['\"]|['\"]({kinds})['\"] ?(==|!=)")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "gradaudit").rglob("*.py"))
        if "targets" not in path.relative_to(ROOT).parts
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if compared.search(line)
    ]
    assert not found, "\n".join(found)


def test_every_test_file_mirrors_a_module_or_is_a_story_the_architecture_doc_lists():
    table = (ROOT / "docs" / "architecture.md").read_text().split("## Tests", 1)[1].split("\n## ", 1)[0]
    stories = set(re.findall(r"^\| (test_\w+\.py) \|", table, re.MULTILINE))
    modules = {p.stem for p in (ROOT / "gradaudit").rglob("*.py")} | {p.name for p in (ROOT / "gradaudit").iterdir()}
    files = {p.name for p in (ROOT / "tests").glob("test_*.py")}
    unplaced = sorted(
        f for f in files if f not in stories and f.removeprefix("test_").removesuffix(".py") not in modules
    )
    assert not unplaced, f"neither a module's tests nor a story in docs/architecture.md: {unplaced}"
    assert not stories - files, f"docs/architecture.md lists stories that are gone: {sorted(stories - files)}"


BLOCK_JAX = "import sys; sys.modules['jax'] = None; sys.modules['jaxlib'] = None\n"
"""Run first: any later `import jax` fails, as if JAX were not installed."""


def _without_jax(code: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_JAX + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        timeout=120,
    )


def test_import_and_the_commands_that_audit_nothing_need_no_jax(tmp_path):
    report = ROOT / "reports" / "select_n-jax-0.10.2-cpu.json"
    proc = _without_jax(
        f"""
        import gradaudit
        assert gradaudit.__version__ and gradaudit.Options().rule == "installed"
        from gradaudit.cli import main
        for args in (["--help"], ["run", "--help"], ["explain"], ["explain", "GA002"], \
["diff", {str(report)!r}, {str(report)!r}, "-q"],
                     ["merge", {str(report)!r}, "-o", "merged.json"], \
["list", {str(ROOT / "scenarios" / "select_n")!r}]):
            try:
                main(args)
            except SystemExit as exc:
                assert exc.code in (0, 1, None), (args, exc.code)  # 1: the merged report has findings
        print("no jax needed")
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.rstrip().endswith("no jax needed")
    assert "merged 1 reports: 17 scenarios" in proc.stderr


@pytest.mark.parametrize("flag", [None, "--gradaudit"])
def test_a_pytest_session_imports_jax_only_when_it_audits(tmp_path, flag):
    write_yaml(tmp_path, "test_plain.py", "def test_nothing():\n    assert 1 + 1 == 2\n")
    write_yaml(
        tmp_path,
        "s.yaml",
        "scenarios:\n  - {name: s, selector: {dtype: int32, value: 1}, cases: 2, shape: [], dtype: float32}\n",
    )
    args = ["-q", "-p", "no:cacheprovider", "test_plain.py"] + ([flag, "s.yaml"] if flag else [])
    proc = _without_jax(f"import pytest; sys.exit(pytest.main({args!r}))", tmp_path)
    if flag is None:
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert "1 passed" in proc.stdout
    else:
        assert proc.returncode != 0 and "jax" in proc.stdout  # auditing needs JAX, and says so


def test_the_public_names_are_documented_and_typed():
    import importlib.resources
    import inspect

    import gradaudit

    for name in gradaudit.__all__[1:]:
        value = getattr(gradaudit, name)
        doc = inspect.getdoc(value) or ""
        assert doc, f"gradaudit.{name} has no docstring"
        if inspect.isfunction(value):
            assert "Args:" in doc, f"gradaudit.{name}'s docstring says nothing of its arguments"
            returns = inspect.signature(value).return_annotation
            assert "Returns:" in doc or returns in (None, "None"), (
                f"gradaudit.{name}'s docstring says nothing of what it returns"
            )
    assert (importlib.resources.files("gradaudit") / "py.typed").is_file()
    assert '"py.typed"' in (ROOT / "pyproject.toml").read_text().partition("[tool.setuptools.package-data]")[2]


def test_the_architecture_docs_import_table_is_the_one_this_test_enforces():
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text.split("| part | may import |\n| --- | --- |\n", 1)[1].split("\n\n", 1)[0]
    documented: dict[str, set[str]] = {}
    for row in table.splitlines():
        parts, allowed = (cell.strip() for cell in row.strip("|").split("|"))
        names = {re.sub(r"\s*\(.*?\)", "", name).strip() for name in allowed.split(",")}
        for part in (p.strip() for p in parts.split(",")):
            documented[part] = set() if allowed == "nothing of gradaudit" else names
    everything_below = documented.pop("cli") == {"all of the above"}
    assert everything_below and documented == {part: set(allowed) for part, allowed in ALLOWED.items() if part != "cli"}
