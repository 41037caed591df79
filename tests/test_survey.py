"""gradaudit survey: JAX's differentiable surface as data, explored unaided, each kind shrunk to a file \
that reproduces."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from gradaudit.sources.user_modules import resolve
from gradaudit.survey import edges, strategy, surface, table, wrappers
from gradaudit.survey.explore import estimated_cost, shard, spaces, table_names
from gradaudit.survey.table import ROLES, SHAPES, TABLE
from tests.helpers import ROOT, run_cli, session_cache


def test_the_table_holds_600_public_functions_that_import_with_known_roles():
    public = {entry.public for entry in TABLE} - {None}
    assert len(public) >= 600
    modules = {path.rsplit(".", 1)[0] for path in public}
    assert {
        "jax.lax",
        "jax.lax.linalg",
        "jax.numpy",
        "jax.numpy.linalg",
        "jax.numpy.fft",
        "jax.nn",
        "jax.scipy.special",
        "jax.scipy.linalg",
        "jax.scipy.stats.norm",
        "jax.ops",
    } <= modules
    for entry in TABLE:
        assert callable(resolve(entry.fn, str(ROOT))), entry.path
        assert set(entry.signature) <= set(ROLES) and entry.shapes in SHAPES, entry.path


def test_every_public_callable_is_surveyed_or_left_out_with_a_reason():
    """What this JAX exports, against what the survey accounts for: nothing unaccounted on the JAX
    the surface was made with; on another, the difference is listed as not yet surveyed."""
    import jax

    accounted = surface.accounted()
    exported = surface.public_callables()
    assert all(why.strip() for why in accounted.values())
    not_yet = surface.not_yet_surveyed()
    assert set(not_yet) == set(exported) - set(accounted)
    if jax.__version__ == surface.surface()["jax"]:
        assert not_yet == []
        assert set(accounted) == set(exported) | {e.path for e in TABLE if e.public is None}
    listed = run_cli("survey", "--left-out")
    assert listed.exit_code == 0 and f"{len(not_yet)} not yet surveyed" in listed.stdout
    assert "jax.numpy.isnan" in listed.stdout and "returns no floating array (bool)" in listed.stdout


def test_the_tables_name_no_outcome():
    """Values come from the shared per-dtype tables; nothing surveyed says what it is expected to do."""
    for path in (table.__file__, edges.__file__, strategy.__file__, wrappers.__file__, surface.OVERRIDES):
        text = Path(path).read_text().lower()
        for word in ("mismatch", "expect", "known bug", "defect", "40814", "indexerror", "zero gradient"):
            assert word not in text, (path, word)


def test_the_newton_cube_root_wrapper_differentiates_at_negative_inputs():
    """The survey's own `custom_root` wrapper: its tangent solve divides by 3 cbrt(x) ** 2, finite at a
    negative x too, where `x ** (2 / 3)` was NaN, right at a tiny x (a guard of 1e-3 on the divisor made it
    1000 at 1e-33), and its Newton steps converge at 1e15 too: an error of the wrapper's would be reported
    as JAX's."""
    import jax

    x = np.array([-8.0, 27.0, 1e15, 1e-33], np.float32)
    slopes = np.diag(np.asarray(jax.jacfwd(wrappers.custom_root)(x)))
    np.testing.assert_allclose(np.asarray(wrappers.custom_root(x)), [-2.0, 3.0, 1e5, 1e-11], rtol=1e-5)
    np.testing.assert_allclose(slopes, [1 / 12, 1 / 27, 1 / 3e10, 1 / 3e-22], rtol=1e-5)


def test_edge_values_cover_each_dtype_and_every_index_dtype_around_its_range():
    for dtype in edges.SURVEY_FLOATS:
        values = edges.float_edges(dtype)
        assert {0.0, 1.0, -1.0, float("inf"), float("-inf")} <= set(values)
        assert any(v != v for v in values) and any(str(v) == "-0.0" for v in values)
    assert {"int8", "uint8", "int16", "uint16"} <= set(edges.SURVEY_INDICES)
    assert edges.index_edges("uint8", 3) == (0, 2, 3, 4, 255, 1, 254, 6)
    assert {-1, -3, -4, -128, 127} <= set(edges.index_edges("int8", 3))


def test_list_and_unknown_names():
    listed = run_cli("survey", "--list")
    public = {entry.public for entry in TABLE} - {None}
    assert (
        listed.exit_code == 0
        and "jax.lax.select_n" in listed.stdout
        and f"{len(public)} public JAX functions" in listed.stdout
    )
    unknown = run_cli("survey", "jax.numpy.tak")
    assert unknown.exit_code == 2 and "did you mean jax.numpy.take" in unknown.stderr
    for option in ("--json", "--defects"):  # refused before any function is surveyed
        nowhere = run_cli("survey", "jax.numpy.sin", option, "/nonexistent/folder/out")
        assert nowhere.exit_code == 2 and option in nowhere.stderr and "does not exist" in nowhere.stderr


def test_a_public_name_surveyed_under_another_is_taken_and_a_left_out_one_says_why():
    """`jax.lax.scan` (a call written out in wrappers.py) and `jax.numpy.tanh` (jax.nn.tanh exported
    twice) are surveyed as a user names them; a function left out is refused with its reason."""
    accounted = surface.accounted()
    written = next(path for path, why in accounted.items() if why.startswith("surveyed as "))
    twice = next(path for path, why in accounted.items() if why.startswith("the same function as "))
    left = next(path for path, why in accounted.items() if why.startswith("returns no floating array"))
    listed = run_cli("survey", written, twice, "--list")
    entries = {written: accounted[written].removeprefix("surveyed as ")}
    entries[twice] = table_names([accounted[twice].removeprefix("the same function as ")]).popitem()[1]
    assert listed.exit_code == 0 and "2 surveyed entries" in listed.stdout, listed.output
    for name, entry in entries.items():
        assert f"{name} is surveyed as {entry}" in listed.stderr and entry in listed.stdout
    refused = run_cli("survey", left.removeprefix("jax."))
    assert refused.exit_code == 2 and f"leaves '{left.removeprefix('jax.')}' out: {accounted[left]}" in refused.stderr
    near = run_cli("survey", twice + "x")
    assert near.exit_code == 2 and f"did you mean {twice}" in near.stderr


def test_a_survey_refuses_to_replace_files_it_did_not_write(tmp_path):
    """A folder holding a user's own `numpy.sin-1.yaml`, or a `numpy.sin-1.py` beside no file a survey
    wrote: exit 2 before any function is surveyed, saying which file, and the file is left as it was."""
    for name in ("numpy.sin-1.yaml", "numpy.sin-2.py"):
        out = tmp_path / name.replace(".", "_")
        out.mkdir()
        (out / name).write_text("mine = 1\n")
        refused = run_cli("survey", "jax.numpy.sin", "--out", str(out))
        assert refused.exit_code == 2 and name in refused.stderr and "not written by gradaudit" in refused.stderr
        assert (out / name).read_text() == "mine = 1\n" and len(list(out.iterdir())) == 1


@pytest.mark.slow
def test_a_survey_of_select_n_finds_the_legacy_rules_defects_unaided_and_its_files_reproduce(legacy_survey, tmp_path):
    legacy, folder = legacy_survey
    out = folder / "found"
    assert legacy.exit_code == 1, legacy.stdout
    document = json.loads((folder / "survey.json").read_text())
    assert document["schema"] == "gradaudit.survey/1" and document["environment"]["rule"] == "legacy"
    kinds = [kind for function in document["functions"] for kind in function["kinds"]]
    names = [f["name"] for f in document["functions"]]
    assert names == ["lax.clamp", "lax.select_n", "lax.select_n.2", "lax.select_n.3"]
    assert any("send it nowhere" in finding["message"] for kind in kinds for finding in kind["findings"])
    for function in document["functions"]:  # where each function's time went, and no draw hung
        assert set(function["phases"]) == {"explore", "shrink", "confirm"} and function["timeouts"] == 0
        assert sum(function["phases"].values()) <= function["seconds"] + 0.2, function
    files = sorted(out.glob("*.yaml"))
    assert len(files) == len(kinds) and all(f.read_text().startswith("# Found by `gradaudit survey") for f in files)
    again = run_cli("run", str(out), "--rule", "legacy", "--json", "-", "-q")
    statuses = {entry["name"]: entry["status"] for entry in again.json()["results"]}
    assert statuses == {re.sub(r"\.yaml$", "", kind["file"].rsplit("/", 1)[1]): kind["status"] for kind in kinds}
    fixed = run_cli("survey", "jax.lax.select_n", "--budget", "12", "--rule", "fixed", "--out", str(tmp_path / "none"))
    assert fixed.exit_code == 0 and "0 kinds of disagreement" in fixed.stdout, fixed.stdout


def _without_files(document: dict) -> list:
    """The functions' entries without what differs between processes: files' folders and times."""
    return [
        {
            **{k: v for k, v in f.items() if k not in ("seconds", "phases")},
            "kinds": [{k: v for k, v in kind.items() if k not in ("file", "script")} for kind in f["kinds"]],
        }
        for f in document["functions"]
    ]


def _files(folder: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(folder.glob("*.yaml"))}


@pytest.mark.slow
def test_the_same_seed_gives_the_same_files_and_two_shards_merged_equal_one_survey(tmp_path):
    names = ["jax.lax.clamp", "jax.numpy.abs", "jax.numpy.take", "jax.nn.relu"]
    common = ["--budget", "8", "--seed", "3"]
    for run in ("whole", "again"):
        result = run_cli(
            "survey", *names, *common, "--out", str(tmp_path / run), "--json", str(tmp_path / f"{run}.json")
        )
        assert result.exit_code == 1, result.output
    whole = _files(tmp_path / "whole")
    assert whole and whole == _files(tmp_path / "again")
    for k in (1, 2):
        shard = run_cli(
            "survey",
            *names,
            *common,
            "--shard",
            f"{k}/2",
            "--out",
            str(tmp_path / "shards"),
            "--json",
            str(tmp_path / f"s{k}.json"),
        )
        assert shard.exit_code in (0, 1)
    assert _files(tmp_path / "shards") == whole
    parts = [json.loads((tmp_path / f"s{k}.json").read_text())["functions"] for k in (1, 2)]
    assert all(parts) and len(parts[0]) + len(parts[1]) == len(names)
    merged = run_cli(
        "merge",
        str(tmp_path / "s1.json"),
        str(tmp_path / "s2.json"),
        "-o",
        str(tmp_path / "merged.json"),
        "--defects",
        str(tmp_path / "DEFECTS.md"),
    )
    assert merged.exit_code == 1 and "merged 2 survey reports: 4 function entries" in merged.stderr
    defects = json.loads((tmp_path / "merged.json").read_text())["defects"]
    markdown = (tmp_path / "DEFECTS.md").read_text()
    assert markdown.startswith("# Defects found by `gradaudit survey`") and f"{len(defects)} defects" in markdown
    assert _without_files(json.loads((tmp_path / "merged.json").read_text())) == _without_files(
        json.loads((tmp_path / "whole.json").read_text())
    )
    again = run_cli("merge", str(tmp_path / "s1.json"), str(tmp_path / "s1.json"), "-o", str(tmp_path / "twice.json"))
    assert again.exit_code == 2 and "shards must not overlap" in again.stderr


def test_shards_are_balanced_by_cost_and_none_is_empty():
    chosen = spaces()
    for n in (2, 7, 40):
        shards = [shard(chosen, k, n, 30) for k in range(1, n + 1)]
        assert all(shards) and sorted(s.name for part in shards for s in part) == sorted(s.name for s in chosen)
        costs = [sum(estimated_cost(space, 30) for space in part) for part in shards]
        assert max(costs) <= min(costs) + max(estimated_cost(space, 30) for space in chosen)
    few = spaces(["jax.lax.select_n", "jax.lax.dynamic_slice", "jax.lax.clamp"])
    assert [len(shard(few, k, 5, 150)) for k in range(1, 6)] == [1, 1, 1, 1, 1]


def test_shard_auto_reads_slurm_and_kubernetes(monkeypatch):
    from gradaudit.sources.selection import shard_from_environment

    assert shard_from_environment(
        "auto", {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "8"}
    ) == (4, 8)
    assert shard_from_environment("auto", {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3"}) == (1, 3)
    assert shard_from_environment("auto/5", {"JOB_COMPLETION_INDEX": "4"}) == (5, 5)
    with pytest.raises(ValueError, match="SLURM_ARRAY_TASK_ID"):
        shard_from_environment("auto", {})
    with pytest.raises(ValueError, match="JOB_COMPLETION_INDEX"):
        shard_from_environment("auto/2", {})
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID", raising=False)
    refused = run_cli("survey", "jax.numpy.abs", "--shard", "auto", "--list")
    assert refused.exit_code == 2 and "SLURM_ARRAY_TASK_COUNT" in refused.stderr


def test_diff_between_two_surveys_names_new_and_resolved_kinds(tmp_path):
    def survey(kinds):
        return {
            "schema": "gradaudit.survey/1",
            "environment": {"jax": "x"},
            "budget": 1,
            "seed": 0,
            "functions": [
                {
                    "name": "lax.clamp",
                    "kinds": [{"status": s, "signatures": [g], "file": f"{g}.yaml"} for s, g in kinds],
                }
            ],
        }

    (tmp_path / "old.json").write_text(json.dumps(survey([("mismatch", "routing:a"), ("error", "raised:b")])))
    (tmp_path / "new.json").write_text(json.dumps(survey([("mismatch", "routing:a"), ("mismatch", "disagreement:c")])))
    changed = run_cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert changed.exit_code == 1
    assert "new: lax.clamp: mismatch (disagreement:c) disagreement:c.yaml" in changed.stdout
    assert "resolved: lax.clamp: error (raised:b)" in changed.stdout and "1 new kinds, 1 resolved" in changed.stdout
    same = run_cli("diff", str(tmp_path / "old.json"), str(tmp_path / "old.json"))
    assert same.exit_code == 0 and "0 new kinds, 0 resolved" in same.stdout


def _flat(value) -> list:
    return [v for item in value for v in _flat(item)] if isinstance(value, list) else [value]


def test_the_sweep_changes_one_edge_of_the_plainest_case_and_every_entry_loads():
    from gradaudit.model.dtypes import integer_range
    from gradaudit.search import scenario_text
    from gradaudit.sources.scenario_files import load_text

    space = spaces(["jax.lax.dynamic_slice"])[0]
    entries = space.sweep()
    for entry in entries:
        scenarios, errors = load_text(scenario_text(entry), "<sweep>")
        assert len(scenarios) == 1 and not errors, (entry, errors)
    plain_floats = [0.62, -1.37, 0.25]
    floating = [e["inputs"][0]["value"] for e in entries if e["inputs"][1] == {"dtype": "int32", "value": [0]}]
    # every floating edge value once, in the second element, the rest as in the plainest case; then a tie
    single, ties, regime = floating[:13], floating[13:16], floating[16:]
    assert [repr(values[1]) for values in single] == [repr(v) for v in (*edges.float_edges("float32"), 0.62)]
    assert all(values[0] == 0.62 and values[2] == 0.25 for values in single)
    # then a tie of each non-finite value
    assert [repr(values[1]) for values in ties] == [repr(values[2]) for values in ties] == ["inf", "-inf", "nan"]
    # then the regimes: the plainest case with one element changed, or scaled, or with zeros among nonzeros
    assert len(regime) == len(strategy.regimes(space.surveyed, space.name))
    # every index dtype at its limits (0 is the plainest case), past the end of the plain shape
    limits = {
        (e["inputs"][1]["dtype"], e["inputs"][1]["value"][0])
        for e in entries
        if e["inputs"][0].get("value") == plain_floats
    }
    expected = {(d, v) for d in edges.SURVEY_INDICES for v in integer_range(d) if v != 0}
    assert limits == expected
    # the dtypes that cannot address a long axis meet it at their largest value
    long = [
        (e["inputs"][1]["dtype"], e["inputs"][1]["value"][0])
        for e in entries
        if e["inputs"][0].get("shape") == [edges.LONG_AXIS]
    ]
    assert long == [("int8", 127), ("uint8", 255)]
    assert len(entries) == len(floating) + len(limits) + len(long)
    # a function without an index meets the floating edges and the regimes; sweeps load
    for name, ties in (("jax.numpy.max", 3), ("jax.numpy.sin", 0)):  # a scalar has no room for a tie
        one = spaces([name])[0]
        alternatives = sum(len(options) - 1 for options in one.surveyed.options.values())  # each swept once
        regimes = len(strategy.regimes(one.surveyed, name))
        assert len(one.sweep()) == alternatives + len(edges.float_edges("float32")) + 1 + ties + regimes
    for one in spaces():
        sweep = one.sweep()
        for entry in sweep[:: max(1, len(sweep) // 5)]:
            assert not load_text(scenario_text(entry), "<sweep>")[1], entry


def test_regimes_sweep_each_floating_argument_by_decades_near_integers_and_zeros():
    power = spaces(["jax.numpy.power"])[0]
    entries = strategy.regimes(power.surveyed, power.name)
    plain = strategy.build_entry(power.surveyed, power.name, strategy._Plain())
    by_argument: dict[int, list] = {0: [], 1: []}
    for entry in entries:
        for k in (0, 1):
            spec = entry["inputs"][k]
            if spec["dtype"] == "int32":
                by_argument[k].append(("integer", spec["value"]))
            elif spec["value"] != plain["inputs"][k]["value"]:
                by_argument[k].append((spec["dtype"], spec["value"]))
    for k in (0, 1):
        float32 = {value for dtype, value in by_argument[k] if dtype == "float32"}
        assert {1e19, -1e19, 1e-37, 1e38, -2.5, 3.0, 0.5 + 2**-9} <= float32, k  # decades, poles and neighbours
        assert {value for dtype, value in by_argument[k] if dtype == "float64"} >= {1e-307, -1e301}
        assert {value for dtype, value in by_argument[k] if dtype == "float16"} == set(edges.decades("float16"))
    # an integer-valued later argument passed in an integer dtype; the first argument stays floating
    assert ("integer", 2) in by_argument[1] and not [v for t, v in by_argument[0] if t == "integer"]
    # a held floating argument is swept too, and stays floating and held
    betainc = spaces(["jax.scipy.special.betainc"])[0]
    shapes = [e["inputs"][0] for e in strategy.regimes(betainc.surveyed, betainc.name)]
    assert {"dtype": "float32", "value": 1e19, "held": True} in shapes and all(s.get("held") for s in shapes)
    # a matrix function meets its plain matrix scaled across the range and with zeros among nonzeros
    inv = spaces(["jax.numpy.linalg.inv"])[0]
    plain = strategy.build_entry(inv.surveyed, inv.name, strategy._Plain())["inputs"][0]["value"]
    matrices = [
        e["inputs"][0]["value"]
        for e in strategy.regimes(inv.surveyed, inv.name)
        if e["inputs"][0]["dtype"] == "float32"
    ]
    scaled = np.float32(np.asarray(plain, dtype=np.float32) * np.float32(1e37))
    assert any(np.array_equal(np.asarray(m, dtype=np.float32), scaled) for m in matrices)
    assert any(m[0][1] == 0.0 and m[0][0] == plain[0][0] for m in matrices)


def test_a_survey_keeps_an_explicit_timeout_and_gives_draws_15_seconds_otherwise(monkeypatch, tmp_path):
    from gradaudit import service

    seen = []

    def refuse(options):
        seen.append(options.timeout)
        raise RuntimeError("stop here")

    monkeypatch.setattr(service, "isolated", refuse)
    for args, timeout in ((["--timeout", "600"], 600.0), (["--timeout", "5"], 5.0), ([], 15.0)):
        run_cli("survey", "jax.numpy.sin", "--budget", "1", "--out", str(tmp_path), *args)
        assert seen.pop() == timeout


@pytest.mark.slow
def test_a_survey_finds_what_only_an_eager_path_and_its_jit_twin_tell_apart(tmp_path):
    """Where an input is NaN a split is classed `non-finite` (reported, not failed by default), which
    can hide that a path and its own jit twin differ: a survey's quick screen (jit paths) must look
    again with every path. Checked only on a JAX where jnp.max's eager and jit reverse modes differ
    at a NaN."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    x = jnp.array([0.62, jnp.nan, 0.25], dtype=jnp.float32)
    eager, jitted = np.asarray(jax.jacrev(jnp.max)(x)), np.asarray(jax.jit(jax.jacrev(jnp.max))(x))
    if np.array_equal(eager, jitted, equal_nan=True):
        pytest.skip(f"on JAX {jax.__version__} jnp.max's reverse mode is the same eagerly and under jit at a NaN")
    found = run_cli(
        "survey", "jax.numpy.max", "--budget", "5", "--out", str(tmp_path / "found"), "--json", str(tmp_path / "s.json")
    )
    assert found.exit_code == 1, found.stdout
    kinds = json.loads((tmp_path / "s.json").read_text())["functions"][0]["kinds"]
    messages = [f["message"] for kind in kinds for f in kind["findings"]]
    assert any(
        m.startswith("jit(jacrev) disagrees with") and "jacrev" in m.split(" disagrees with ")[1] for m in messages
    ), messages
    swept = [kind for kind in kinds if kind["swept"]]
    assert (
        swept and "as the edge sweep drew it" in (tmp_path / "found" / swept[0]["file"].rsplit("/", 1)[1]).read_text()
    )
    # The maximum of a vector holding NaN is NaN: the split is at a non-finite output, reported but
    # not failed by default, and failed when every class is.
    assert {f["class"] for kind in kinds for f in kind["findings"]} == {"non-finite"}
    assert run_cli("run", str(tmp_path / "found"), "-q").exit_code == 0
    assert run_cli("run", str(tmp_path / "found"), "-q", "--fail-on", "all").exit_code == 1


def test_an_interrupted_survey_writes_the_reports_of_the_functions_it_finished(tmp_path, monkeypatch):
    from gradaudit.survey import explore

    real = explore.survey_one
    calls = []

    def stopped_on_the_second(space, *args, **kwargs):
        calls.append(space.name)
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C, or SIGTERM through remembered_interrupt
        return real(space, *args, **kwargs)

    monkeypatch.setattr(explore, "survey_one", stopped_on_the_second)
    report, defects = tmp_path / "survey.json", tmp_path / "DEFECTS.md"
    result = run_cli(
        "survey", "jax.lax.abs", "jax.lax.neg", "--budget", "2", "--out", str(tmp_path / "found"),
        "--json", str(report), "--defects", str(defects), *session_cache(),
    )  # fmt: skip
    assert result.exit_code == 2 and "interrupted: 1 of 2 functions surveyed whole" in result.stderr
    document = json.loads(report.read_text())
    assert [f["function"] for f in document["functions"]] == ["jax.lax.abs"] and defects.exists()
