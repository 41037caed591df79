"""Where rounding, not a derivative, parts the paths: said as a note with its reason, never a finding.

Two cases the judge cannot settle entry by entry: finite differences whose step is lost in the
function's larger terms (an FFT next to float32's largest value), and AD paths of an ill-conditioned
Jacobian that part by the dtype's rounding of the Jacobian as a whole. Each must stay a finding
where the numbers are beyond that rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import gradaudit
from gradaudit.judging.judge import judge
from gradaudit.judging.tolerances import Tolerances
from gradaudit.model.paths import FINITE_DIFFERENCE, JACFWD, JACREV, JIT_JACFWD, JIT_JACREV, VALUE
from tests.helpers import path_results, run_one

F32_MAX = float(np.finfo(np.float32).max)


def fft(x):
    return jnp.real(jnp.fft.fft(x))


def test_finite_differences_lost_in_larger_terms_are_a_note_not_a_finding():
    # out[2] = x0 - x1 + x2 - x3: a move of x0 by its step (0.004) is lost in 3.4e38 - 3.4e38.
    audit = gradaudit.audit(fft, np.array([0.0, 0.0, F32_MAX, F32_MAX], np.float32))
    assert audit.status == "consistent", audit.failure_text()
    (note,) = [n for n in audit.notes if "cannot check" in n.message]
    assert note.count >= 2 and "lost in the rounding of the function's value or of its larger terms" in note.message


@jax.custom_jvp
def doubled_first(x):
    return x[0] + x[1] - x[2]


@doubled_first.defjvp
def _doubled_first_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return doubled_first(x), 2.0 * t[0] + t[1] - t[2]  # wrong: d/dx0 is 1


def test_a_wrong_rule_beside_ordinary_inputs_stays_a_wrong_finding():
    audit = gradaudit.audit(doubled_first, np.array([0.5, 1000.0, 1000.0], np.float32))
    assert audit.status == "mismatch"
    assert {str(f.finding_class) for f in audit.findings} == {"wrong"}
    assert not [n for n in audit.notes if "cannot check" in n.message]


def test_the_same_rule_beside_terms_that_swallow_the_step_is_said_to_be_unchecked():
    # 0.5 + 3e38 - 3e38: out moves by 0.004 when x0 does, far below the rounding of 3e38: nothing can check d/dx0.
    audit = gradaudit.audit(doubled_first, np.array([0.5, 3e38, 3e38], np.float32))
    assert [n for n in audit.notes if "cannot check" in n.message and "first at d out/d x[0]" in n.message]
    assert not any("x[0]" in (f.location or "") for f in audit.findings)


TOL = Tolerances(fd_rtol=1.38e-3, fd_atol=1.38e-3, ad_rtol=1.9e-6, ad_atol=1.9e-6)


def _judged(fwd, rev, fd):
    x = np.array([0.62, -1.0], np.float32)
    results = path_results(
        {
            VALUE: [[1.0, 2.0]],
            JACFWD: [fwd],
            JIT_JACFWD: [fwd],
            JACREV: [rev],
            JIT_JACREV: [rev],
            FINITE_DIFFERENCE: [fd],
        }
    )
    return judge(results, ("x",), TOL, inputs=(x,))


def test_ad_paths_parting_by_the_rounding_of_their_row_and_column_are_a_note():
    # A 2 x 2 Jacobian with entries near 1 and one small entry that forward and reverse mode round
    # differently by 3e-6 (3e-6 of its row's scale, 70% of itself): rounding of the whole, not a defect.
    fwd = np.array([[0.87, 3.8e-6], [0.5, 0.24]])
    rev = np.array([[0.87, 6.5e-6], [0.5, 0.24]])
    verdict = _judged(fwd, rev, fwd)
    assert verdict.status == "consistent" and not verdict.findings
    (note,) = [n for n in verdict.notes if "rounding, not counted" in n.message]
    assert note.count == 1 and note.location == "d out[0]/d x[1]"


def test_ad_paths_parting_by_a_factor_at_a_small_entry_are_still_wrong():
    # The same small entry, but reverse mode twice forward's and a row whose scale is the entry's own.
    fwd = np.array([[1e-3, 0.0], [0.5, 0.24]])
    rev = np.array([[2e-3, 0.0], [0.5, 0.24]])
    verdict = _judged(fwd, rev, fwd)
    assert {str(f.finding_class) for f in verdict.findings} == {"wrong"}
    assert not [n for n in verdict.notes if "rounding, not counted" in n.message]


# --- entries every AD path agrees on against finite differences: probed at other steps ---------


def _classes(audit) -> set[str]:
    return {str(f.finding_class) for f in audit.findings}


def test_ties_are_non_differentiable_where_coordinate_slopes_exist_but_no_derivative_does():
    # The middle of three equal values: moving any one leaves it, moving all three moves it at slope 1.
    audit = gradaudit.audit(lambda x: jnp.sort(x)[1], np.zeros(3, np.float32))
    assert audit.passed and _classes(audit) == {"non-differentiable"}
    assert "a tie: 3 inputs are equal here" in audit.findings[0].reason


def test_reduce_precisions_straight_through_rule_differs_by_design_and_a_hand_written_one_is_a_staircase():
    """reduce_precision's derivative 1 is JAX's convention (the function is flat between its steps): a note
    naming it. The same staircase with the straight-through rule written by hand (stop_gradient, whose
    intent numbers cannot judge) is non-differentiable: a finding, not failed."""
    audit = gradaudit.audit(lambda x: jax.lax.reduce_precision(x, exponent_bits=5, mantissa_bits=2), np.float32(1.0))
    assert audit.passed and not audit.findings
    [note] = [n for n in audit.notes if "differ by design" in n.message]
    assert "reduce_precision's straight-through 1" in note.message and "as finite differences do (0 " in note.message
    hand = gradaudit.audit(lambda x: x + jax.lax.stop_gradient(jnp.round(x * 4) / 4 - x), np.float32(1.0))
    assert hand.passed and _classes(hand) == {"non-differentiable"}
    assert "piecewise constant here" in hand.findings[0].reason


def test_a_period_far_below_the_step_is_checked_at_finer_steps_and_noted(tmp_path):
    # fmod(x, 7e-42) in float64 at x = 0 is x itself below the divisor: the usual step spans 1e36 periods.
    ran, result = run_one(
        tmp_path,
        "fmod.yaml",
        "scenarios:\n- name: fmod-tiny-divisor\n  fn: jax.numpy:fmod\n  inputs:\n"
        "  - {dtype: float64, value: 0.0}\n  - {dtype: float64, value: 7.1e-42}\n",
    )
    assert ran.exit_code == 0 and result["status"] == "consistent", ran.stderr
    assert [
        n
        for n in result["notes"]
        if "checked at finer steps" in n["message"] and "spans the function's periods" in n["message"]
    ]


def test_a_wrong_derivative_at_a_smooth_point_is_still_wrong_after_probing():
    # i0 is even: i0'(0) = 0 at every step, however fine or coarse; a rule that says 1 is wrong.
    @jax.custom_jvp
    def even(x):
        return jnp.cosh(x)

    even.defjvp(lambda primals, tangents: (even(primals[0]), tangents[0] * 1.0))
    audit = gradaudit.audit(even, np.float32(0.0))
    assert _classes(audit) == {"wrong"} and not audit.passed


def test_a_scenario_finite_differences_could_not_check_at_all_says_so_in_its_outcome():
    # abs at 0: a kink, the only entry; the AD paths agree with each other and nothing else checks them.
    audit = gradaudit.audit(jnp.abs, np.float32(0.0))
    assert audit.status == "consistent" and audit.passed
    assert audit.result.outcome.reason == "AD paths agree; finite differences could not check 1 of 1 entries"
    # Where some entry was checked, a plain consistent.
    assert gradaudit.audit(jnp.sort, np.array([1.0, 1.0, 2.0], np.float32)).result.outcome.reason == "consistent"


@jax.custom_jvp
def offset_twice(x):
    return 1000.0 + 1e-4 * jnp.sin(x)


@offset_twice.defjvp
def _offset_twice_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return offset_twice(x), 2e-4 * jnp.cos(x) * t  # wrong: twice the derivative


def test_derivatives_below_what_the_value_s_rounding_lets_a_step_show_are_said_to_be_unchecked():
    # 1000 rounds to 6e-5 in float32; a step of 0.004 moves 1e-4 sin x by 4e-7: finite differences see nothing.
    # Said so; and float64, whose steps do show it, checks the entries float32 could not: the rule is twice
    # the derivative (it passed before float64 was asked), and the right rule passes with a note saying so.
    audit = gradaudit.audit(offset_twice, np.linspace(-1.0, 1.0, 3, dtype=np.float32))
    (note,) = [n for n in audit.notes if "cannot check" in n.message]
    assert note.count == note.of == 9 and "rounding of the function's value" in note.message
    assert note.values["rounding"] > 10 * 2e-4
    assert not audit.passed and {str(f.finding_class) for f in audit.findings} == {"wrong"}
    assert all("float64's finite differences" in f.message for f in audit.findings)
    right = gradaudit.audit(lambda x: 1000.0 + 1e-4 * jnp.sin(x), np.linspace(-1.0, 1.0, 3, dtype=np.float32))
    assert right.passed and any(
        "the float64 referee at the same inputs leaves 0 of 9" in n.message for n in right.notes
    )
    # Stacked beside an ordinary output, the entry alone is lost in rounding: float64 checks it too (a review's case).
    stacked = gradaudit.audit(
        lambda x: jnp.stack([offset_twice(x[0]), jnp.sin(x[1])]), np.array([0.3, 0.7], dtype=np.float32)
    )
    assert not stacked.passed and {str(f.finding_class) for f in stacked.findings} == {"wrong"}
    # The same value with derivatives of ordinary size is checked: its rounding (0.1 a slope) is far below them.
    ordinary = gradaudit.audit(lambda x: 1000.0 + jnp.sin(x), np.linspace(-1.0, 1.0, 3, dtype=np.float32))
    assert ordinary.passed and not [n for n in ordinary.notes if "cannot check" in n.message]


def test_an_entry_no_path_gives_a_derivative_has_no_step_to_lose_in_larger_terms():
    # exp near 7: d out[0]/d x[1] is 0 and finite differences give exactly 0. The terms' bound read
    # x[0] exp(x[0]) = 4300 as a term of out[0] = 665 that x[1]'s step was lost in, and said 6 of 9 entries
    # could not be checked; x[1] moves out[0] not at all. A wrong rule among them is found, as before.
    plain = gradaudit.audit(jnp.exp, np.linspace(6.5, 7.5, 3, dtype=np.float32))
    assert plain.passed and not [n for n in plain.notes if "cannot check" in n.message]

    @jax.custom_jvp
    def steep(x):
        return jnp.exp(x)

    steep.defjvp(lambda primals, tangents: (steep(primals[0]), jnp.exp(primals[0]) * tangents[0] * 1.01))
    wrong = gradaudit.audit(steep, np.linspace(6.5, 7.5, 3, dtype=np.float32))
    assert not wrong.passed and {str(f.finding_class) for f in wrong.findings} == {"wrong"}


OFFSETS = """
def cancelled(x, y):
    return (y + x) - 1e12
"""


def test_a_term_cancelled_by_a_constant_still_hides_the_step_and_a_rule_of_zero_is_not_drowned(tmp_path):
    # (1e12 + x) - 1e12 in float64 at x = 1: a step of 6e-6 is lost in 1e12's rounding, so finite differences give 0.
    (tmp_path / "offsets.py").write_text(OFFSETS)
    ran, result = run_one(
        tmp_path,
        "offsets.yaml",
        "scenarios:\n- name: cancelled\n  fn: 'offsets:cancelled'\n  inputs:\n"
        "  - {dtype: float64, value: 1.0}\n  - {dtype: float64, value: 1000000000000.0}\n",
    )
    assert ran.exit_code == 0 and result["status"] == "consistent", result["findings"]
    assert any("cannot check" in n["message"] for n in result["notes"])
    # A rule whose tangent is 0 for 1000 + x: finite differences give 1, and they did check it.
    audit = gradaudit.audit(_flat_rule, np.float32(0.5))
    assert not audit.passed and not [n for n in audit.notes if "cannot check" in n.message]


@jax.custom_jvp
def _flat_rule(x):
    return 1000.0 + x


_flat_rule.defjvp(lambda primals, tangents: (_flat_rule(primals[0]), 0.0 * tangents[0]))


def test_a_rule_twice_too_large_beside_an_offset_rounding_hides_is_said_to_be_unchecked_and_float64_finds_it():
    # 1e4 + x in float32: the value rounds by 1e-3, a step of 0.002 moves it by 0.002, so a slope is known only to
    # 2.44, more than the derivative (1) itself: a rule twice too large passed with nothing said. At 1000 the
    # rounding (0.24) is below the derivative and the same rule is found.
    def doubled(offset):
        rule = jax.custom_jvp(lambda x: offset + x)
        rule.defjvp(lambda primals, tangents: (rule(primals[0]), 2.0 * tangents[0]))
        return rule

    # Said so; and float64, whose steps show the slope, finds the rule wrong (it passed before float64 was asked).
    far = gradaudit.audit(doubled(1e4), np.float32(0.5))
    assert [n for n in far.notes if "cannot check 1 of 1" in n.message]
    assert not far.passed and {str(f.finding_class) for f in far.findings} == {"wrong"}
    near = gradaudit.audit(doubled(1e3), np.float32(0.5))
    assert not near.passed and {str(f.finding_class) for f in near.findings} == {"wrong"}


def test_slopes_rounding_alone_parts_are_no_kink_and_the_step_lost_in_it_is_said():
    # 1e7 + x in float32: neighbours 1 apart, so the step's slopes read 0 and 512 against rounding of 2,440.
    # No kink is claimed there (a central estimate moving within rounding shows none); every entry is said
    # to be unchecked. A real kink (relu at 0) is one.
    offset = gradaudit.audit(lambda x: 1e7 + x, np.array([0.5, 1.0], np.float32))
    assert offset.passed and not [n for n in offset.notes if n.message.startswith("kink or jump")]
    assert [n for n in offset.notes if n.message.startswith("finite differences cannot check 4 of 4 entries")]
    relu = gradaudit.audit(jax.nn.relu, np.array([0.0, 1.0], np.float32))
    assert [n for n in relu.notes if n.message.startswith("kink or jump at d out[0]/d x[0]")]


def test_a_rule_rounding_lets_pass_by_more_than_a_few_percent_is_said_to_be_checked_loosely_and_float64_finds_it():
    # 1e7 + 3000 x in float32 with a rule of 1500: finite differences know the slope only to about 2,400, not
    # enough to say the rule is wrong and not so little that nothing was checked; the note says how closely
    # it was. At 1e3 + 3000 x the rounding is 1e4 times smaller and the same rule is wrong.
    def halved(offset):
        rule = jax.custom_jvp(lambda x: offset + 3000.0 * x)
        rule.defjvp(lambda primals, tangents: (rule(primals[0]), 1500.0 * tangents[0]))
        return rule

    far = gradaudit.audit(halved(1e7), np.float32(0.5))
    (loose,) = [n for n in far.notes if n.message.startswith("finite differences check 1 of 1 entries only within")]
    assert loose.values["rounding"] > 0.05 * abs(loose.values["finite_difference"])
    # float64 checks it closely: the rule is wrong (it passed before float64 was asked).
    assert not far.passed and {str(f.finding_class) for f in far.findings} == {"wrong"}
    near = gradaudit.audit(halved(1e3), np.float32(0.5))
    assert not near.passed and {str(f.finding_class) for f in near.findings} == {"wrong"}
    assert not [n for n in near.notes if "only within their rounding" in n.message]
