"""Finite differences refined at finer steps where the usual step saw a kink (judging/refine.py)."""

from __future__ import annotations

import numpy as np
import pytest

from gradaudit.judging.refine import converged
from gradaudit.model.computed import Probe
from tests.helpers import off_by, run_cli, run_one, write_yaml

LAYER_NORM = """
import jax
import jax.numpy as jnp


def plain(x):
    mean = jnp.mean(x)
    return (x - mean) / jnp.sqrt(jnp.mean((x - mean) ** 2) + 1e-5)


@jax.custom_jvp
def three_percent(x):
    return plain(x)


@three_percent.defjvp
def _jvp(primals, tangents):
    out, tangent = jax.jvp(plain, primals, tangents)
    return out, 1.03 * tangent


def relu(x):
    return jnp.maximum(x, 0.0)
"""


def test_a_layer_norm_at_constant_input_is_checked_at_a_finer_step_and_a_kink_is_not(tmp_path):
    """At constant input the variance reaches the 1e-5 under the square root within float32's usual
    step (0.0039): every entry looked like a kink, and a JVP 3% wrong passed unchecked."""
    (tmp_path / "norms.py").write_text(LAYER_NORM)
    path = write_yaml(
        tmp_path,
        "norms.yaml",
        "scenarios:\n"
        "  - {name: wrong-jvp, fn: 'norms:three_percent', inputs: [{dtype: float32, value: [1.0, 1.0, 1.0, 1.0]}]}\n"
        "  - {name: plain, fn: 'norms:plain', inputs: [{dtype: float32, value: [1.0, 1.0, 1.0, 1.0]}]}\n"
        "  - {name: relu, fn: 'norms:relu', inputs: [{dtype: float32, value: [0.0, 1.0]}]}\n",
    )
    result = run_cli("run", str(path), "--json", "-")
    by_name = {r["name"]: r for r in result.json()["results"]}
    wrong = by_name["wrong-jvp"]
    assert wrong["status"] == "mismatch" and {f["class"] for f in wrong["findings"]} == {"wrong"}
    finding = wrong["findings"][0]
    # 0.75 / sqrt(1e-5) = 237.2; the rule says 1.03 times that.
    assert abs(finding["values"]["finite_difference"] - 237.2) < 0.5
    assert abs(finding["values"]["jacfwd"] - 1.03 * 237.17) < 0.5
    refined = [n for n in wrong["notes"] if n["message"].startswith("finite differences refined")]
    assert refined and refined[0]["values"]["step"] < 0.0039
    plain = by_name["plain"]
    assert plain["status"] == "consistent" and any(
        n["message"].startswith("finite differences refined") for n in plain["notes"]
    )
    relu = by_name["relu"]
    assert relu["findings"] == [] and any(n["message"].startswith("kink or jump") for n in relu["notes"])
    assert result.exit_code == 1


def _probe(central, left, right, usual=1.0):
    steps = tuple(2.0**-k for k in range(len(central)))
    return Probe(step=usual, steps=steps, central=tuple(central), left=tuple(left), right=tuple(right))


def test_slopes_converge_only_where_both_sides_agree_at_two_finer_steps():
    silent = lambda step: 0.0  # noqa: E731
    # The usual step (1.0) straddles the curvature; 0.5 and 0.25 agree: 0.5's slopes are taken.
    smooth = _probe([3.0, 2.0, 2.0, 2.0], [1.0, 1.99, 2.0, 2.0], [5.0, 2.01, 2.0, 2.0])
    found = converged(smooth, 0.01, 0.01, silent)
    assert found is not None and found.step == 0.5 and found.central == 2.0
    # A kink: the one-sided slopes never meet, however fine the step.
    kink = _probe([0.5] * 5, [0.0] * 5, [1.0] * 5)
    assert converged(kink, 0.01, 0.01, silent) is None
    # Agreeing at one finer step but not the next is not convergence.
    once = _probe([3.0, 2.0, 7.0], [1.0, 2.0, 1.0], [5.0, 2.0, 13.0])
    assert converged(once, 0.01, 0.01, silent) is None
    # The rounding a difference quotient hides at a step counts: noise of 0.3 / step lets 0.5 and 0.25 agree,
    # but rounding of more than RESOLVES times the tolerance (0.3 here) settles nothing: a kink agrees within it.
    noisy = _probe([3.0, 2.0, 2.0, 2.0], [1.0, 1.2, 1.2, 1.2], [5.0, 2.8, 2.8, 2.8])
    assert converged(noisy, 0.1, 0.1, silent) is None
    assert converged(noisy, 0.1, 0.1, lambda step: 0.3 / step) is not None
    assert converged(noisy, 0.1, 0.1, lambda step: 5.0 / step) is None


def test_slopes_that_part_as_a_smooth_function_s_do_converge_and_a_jump_s_do_not():
    silent = lambda step: 0.0  # noqa: E731
    # logsumexp at logits near 1000 in float32 (probed): the usual step 3.9 straddles its curvature; at 0.244 the
    # one-sided slopes part by f'' h = 0.035, at 0.0153 by 16 times less, and the central slope holds.
    steps = (3.90625, 0.244140625, 0.0152587890625)
    lse = Probe(3.90625, steps, (0.310086, 0.172875, 0.172), (0.0472344, 0.1555, 0.172), (0.572937, 0.19025, 0.172))
    found = converged(lse, 0.0014, 0.0014, silent)
    assert found is not None and found.shrinking and found.step == steps[1] and found.central == 0.172875
    assert abs(found.spread - 0.000875) < 1e-9
    # A jump the steps straddle: the gap grows as the step shrinks, and the central slope moves with it.
    jump = Probe(3.9, steps, (1.0, 4.0, 64.0), (0.0, 0.0, 0.0), (2.0, 8.0, 128.0))
    assert converged(jump, 0.0014, 0.0014, silent) is None
    # A kink near x, inside the coarser step only: the gap shrinks, but the central slope does not hold.
    near = Probe(3.9, steps, (0.5, -0.41, -1.0), (0.0, -1.0, -1.0), (1.0, 0.18, -1.0))
    assert converged(near, 0.0014, 0.0014, silent) is None


def test_a_kink_that_holds_is_not_undone_by_a_step_the_function_no_longer_resolves():
    silent = lambda step: 0.0  # noqa: E731
    # abs-like slopes -1 and 1 at every step down to where the function stops changing (a norm's squares
    # underflow): the flat reading below them is rounding, not a derivative of 0.
    norm = _probe([0.0] * 6, [-1.0, -1.0, -1.0, -1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    assert converged(norm, 0.01, 0.01, silent) is None
    # A jump the usual step straddles: the slopes grow as the step shrinks, then the function is flat below
    # the jump's distance (a staircase): 0 is its derivative there.
    stair = _probe([4.0, 8.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0], [8.0, 16.0, 0.0, 0.0, 0.0])
    found = converged(stair, 0.01, 0.01, silent)
    assert found is not None and found.central == 0.0


def test_a_norm_at_the_origin_is_a_kink_where_ad_has_no_number_not_a_derivative_of_zero():
    import jax.numpy as jnp

    import gradaudit

    audit = gradaudit.audit(jnp.linalg.norm, np.zeros(3, np.float32))
    # Not failed (a point with no derivative), but said: AD's NaN there, against slopes -1 and 1.
    assert audit.passed and {str(f.finding_class) for f in audit.findings} == {"non-differentiable"}
    finding = audit.findings[0]
    assert finding.evidence["slope_left"] == -1.0 and finding.evidence["slope_right"] == 1.0
    assert all(np.isnan(v) for path, v in finding.values.items() if path != "finite_difference")
    assert not any("no disagreement" in n.message for n in audit.notes)


@pytest.mark.slow
def test_strong_curvature_for_the_usual_step_is_checked_where_the_slopes_part_as_a_smooth_function_s():
    """At logits near 1000 float32's usual step is 3.9 (relative to the input), which straddles logsumexp's
    curvature: every entry looked like a kink and was refined only at a step whose rounding (0.03) hid a
    rule 6% wrong. The slopes part by f'' h at 0.24 and by 16 times less at 0.015: smooth, checked at 0.24."""
    import jax
    import jax.numpy as jnp

    import gradaudit

    logits = np.array([1000.0, 1000.5, 999.2, 1001.0], np.float32)
    wrong = gradaudit.audit(off_by(lambda x: jax.nn.logsumexp(x), 1.06), logits)
    assert not wrong.passed and {str(f.finding_class) for f in wrong.findings} == {"wrong"}
    softmax = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    values = wrong.findings[0].values  # the largest gap: the refined estimate against the rule's 1.06 softmax
    assert min(abs(values["finite_difference"] - p) for p in softmax) < 0.003
    assert min(abs(values["jacfwd"] - 1.06 * p) for p in softmax) < 1e-4
    (note,) = [n for n in wrong.notes if n.message.startswith("finite differences refined")]
    assert "shrinking with the step as a smooth function's do" in note.message and note.count == 4
    assert gradaudit.audit(jax.nn.logsumexp, logits).passed

    def layer_norm(x):
        mean = jnp.mean(x)
        return (x - mean) / jnp.sqrt(jnp.mean((x - mean) ** 2) + 1e-5)

    plain = gradaudit.audit(layer_norm, np.float32(1000.0) + np.linspace(-2.0, 2.0, 4, dtype=np.float32))
    assert plain.passed and not plain.findings
    assert not [n for n in plain.notes if n.message.startswith("kink or jump")]  # all 16 entries compared


def test_an_entry_refined_is_judged_by_its_refined_estimate_alone(tmp_path):
    """tan at 1e7 in float64: the usual step (76) spans 24 periods, so the slopes there part at random and
    AD lies outside them, which put the entry among the disagreeing before it was refined; at 7e-5 the
    slopes part as a smooth function's and the central slope is tan' there. The refined estimate decides."""
    ran, result = run_one(
        tmp_path,
        "tan.yaml",
        "scenarios:\n- name: tan-far\n  fn: jax.numpy:tan\n  inputs:\n"
        "  - {dtype: float64, value: [10000000.0, 20000000.0]}\n",
    )
    assert ran.exit_code == 0 and result["status"] == "consistent" and not result["findings"], result["findings"]
    (note,) = [n for n in result["notes"] if n["message"].startswith("finite differences refined")]
    assert note["count"] == 2 and note["values"]["step"] < 1e-3
    derivative = 1 + np.tan(1e7) ** 2
    assert abs(note["values"]["central"] - derivative) < 1e-6 * derivative


KINKS_NEARBY = """
import jax.numpy as jnp

GAP = 2.4e-7
KNOTS = [-1.0, -GAP, 0.0, GAP, 1.0]
VALUES = [1.0 - GAP, 0.0, 0.0, 0.2 * GAP, 0.2 * GAP + 1.2 * (1.0 - GAP)]


def three_kinks(x):
    return jnp.interp(x, jnp.array(KNOTS), jnp.array(VALUES))
"""


def test_a_kink_at_the_point_beside_others_within_the_coarser_step_is_not_refined_as_smooth(tmp_path):
    # Slopes 0 and 0.2 at 0, with knots 2.4e-7 either side, in float64: at a step of 4.8e-7 the one-sided slopes
    # part by 1.19, at 3e-8 by 0.2, a gap that shrank, but to 0.2, not toward nothing: the kink stands, and AD's
    # one-sided slope (0.2) is no `wrong` against the central slope's 0.1.
    (tmp_path / "kinks.py").write_text(KINKS_NEARBY)
    ran, result = run_one(
        tmp_path,
        "kinks.yaml",
        "scenarios:\n- name: kinks\n  fn: 'kinks:three_kinks'\n  inputs:\n  - {dtype: float64, value: 0.0}\n",
    )
    assert ran.exit_code == 0 and result["status"] == "consistent", result["findings"]
    assert any(n["message"].startswith("kink or jump") for n in result["notes"])


@pytest.mark.slow
def test_a_value_rounded_flat_is_no_derivative_of_zero_and_a_truly_flat_one_is():
    """gamma.logsf(x, 0.62) at float32's smallest normal x: the value is log(1 - P) with P = 3e-24, 0 in
    float32 and float64 alike. Its finite differences last move by one rounding unit of 1 (2**-24 in float32,
    eight of 2**-53 in float64) and then read 0 at every finer step, x's own size included: rounding, not a
    slope of 0 against AD's -1.79e14 (mpmath's). Finite differences cannot judge (float64) and float32's
    finding is the referee's precision note. 1e3 relu(x)**2 at -1e-6 is truly flat: its last move, 1.96e-7, is
    no whole number of units, so its 0 is compared, and a rule adding 2 stays wrong."""
    import jax

    import gradaudit
    from gradaudit.jaxenv import x64

    logsf = jax.scipy.stats.gamma.logsf
    smallest = 1.1754943508222875e-38
    narrow = gradaudit.audit(logsf, np.float32(smallest), np.float32(0.62))
    assert narrow.passed and not narrow.findings, [f.message for f in narrow.findings]
    assert any(n.message.startswith("precision, not counted") for n in narrow.notes)
    with x64(True):
        wide = gradaudit.audit(logsf, np.float64(smallest), np.float64(0.62))
    assert wide.passed and not wide.findings, [f.message for f in wide.findings]
    assert any("finite differences cannot judge" in n.message for n in wide.notes)

    def flat_left_of_zero(x):
        return 1e3 * jax.nn.relu(x) ** 2

    def plus_two(x):
        return flat_left_of_zero(x)

    wrong = jax.custom_jvp(plus_two)
    wrong.defjvp(lambda p, t: (plus_two(*p), jax.jvp(flat_left_of_zero, p, t)[1] + 2.0 * t[0]))
    assert gradaudit.audit(flat_left_of_zero, np.float32(-1e-6)).passed
    found = gradaudit.audit(wrong, np.float32(-1e-6))
    assert not found.passed and {str(f.finding_class) for f in found.findings} == {"wrong"}
