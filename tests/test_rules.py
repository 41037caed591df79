"""Rule substitution: legacy and fixed rules, always restored, independent of the installed JAX."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax._src.interpreters import ad
from jax._src.lax import lax as lax_internal

from gradaudit.jaxenv import FIXED, LEGACY, VARIANTS, installed_rule, select_n_rule
from gradaudit.model.options import Options
from gradaudit.model.paths import (
    HESSIAN_FINITE_DIFFERENCE,
    HESSIAN_FWD_FWD,
    HESSIAN_REV_REV,
    JIT_HESSIAN_FWD_FWD,
    JIT_HESSIAN_FWD_REV,
    JIT_HESSIAN_REV_REV,
)
from gradaudit.service import AuditInterrupted, audit, audit_one
from tests.helpers import make_scenario, run_cli, write_yaml

ROOT = Path(__file__).resolve().parents[1]
SEED_SUITE = str(ROOT / "scenarios" / "select_n")
REPRESENTATIVE = str(ROOT / "scenarios" / "select_n" / "representative.yaml")


def reverse_gradient(which, *cases):
    return jax.grad(lambda *c: jnp.sum(lax.select_n(which, *c)), argnums=tuple(range(len(cases))))(*cases)


def test_rules_route_as_the_seed_describes():
    with select_n_rule(LEGACY):
        assert [float(g) for g in reverse_gradient(jnp.int32(2), 2.0, 5.0)] == [0.0, 0.0]
        assert [float(g) for g in reverse_gradient(jnp.int32(-1), 2.0, 5.0)] == [0.0, 0.0]
        with pytest.raises(IndexError):
            reverse_gradient(jnp.bool_(False), 2.0)
    with select_n_rule(FIXED):
        assert [float(g) for g in reverse_gradient(jnp.int32(2), 2.0, 5.0)] == [0.0, 1.0]
        assert [float(g) for g in reverse_gradient(jnp.int32(-1), 2.0, 5.0)] == [1.0, 0.0]
        assert [float(g) for g in reverse_gradient(jnp.uint32(2**32 - 1), 2.0, 5.0)] == [0.0, 1.0]
        assert [float(g) for g in reverse_gradient(jnp.bool_(False), 2.0)] == [1.0]
        # Compiled reverse mode goes through the same rule.
        grads = jax.jit(jax.grad(lambda a, b: lax.select_n(jnp.int8(9), a, b), argnums=(0, 1)))(2.0, 5.0)
        assert [float(g) for g in grads] == [0.0, 1.0]


def test_a_program_compiled_under_one_rule_never_serves_another():
    """JAX's caches key on the rule in force, so the same jitted function alternating between rules
    gives each rule's gradient (not the first one traced), eagerly and compiled."""
    compiled = jax.jit(jax.grad(lambda a: lax.select_n(jnp.int32(2), a, 2 * a)))
    wanted = {LEGACY: 0.0, FIXED: 2.0}
    for rule in (FIXED, LEGACY, FIXED, LEGACY):
        with select_n_rule(rule):
            assert float(compiled(1.5)) == wanted[rule], rule
            assert float(jax.grad(lambda a: lax.select_n(jnp.int32(2), a, 2 * a))(1.5)) == wanted[rule], rule
            assert (
                float(jax.vjp(jax.jit(lambda a: lax.select_n(jnp.int32(-1), 2 * a, a)), 1.5)[1](1.0)[0])
                == (wanted[rule])
            ), rule


@pytest.mark.parametrize("interrupt", [RuntimeError("boom"), KeyboardInterrupt()])
def test_rule_is_restored_after_a_failing_run(interrupt):
    original = installed_rule()

    def fail(result):
        raise interrupt

    # Ctrl-C comes out as AuditInterrupted, carrying the report of what finished.
    expected = AuditInterrupted if isinstance(interrupt, KeyboardInterrupt) else RuntimeError
    with pytest.raises(expected):
        audit([make_scenario(value=2)], Options(rule=FIXED, literal=True, jobs=0), on_result=fail)
    assert installed_rule() is original
    assert installed_rule() is not VARIANTS[FIXED]


def test_installed_rule_is_untouched_after_rule_fixed_in_one_process(tmp_path):
    original = installed_rule()
    before = [float(g) for g in reverse_gradient(jnp.int32(2), 2.0, 5.0)]
    assert run_cli("run", SEED_SUITE, "--rule", "fixed").exit_code == 0
    assert installed_rule() is original
    assert [float(g) for g in reverse_gradient(jnp.int32(2), 2.0, 5.0)] == before


def test_legacy_is_reproduced_even_when_the_installed_rule_is_the_fixed_one(monkeypatch):
    monkeypatch.setitem(ad.primitive_transposes, lax_internal.select_n_p, VARIANTS[FIXED])
    installed = run_cli("run", SEED_SUITE, "--rule", "installed")
    assert installed.exit_code == 0 and "17 scenarios: 17 consistent, 0 mismatch, 0 error" in installed.stdout
    legacy = run_cli("run", SEED_SUITE, "--rule", "legacy")
    assert legacy.exit_code == 1 and "17 scenarios: 6 consistent, 9 mismatch, 2 error" in legacy.stdout
    assert installed_rule() is VARIANTS[FIXED]


def test_fixed_rule_clears_the_seed_suite_including_jit_reverse():
    result = run_cli("run", SEED_SUITE, "--rule", "fixed", "--json", "-")
    assert result.exit_code == 0
    report = result.json()
    assert report["environment"]["rule"] == "fixed"
    assert report["summary"] == {"total": 17, "consistent": 17, "mismatch": 0, "error": 0}
    assert all(r["paths"]["jit_jacrev"]["status"] == "ok" for r in report["results"])


SEED_ROWS = {
    # name: (legacy jacrev, fixed jacrev), as in the seed's "Representative scalar results"
    "int32-negative-two-cases": ({"case 0": 0.0, "case 1": 0.0}, {"case 0": 1.0, "case 1": 0.0}),
    "int32-above-two-cases": ({"case 0": 0.0, "case 1": 0.0}, {"case 0": 0.0, "case 1": 1.0}),
    "uint32-max-two-cases": ({"case 0": 0.0, "case 1": 0.0}, {"case 0": 0.0, "case 1": 1.0}),
    "bool-false-one-case": ("IndexError", {"case 0": 1.0}),
    "int32-in-range-two-cases": ({"case 0": 0.0, "case 1": 1.0}, {"case 0": 0.0, "case 1": 1.0}),
}


def test_compare_shows_the_seed_rows_under_both_rules():
    result = run_cli("compare", REPRESENTATIVE, "--rules", "legacy", "fixed", "--json", "-", "--json-detail", "full")
    assert result.exit_code == 0  # the last rule is consistent everywhere
    report = result.json()
    assert report["schema"] == "gradaudit.compare/1" and report["rules"] == ["legacy", "fixed"]
    assert report["summary"]["legacy"] == {"total": 5, "consistent": 1, "mismatch": 3, "error": 1}
    assert report["summary"]["fixed"] == {"total": 5, "consistent": 5, "mismatch": 0, "error": 0}
    for rule, column in (("legacy", 0), ("fixed", 1)):
        by_name = {r["name"]: r for r in report["reports"][rule]["results"]}
        for name, expected in SEED_ROWS.items():
            jacrev = by_name[name]["paths"]["jacrev"]
            if expected[column] == "IndexError":
                assert jacrev["error"]["type"] == "IndexError"
            else:
                assert jacrev["jacobians"] == expected[column], (rule, name)
    assert "legacy → fixed: 4 changed (1 error → consistent, 3 mismatch → consistent), 1 unchanged" in result.stderr


def test_compare_table_and_exit_code_follow_the_last_rule():
    result = run_cli("compare", REPRESENTATIVE, "--rules", "fixed", "legacy")
    assert result.exit_code == 1
    row = next(line for line in result.stdout.splitlines() if "bool-false-one-case" in line)
    assert row.index("(1,)") < row.index("IndexError")
    assert "fixed → legacy: 4 changed (1 consistent → error, 3 consistent → mismatch), 1 unchanged" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("--rules", "legacy"),
        ("--rules", "legacy", "legacy"),
        ("--rules", "legacy", "fxed"),
        ("--rules=legacy,bogus",),
    ],
)
def test_compare_needs_two_known_rules(args):
    result = run_cli("compare", REPRESENTATIVE, *args)
    assert result.exit_code == 2
    assert "--rules" in result.stderr


def test_squared_selection_probe_second_derivative():
    probe = make_scenario(value=2, values=(2.0, 5.0), order=2, output="square")
    hessians = (
        JIT_HESSIAN_FWD_REV,
        HESSIAN_FWD_FWD,
        JIT_HESSIAN_FWD_FWD,
        JIT_HESSIAN_REV_REV,
        HESSIAN_FINITE_DIFFERENCE,
    )
    with select_n_rule(FIXED):
        fixed = audit_one(probe)
    assert fixed.status == "consistent"
    for path in hessians:
        blocks = [float(b) for b in fixed.paths[path].arrays]
        assert blocks == pytest.approx([0.0, 0.0, 0.0, 2.0], abs=1e-3), path  # d2(b^2)/db^2 = 2
    with select_n_rule(LEGACY):
        legacy = audit_one(probe)
    assert legacy.status == "mismatch"
    assert float(legacy.paths[HESSIAN_REV_REV].arrays[3]) == 0.0
    assert float(legacy.paths[JIT_HESSIAN_FWD_FWD].arrays[3]) == 2.0
    assert any(HESSIAN_REV_REV in f.paths and HESSIAN_FINITE_DIFFERENCE in f.paths for f in legacy.findings)


def test_order_and_output_from_yaml_and_hessian_in_json(tmp_path):
    path = write_yaml(
        tmp_path,
        "probe.yaml",
        """
        scenarios:
          - name: probe
            selector: {dtype: int32, value: [0, 1, 3]}
            cases: 2
            shape: [3]
            dtype: float64
            order: 2
            output: sum_of_squares
        """,
    )
    result = run_cli("run", str(path), "--rule", "fixed", "--json", "-", "--json-detail", "full")
    assert result.exit_code == 0, result.stderr
    entry = result.json()["results"][0]
    assert entry["scenario"]["order"] == 2 and entry["scenario"]["output"] == "sum_of_squares"
    inputs = entry["inputs"]
    hessian = entry["paths"]["jit_jacrev_jacrev"]["hessian"]
    assert set(hessian) == {"case 0 d case 0", "case 0 d case 1", "case 1 d case 0", "case 1 d case 1"}
    # sum of squares of the selection: d2/dcase0^2 is 2 on element 0, d2/dcase1^2 is 2 on elements 1 and 2.
    assert hessian["case 0 d case 0"] == [[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert hessian["case 1 d case 1"] == [[0.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]]
    assert entry["paths"]["jacfwd"]["jacobians"]["case 1"] == [0.0, 2 * inputs["case 1"][1], 2 * inputs["case 1"][2]]
    bad = write_yaml(
        tmp_path, "bad.yaml", path.read_text().replace("order: 2", "order: 3").replace("sum_of_squares", "cube")
    )
    result = run_cli("run", str(bad))
    assert result.exit_code == 2
    assert f"{bad}:7:12: order must be one of 1, 2, got 3" in result.stderr
    assert f"{bad}:8:13: output must be one of identity, square, sum_of_squares, got 'cube'" in result.stderr
