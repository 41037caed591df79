"""Engines never change a verdict and compute what their paths' names say: on grids, the group and
bundle engines give the literal engine's statuses, findings, notes and arrays, scenario by scenario."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from gradaudit.engines import GROUP_MIN, bundle, group
from gradaudit.engines.bundle import BundleEngine
from gradaudit.engines.group import GroupEngine
from gradaudit.engines.literal import LiteralEngine
from gradaudit.jaxenv import FIXED, LEGACY, needs_x64, select_n_rule
from gradaudit.judging.assess import assess, assess_all
from gradaudit.model.findings import CONSISTENT
from gradaudit.model.options import Options
from gradaudit.service import audit
from gradaudit.sources.scenario_files import load_paths
from gradaudit.sources.user_modules import resolve
from tests.helpers import ROOT, WRONG_SLOPE, make_scenario, write_yaml


def run_audit(scenarios, rule, literal=False):
    return audit(scenarios, Options(rule=rule, literal=literal, jobs=0, cache=None))


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
                make_scenario(
                    dtype,
                    value,
                    cases,
                    shape,
                    dtype=case_dtype,
                    seed=copy,
                    name=f"{dtype}-{cases}-{shape}-{full}-{copy}",
                )
            )
    return scenarios


def _same(ours, theirs, rule) -> None:
    """Two results of one scenario agree: status, findings, notes, and every path's answer to rounding."""
    name = ours.scenario.name
    assert ours.status == theirs.status, (rule, name, [f.message for f in theirs.findings])
    assert [(f.kind, f.paths, f.message) for f in ours.findings] == [
        (f.kind, f.paths, f.message) for f in theirs.findings
    ], name
    assert [n.message for n in ours.notes] == [n.message for n in theirs.notes], name
    assert ours.arg_names == theirs.arg_names
    assert list(ours.paths) == list(theirs.paths)
    for path_name, path in ours.paths.items():
        other = theirs.paths[path_name]
        assert path.status == other.status, (rule, name, path_name)
        assert (
            (path.error.type, path.error.message) == (other.error.type, other.error.message)
            if path.error
            else other.error is None
        )
        for mine, theirs_array in zip(path.arrays or (), other.arrays or (), strict=True):
            assert np.shape(mine) == np.shape(theirs_array), (name, path_name)
            np.testing.assert_allclose(
                np.asarray(mine, np.float64), np.asarray(theirs_array, np.float64), rtol=1e-3, atol=1e-3
            )


def computed_by(engine, scenarios) -> dict:
    """Each scenario's Computed, from the batches `engine.run` yields."""
    return {index: computed for batch in engine.run(scenarios) for index, computed in batch}


def judged_by(engine, scenarios) -> dict:
    """Each scenario's result, judged a batch at a time as the service judges them."""
    return {
        index: result
        for batch in engine.run(scenarios)
        for (index, _), result in zip(batch, assess_all([(scenarios[i], c) for i, c in batch]), strict=True)
    }


def _literal(scenarios):
    return [
        assess(s, computed)
        for s, computed in zip(scenarios, computed_by(LiteralEngine(), scenarios).values(), strict=True)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("rule", [LEGACY, FIXED])
def test_the_group_engine_gives_the_literal_verdicts_and_arrays_scenario_by_scenario(rule):
    scenarios = grid()
    engine = GroupEngine()
    assert len(engine.groups(scenarios)) < len(scenarios)  # the grid really batches
    with select_n_rule(rule):
        grouped = judged_by(engine, scenarios)
        literal = _literal(scenarios)
    assert len(grouped) == len(scenarios)
    for index, result in grouped.items():
        # Findings are reported from another engine; what the service reports from a group is a
        # consistent scenario, and there the group must agree with the literal engine on everything.
        assert (result.status == CONSISTENT) == (literal[index].status == CONSISTENT), (rule, result.scenario.name)
        if result.status == CONSISTENT:
            _same(result, literal[index], rule)
    assert {p.engine for r in grouped.values() for p in r.paths.values()} == {"group"}
    assert {p.binding for r in grouped.values() for p in r.paths.values()} == {"traced"}


def _varied(scenarios: list) -> list:
    """The grid with every output, so nonlinear outputs (which XLA cannot fold away) are compiled too."""
    outputs = ("identity", "square", "sum_of_squares")
    return [replace(s, target=replace(s.target, output=outputs[n % 3])) for n, s in enumerate(scenarios)]


@pytest.mark.slow
@pytest.mark.parametrize("rule", [LEGACY, FIXED])
def test_bundles_give_the_literal_results_scenario_by_scenario(rule):
    scenarios = _varied(grid())
    engine = BundleEngine(size=5)  # many bundles: each traced while the one before compiles
    with select_n_rule(rule):
        bundled = judged_by(engine, scenarios)
        literal = _literal(scenarios)
    assert len(bundled) == len(scenarios) and engine.counts["bundles"] >= len(scenarios) / 5 and not engine.fallen
    assert any(needs_x64(s) for s in scenarios) and not all(needs_x64(s) for s in scenarios)
    for index, result in bundled.items():
        _same(result, literal[index], rule)
    assert {p.engine for r in bundled.values() for p in r.paths.values()} == {"bundle"}
    statuses = {r.status for r in bundled.values()}
    assert statuses == ({"consistent", "mismatch", "error"} if rule == LEGACY else {"consistent"})


def test_every_path_ran_where_it_says_and_none_repeats_another():
    """Eager paths computed eagerly: an exception that only eager jacfwd raises shows there alone."""
    result = run_audit(grid()[:2], LEGACY).results[0]
    assert result.method == "bundle"
    assert {p.engine for p in result.paths.values()} == {"bundle"} and {p.binding for p in result.paths.values()} == {
        "constant"
    }
    literal = run_audit(grid()[:2], LEGACY, literal=True).results[0]
    assert {p.engine for p in literal.paths.values()} == {"literal"}


def _large_group_and_others() -> list:
    """One group big enough for the group engine (in- and out-of-range selectors) and small groups beside it."""
    values = [0, 1, 2, 5, -1, 1, 0, 2, 1, 0, 3, 1, 2, 0, 1, 2]
    assert len(values) >= GROUP_MIN
    big = [make_scenario("int8", v, 3, (2,), seed=n, name=f"big-{n}") for n, v in enumerate(values)]
    return big + grid()[:8]


def test_a_group_program_traced_under_one_rule_is_never_run_under_another():
    """The group engine keeps its compiled programs between groups; a rule substituted later (or
    put back) must still be the one each path runs under."""
    big = _large_group_and_others()[:16]
    out_of_range = [i for i, s in enumerate(big) if s.target.selector.value in (5, -1, 3)]

    def statuses(rule):
        with select_n_rule(rule):
            return {i: result.status for i, result in judged_by(GroupEngine(), big).items()}

    legacy, fixed, legacy_again = statuses(LEGACY), statuses(FIXED), statuses(LEGACY)
    assert [legacy[i] for i in out_of_range] == ["mismatch"] * len(out_of_range)
    assert set(fixed.values()) == {"consistent"} and len(fixed) == len(big)
    assert legacy_again == legacy


@pytest.mark.slow
def test_a_group_reports_what_its_jit_paths_reproduce_and_bundles_take_the_rest():
    scenarios = _large_group_and_others()
    fast = run_audit(scenarios, LEGACY)
    literal = run_audit(scenarios, LEGACY, literal=True)
    assert [r.status for r in fast.results] == [r.status for r in literal.results]
    assert [[f.message for f in r.findings] for r in fast.results] == [
        [f.message for f in r.findings] for r in literal.results
    ]
    assert [r.scenario.name for r in fast.results] == [s.name for s in scenarios]
    big = fast.results[:16]
    # Out-of-range selectors: eager (vmapped) and jit (each scenario's own call) jacrev agree in
    # being wrong, so the jit paths reproduce the finding and the group reports it.
    assert {r.method for r in big} == {"group"} and {r.status for r in big} == {"consistent", "mismatch"}
    assert {p.binding for r in big for p in r.paths.values()} == {"traced"}
    assert {r.method for r in fast.results[16:]} == {"bundle"}  # small groups go to bundles
    assert {r.method for r in literal.results} == {"literal"}
    assert fast.timings["groups"] == 1 and fast.timings["bundles"] >= 1
    assert all(r.diagnosis is not None for r in big if r.status != CONSISTENT)


def _eager_reverse_zeroed_for(member: int):
    """The group engine's eager computations, with jacrev's answer zeroed for one member: an
    eager answer that only the batched run gives."""
    real = group._batched

    def batched(fn, n):
        computations = dict(real(fn, n))
        reverse = computations[group.REVERSE]

        def zeroed(*inputs):
            blocks = reverse(*inputs)
            return tuple(block.at[member].set(0.0) for block in blocks)

        computations[group.REVERSE] = zeroed
        return computations

    return batched


@pytest.mark.slow
def test_a_member_whose_eager_and_jit_paths_split_is_audited_again_as_written(monkeypatch):
    scenarios = _large_group_and_others()[:16]
    in_range = next(i for i, s in enumerate(scenarios) if 0 <= s.target.selector.value < 3)
    monkeypatch.setattr(group, "_batched", _eager_reverse_zeroed_for(in_range))
    report = run_audit(scenarios, LEGACY)
    assert report.results[in_range].method == "bundle" and report.results[in_range].status == CONSISTENT
    assert {r.method for i, r in enumerate(report.results) if i != in_range} == {"group"}


def test_a_member_whose_batched_value_is_not_its_own_is_left_to_another_engine(monkeypatch):
    """The first member's function, mapped over its points, gives another value at its centre than
    called on its own: its finite differences would not be its function's, so it is not taken."""
    real = group._programs
    called = []

    def shifted(*key):
        calls, failures = real(*key)

        def shifting(call):
            def at_points(inputs, stacks):
                answers = call(inputs, stacks)
                called.append(1)
                if len(called) == 1:
                    answers = {**answers, group.POINTS: answers[group.POINTS].at[0].add(1.0)}
                return answers

            return at_points

        return [(names, shifting(call) if group.POINTS in names else call) for names, call in calls], failures

    monkeypatch.setattr(group, "_programs", shifted)
    scenarios = _large_group_and_others()[:16]
    with select_n_rule(LEGACY):
        taken = computed_by(GroupEngine(), scenarios)
    assert sorted(taken) == list(range(1, 16))


@pytest.mark.slow
def test_the_catalog_gets_the_literal_engines_verdicts(catalog_report):
    """The default run (groups, bundles, literal functions) and --literal agree on every catalog scenario."""
    scenarios = load_paths([str(ROOT / "scenarios")]).scenarios
    default, literal = catalog_report, run_audit(scenarios, LEGACY, literal=True)
    for ours, theirs in zip(default.results, literal.results, strict=True):
        assert ours.status == theirs.status, ours.scenario.name
        assert [f.fingerprint for f in ours.findings] == [f.fingerprint for f in theirs.findings], ours.scenario.name


def test_a_bundle_that_fails_as_a_whole_leaves_its_scenarios_to_the_literal_engine(monkeypatch):
    def broken(self):
        raise RuntimeError("XLA could not compile the bundle")

    monkeypatch.setattr(bundle.Bundle, "compile", broken)
    scenarios = grid()[:6]
    report = run_audit(scenarios, LEGACY)
    assert {r.method for r in report.results} == {"literal"}
    assert [r.status for r in report.results] == [r.status for r in run_audit(scenarios, LEGACY, literal=True).results]
    assert report.timings["bundles"] == 0 and report.timings["failed_bundles"] == 1
    for result in report.results:
        assert result.notes[-1].message == (
            "audited on the literal engine: its compiled bundle failed (RuntimeError: XLA could not compile the bundle)"
        )


@pytest.mark.parametrize("literal", [False, True])
def test_a_step_too_small_for_bfloat16_is_raised_to_one_it_can_resolve(literal):
    # bfloat16 holds 284 and 286 but not 285: eps * 284 = 2 would leave x + h/2 where it was, and
    # 1e-6 moves nothing at all; both are raised to sqrt(bfloat16's epsilon) * |x|.
    scenarios = [
        replace(make_scenario("int32", 0, 2, (), dtype="bfloat16", values=[284.0, 2.0], name="step-2"), eps=2.0 / 284),
        replace(
            make_scenario("int32", 0, 2, (), dtype="bfloat16", values=[292.0, 2.0], name="tiny", output="square"),
            eps=1e-6,
        ),
    ]
    report = run_audit(scenarios, FIXED, literal=literal)
    step, tiny = report.results
    for result in report.results:
        assert result.status == CONSISTENT, [f.message for f in result.findings]
        # The unselected case (2.0) takes a step of 0.18, and the value near 284 rounds by 1: finite
        # differences there cannot tell its derivative from a hundred, and say so.
        # And bfloat16's default tolerance (0.35) is said to be coarse.
        said = [n.message for n in result.notes]
        assert any(m.startswith("finite differences check these derivatives only within 0.354") for m in said), said
        assert all(
            n.location == "d out/d case 1" and "cannot check 1 of 2" in n.message
            for n in result.notes
            if "rtol" not in n.values
        ), said
    assert [float(b) for b in step.paths["finite_difference"].arrays] == [1.0, 0.0]
    assert float(tiny.paths["finite_difference"].arrays[0]) == pytest.approx(
        2 * 292, rel=0.05
    )  # bfloat16 squares near 85,000 are 512 apart
    assert {r.method for r in report.results} == {"literal" if literal else "bundle"}


FUNCTION_GROUPS = (
    WRONG_SLOPE
    + """

def max_all(x):
    return jnp.max(x)


def scaled_take(x, i):
    return 2.0 * jnp.take(x, i, mode="clip")
"""
)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [0, 2])
def test_function_groups_give_the_literal_engines_verdicts(tmp_path, jobs):
    """A user's function called at many points forms a group (here with NaN inputs, whose batched
    derivative may differ from the unbatched one, and integer inputs captured and traced); every
    verdict equals the literal engine's, and a group reports only what found nothing: a finding and
    its class come from each path computed as named (a group's jit paths are compiled together)."""
    (tmp_path / "fns.py").write_text(FUNCTION_GROUPS)
    rng = np.random.default_rng(3)
    lines = ["scenarios:"]
    for n in range(2 * GROUP_MIN + 2):
        values = [float(v) for v in np.round(rng.standard_normal(3), 3)]
        if n % 3 == 0:
            values[n % 3] = ".nan"
        lines += [
            f"  - name: max-{n}",
            "    fn: fns:max_all",
            f"    inputs: [{{dtype: float32, value: [{', '.join(map(str, values))}]}}]",
        ]
        lines += [
            f"  - name: slope-{n}",
            "    fn: fns:double_slope",
            f"    inputs: [{{dtype: float32, value: [{', '.join(map(str, np.abs(values[1:])))}, 0.5]}}]",
        ]
        lines += [
            f"  - name: take-{n}",
            "    fn: fns:scaled_take",
            f"    inputs: [{{dtype: float32, value: [1.0, 2.0, 3.0]}}, {{dtype: int32, value: {2 if n % 2 else 5}}}]",
        ]
    (tmp_path / "groups.yaml").write_text("\n".join(lines).replace("'.nan'", ".nan") + "\n")
    scenarios = load_paths([str(tmp_path / "groups.yaml")]).scenarios
    default = audit(scenarios, Options(rule=LEGACY, jobs=jobs, cache=None))
    literal = audit(scenarios, Options(rule=LEGACY, jobs=jobs, cache=None, literal=True))
    for ours, theirs in zip(default.results, literal.results, strict=True):
        assert ours.status == theirs.status, ours.scenario.name
        assert [f.fingerprint for f in ours.findings] == [f.fingerprint for f in theirs.findings], ours.scenario.name
    grouped = [r for r in default.results if r.method == "group"]
    assert default.timings["groups"] >= 2 and len(grouped) >= GROUP_MIN
    assert all(r.status == CONSISTENT for r in grouped)
    found = [r for r in default.results if r.findings]
    assert found and {r.method for r in found} == {"literal"}
    assert {p.binding for r in grouped if r.scenario.name.startswith("take") for p in r.paths.values()} == {
        "traced",
        "constant",
    }
    assert {r.method for r in literal.results} == {"literal"}


def test_calls_capturing_different_values_form_one_group(tmp_path):
    """Calls of one function whose captured index differs from call to call (each value once) are
    one group: the traced binding computed for all of them together, the captured one for each
    value on its own; verdicts, findings and binding labels equal the literal engine's."""
    (tmp_path / "fns.py").write_text(FUNCTION_GROUPS)
    lines = ["scenarios:"]
    for n, index in enumerate([-2, 0, 1, 2, 3, 7]):
        lines += [
            f"  - name: take-{n}",
            "    fn: fns:scaled_take",
            f"    inputs: [{{dtype: float32, value: [1.0, 2.0, 3.0]}}, {{dtype: int32, value: {index}}}]",
        ]
    (tmp_path / "groups.yaml").write_text("\n".join(lines) + "\n")
    scenarios = load_paths([str(tmp_path / "groups.yaml")]).scenarios
    default = audit(scenarios, Options(rule=LEGACY, jobs=0, cache=None))
    literal = audit(scenarios, Options(rule=LEGACY, jobs=0, cache=None, literal=True))
    assert default.timings["groups"] == 1
    assert [r.method for r in default.results] == ["group"] * len(scenarios)
    for ours, theirs in zip(default.results, literal.results, strict=True):
        assert ours.status == theirs.status, ours.scenario.name
        assert [f.fingerprint for f in ours.findings] == [f.fingerprint for f in theirs.findings], ours.scenario.name
        assert list(ours.paths) == list(theirs.paths)
        captured = ours.paths["jit_jacrev:const"].arrays[0]
        np.testing.assert_allclose(captured, theirs.paths["jit_jacrev:const"].arrays[0])
    # Each captured index reads its own element: the group did not share one member's answer.
    picked = [int(np.argmax(r.paths["jit_jacrev:const"].arrays[0])) for r in default.results]
    assert picked == [0, 0, 1, 2, 2, 2]


def _calls(folder, name: str, calls: list[tuple[str, int | None, float]]):
    """A scenario file of calls (function of FUNCTION_GROUPS, captured index or None, step)."""
    (folder / "fns.py").write_text(FUNCTION_GROUPS)
    lines = ["scenarios:"]
    for n, (fn, index, eps) in enumerate(calls):
        inputs = "{dtype: float32, value: [1.0, 2.0, 3.0]}" + (
            "" if index is None else f", {{dtype: int32, value: {index}}}"
        )
        lines.append(f"  - {{name: c{n}, fn: 'fns:{fn}', eps: {eps}, inputs: [{inputs}]}}")
    return write_yaml(folder, name, "\n".join(lines) + "\n")


COUNT_PROGRAMS = """
import sys
from gradaudit.engines.group import GroupEngine
from gradaudit.jaxenv import JaxEvents
from gradaudit.sources.scenario_files import load_paths

events = JaxEvents()
done = sum(len(batch) for batch in GroupEngine().run(load_paths([sys.argv[1]]).scenarios))
print(done, events.take()["programs"])
"""


def test_eager_programs_compile_once_for_groups_and_parts_of_sizes_that_differ_a_little(tmp_path):
    """Eager paths run as one eager vmap over a batch padded to a power of two: a group in parts
    capturing values 1, 2, 3 and 3 members compiles the programs one in parts of 3 does, and
    groups of 9 and 12 members (of one function, steps apart) compile the programs groups of 12
    and 12 do (eager operations compile per shape; each counted in a fresh process). Each member
    still gets its own eager answers."""
    from gradaudit.jaxenv import CACHE_SETTINGS

    # No compilation cache: a program read from it is counted apart from one compiled.
    environ = {name: value for name, value in os.environ.items() if name.lower() not in CACHE_SETTINGS}

    def programs(calls: list[tuple[str, int | None, float]]) -> int:
        path = _calls(tmp_path, "calls.yaml", calls)
        ran = subprocess.run(
            [sys.executable, "-c", COUNT_PROGRAMS, str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=environ,
            check=True,
        )
        done, compiled = map(int, ran.stdout.split())
        assert done == len(calls)
        return compiled

    def take(indices: list[int]) -> list[tuple[str, int | None, float]]:
        return [("scaled_take", index, 0.01) for index in indices]

    assert programs(take([0, 1, 1, 2, 2, 2, 3, 3, 3])) == programs(take([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]))
    assert programs([("max_all", None, 0.01)] * 9 + [("max_all", None, 0.02)] * 12) == programs(
        [("max_all", None, 0.01)] * 12 + [("max_all", None, 0.02)] * 12
    )
    scenarios = load_paths([str(_calls(tmp_path, "take.yaml", take([0, 1, 1, 2, 2, 2])))]).scenarios
    found = computed_by(GroupEngine(), scenarios)
    picked = [int(np.argmax(found[n].paths["jacrev:const"].arrays[0])) for n in range(6)]
    assert picked == [0, 1, 1, 2, 2, 2]  # each member's eager row, not a padding copy's


def test_a_group_whose_points_cannot_be_evaluated_leaves_every_member(monkeypatch):
    """The function mapped over its finite-difference points fails (the function alone, point by
    point, might not): no member is taken, each goes on to the next engine."""
    real = group._programs

    def without_points(*key):
        calls, failures = real(*key)

        def dropping(call):
            return lambda inputs, stacks: {k: v for k, v in call(inputs, stacks).items() if k != group.POINTS}

        failed = RuntimeError("the function mapped over its points fails")
        return [(names, dropping(call)) for names, call in calls], {**failures, group.POINTS: failed}

    monkeypatch.setattr(group, "_programs", without_points)
    with select_n_rule(LEGACY):
        assert computed_by(GroupEngine(), _large_group_and_others()[:16]) == {}


def test_a_group_whose_one_program_cannot_be_built_leaves_every_member(monkeypatch):
    """select_n's jit paths are one program (selections, which it computes as each path's own
    program does): XLA refusing it leaves every member to the next engine."""

    def broken(*key):
        raise RuntimeError("XLA could not compile the group's program")

    monkeypatch.setattr(group, "_programs", broken)
    with select_n_rule(LEGACY):
        assert computed_by(GroupEngine(), _large_group_and_others()[:16]) == {}


def _sine_calls(folder) -> list:
    lines = ["scenarios:"] + [
        f"  - {{name: sin-{n}, fn: 'jax.numpy:sin', inputs: [{{dtype: float32, value: [{n}.5, -1.25]}}]}}"
        for n in range(GROUP_MIN + 2)
    ]
    return load_paths([str(write_yaml(folder, "sines.yaml", "\n".join(lines) + "\n"))]).scenarios


def test_a_jit_path_whose_own_program_cannot_be_built_is_that_paths_error_for_every_member(tmp_path, monkeypatch):
    """A user's function: each jit path is its own program, and one XLA refuses is that path's error
    for each member, as a user's `jax.jit(jax.jacrev(f))` raises; the other paths are computed."""
    real = group._programs

    def without_reverse(*key):
        calls, failures = real(*key)
        assert len(calls) == 4  # value, jacfwd, jacrev, points: each its own program
        refused = RuntimeError("XLA could not compile jit(jacrev)")
        return [(names, call) for names, call in calls if group.REVERSE not in names], {
            **failures,
            group.REVERSE: refused,
        }

    monkeypatch.setattr(group, "_programs", without_reverse)
    scenarios = _sine_calls(tmp_path)
    found = computed_by(GroupEngine(min_size=GROUP_MIN), scenarios)
    assert sorted(found) == list(range(len(scenarios)))
    for computed in found.values():
        assert computed.paths["jit_jacrev"].error.message == "XLA could not compile jit(jacrev)"
        assert computed.paths["jit_jacfwd"].error is None and computed.paths["jacrev"].error is None


FAITHFUL_CALLS = [
    ("jax.numpy:ldexp", [[1.5, -2.0, 5.877471754111438e-39, 1e-40, 0.25, -3e-39], "int32", [0, 3, 0, 2, -1, 1]]),
    ("jax.numpy:sin", [[0.5, -1e-39, 3.0, 1e-42, -2.5, 7.0], None, None]),
    ("jax.numpy:arctan2", [[1.0, -1e-39, 0.0, 2.0, 1e-41, -3.0], "float32", [2.0, 3.0, -1e-40, 0.5, 1e-39, 4.0]]),
]


def test_each_jit_path_of_a_group_member_is_the_users_own_jit_of_that_transform(tmp_path):
    """A group calls one program per jit path, compiled once for its members: each member's
    jit_value, jit_jacfwd and jit_jacrev equal, bit for bit, what `jax.jit(jax.jacrev(f))` and the
    others give the user at its inputs, subnormal ones included (XLA may compile a program holding
    several transforms to other answers than each alone)."""
    import jax

    lines = ["scenarios:"]
    for fn, (xs, other, others) in FAITHFUL_CALLS:
        for n, x in enumerate(xs):
            second = "" if other is None else f", {{dtype: {other}, value: {others[n]}}}"
            lines.append(f"  - {{name: '{fn}-{n}', fn: '{fn}', inputs: [{{dtype: float32, value: {x}}}{second}]}}")
    scenarios = load_paths([str(write_yaml(tmp_path, "calls.yaml", "\n".join(lines) + "\n"))]).scenarios
    found = computed_by(GroupEngine(min_size=GROUP_MIN), scenarios)
    assert len(found) == len(scenarios)
    for index, scenario in enumerate(scenarios):
        fn = resolve(scenario.target.fn, scenario.target.root)
        inputs = [np.asarray(spec.array()) for spec in scenario.target.inputs]
        argnums = (0, 1) if np.issubdtype(inputs[-1].dtype, np.floating) and len(inputs) == 2 else (0,)
        users = {
            "jit_value": (jax.jit(fn)(*inputs),),
            "jit_jacfwd": jax.jit(jax.jacfwd(fn, argnums=argnums))(*inputs),
            "jit_jacrev": jax.jit(jax.jacrev(fn, argnums=argnums))(*inputs),
        }
        for name, theirs in users.items():
            ours = found[index].paths[name].arrays
            assert len(ours) == len(theirs), (scenario.name, name)
            for mine, user in zip(ours, theirs, strict=True):
                assert np.array_equal(np.asarray(mine), np.asarray(user), equal_nan=True), (
                    scenario.name,
                    name,
                    mine,
                    user,
                )


def test_eager_and_jit_twins_must_agree_entry_by_entry():
    """A group member is kept only where each eager path says what its jit twin says, whatever
    the findings name (a value split names both sides of one finding)."""
    from gradaudit.judging.judge import twins_agree
    from gradaudit.judging.tolerances import Tolerances
    from gradaudit.model.paths import PathError, PathResult

    tolerances = Tolerances(fd_rtol=1e-2, fd_atol=1e-2, ad_rtol=1e-6, ad_atol=1e-6)
    one, other = (np.array([1.0, 2.0]),), (np.array([1.0, 2.5]),)
    error = PathError(type="IndexError", message="tuple index out of range", where="lax.py:1 in rule")
    paths = {
        "value": PathResult("value", one),
        "jit_value": PathResult("jit_value", one),
        "jacrev": PathResult("jacrev", None, error=error),
        "jit_jacrev": PathResult("jit_jacrev", None, error=error),
        "finite_difference": PathResult("finite_difference", other),
    }
    assert twins_agree(paths, tolerances)
    assert not twins_agree({**paths, "jit_value": PathResult("jit_value", other)}, tolerances)
    assert not twins_agree({**paths, "jit_jacrev": PathResult("jit_jacrev", one)}, tolerances)
    assert not twins_agree(
        {
            **paths,
            "jit_value:const": PathResult("jit_value:const", other),
            "value:const": PathResult("value:const", one),
        },
        tolerances,
    )


def test_an_engine_lets_go_of_its_programs_every_release_every_groups_and_gives_the_same(monkeypatch):
    scenarios = [
        make_scenario(value=v % 2, shape=shape, seed=v, name=f"s{len(shape)}-{v}")
        for shape in ((), (2,), (3,))
        for v in range(4)
    ]

    def run() -> tuple[dict, list[int]]:
        engine, held, results = GroupEngine(), [], {}
        for batch in engine.run(scenarios):
            for index, computed in batch:
                results[index] = [
                    (path.name, *map(np.ndarray.tobytes, path.ok_arrays)) for path in computed.paths.values() if path.ok
                ]
            held.append(group._programs.cache_info().currsize)
        return results, held

    group.release_programs()
    kept, held = run()
    assert held == [1, 2, 3]  # one set of programs a group, all kept
    group.release_programs()
    monkeypatch.setattr(group, "RELEASE_EVERY", 2)
    released, held = run()
    assert held == [1, 1, 2]  # let go as the second group started
    assert released == kept


def test_members_judged_together_get_what_each_gets_judged_alone():
    """A group's members are judged together (their entry-by-entry work one NumPy call for them
    all): each must get the status, findings, notes, provenance and diagnosis it gets alone, under
    its own tolerance (every other member here accepts far wider finite-difference gaps)."""
    from gradaudit.model.scenario import Tolerance

    scenarios = [
        replace(s, tolerance=Tolerance(rtol=0.5, atol=10.0)) if n % 2 else s
        for n, s in enumerate(_large_group_and_others())
    ]
    with select_n_rule(LEGACY):
        batches = [[(scenarios[i], computed) for i, computed in batch] for batch in GroupEngine().run(scenarios)]
    assert max(map(len, batches)) >= GROUP_MIN
    seen = []
    for batch in batches:
        for together, (scenario, computed) in zip(assess_all(batch), batch, strict=True):
            alone = assess(scenario, computed)
            assert repr(
                (together.status, together.findings, together.notes, together.provenance, together.diagnosis)
            ) == repr((alone.status, alone.findings, alone.notes, alone.provenance, alone.diagnosis)), scenario.name
            seen.append((together.status, scenario.tolerance is None, len(together.findings)))
    assert {status for status, _, _ in seen} >= {"consistent", "mismatch"}
    # The wider tolerance changed what some members were told: a member judged with another's would differ.
    assert sum(n for _, default, n in seen if default) > sum(n for _, default, n in seen if not default)
