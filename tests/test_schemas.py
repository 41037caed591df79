"""The JSON Schemas shipped in gradaudit/schemas/ hold for what gradaudit writes: the reports
committed under reports/, fresh ones from the CLI (run, merge, compare, survey), and hand-made ones
that reach what a catalog run does not (an interrupted scenario, a path that does not apply,
Hessians, non-finite numbers, input errors, a swept survey kind); and they refuse what gradaudit
never writes, so they cannot be vacuous."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from functools import cache

import numpy as np
import pytest

from gradaudit.render.schemas import NAMES, schema
from tests.helpers import ROOT, make_scenario, run_cli

jsonschema = pytest.importorskip("jsonschema", reason="the test extra: pip install -e '.[test]'")
pytest.importorskip("referencing", reason="jsonschema >= 4.18 (the test extra) resolves $ref through referencing")
from referencing import Registry  # noqa: E402 - there once the test extra is
from referencing.jsonschema import DRAFT202012  # noqa: E402

REPRESENTATIVE = str(ROOT / "scenarios" / "select_n" / "representative.yaml")
REGISTRY = Registry().with_resources((s["$id"], DRAFT202012.create_resource(s)) for s in map(schema, NAMES.values()))
"""The three schemas by `$id`: compare-1 refers to report-1 for each rule's report."""


@cache
def validator(format_name: str):
    return jsonschema.Draft202012Validator(schema(format_name), registry=REGISTRY)


def errors(document: dict, format_name: str | None = None) -> list[str]:
    """What the schema of `format_name` (default: the one its `schema` field names) finds wrong
    with `document`, one line each."""
    return [
        f"/{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}"
        for e in validator(format_name or document["schema"]).iter_errors(document)
    ]


def _committed() -> list:
    found = []
    for path in sorted(ROOT.glob("reports/**/*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(document, dict) and document.get("schema") in NAMES:
            name = path.relative_to(ROOT).as_posix()
            found.append(pytest.param(name, id=name))
    return found


COMMITTED = _committed()


@cache
def committed(name: str) -> dict:
    return json.loads((ROOT / name).read_text(encoding="utf-8"))


@cache
def committed_errors(name: str) -> list[str]:
    return errors(committed(name))


def test_each_schema_is_valid_draft_2020_12_and_names_its_format():
    for format_name, name in NAMES.items():
        document = schema(name)
        jsonschema.Draft202012Validator.check_schema(document)
        assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert document["$id"] == f"https://gradaudit.dev/schemas/{name}.schema.json"
        assert document["title"] and document["description"]
        assert document["properties"]["schema"]["const"] == format_name
        assert schema(format_name) == document
    # The survey's schema stands alone (its own copy of the environment); the copy must not drift.
    assert schema("survey-1")["$defs"]["environment"] == schema("report-1")["$defs"]["environment"]
    assert schema("survey-1")["$defs"]["deviceName"] == schema("report-1")["$defs"]["deviceName"]
    with pytest.raises(ValueError, match="no schema named"):
        schema("gradaudit.diff/1")


def test_the_schemas_ship_in_the_package_and_load_without_jax(tmp_path):
    assert '"schemas/*.json"' in next(
        line for line in (ROOT / "pyproject.toml").read_text().splitlines() if line.startswith("gradaudit = [")
    )
    code = (
        "import sys; sys.modules['jax'] = None; sys.modules['jaxlib'] = None\n"
        "from gradaudit.render.schemas import NAMES, schema\n"
        "print(sorted(schema(n)['title'] for n in NAMES.values()))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gradaudit.survey/1" in proc.stdout


def test_the_committed_reports_include_each_format():
    formats = {committed(param.values[0])["schema"] for param in COMMITTED if not param.marks}
    assert formats == set(NAMES)


@pytest.mark.parametrize("name", COMMITTED)
def test_a_committed_report_validates(name):
    assert committed_errors(name) == []


# -- fresh reports from the CLI ------------------------------------------------------------------


def test_a_fresh_run_report_and_its_merge_validate(tmp_path):
    result = run_cli("run", str(ROOT / "scenarios" / "select_n"), "--json", str(tmp_path / "r.json"), "-q")
    assert result.exit_code in (0, 1), result.stdout
    document = json.loads((tmp_path / "r.json").read_text())
    assert errors(document) == []
    halves = (document["results"][:8], document["results"][8:])
    for number, half in enumerate(halves, 1):
        (tmp_path / f"s{number}.json").write_text(json.dumps({**document, "results": half}))
    merged = run_cli("merge", str(tmp_path / "s1.json"), str(tmp_path / "s2.json"), "-o", str(tmp_path / "m.json"))
    assert merged.exit_code == result.exit_code, merged.stderr
    document = json.loads((tmp_path / "m.json").read_text())
    assert "merged_from" in document and errors(document) == []


def test_a_fresh_compare_report_validates(tmp_path):
    result = run_cli(
        "compare",
        REPRESENTATIVE,
        "--rules",
        "legacy",
        "fixed",
        "--json",
        str(tmp_path / "c.json"),
        "--json-detail",
        "full",
    )
    assert result.exit_code == 0, result.stdout
    document = json.loads((tmp_path / "c.json").read_text())
    assert document["schema"] == "gradaudit.compare/1" and errors(document) == []


def test_a_fresh_survey_report_validates(tmp_path):
    result = run_cli(
        "survey", "jax.numpy.sin", "--budget", "2", "--out", str(tmp_path / "f"), "--json", str(tmp_path / "s.json")
    )
    assert result.exit_code in (0, 1), result.stdout
    document = json.loads((tmp_path / "s.json").read_text())
    assert [f["name"] for f in document["functions"]] == ["numpy.sin"] and errors(document) == []


# -- hand-made results: what a catalog run does not reach ----------------------------------------

ENVIRONMENT = {
    "jax": "0.10.2",
    "jaxlib": "0.10.2",
    "python": "3.11.7",
    "backend": "cpu",
    "devices": [
        {"platform": "cpu", "kind": "cpu", "id": 0, "name": "cpu:0"},
        {"platform": "cpu", "kind": "cpu", "id": 1, "name": "cpu:1"},
    ],
    "rule": "legacy",
    "x64": False,
}


def _arrays(*values) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(v, dtype=np.float32) for v in values)


def _handmade():
    """A report with every branch the format has: a mismatch with each kind of path (numbers,
    Hessians, an error, one that does not apply, one on a further device), non-finite numbers, a
    function scenario with every optional field, an interrupted scenario and an input error."""
    from gradaudit.judging.diagnoses import by_id
    from gradaudit.model.errors import InputError, Location
    from gradaudit.model.findings import (
        CONSISTENT,
        DISAGREEMENT,
        INTERRUPTED,
        MISMATCH,
        RAISED,
        Finding,
        Note,
        Provenance,
    )
    from gradaudit.model.paths import PathError, PathResult, block_names
    from gradaudit.model.results import AuditReport, Outcome, ScenarioResult
    from gradaudit.model.scenario import Expectation, FunctionCall, InputSpec, Scenario, Tolerance

    nan, inf = float("nan"), float("inf")
    jacobians = _arrays([[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.0], [0.0, -0.0]])
    names = ("case 0", "case 1")
    paths = {
        "value": PathResult("value", _arrays([nan, 1.5]), device="cpu:0", binding="constant"),
        "jacfwd": PathResult("jacfwd", jacobians, device="cpu:0", binding="constant"),
        "jacrev": PathResult("jacrev", jacobians, device="cpu:0", binding="constant"),
        "jit_jacfwd": PathResult(
            "jit_jacfwd",
            None,
            error=PathError("IndexError", "tuple index out of range", "lax.py:1 in f", "mine.py:3 in g"),
            device="cpu:0",
            binding="constant",
        ),
        "jit_jacrev": PathResult(
            "jit_jacrev",
            None,
            not_applicable="jit cannot compile Python control flow on a traced value",
            device="cpu:0",
            binding="constant",
        ),
        "finite_difference": PathResult(
            "finite_difference",
            _arrays([[inf, 0.0], [0.0, -inf]], [[nan, 0.0], [0.0, 0.0]]),
            device="cpu:0",
            binding="constant",
            engine="literal",
        ),
        "jit_jacfwd_jacrev": PathResult(
            "jit_jacfwd_jacrev",
            _arrays(*[np.zeros((2, 2, 2))] * len(block_names(names, 2))),
            device="cpu:0",
            binding="constant",
        ),
        "jacrev@cpu:1": PathResult(
            "jacrev@cpu:1",
            _arrays([[1.0, 0.0], [0.0, 1.0]], [[0.25, 0.0], [0.0, 0.0]]),
            device="cpu:1",
            binding="constant",
        ),
    }
    disagreement = Finding(
        kind=DISAGREEMENT,
        paths=("jacfwd", "finite_difference"),
        message="jacfwd disagrees with finite differences",
        count=1,
        of=8,
        location="d out[0]/d case 0[0]",
        values={"jacfwd": 1.0, "finite_difference": inf},
        wrong="x-1",
        entries="1/8#0123abcd",
    )
    raised = Finding(
        kind=RAISED, paths=("jit_jacfwd",), message="jit(jacfwd) raised IndexError", error_type="IndexError"
    )
    mismatch = ScenarioResult(
        scenario=make_scenario(
            value=1, shape=(2,), name="handmade-select_n", order=2, values=[[1.0, 2.0], [3.0, float("nan")]]
        ),
        arg_names=names,
        inputs=_arrays([nan, 1.0], [inf, 2.0]),
        status=MISMATCH,
        paths=paths,
        findings=(disagreement, raised, disagreement),
        provenance=Provenance(
            output_shape=(2,), value_from=((1,), (0, 1)), routes={"jacfwd": ((1,), (0, 1)), "jacrev": ((), (0,))}
        ),
        seconds=0.25,
        notes=(
            Note(
                "kink",
                paths=("finite_difference",),
                count=1,
                of=4,
                location="d out[0]/d case 0[0]",
                values={"left": 0.0, "right": nan},
            ),
        ),
        diagnosis=by_id("GA001"),
        outcome=Outcome(
            passed=False, reason="1 new finding", new=(raised.fingerprint,), known=(disagreement.fingerprint,)
        ),
        method="group",
    )
    function = Scenario(
        name="handmade-function",
        source=Location("f.yaml", 3, 5),
        target=FunctionCall(
            fn="mine:f",
            root=".",
            inputs=(
                InputSpec("float32", value=[1.0, nan]),
                InputSpec("int32", shape=(2,), fill="arange"),
                InputSpec("float32", shape=(3,), fill="normal", seed=2, name="w"),
            ),
            kwargs=(("axis", 0), ("mode", "clip"), ("shape", (1, 2))),
        ),
        tolerance=Tolerance(rtol=1e-3, atol=1e-5),
        eps=1e-3,
        suite="mine",
        expect=Expectation("error", "IndexError"),
        modes=("rev",),
        reduction=3,
    )
    consistent = ScenarioResult(
        scenario=function,
        arg_names=("x0", "w"),
        inputs=_arrays([1.0, nan], [0.1, 0.2, 0.3]),
        status=CONSISTENT,
        paths={
            "value": PathResult("value", _arrays(2.0), binding="traced"),
            "jacrev": PathResult("jacrev", _arrays([1.0, 0.0], [0.0, 0.0, 0.0]), binding="traced", engine="bundle"),
            "jacrev:const": PathResult("jacrev:const", _arrays([1.0, 0.0], [0.0, 0.0, 0.0]), binding="constant"),
        },
        findings=(),
        provenance=None,
        seconds=0.5,
    )
    interrupted = ScenarioResult(
        scenario=make_scenario(name="handmade-interrupted"),
        arg_names=(),
        inputs=(),
        status=INTERRUPTED,
        paths={},
        findings=(),
        provenance=None,
        seconds=0.0,
        outcome=Outcome(passed=False, reason="interrupted before it finished"),
    )
    return AuditReport(
        environment=ENVIRONMENT,
        results=(mismatch, consistent, interrupted),
        errors=(InputError(Location("bad.yaml", 2, 7), "unknown key 'foo'"),),
        files=("test.yaml", "f.yaml"),
        resolved=(("gone", "routing:jacrev|nowhere|1/1#00000000"),),
        baseline="baseline.json",
        warnings=("cannot use the compilation cache folder /nowhere",),
    )


@pytest.mark.parametrize("detail", ["findings", "full"])
def test_a_report_with_every_branch_validates(detail):
    from gradaudit.model.results import RuleComparison
    from gradaudit.render.json_report import comparison_to_json, dump, report_to_json

    report = _handmade()
    document = json.loads(dump(report_to_json(report, detail)))
    assert errors(document) == []
    text = json.dumps(document)
    assert document["summary"]["interrupted"] == 1 and '"nan"' in text and '"-inf"' in text
    paths = document["results"][0]["paths"]
    assert {p["status"] for p in paths.values()} == {"ok", "error", "not_applicable"} and "hessian" in paths[
        "jit_jacfwd_jacrev"
    ]
    assert ("equals" in paths["jacrev"]) == (detail == "findings")
    assert "binding" not in document["results"][2] and document["results"][1]["outcome"] is None
    comparison = json.loads(
        dump(comparison_to_json(RuleComparison(rules=("legacy", "fixed"), reports=(report, report)), detail))
    )
    assert errors(comparison) == []


def test_a_survey_with_a_swept_kind_and_a_problem_validates(tmp_path):
    from gradaudit.model.found import Found, SearchOutcome
    from gradaudit.search import scenario_text
    from gradaudit.survey.explore import FunctionSurvey, report_document, spaces

    mismatch = _handmade().results[0]
    file = tmp_path / "numpy.sin-1.yaml"
    entry = {"name": "numpy.sin-1", "fn": "jax.numpy:sin", "inputs": [{"dtype": "float32", "value": 0.0}]}
    file.write_text(scenario_text(entry))
    found = Found(
        kind=("mismatch", ("disagreement:finite_difference+jacfwd", "raised:jit_jacfwd:IndexError")),
        entry={},
        result=mismatch,
        shrunk=False,
        swept=True,
    )
    surveyed = [
        FunctionSurvey(
            spaces(["jax.numpy.sin"])[0],
            SearchOutcome(
                audited=3, skipped=Counter({"the function rejects these inputs: ValueError": 2}), found=[found]
            ),
            [file],
        ),
        FunctionSurvey(
            spaces(["jax.numpy.cos"])[0],
            SearchOutcome(problem="no valid scenario could be drawn from this space (none could be drawn)"),
            [],
        ),
    ]
    document = json.loads(json.dumps(report_document(surveyed, ENVIRONMENT, 2, -1)))
    assert document["functions"][0]["kinds"][0]["swept"] is True and document["functions"][0]["worst"] == "mismatch"
    assert document["functions"][0]["kinds"][0]["regime"] == "an exact zero" and len(document["defects"]) == 1
    assert errors(document) == []


# -- what gradaudit never writes is refused ------------------------------------------------------


def _first_result(document: dict) -> dict:
    return document["results"][0]


def _path_of(document: dict, status: str) -> dict:
    return next(p for r in document["results"] for p in r["paths"].values() if p["status"] == status)


def _array_leaf(document: dict) -> list:
    """An innermost list of numbers in some result's inputs."""
    value = next(v for r in document["results"] for v in r["inputs"].values() if isinstance(v, list) and v)
    while isinstance(value[0], list):
        value = value[0]
    return value


REPORT = "reports/select_n-jax-0.10.2-cpu.json"
COMPARE = "reports/select_n-compare-legacy-fixed-jax-0.10.2-cpu.json"
SURVEY = "reports/survey/survey.json"


def _first_finding(document: dict) -> dict:
    return next(r for r in document["results"] if r["findings"])["findings"][0]


def _first_kind(document: dict) -> dict:
    return next(kind for f in document["functions"] for kind in f["kinds"])


REFUSED = {
    "an unknown status": (REPORT, lambda d: _first_result(d).update(status="flaky")),
    "a missing required key": (REPORT, lambda d: d.pop("summary")),
    "a result without its outcome": (REPORT, lambda d: _first_result(d).pop("outcome")),
    "a negative count": (REPORT, lambda d: d["summary"].update(error=-1)),
    "a count that is not an integer": (REPORT, lambda d: d["gate"].update(new=1.5)),
    "an unknown top-level key": (REPORT, lambda d: d.update(extra=1)),
    "another schema version": (REPORT, lambda d: d.update(schema="gradaudit.report/1")),
    "a finding without its class": (REPORT, lambda d: _first_finding(d).pop("class")),
    "an unknown finding class": (REPORT, lambda d: _first_finding(d).update({"class": "suspicious"})),
    "another fingerprint form": (REPORT, lambda d: d.update(fingerprints=1)),
    "an unknown rule": (REPORT, lambda d: d["environment"].update(rule="newest")),
    "an ok path with an error": (
        REPORT,
        lambda d: _path_of(d, "ok").update(error={"type": "E", "message": "", "where": "", "user_where": ""}),
    ),
    "an error path without its error": (REPORT, lambda d: _path_of(d, "error").pop("error")),
    "an unknown path": (REPORT, lambda d: _first_result(d)["paths"].update(jacobian={"status": "ok"})),
    "Python's spelling of NaN": (REPORT, lambda d: _array_leaf(d).__setitem__(0, "NaN")),
    "an unknown finding kind": (REPORT, lambda d: _first_finding(d).update(kind="warning")),
    "an unknown scenario kind": (REPORT, lambda d: _first_result(d)["scenario"].update(kind="grid")),
    "a compared rule that does not exist": (COMPARE, lambda d: d["rules"].append("newest")),
    "a rule's report without results": (COMPARE, lambda d: d["reports"]["legacy"].pop("results")),
    "a compared status outside the enum": (COMPARE, lambda d: d["changes"][0]["status"].update(fixed="ok")),
    "a survey kind without shrunk": (SURVEY, lambda d: _first_kind(d).pop("shrunk")),
    "a consistent survey kind": (SURVEY, lambda d: _first_kind(d).update(status="consistent")),
    "a swept that is not a boolean": (SURVEY, lambda d: _first_kind(d).update(swept="yes")),
    "a survey budget of zero": (SURVEY, lambda d: d.update(budget=0)),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_the_schemas_refuse_what_gradaudit_never_writes(case):
    name, damage = REFUSED[case]
    assert committed_errors(name) == []
    document = copy.deepcopy(committed(name))
    format_name = document["schema"]
    damage(document)
    assert errors(document, format_name), f"{case} was accepted"
