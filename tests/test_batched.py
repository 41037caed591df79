"""The fast path never changes a verdict: on a grid, batched verdicts equal the literal path's, scenario by scenario."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from gradaudit.batched import audit_group, group_key
from gradaudit.judge import CONSISTENT
from gradaudit.rules import FIXED, LEGACY, select_n_rule
from gradaudit import compiled, runner
from gradaudit.runner import FAST_PATH_MIN_GROUP, audit_scenario, needs_x64, run_audit, tolerances_for, x64_for
from tests.helpers import make_scenario


def grid() -> list:
    """Several scenarios per group (same dtypes, shapes and case count), selectors in and out of range."""
    rng = np.random.default_rng(7)
    scenarios = []
    for number, (dtype, cases, shape, full) in enumerate(
        itertools.product(("int32", "uint8", "bool", "int8"), (1, 2, 3), ((), (3,), (2, 2)), (False, True))
    ):
        if (dtype == "bool" and cases > 2) or (full and not shape) or number % 3:
            continue
        for copy in range(3):
            size = int(np.prod(shape)) if full else 1
            if dtype == "bool":
                values = rng.integers(0, 2, size).astype(bool).tolist()
            else:
                values = rng.integers(0 if dtype == "uint8" else -1, cases + 2, size).tolist()
            value = np.array(values, dtype=object).reshape(shape).tolist() if full else values[0]
            case_dtype = ("float32", "float16", "float64", "bfloat16")[number % 4]
            scenarios.append(
                make_scenario(dtype, value, cases, shape, dtype=case_dtype, seed=copy, name=f"{dtype}-{cases}-{shape}-{full}-{copy}")
            )
    return scenarios


@pytest.mark.slow
@pytest.mark.parametrize("rule", [LEGACY, FIXED])
def test_batched_verdicts_equal_literal_verdicts_scenario_by_scenario(rule):
    scenarios = grid()
    groups: dict = {}
    for scenario in scenarios:
        groups.setdefault(group_key(scenario), []).append(scenario)
    assert len(groups) < len(scenarios)  # the grid really batches
    with select_n_rule(rule):
        for members in groups.values():
            with x64_for(members[0]):
                fast = audit_group(members, [tolerances_for(s) for s in members])
            for scenario, found in zip(members, fast, strict=True):
                with x64_for(scenario):
                    literal = audit_scenario(scenario)
                fast_status = CONSISTENT if found is not None else "not consistent"
                literal_status = CONSISTENT if literal.status == CONSISTENT else "not consistent"
                assert fast_status == literal_status, (rule, scenario.name, literal.status, [f.message for f in literal.findings])
                if found is not None:
                    results, verdict, _, _, _ = found
                    for path in ("jacfwd", "jacrev", "finite_difference"):
                        for fast_block, literal_block in zip(results[path].arrays, literal.paths[path].arrays, strict=True):
                            np.testing.assert_allclose(
                                np.asarray(fast_block, np.float64), np.asarray(literal_block, np.float64), rtol=1e-2, atol=1e-2
                            )


def _varied(scenarios: list) -> list:
    """The grid with every output, so nonlinear outputs (which XLA cannot fold away) are compiled too."""
    outputs = ("identity", "square", "sum_of_squares")
    return [replace(s, target=replace(s.target, output=outputs[n % 3])) for n, s in enumerate(scenarios)]


@pytest.mark.slow
@pytest.mark.parametrize("rule", [LEGACY, FIXED])
def test_compiled_bundles_equal_the_literal_path_scenario_by_scenario(rule, monkeypatch):
    monkeypatch.setattr(runner, "BUNDLE_SCENARIOS", 5)  # many bundles: the pipeline traces one while compiling another
    scenarios = _varied(grid())
    compiled = run_audit(scenarios, rule=rule)
    literal = run_audit(scenarios, rule=rule, literal=True)
    assert {r.method for r in compiled.results} == {"compiled"}
    assert compiled.timings["bundles"] >= len(scenarios) / 5 and compiled.timings["failed_bundles"] == 0
    assert any(needs_x64(s) for s in scenarios) and not all(needs_x64(s) for s in scenarios)
    for ours, theirs in zip(compiled.results, literal.results, strict=True):
        name = ours.scenario.name
        assert ours.status == theirs.status, (rule, name)
        assert [(f.kind, f.paths, f.message) for f in ours.findings] == [(f.kind, f.paths, f.message) for f in theirs.findings], name
        assert [n.message for n in ours.notes] == [n.message for n in theirs.notes], name
        assert ours.arg_names == theirs.arg_names
        assert set(ours.paths) == set(theirs.paths)
        for path_name, path in ours.paths.items():
            # A path that repeats its jit twin's answer is compared with the twin the literal path ran.
            twin = theirs.paths[path.shared_with or path_name]
            assert path.status == twin.status, (rule, name, path_name)
            assert path.error == twin.error, (rule, name, path_name)
            for mine, other in zip(path.arrays or (), twin.arrays or (), strict=True):
                assert np.shape(mine) == np.shape(other), (name, path_name)
                np.testing.assert_allclose(np.asarray(mine, np.float64), np.asarray(other, np.float64), rtol=1e-3, atol=1e-3)
    statuses = {r.status for r in compiled.results}
    assert statuses == ({"consistent", "mismatch", "error"} if rule == LEGACY else {"consistent"})


def test_eager_paths_on_shared_programs_say_which_path_they_repeat():
    result = run_audit(grid()[:2], rule=LEGACY).results[0]
    assert result.method == "compiled"
    assert {name: path.shared_with for name, path in result.paths.items() if path.shared_with} == {
        "value": "jit_value",
        "jacfwd": "jit_jacfwd",
        "jacrev": "jit_jacrev",
    }
    assert all(path.shared_with is None for path in run_audit(grid()[:2], rule=LEGACY, literal=True).results[0].paths.values())


def _large_group_and_others() -> list:
    """One group big enough for the fast path (in- and out-of-range selectors) and small groups beside it."""
    values = [0, 1, 2, 5, -1, 1, 0, 2, 1, 0, 3, 1, 2, 0, 1, 2]
    assert len(values) >= FAST_PATH_MIN_GROUP
    big = [make_scenario("int8", v, 3, (2,), seed=n, name=f"big-{n}") for n, v in enumerate(values)]
    return big + grid()[:8]


@pytest.mark.slow
def test_consistency_comes_from_the_fast_path_and_findings_from_the_compiled_literal_path():
    scenarios = _large_group_and_others()
    fast = run_audit(scenarios, rule=LEGACY)
    literal = run_audit(scenarios, rule=LEGACY, literal=True)
    assert [r.status for r in fast.results] == [r.status for r in literal.results]
    assert [[f.message for f in r.findings] for r in fast.results] == [[f.message for f in r.findings] for r in literal.results]
    assert [r.scenario.name for r in fast.results] == [s.name for s in scenarios]
    big = fast.results[:16]
    assert {r.method for r in big if r.status == CONSISTENT} == {"batched"}
    assert {r.method for r in big if r.status != CONSISTENT} == {"compiled"}
    assert {r.method for r in fast.results[16:]} == {"compiled"}  # small groups skip the fast path
    assert {r.method for r in literal.results} == {"literal"}
    assert fast.timings["groups"] == 1 and fast.timings["bundles"] >= 1
    assert any(r.diagnosis is not None for r in fast.results if r.method == "compiled")


def test_a_bundle_that_fails_as_a_whole_leaves_its_scenarios_to_the_literal_path(monkeypatch):
    def broken(bundle):
        raise RuntimeError("XLA could not compile the bundle")

    monkeypatch.setattr(compiled.Bundle, "compile", broken)
    scenarios = grid()[:6]
    report = run_audit(scenarios, rule=LEGACY)
    assert {r.method for r in report.results} == {"literal"}
    assert [r.status for r in report.results] == [r.status for r in run_audit(scenarios, rule=LEGACY, literal=True).results]
    assert report.timings["bundles"] == 0 and report.timings["failed_bundles"] == 1
    for result in report.results:
        assert result.notes[-1].message == (
            "audited on the literal path: its compiled bundle failed (RuntimeError: XLA could not compile the bundle)"
        )


@pytest.mark.parametrize("literal", [False, True])
def test_a_step_too_small_for_bfloat16_is_raised_to_one_it_can_resolve(literal):
    # bfloat16 holds 284 and 286 but not 285: eps * 284 = 2 would leave x + h/2 where it was, and
    # 1e-6 moves nothing at all; both are raised to sqrt(bfloat16's epsilon) * |x|.
    scenarios = [
        replace(make_scenario("int32", 0, 2, (), dtype="bfloat16", values=[284.0, 2.0], name="step-2"), eps=2.0 / 284),
        replace(make_scenario("int32", 0, 2, (), dtype="bfloat16", values=[292.0, 2.0], name="tiny", output="square"), eps=1e-6),
    ]
    report = run_audit(scenarios, rule=FIXED, literal=literal)
    step, tiny = report.results
    for result in report.results:
        assert result.status == CONSISTENT, [f.message for f in result.findings]
        assert not result.notes, [n.message for n in result.notes]
    assert [float(b) for b in step.paths["finite_difference"].arrays] == [1.0, 0.0]
    assert float(tiny.paths["finite_difference"].arrays[0]) == pytest.approx(2 * 292, rel=0.05)  # bfloat16 squares near 85,000 are 512 apart
    assert {r.method for r in report.results} == {"literal" if literal else "compiled"}
