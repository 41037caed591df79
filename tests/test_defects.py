"""A survey's kinds as defects: one entry per mechanism, ranked, each with its plainest reproducer."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from gradaudit.survey import defects
from gradaudit.survey.defects import Variant, group, parse_fingerprint, regime_of
from tests.helpers import run_cli, run_script

SURVEY = Path(__file__).resolve().parent / "data" / "survey"


def _variant(function, file, finding_class="wrong", paths=("jacrev",), wrong="nowhere", regime="an exact zero", **more):
    fields = {"status": "mismatch", "kind": "routing", "primitives": frozenset(), "size": 3, **more}
    return Variant(function, file, finding_class=finding_class, paths=paths, wrong=wrong, regime=regime, **fields)


def test_a_fingerprint_gives_its_class_kind_paths_without_binding_and_form():
    assert parse_fingerprint("wrong:routing:jacrev+jacrev:const+jit_jacrev|nowhere|1/1#03a21dd1") == (
        "wrong",
        "routing",
        ("jacrev", "jit_jacrev"),
        "nowhere",
    )
    assert parse_fingerprint("raised:raised:jacrev+jit_jacrev:IndexError") == (
        "raised",
        "raised",
        ("jacrev", "jit_jacrev"),
        "IndexError",
    )
    assert parse_fingerprint("raised:raised:jacfwd+jacfwd:const:TypeError")[2:] == (("jacfwd",), "TypeError")
    assert parse_fingerprint("raised:raised:jacfwd+jit_jacfwd:const")[3] == ""


def test_regimes_are_read_from_the_values():
    def entry(*inputs):
        return {"inputs": [{"dtype": d, "value": v} for d, v in inputs]}

    assert regime_of(entry(("float32", [0.62, float("nan")]))) == "a NaN input"
    assert regime_of(entry(("float32", [0.62, 0.25]), ("uint8", 255))) == "an integer at its dtype's limit"
    assert regime_of(entry(("float32", [0.62, 0.25]), ("int32", 7))) == "an index out of range"
    assert regime_of(entry(("float32", 1e19))) == "a large finite input (1e10 or more)"
    assert regime_of(entry(("float32", [0.62, 0.0]))) == "an exact zero"
    assert regime_of(entry(("float32", -2.5009765625))) == "near an integer or half-integer"
    assert regime_of(entry(("float32", 0.62))) == "ordinary inputs"


def test_kinds_of_one_mechanism_are_one_defect_and_defects_rank_by_class():
    found = [
        # one function met through its entries with one, two and three cases, in one class, form and regime
        _variant("lax.select_n", "a.yaml", regime="an integer at its dtype's limit", size=2),
        _variant("lax.select_n.2", "b.yaml", regime="an integer at its dtype's limit", paths=("jacfwd", "jacrev")),
        # the same function in another regime is another defect
        _variant("lax.select_n", "c.yaml", regime="an infinite input"),
        # two functions alike in mechanism that share a primitive beyond plumbing: one defect
        _variant("lax.dynamic_slice", "d.yaml", primitives=frozenset({"dynamic_slice", "add"})),
        _variant("wrappers.getitem", "e.yaml", primitives=frozenset({"dynamic_slice", "lt"}), size=1),
        # alike in mechanism, sharing plumbing only: apart
        _variant("numpy.sin", "f.yaml", primitives=frozenset({"sin", "add"})),
        _variant("numpy.cos", "g.yaml", primitives=frozenset({"cos", "add"})),
        # a crash ranks first, IEEE arithmetic last
        _variant("numpy.svd", "h.yaml", finding_class="timed-out", paths=("jacfwd",), wrong=""),
        _variant("numpy.log2", "i.yaml", finding_class="non-finite", wrong="nan"),
    ]
    grouped = group(found)
    files = [sorted(v.file for v in d.variants) for d in grouped]
    assert files[0] == ["h.yaml"] and grouped[0].severity == "crashes"
    assert ["a.yaml", "b.yaml"] in files and ["c.yaml"] in files and ["d.yaml", "e.yaml"] in files
    assert ["f.yaml"] in files and ["g.yaml"] in files
    assert files[-1] == ["i.yaml"] and grouped[-1].severity == "the rest"
    merged = next(d for d in grouped if len(d.variants) == 2 and d.plainest.function == "wrappers.getitem")
    assert merged.shared_primitives() == {"dynamic_slice"} and merged.plainest.file == "e.yaml"
    assert len(grouped) == 7
    at_infinity = next(d for d in grouped if d.plainest.file == "c.yaml")
    assert (
        at_infinity.severity
        == "wrong derivatives, eager/jit splits and NaN leaks at NaN, inf or next to the largest float"
    )
    assert files.index(["c.yaml"]) > files.index(["f.yaml"]) and files.index(["c.yaml"]) < len(files) - 1


def test_a_defect_met_at_zero_and_at_a_subnormal_or_lost_and_sent_nowhere_is_one_defect():
    grouped = group(
        [
            # one function: shrinking on another seed lands at a subnormal, words a lost derivative as routing
            _variant("numpy.arctan2", "zero.yaml", wrong="zero"),
            _variant("numpy.arctan2", "subnormal.yaml", wrong="nowhere", regime="a subnormal input", size=2),
            # constant factors of different sizes are one form: wrong values
            _variant("numpy.ldexp", "half.yaml", wrong="x0.5", regime="an integer at its dtype's limit"),
            _variant("numpy.ldexp", "other.yaml", wrong="value", regime="an index out of range"),
            # but NaN where a number belongs is another form, and a large input another neighbourhood
            _variant("numpy.arctan2", "nan.yaml", wrong="nan"),
            _variant("numpy.arctan2", "large.yaml", wrong="zero", regime="a large finite input (1e10 or more)"),
        ]
    )
    files = sorted(sorted(v.file for v in d.variants) for d in grouped)
    assert files == [["half.yaml", "other.yaml"], ["large.yaml"], ["nan.yaml"], ["subnormal.yaml", "zero.yaml"]]
    near_zero = next(d for d in grouped if "zero.yaml" in {v.file for v in d.variants})
    assert near_zero.plainest.file == "subnormal.yaml" and near_zero.plainest.regime == "a subnormal input"


def test_functions_join_a_defect_through_the_primitive_most_of_them_share_never_a_chain():
    found = [
        _variant("scipy.special.xlogy", "a.yaml", primitives=frozenset({"log", "add"})),
        _variant("numpy.power", "b.yaml", primitives=frozenset({"log", "pow"})),
        _variant("lax.pow", "c.yaml", primitives=frozenset({"pow"})),
        _variant("numpy.float_power", "d.yaml", primitives=frozenset({"pow", "convert_element_type"})),
    ]
    grouped = group(found)
    files = sorted(sorted(v.file for v in d.variants) for d in grouped)
    assert files == [["a.yaml"], ["b.yaml", "c.yaml", "d.yaml"]]  # not one defect through log and then pow
    (joined,) = [d for d in grouped if len(d.variants) == 3]
    assert joined.shared_primitives() == {"pow"}
    # the order the kinds come in does not change the defects
    assert sorted(sorted(v.file for v in d.variants) for d in group(found[::-1])) == files


def test_defects_in_ordinary_regimes_outrank_those_at_ieee_edges():
    grouped = group(
        [
            _variant("numpy.tan", "inf.yaml", regime="an infinite input"),
            _variant("numpy.softmax", "leak-nan.yaml", finding_class="leak", wrong="nan", regime="a NaN input"),
            _variant("numpy.exp", "leak.yaml", finding_class="leak", wrong="nan"),
            _variant("numpy.sqrt", "finite.yaml", regime="a tiny nonzero input (1e-10 or less)"),
            _variant("numpy.log", "ieee.yaml", finding_class="non-finite", wrong="nan", regime="an infinite input"),
            _variant("numpy.std", "big.yaml", wrong="nan", regime="an input near its dtype's largest"),
        ]
    )
    assert [d.plainest.file for d in grouped] == [
        "finite.yaml",
        "leak.yaml",
        "big.yaml",  # wrong before leak, then by function
        "inf.yaml",
        "leak-nan.yaml",
        "ieee.yaml",
    ]
    at_non_finite = "wrong derivatives, eager/jit splits and NaN leaks at NaN, inf or next to the largest float"
    assert [d.severity for d in grouped] == [
        "wrong derivatives at finite inputs",
        "NaN leaking into finite results",
        at_non_finite,
        at_non_finite,
        at_non_finite,
        "the rest",
    ]


@pytest.mark.slow
def test_a_survey_lists_its_defects_with_reproducers_and_scripts_that_print_their_numbers(legacy_survey):
    result, folder = legacy_survey
    report, markdown = folder / "survey.json", folder / "DEFECTS.md"
    assert result.exit_code == 1, result.output
    document = json.loads(report.read_text())
    found = document["defects"]
    kinds = sum(len(f["kinds"]) for f in document["functions"])
    assert found and len(found) < kinds  # select_n's entries with one, two and three cases meet one defect
    assert [d["rank"] for d in found] == list(range(1, len(found) + 1))
    select_n = [d for d in found if {"lax.select_n", "lax.select_n.2", "lax.select_n.3"} <= set(d["functions"])]
    assert select_n and select_n[0]["class"] == "wrong" and select_n[0]["regime"] == "an integer at its dtype's limit"
    text = markdown.read_text()
    assert "## Wrong derivatives at finite inputs" in text and "lax.select_n.3" in text
    assert "defects, most severe first" in result.stdout
    page = (folder / "survey.html").read_text()
    assert "Defects, most severe first" in page and "lax.select_n.3" in page
    reproduced = run_cli("run", select_n[0]["reproducer"], "--rule", "legacy")
    assert reproduced.exit_code == 1
    scripts = [d["script"] for d in found if d["script"]]
    assert scripts
    for script in scripts:
        printed = run_script(script)
        assert printed.returncode == 0 and any(ch.isdigit() for ch in printed.stdout), printed.stderr
    assert defects.describe(select_n[0]["reproducer"])["regime"] == select_n[0]["regime"]


def test_a_defect_leads_with_its_plainest_variants_finding_in_words_and_numbers():
    from gradaudit.render.defects_markdown import defects_markdown

    said = "jacrev disagrees with jacfwd on 1 of 2 entries; largest at d out/d x[1]: 0 from jacrev, 1 from jacfwd"
    grouped = group([_variant("numpy.take", "t.yaml", size=3, message=said), _variant("numpy.take", "u.yaml", size=9)])
    (defect,) = grouped
    entry = defect.to_dict(1, {})
    assert entry["message"] == said and entry["reproducer"] == "t.yaml"
    document = {
        "environment": {"jax": "0.10.2", "backend": "cpu", "rule": "installed"},
        "budget": 30,
        "seed": 0,
        "functions": [{"kinds": [{}, {}]}],
        "defects": [entry],
    }
    lines = defects_markdown(document).splitlines()
    assert lines[lines.index(next(line for line in lines if line.startswith("1. **[wrong] routing**"))) + 1] == (
        f"   {said}  "
    )


def test_the_defects_page_says_which_functions_left_drawn_scenarios_unaudited_and_how_many():
    from gradaudit.render.defects_markdown import defects_markdown

    document = {
        "environment": {"jax": "0.10.2", "backend": "cpu", "rule": "installed"},
        "budget": 30,
        "seed": 0,
        "functions": [
            {"name": "numpy.sin", "kinds": []},
            {"name": "numpy.linalg.svd", "kinds": [{}], "not_audited": {"input 1, large": 40, "input 1, small": 19}},
            {"name": "scipy.special.hyp2f1", "kinds": [{}], "not_audited": {"input 2, large": 108}},
        ],
        "defects": [],
    }
    (said,) = [line for line in defects_markdown(document).splitlines() if line.startswith("Not audited")]
    assert said.startswith("Not audited: 167 drawn scenarios of 2 functions,")
    assert said.endswith(": scipy.special.hyp2f1 108, numpy.linalg.svd 59.")
    quiet = {**document, "functions": document["functions"][:1]}
    assert "Not audited" not in defects_markdown(quiet)


def test_the_survey_schema_names_every_heading_a_defect_ranks_under():
    from gradaudit.render.schemas import schema

    severities = schema("gradaudit.survey/1")["properties"]["defects"]["items"]["properties"]["severity"]["enum"]
    assert severities == list(defects.HEADINGS)


def test_the_form_a_defect_keeps_sets_constant_factors_and_routings_aside_but_not_what_was_raised():
    assert [defects.form_of(w) for w in ("nowhere", "zero", "x1.5e+30", "x-1", "elsewhere", "mixed", "value")] == [
        "zero",
        "zero",
        *["value"] * 5,
    ]
    assert [defects.form_of(w) for w in ("nan", "inf", "TypeError", "")] == ["nan", "inf", "TypeError", ""]


def test_what_a_path_raised_is_one_defect_wherever_the_inputs_were_and_its_words_tell_errors_apart():
    loop = "jacrev and jit(jacrev) raised ValueError: Reverse-mode differentiation does not work for lax.while_loop"
    grouped = group(
        [
            _variant("lax.linalg.qdwh", "a.yaml", finding_class="raised", wrong="ValueError", message=loop),
            _variant("lax.linalg.qdwh", "b.yaml", "raised", wrong="ValueError", regime="ordinary inputs", message=loop),
            _variant(
                "lax.linalg.qdwh",
                "c.yaml",
                "raised",
                wrong="ValueError",
                message="jacfwd raised ValueError: The precision 'F16_F16_F32' is not supported",
            ),
        ]
    )
    assert sorted(sorted(v.file for v in d.variants) for d in grouped) == [["a.yaml", "b.yaml"], ["c.yaml"]]
    assert defects.error_words("jacfwd raised TypeError: log1p cannot take shape (3, 3) in int32.\nmore") == (
        "TypeError: log1p cannot take shape (N, N) in int32."
    )


def test_a_function_that_cannot_be_traced_shares_the_primitives_it_binds_as_it_runs(tmp_path):
    """jnp.unique and union1d without `size=` need their inputs' values (jit and make_jaxpr cannot trace
    them): their primitives are read as they run eagerly, so kinds of both, alike in class, form and
    regime, are one defect through a primitive they share, not one defect per function."""
    unique = str(SURVEY / "numpy.unique-2.yaml")
    union = tmp_path / "numpy.union1d-1.yaml"
    union.write_text(
        "scenarios:\n- name: numpy.union1d-1\n  fn: jax.numpy:union1d\n  inputs:\n"
        "  - {dtype: float32, value: [0.62, -1.37]}\n  - {dtype: float32, value: 0.25}\n",
        encoding="utf-8",
    )
    seen = {file: defects.primitives_of(file) for file in (unique, str(union))}
    assert all("sort" in primitives for primitives in seen.values()), seen
    found = [
        _variant(name, file, paths=("finite_difference", "jacfwd", "jacrev"), wrong="zero", primitives=seen[file])
        for name, file in (("numpy.unique", unique), ("numpy.union1d", str(union)))
    ]
    # A traced function lowering to sort, alike in class, form and regime, is compared with traced ones
    # only: a set read as a function ran holds its loops' bodies, not the loops.
    traced = _variant("numpy.sort", "sort.yaml", paths=("finite_difference", "jacfwd"), wrong="zero")
    traced = dataclasses.replace(traced, primitives=frozenset({"sort", "gather"}))
    one, alone = group([*found, traced])
    assert one.functions == ["numpy.union1d", "numpy.unique"] and "sort" in one.shared_primitives()
    assert alone.functions == ["numpy.sort"]
