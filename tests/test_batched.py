"""The fast path never changes a verdict: on a grid, batched verdicts equal the literal path's, scenario by scenario."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gradaudit.batched import audit_group, group_key
from gradaudit.judge import CONSISTENT
from gradaudit.rules import FIXED, LEGACY, select_n_rule
from gradaudit.runner import audit_scenario, run_audit, tolerances_for, x64_for
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


def test_run_reports_findings_from_the_literal_path_and_consistency_from_the_fast_path():
    scenarios = grid()[:12]
    fast = run_audit(scenarios, rule=LEGACY)
    literal = run_audit(scenarios, rule=LEGACY, literal=True)
    assert [r.status for r in fast.results] == [r.status for r in literal.results]
    assert [r.scenario.name for r in fast.results] == [s.name for s in scenarios]
    for result in fast.results:
        assert result.method == ("batched" if result.status == CONSISTENT else "literal")
    assert {r.method for r in literal.results} == {"literal"}
    assert fast.timings["groups"] == len({group_key(s) for s in scenarios})


def test_a_group_of_one_goes_straight_to_the_literal_path():
    scenarios = grid()
    alone = [scenarios[0], *[s for s in scenarios if group_key(s) != group_key(scenarios[0])][:6]]
    report = run_audit(alone, rule=FIXED)
    assert report.results[0].method == "literal" and report.results[0].status == CONSISTENT
    assert {r.method for r in report.results[1:]} == {"batched"}
    assert report.timings["groups"] == len({group_key(s) for s in alone[1:]})
