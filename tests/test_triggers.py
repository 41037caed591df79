"""A diagnosis blames a primitive only where the function meets it with the operands that trigger it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from gradaudit.model.mechanisms import (
    CLAMP_INVERTED,
    NON_FINITE_INSIDE,
    NON_FINITE_UNSELECTED,
    READ_OUT_OF_RANGE,
    SELECT_OUT_OF_RANGE,
    non_finite_inside,
)
from gradaudit.targets.base import Target
from gradaudit.targets.triggers import triggered


def met(fn, *args, fixed=(), tangents=True) -> frozenset[str]:
    target = Target(
        fn=fn, args=tuple(np.asarray(a) for a in args), arg_names=tuple(f"x{i}" for i in range(len(args))), fixed=fixed
    )
    return triggered(target, tangents)


def test_clamp_is_blamed_only_with_its_bounds_inverted():
    def clamped(lo, x, hi):
        return lax.clamp(lo, x, hi)

    assert met(clamped, np.float32(2), np.float32(0), np.float32(1)) == {CLAMP_INVERTED}
    assert met(clamped, np.float32(0), np.float32(0.5), np.float32(1)) == frozenset()


def test_select_n_is_blamed_only_with_its_selector_out_of_range():
    def chosen(which):
        return lambda a, b: lax.select_n(which, a, b)

    assert met(chosen(jnp.int32(5)), np.float32(1), np.float32(2)) == {SELECT_OUT_OF_RANGE}
    assert met(chosen(jnp.int32(-1)), np.float32(1), np.float32(2)) == {SELECT_OUT_OF_RANGE}
    assert met(chosen(jnp.int32(1)), np.float32(1), np.float32(2)) == frozenset()


@pytest.mark.parametrize(
    ("index", "expected"),
    [(np.int32(1), frozenset()), (np.uint8(255), {READ_OUT_OF_RANGE}), (np.int8(1), {READ_OUT_OF_RANGE})],
    ids=["in range", "past the end", "a dtype too narrow for the array"],
)
def test_a_read_is_blamed_for_an_index_outside_the_array_or_a_dtype_that_cannot_hold_it(index, expected):
    x = np.arange(300 if index.dtype == np.int8 else 3, dtype=np.float32)
    # The index passed in, as a traced input (a NumPy integer captured in `x[i]` is a static slice).
    assert met(lambda x, i: x[i], x, fixed=(index,)) == expected
    assert met(lambda x, i: lax.dynamic_slice(x, (i,), (1,)), x, fixed=(index,)) == expected


def test_a_nan_from_an_unselected_branch_is_told_from_one_of_the_selected_branch():
    # log(0) is the branch jnp.where sets aside: its infinite derivative poisons reverse mode, and
    # log is where the -inf is born from a finite operand (non_finite_inside names it).
    found = met(lambda x: jnp.where(x > 0, jnp.log(x), 0.0), np.array([0.0, 1.0], np.float32))
    assert found == {NON_FINITE_UNSELECTED, NON_FINITE_INSIDE, f"{NON_FINITE_INSIDE}:log"}
    assert non_finite_inside(found) == "log"
    assert (
        met(lambda x: jnp.where(x > 0, jnp.log(x), 0.0), np.array([0.0, 1.0], np.float32), tangents=False)
        == frozenset()
    )
    # sinc at a tiny x: the infinite derivative comes from the branch sinc selects, not one it sets aside.
    assert float(jax.jacfwd(jnp.sinc)(np.float32(1e-20))) == -np.inf
    assert met(jnp.sinc, np.float32(1e-20)) == frozenset()


@pytest.mark.parametrize("x", [0.0, 0.5, 1.0, 3.0, 1e-30, 1e30])
def test_spence_meets_neither_clamp_nor_select_n_misbehaving(x):
    # jnp.piecewise binds clamp and select_n in every call, in order and in range.
    assert met(jax.scipy.special.spence, np.float32(x)) == frozenset()


def test_values_and_tangents_are_the_functions_own():
    # The evaluation follows the branch each cond takes and each custom rule: triggers are read off the real
    # computation.
    def f(x):
        return jnp.sum(jnp.where(x > 1, jnp.sqrt(x), jax.nn.relu(x)) + jnp.sinc(x))

    from gradaudit.targets import triggers

    x = np.array([0.5, 2.0, 3.0], np.float32)
    closed = jax.make_jaxpr(f)(x)
    outs, tangents = triggers._evaluate(closed.jaxpr, closed.consts, [x], [np.ones_like(x)], set())
    value, slope = jax.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_allclose(outs[0], value, rtol=1e-6)
    np.testing.assert_allclose(tangents[0], slope, rtol=1e-6)


@pytest.mark.parametrize("x", [0.0, -0.0, 1e-40, 0.5, 3.0, 1e30, np.inf, -np.inf, np.nan])
def test_each_equations_tangent_is_the_one_jvp_of_the_whole_function_gives(x):
    # Equations bound one at a time with their own JVP rules: an integer input (a float0 tangent), a
    # primitive of several results (a sort of two operands), selects and special functions, at edges.
    def f(a, b, n):
        keys, ranks = lax.sort((jnp.stack([a, b]), jnp.arange(2, dtype=jnp.int32)), num_keys=1)
        scaled = keys[0] * lax.convert_element_type(ranks[1] + n, jnp.float32)
        return jnp.where(a > b, jax.scipy.special.betaln(jnp.abs(a), 2.5), scaled) + jax.scipy.special.gammaln(b)

    from gradaudit.targets import triggers

    a, b, n = np.float32(x), np.float32(1.5), np.int32(3)
    closed = jax.make_jaxpr(f)(a, b, n)
    outs, tangents = triggers._evaluate(
        closed.jaxpr, closed.consts, [a, b, n], [np.float32(1), np.float32(1), None], set()
    )
    value, slope = jax.jvp(lambda a, b: f(a, b, n), (a, b), (np.float32(1), np.float32(1)))
    np.testing.assert_array_equal(np.asarray(outs[0]), np.asarray(value))
    np.testing.assert_array_equal(np.asarray(triggers.dense(tangents[0], outs[0])), np.asarray(slope))


@pytest.mark.slow
def test_the_survey_kinds_keep_diagnoses_whose_mechanism_they_meet_and_lose_the_others(tmp_path):
    import json

    from tests.helpers import ROOT, run_cli

    found = ROOT / "tests" / "data" / "survey"  # files an earlier survey wrote
    names = [
        "scipy.special.spence-1",
        "scipy.special.spence-2",
        "numpy.sinc-1",
        "lax.clamp-1",
        "lax.select_n-1",
        "wrappers.getitem-4",
    ]
    report = tmp_path / "report.json"
    run_cli("run", *[str(found / f"{n}.yaml") for n in names], "--json", str(report), "-q", "--exit-zero")
    diagnosed = {r["name"]: (r.get("diagnosis") or {}).get("id") for r in json.loads(report.read_text())["results"]}
    # jnp.piecewise binds clamp and select_n in spence, in order and in range; sinc's NaN is its selected branch's.
    assert diagnosed == {
        "scipy.special.spence-1": None,
        "scipy.special.spence-2": None,
        "numpy.sinc-1": None,
        "lax.clamp-1": "GA011",
        "lax.select_n-1": "GA002",
        "wrappers.getitem-4": "GA010",
    }


def test_an_inf_born_in_a_complex_intermediate_s_imaginary_part_is_seen():
    # x + 3e38 i plus 3e38 i overflows the imaginary part only; the real part, and the value, stay finite.
    def imaginary_overflow(x):
        return jnp.real(lax.complex(x, jnp.float32(3e38)) + lax.complex(jnp.float32(0), jnp.float32(3e38)))

    assert non_finite_inside(met(imaginary_overflow, np.float32(0.5))) == "add"
