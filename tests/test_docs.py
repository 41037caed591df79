"""The docs' examples run, so the docs cannot rot: every YAML block parses (scenario and space files
load), every `gradaudit` command line names a command and options that exist, and a command whose
comment promises a summary prints it. (docs/python-api.md's Python examples run in test_pytest_use.py.)"""

from __future__ import annotations

import re
import shlex

import click
import pytest
import yaml

from gradaudit.cli import main
from tests.helpers import ROOT, run_cli

PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def _blocks(language: str) -> list[tuple[str, str]]:
    return [(page.name, body) for page in PAGES for lang, body in BLOCK.findall(page.read_text()) if lang == language]


def _command_lines() -> list[tuple[str, str]]:
    """Every `gradaudit ...` command in the docs' shell and YAML blocks, GitHub expressions made plain."""
    found = []
    for page, body in _blocks("sh") + _blocks("yaml"):
        for line in body.splitlines():
            for part in re.split(r"&&|;", re.sub(r"\$\{\{[^}]*\}\}", "1", line)):
                part = part.split(" #")[0].strip().removeprefix("- run:").removeprefix("run:").strip()
                if part.startswith("gradaudit "):
                    found.append((page, part))
    return found


def test_every_yaml_block_parses_and_every_scenario_or_space_in_one_loads(tmp_path):
    from gradaudit.search import read_space
    from gradaudit.sources.scenario_files import load_text

    checked = 0
    for page, body in _blocks("yaml"):
        document = yaml.safe_load(body)
        assert document is not None, page
        if isinstance(document, dict) and "search" in document:
            (tmp_path / "space.yaml").write_text(body)
            read_space(tmp_path / "space.yaml")
            checked += 1
        elif (
            isinstance(document, dict)
            and "scenarios" in document
            or isinstance(document, list)
            and document
            and "name" in document[0]
            and "uses" not in document[0]
        ):
            text = body if isinstance(document, dict) else "scenarios:\n" + body
            _, errors = load_text(text, str(ROOT / "scenarios" / "docs-example.yaml"))
            # a user's own module (mypkg.losses) cannot be imported here: anything else is the docs' mistake
            assert all("mypkg" in e.message for e in errors), (page, [e.message for e in errors])
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize(("page", "line"), _command_lines())
def test_every_gradaudit_command_in_the_docs_exists_with_its_options(page, line):
    words = shlex.split(line)[1:]
    command = main.commands.get(words[0])
    assert command is not None, f"{page}: no command {words[0]!r} in {line!r}"
    options = {
        name
        for param in command.params
        if isinstance(param, click.Option)
        for name in (*param.opts, *param.secondary_opts)
    }
    for word in words[1:]:
        if word.startswith("-") and word != "-":
            assert word.split("=")[0] in options or word == "--rules", (
                f"{page}: {line!r}: {command.name} has no option {word}"
            )


def test_the_readme_names_make_targets_that_exist():
    makefile = (ROOT / "Makefile").read_text()
    for _, body in _blocks("sh"):
        for target in re.findall(r"^make (\w[\w-]*)", body, re.M):
            assert re.search(rf"^{target}:", makefile, re.M), target


def test_a_command_whose_comment_promises_a_summary_prints_it(monkeypatch):
    monkeypatch.chdir(ROOT)
    promised = [
        (line.split("#")[0].strip(), re.search(r"#\s*(\d+ scenarios?: \d+ \w+(?:, \d+ \w+)*)", line)[1])
        for _, body in _blocks("sh")
        for line in body.splitlines()
        if line.startswith("gradaudit ") and re.search(r"#\s*\d+ scenarios?:", line)
    ]
    assert promised
    for command, summary in promised:
        ran = run_cli(*shlex.split(command)[1:])
        assert summary in ran.stdout, (command, summary, ran.stdout[-300:])


def test_the_diagnoses_page_is_the_catalog_as_the_code_has_it():
    from gradaudit.judging.diagnoses import CATALOG
    from gradaudit.render.markdown import diagnoses_page

    assert (ROOT / "docs" / "diagnoses.md").read_text() == diagnoses_page(CATALOG), (
        "regenerate: gradaudit explain --markdown > docs/diagnoses.md"
    )
    listed = run_cli("explain", "--markdown")
    assert listed.exit_code == 0 and listed.stdout == diagnoses_page(CATALOG)
    assert all(f"## {d.id}" in listed.stdout and d.fixes[0] in listed.stdout for d in CATALOG)
