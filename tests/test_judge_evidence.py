"""The judge weighs finite-difference evidence near poles and treats non-finite against finite as a
disagreement, on functions written here; controls at poles, jumps, kinks and infinities stay consistent."""

from __future__ import annotations

import pytest

from tests.helpers import off_by, run_cli, sin_of_pi_times, sinc, write_yaml

FUNCTIONS = '''
import jax
import jax.numpy as jnp
from jax.scipy.special import digamma


@jax.custom_jvp
def digamma_asymptotic(x):
    """digamma, whose derivative comes from trigamma's large-x series: right far out, wrong near the poles."""
    return digamma(x)


@digamma_asymptotic.defjvp
def _digamma_asymptotic_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    trigamma = 1 / x + 1 / (2 * x**2) + 1 / (6 * x**3)
    return digamma_asymptotic(x), trigamma * t


def pole(x):
    return digamma(x)


def reciprocal(x):
    return 1.0 / x


def floor(x):
    return jnp.floor(x)


def sign(x):
    return jnp.sign(x)


def relu(x):
    return jax.nn.relu(x)


def absolute(x):
    return jnp.abs(x)


def log_of_zero(x):
    return jnp.log(x * 0.0)


def overflow(x):
    return jnp.exp(x)


def fast_cosine(x):
    """A period (2 pi / 3000) shorter than the finite-difference step: the steps alias it."""
    return jnp.cos(3000.0 * x)


def positional_encoding(x):
    """NeRF's encoding, frequencies up to 2^10 pi."""
    frequencies = (2.0 ** jnp.arange(11, dtype=x.dtype))[None, :] * jnp.pi
    return jnp.concatenate([jnp.sin(frequencies * x[:, None]), jnp.cos(frequencies * x[:, None])], axis=-1)


def signed_power(x):
    """A vertical tangent at 0: AD says inf, every finite difference a finite slope that grows as the step shrinks."""
    return jnp.where(x >= 0, 1.0, -1.0) * jnp.abs(x) ** 0.7


def vanishing_scale(x, k):
    """x times log(2^-k): 2^-k is subnormal in float32 for k past 126, which eager evaluation flushes
    to zero (log: -inf) and a fused jit program does not."""
    return x * jnp.log(jnp.exp2(-k.astype(jnp.float32)))
'''


def audit(folder, yaml_text: str) -> tuple[int, dict]:
    (folder / "fns.py").write_text(FUNCTIONS)
    write_yaml(folder, "suite.yaml", yaml_text)
    result = run_cli("run", str(folder / "suite.yaml"), "--json", "-")
    assert result.exception is None, result.stderr
    return result.exit_code, {r["name"]: r for r in result.json()["results"]}


def test_a_wrong_derivative_near_a_pole_is_a_finding_though_the_central_estimate_moves(tmp_path):
    code, results = audit(
        tmp_path,
        """
        scenarios:
          - {name: wrong-near-pole, fn: "fns:digamma_asymptotic", inputs: [{dtype: float32, value: [-0.95]}]}
          - {name: wrong-far-out, fn: "fns:digamma_asymptotic", inputs: [{dtype: float32, value: [40.0]}]}
          - {name: right-near-pole, fn: "fns:pole", inputs: [{dtype: float32, value: [-0.95, -1.05, -1.96, 0.03]}]}
        """,
    )
    wrong = results["wrong-near-pole"]
    assert wrong["status"] == "mismatch"
    (finding,) = [f for f in wrong["findings"] if f["kind"] == "disagreement"]
    # Every AD path follows the series (about -0.69 at -0.95); every estimate says about 402.
    assert finding["values"]["finite_difference"] == pytest.approx(402.0, rel=0.02)
    assert finding["values"]["jacfwd"] == pytest.approx(-0.69, abs=0.01)
    assert "disagree with finite differences on 1 of 1 entries" in finding["message"]
    moving = [n for n in wrong["notes"] if "near a pole or strong curvature" in n["message"]]
    assert len(moving) == 1 and "within the spread of its estimates" in moving[0]["message"]
    assert (wrong["diagnosis"] or {}).get("id") == "GA012"
    # Far from the poles the series is right to float32 rounding, and so is JAX's own digamma near them.
    assert results["wrong-far-out"]["status"] == "consistent"
    assert results["right-near-pole"]["status"] == "consistent"
    assert code == 1


@pytest.mark.slow
def test_poles_jumps_kinks_and_infinities_stay_consistent(tmp_path):
    code, results = audit(
        tmp_path,
        """
        scenarios:
          - {name: at-the-pole, fn: "fns:reciprocal", inputs: [{dtype: float32, value: [0.0]}]}
          - {name: step-crosses-the-pole, fn: "fns:reciprocal", \
inputs: [{dtype: float32, value: [0.002, -0.003, 0.0035]}]}
          - {name: jump, fn: "fns:floor", inputs: [{dtype: float32, value: [1.0, 0.999, 0.998, 2.9999]}]}
          - {name: sign-at-zero, fn: "fns:sign", inputs: [{dtype: float32, value: [0.0, 0.001]}]}
          - {name: relu-at-zero, fn: "fns:relu", inputs: [{dtype: float32, value: [0.0, 1.0]}]}
          - {name: abs-at-zero, fn: "fns:absolute", inputs: [{dtype: float32, value: [0.0, -2.0]}]}
          - {name: minus-inf-everywhere, fn: "fns:log_of_zero", inputs: [{dtype: float32, value: 1.0}]}
          - {name: aliased-period, fn: "fns:fast_cosine", \
inputs: [{dtype: float32, value: [0.7272802, 0.96239007, 0.1]}]}
          - {name: positional-encoding, fn: "fns:positional_encoding", \
inputs: [{dtype: float32, fill: normal, shape: [6]}]}
          - {name: vertical-tangent, fn: "fns:signed_power", inputs: [{dtype: float32, value: [0.0]}]}
          - {name: pole-reached-in-bfloat16, fn: "fns:reciprocal", inputs: [{dtype: bfloat16, value: [0.28125, 0.3]}]}
          - {name: pole-reached-in-float16, fn: "fns:reciprocal", inputs: [{dtype: float16, value: [0.0125]}]}
          - {name: inf-everywhere, fn: "fns:overflow", inputs: [{dtype: float32, value: 100.0}]}
        """,
    )
    assert {name: r["status"] for name, r in results.items()} == dict.fromkeys(results, "consistent")
    assert code == 0
    # Each control says why finite differences were not compared there.
    kinks = [n["message"] for n in results["relu-at-zero"]["notes"]]
    assert any(m.startswith("kink or jump at d out[0]/d x0[0]") and "one-sided slopes disagree" in m for m in kinks)
    undefined = [n["message"] for n in results["at-the-pole"]["notes"]]
    assert any(m.startswith("no finite estimate here") for m in undefined)


def test_non_finite_against_finite_is_a_disagreement_between_eager_and_jit_and_bindings(tmp_path):
    code, results = audit(
        tmp_path,
        """
        scenarios:
          - name: subnormal-scale
            fn: "fns:vanishing_scale"
            inputs: [{dtype: float32, value: [1.0, 2.0]}, {dtype: int32, value: 130}]
          - name: normal-scale
            fn: "fns:vanishing_scale"
            inputs: [{dtype: float32, value: [1.0, 2.0]}, {dtype: int32, value: 100}]
        """,
    )
    assert results["normal-scale"]["status"] == "consistent"
    found = results["subnormal-scale"]
    assert found["status"] == "mismatch"
    by_paths = {tuple(sorted(f["paths"])): f for f in found["findings"]}
    # The value: eager evaluation gives -inf, jit with the integer traced and with it captured a finite number.
    value = by_paths[("jit_value", "jit_value:const", "value")]
    assert value["wrong"] == "inf"
    assert value["values"] == {
        "value": "-inf",
        "jit_value": pytest.approx(-90.109, rel=1e-4),
        "jit_value:const": pytest.approx(-90.109, rel=1e-4),
    }
    assert "jit(value) and jit(value) with constants disagree with value on 2 of 2 entries" in value["message"]
    # The Jacobian diag(log 2^-k): eager jacfwd and jacrev give -inf on it (and 0 * -inf = NaN off it), jit finite.
    eager, jit = (
        ("jacfwd", "jacfwd:const", "jacrev", "jacrev:const"),
        ("jit_jacfwd", "jit_jacfwd:const", "jit_jacrev", "jit_jacrev:const"),
    )
    jacobian = by_paths[tuple(sorted(eager + jit))]
    assert jacobian["wrong"] == "nan" and jacobian["count"] == 4
    assert {jacobian["values"][p] for p in eager} == {"-inf"}
    assert all(jacobian["values"][p] == pytest.approx(-90.109, rel=1e-4) for p in jit)
    # At finite inputs, where the jit paths find the value finite: one transform, two answers, not a
    # split confined to non-finite numbers (the eager -inf is itself the disagreement).
    assert value["class"] == jacobian["class"] == "eager-jit"
    assert code == 1


def test_strong_curvature_widens_the_tolerance_by_the_central_estimates_not_the_one_sided_slopes():
    """exp at 30 in float32: the usual step (0.12) parts the one-sided slopes by 6%, the central
    estimates by a fraction of a percent; a JVP 5% too large is found, the plain exp is consistent."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    @jax.custom_jvp
    def steep(x):
        return jnp.exp(x)

    steep.defjvp(lambda primals, tangents: (steep(primals[0]), 1.05 * jnp.exp(primals[0]) * tangents[0]))
    at = np.float32(30.0)
    wrong = gradaudit.audit(steep, at)
    assert not wrong.passed and {str(f.finding_class) for f in wrong.findings} == {"wrong"}
    plain = gradaudit.audit(jnp.exp, at)
    assert plain.passed and not plain.findings


def test_the_absolute_tolerance_scales_with_derivatives_all_smaller_than_it_unless_the_user_sets_it():
    """A loss scaled by 1e-4: its gradient is below float32's absolute tolerance (0.0014) everywhere, so a
    rule twice too large passed unchecked; scaled to the derivatives' size it is wrong, the plain loss
    consistent, and an --atol the user gives is kept as given."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    @jax.custom_jvp
    def small(x):
        return 1e-4 * jnp.sin(x)

    small.defjvp(lambda primals, tangents: (small(primals[0]), 2e-4 * jnp.cos(primals[0]) * tangents[0]))
    at = np.array([0.3, 1.0], np.float32)
    wrong = gradaudit.audit(small, at)
    assert not wrong.passed and {str(f.finding_class) for f in wrong.findings} == {"wrong"}
    assert gradaudit.audit(lambda x: 1e-4 * jnp.sin(x), at).passed
    assert gradaudit.audit(small, at, atol=1e-3).passed


def test_a_coarse_tolerance_is_said_where_a_rule_a_few_percent_wrong_would_pass():
    """float16's default tolerance against finite differences is 4 sqrt(eps) = 0.125: a tanh rule 10% too
    large passes, and the audit says how coarsely it checked; float32's passes nothing of the kind."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    @jax.custom_jvp
    def tanh(x):
        return jnp.tanh(x)

    tanh.defjvp(lambda primals, tangents: (tanh(primals[0]), 1.1 * (1 - jnp.tanh(primals[0]) ** 2) * tangents[0]))
    at = np.linspace(-1.0, 1.0, 5)
    half = gradaudit.audit(tanh, at.astype(np.float16))
    assert half.passed
    (note,) = [n for n in half.notes if "rtol" in n.values]
    assert note.values["rtol"] == 0.125 and "float16" in note.message and "a rule wrong by less passes" in note.message
    assert not [n for n in gradaudit.audit(tanh, at.astype(np.float16), rtol=0.01).notes if "rtol" in n.values]
    single = gradaudit.audit(tanh, at.astype(np.float32))
    assert not single.passed and not [n for n in single.notes if "rtol" in n.values]
    # An rtol set wide in float32 is said too, without advice to audit in float32.
    (wide,) = [n for n in gradaudit.audit(tanh, at.astype(np.float32), rtol=0.2).notes if "rtol" in n.values]
    assert "the rtol set" in wide.message and "audit the function in float32" not in wide.message


def test_a_custom_jvp_rule_wrong_only_at_second_order_is_diagnosed_as_the_rule():
    """A JVP rule whose tangent goes through stop_gradient is right at first order and wrong at second: every
    Hessian path follows it against finite differences of the Jacobian, which is the custom_jvp diagnosis."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    @jax.custom_jvp
    def sine(x):
        return jnp.sin(x)

    sine.defjvp(lambda primals, tangents: (sine(primals[0]), jnp.cos(jax.lax.stop_gradient(primals[0])) * tangents[0]))
    audit = gradaudit.audit(sine, np.array([0.3, 1.0], np.float32), order=2)
    assert not audit.passed and {str(f.finding_class) for f in audit.findings} == {"wrong"}
    assert audit.diagnosis is not None and audit.diagnosis.id == "GA012"
    assert gradaudit.audit(sine, np.array([0.3, 1.0], np.float32)).passed  # first order: right


@pytest.mark.slow
def test_a_matrix_of_tiny_numbers_is_judged_at_steps_of_its_own_size_where_the_usual_step_outreaches_it():
    """eigvalsh of a float32 matrix of about 1e-36: the usual step (2**-8, absolute below 1) is 1e33 times
    every element, so finite differences measure the eigenvalues of the step itself and gave 0 where the
    derivative is 0.29; at steps relative to the matrix's size they agree with AD, a note says so, and a
    rule 1.5 times too large stays wrong there."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    matrix = (np.array([[0.62, -1.37, 0.25], [1.81, -0.44, 1.09], [0.93, -1.72, 0.38]]) * 1e-36).astype(np.float32)
    plain = gradaudit.audit(jnp.linalg.eigvalsh, matrix)
    assert plain.passed and not plain.findings
    assert any("the usual step 0.00391 outreaches the input" in n.message for n in plain.notes)

    @jax.custom_jvp
    def eigenvalues(a):
        return jnp.linalg.eigvalsh(a)

    @eigenvalues.defjvp
    def _too_large(primals, tangents):
        (a,), (da,) = primals, tangents
        _, v = jnp.linalg.eigh(a)
        return eigenvalues(a), 1.5 * jnp.einsum("ji,jk,ki->i", v, (da + da.T) / 2, v)

    wrong = gradaudit.audit(eigenvalues, matrix)
    assert not wrong.passed and {str(f.finding_class) for f in wrong.findings} == {"wrong"}


@pytest.mark.slow
def test_a_function_jit_cannot_compile_is_probed_eagerly():
    """`jnp.roots` reads its coefficients' values (it strips leading zeros), so jit cannot compile it and
    the probe, which compiled the function, gave no evidence: at coefficients near 1e-5 the usual step
    (216 times the last one) moved a real root from -0.91 to -7.9 and 9.3, and its 995 was reported
    against AD's -23495 (right to 3e-7 by mpmath). Evaluated eagerly, the probe's finer steps settle
    every entry and the audit is consistent."""
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    coefficients = np.array([6.2e-6, -1.37e-5, 2.5e-6, 1.81e-5], np.float32)
    result = gradaudit.audit(jnp.roots, coefficients)
    assert result.passed and not result.findings, [f.message for f in result.findings]
    assert any(n.message.startswith("finite differences refined at") for n in result.notes)


@pytest.mark.slow
def test_eigenvectors_of_a_matrix_of_tiny_numbers_are_compared_where_steps_of_its_own_size_settle():
    """eigh's eigenvectors of that matrix: every entry looked like a kink at the usual step and none was
    compared, so a rule 1.5 times too large passed; refined at steps relative to the matrix's size,
    all but a few are compared, the plain function is consistent and the wrong rule is `wrong`."""
    import re

    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    matrix = (np.array([[0.62, -1.37, 0.25], [1.81, -0.44, 1.09], [0.93, -1.72, 0.38]]) * 1e-36).astype(np.float32)

    def vectors(a):
        return jnp.linalg.eigh(a)[1]

    plain = gradaudit.audit(vectors, matrix)
    assert plain.passed and not plain.findings
    assert any(n.message.startswith("finite differences refined at") for n in plain.notes)
    uncompared = [re.search(r"(\d+) of 81 entries not compared", n.message) for n in plain.notes]
    assert all(int(found.group(1)) < 9 for found in uncompared if found)

    wrong = gradaudit.audit(off_by(vectors, 1.5), matrix)
    assert not wrong.passed and "wrong" in {str(f.finding_class) for f in wrong.findings}


@pytest.mark.parametrize("at", [[0.1, 0.2], [1e-5, 2e-5]])
def test_a_straight_through_staircase_at_small_inputs_stays_non_differentiable(at):
    """round(16 x) / 16 with the identity's derivative (straight-through): finite differences are 0 at
    every step that resolves, also at steps of the input's own size where those are taken (1e-5, below
    the usual step); the surrogate slope is non-differentiable, not a wrong rule."""
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    import gradaudit

    result = gradaudit.audit(lambda x: x + lax.stop_gradient(jnp.round(x * 16) / 16 - x), np.array(at, np.float32))
    assert result.passed and {str(f.finding_class) for f in result.findings} == {"non-differentiable"}


def _flipped_unless_on_axis(x):
    """x / |x|, negated wherever x[0] is not exactly 0: at x[0] = 0 a step either way flips the whole
    vector, as LAPACK flips a singular vector's sign between A and A + h, so out[1] jumps from 1 to -1."""
    import jax.numpy as jnp

    unit = x / jnp.linalg.norm(x)
    return jnp.where(x[0] == 0, unit, -unit)


@pytest.mark.slow
def test_a_sign_flip_of_the_output_along_an_input_is_non_differentiable_not_a_wrong_rule():
    """At x = [0, 1] every AD path follows the branch at the point (d out[0]/d x[0] = 1) while finite
    differences, on the flipped branch at both sides, agree with each other on -1: nothing at that entry
    shows a kink, but out[1] is -1 at every step where it is 1 at x, and finite differences give AD's
    value negated. The judge reads the sign flip and says there is no derivative along x[0]; away from
    the flip a rule 1.5 times too large is still wrong."""
    import numpy as np

    import gradaudit

    at_flip = gradaudit.audit(_flipped_unless_on_axis, np.array([0.0, 1.0], np.float32))
    assert at_flip.passed, [f.message for f in at_flip.findings]
    (finding,) = at_flip.findings
    assert str(finding.finding_class) == "non-differentiable"
    assert "flips sign here along this input: out[1] is 1 here, -1 a step 0.00391 away" in finding.reason

    away = gradaudit.audit(off_by(_flipped_unless_on_axis, 1.5), np.array([0.5, 1.0], np.float32))
    assert not away.passed and {str(f.finding_class) for f in away.findings} == {"wrong"}


@pytest.mark.slow
def test_a_cusp_the_usual_step_crosses_next_to_the_smallest_normal_input_cannot_be_judged():
    """|x| ** 0.62 + 1 at float32's smallest normal x: the usual step (2**-8) crosses the cusp at 0, so its
    one-sided slopes part and say nothing of the derivative at x (0.62 x ** -0.38, about 1.6e14, which
    every AD path gives); steps of x's own size move the output by 1e-26, far below its rounding. That is
    said in a note (finite differences cannot judge), not reported as a wrong rule. Where nothing crosses
    a kink (a line), a rule 1.5 times too large at the same x is still wrong; so it is where the steps
    cross a kink at 0 but those moving x away from 0 settle on the slope (2 x right of 0, -x left of it:
    the right-sided slopes give 2 at every step, as 1F1's do in a next to a = 0)."""
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    tiny = np.array([np.finfo(np.float32).smallest_normal], np.float32)
    cusp = gradaudit.audit(lambda x: jnp.abs(x) ** 0.62 + 1.0, tiny)
    assert cusp.passed and not cusp.findings, [f.message for f in cusp.findings]
    assert any("crosses a kink" in n.message and "finite differences cannot judge" in n.message for n in cusp.notes)
    assert any(
        n.message.startswith(("jacfwd", "jacrev")) and " left unjudged on 1 of 1 entries" in n.message
        for n in cusp.notes
    )

    # At 1e-10 the probe's finer steps still cross 0, the slopes on x's own side grow toward the cusp
    # until their rounding is as large as the tolerance, where any two agree within their noise: that
    # settles nothing, and no point without a derivative is claimed at x > 0 (gamma.sf's shape there).
    small = gradaudit.audit(lambda x: jnp.abs(x) ** 0.62 + 1.0, np.array([1e-10], np.float32))
    assert small.passed and not small.findings, [f.message for f in small.findings]
    assert any(" left unjudged on 1 of 1 entries" in n.message for n in small.notes)

    # A wrong rule beside a kink at 0 (1 + |x| at 1e-5, slope 1.5 against 1): the slopes moving x away
    # from 0 settle on 1 at steps whose rounding is well within half the slope, so it stays wrong.
    beside = gradaudit.audit(off_by(lambda x: 1.0 + jnp.abs(x), 1.5), np.array([1e-5], np.float32))
    assert not beside.passed and {str(f.finding_class) for f in beside.findings} == {"wrong"}

    line = gradaudit.audit(off_by(lambda x: 3.0 * x + 1.0, 1.5), tiny)
    assert not line.passed and {str(f.finding_class) for f in line.findings} == {"wrong"}

    bent = gradaudit.audit(off_by(lambda x: jnp.where(x >= 0, 2.0 * x, -x) + 1.0, 1.5), tiny)
    assert not bent.passed and {str(f.finding_class) for f in bent.findings} == {"wrong"}


def _exp_beside(other):
    """exp(x[0]) with a rule twice too large, beside an output `other(x)` that is not smooth or steep there."""
    import jax.numpy as jnp

    return lambda x: jnp.concatenate([off_by(jnp.exp, 2.0)(x[:1]), other(x)])


@pytest.mark.parametrize(
    ("case", "at"),
    [
        ("floor beside", [1.0]),  # another output jumps (1 to 0) where exp is smooth
        ("tanh beside", [1.0]),  # another output saturates within h / 4096: no jump, no flip
        ("bfloat16 beside", [1.00390625]),  # another output rounds to bfloat16 at a rounding midpoint
        ("square", [1e-3]),  # curvature's one-sided slopes part at a small input: no kink crossed
        ("cosine", [3e-4]),
        ("exp at 0 beside a small input", [0.0, 1e-3]),
    ],
)
def test_a_wrong_rule_is_not_excused_by_another_output_or_by_curvature_at_small_inputs(case, at):
    """From a fresh-eyes review of the sign-flip and small-input rules: each of these wrong rules (twice the
    derivative) was reported `wrong` before them and passed with them for a while, excused by another
    output's jump or saturation along the same input, or by curvature read as a kink the usual step
    crossed next to a small input. Each is `wrong`."""
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    functions = {
        "floor beside": _exp_beside(jnp.floor),
        "tanh beside": _exp_beside(lambda x: jnp.tanh(1e7 * (x - 1.0))),
        "bfloat16 beside": _exp_beside(lambda x: x.astype(jnp.bfloat16).astype(jnp.float32)),
        "square": off_by(lambda x: 1.0 + x * x, 2.0),
        "cosine": off_by(lambda x: jnp.cos(30.0 * x), 2.0),
        "exp at 0 beside a small input": lambda x: off_by(jnp.exp, 2.0)(x[:1]) + x[1:],
    }
    result = gradaudit.audit(functions[case], np.array(at, np.float32))
    assert not result.passed and "wrong" in {str(f.finding_class) for f in result.findings}, [
        (str(f.finding_class), f.message) for f in result.findings
    ]


def test_an_output_that_moves_at_no_step_cannot_judge_a_slope_too_small_to_show():
    """log(1 + 1e-20 x): its value rounds to 0 at every step the probe takes, as beta.logsf near a
    probability of 1 does, so finite differences give 0 where AD's 1e-20 is the derivative of what it
    computes; the change that slope makes over the widest step is far below the rounding of 1. In
    float64, the widest dtype, that is a note: finite differences cannot judge. In float32 the entry
    goes to the float64 referee, whose judge leaves it so: a precision note (and in its float64 run,
    the note "does not move at any step"). A slope float64 resolves
    (log(1 + 1e-9 x) with a rule three times too large: float64 moves) stays wrong in float32, as do a
    rule of 1e-3 on a constant and a wrong factor on a function that moves."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    at = np.array([0.62], np.float32)
    narrow = gradaudit.audit(lambda x: jnp.log(1.0 + 1e-20 * x), at)
    assert narrow.passed and not narrow.findings, [f.message for f in narrow.findings]
    assert any(n.message.startswith("precision, not counted") and "left it unjudged" in n.message for n in narrow.notes)

    resolved = gradaudit.audit(off_by(lambda x: jnp.log(1.0 + 1e-9 * x), 3.0), at)
    assert not resolved.passed and "wrong" in {str(f.finding_class) for f in resolved.findings}

    @jax.custom_jvp
    def flat(x):
        return jnp.zeros_like(x)

    flat.defjvp(lambda primals, tangents: (flat(primals[0]), 1e-3 * tangents[0]))
    loud = gradaudit.audit(flat, at)
    assert not loud.passed and {str(f.finding_class) for f in loud.findings} == {"wrong"}

    moving = gradaudit.audit(off_by(lambda x: 1e-20 * x, 2.0), at)
    assert not moving.passed and {str(f.finding_class) for f in moving.findings} == {"wrong"}


def _sine_beside_a_bump(x):
    """sin beside a bump of height 1e4 on a quarter of float32's usual step, just past it from 0.5:
    the usual step's one-sided slopes part there (a kink to the judge), finer steps converge on cos."""
    import jax.numpy as jnp

    u = (x - 0.5 - 2.0**-8) / 2.0**-10
    return jnp.sin(x) + 1e4 * jnp.maximum(0.0, 1 - u * u) ** 3


@pytest.mark.slow
def test_a_refined_entry_is_compared_within_what_its_own_step_measured_not_the_usual_steps_noise():
    """Refining past the bump gives cos(0.5) = 0.8776; the usual step's noise, read with the slope it
    took across the bump, once came along scaled to the finer step (39 there), and a rule twice too
    large passed. Now the refined entry's allowance is the rounding a quotient at its step hides plus
    the spread to the next finer step: the wrong rule is wrong, the right one consistent."""
    import numpy as np

    import gradaudit

    at = np.array([0.5], np.float32)
    right = gradaudit.audit(_sine_beside_a_bump, at)
    assert right.passed and not right.findings, [f.message for f in right.findings]
    wrong = gradaudit.audit(off_by(_sine_beside_a_bump, 2.0), at)
    assert not wrong.passed and {str(f.finding_class) for f in wrong.findings} == {"wrong"}


@pytest.mark.slow
def test_a_function_whose_output_shape_follows_its_values_is_probed_without_breaking_the_audit():
    """jnp.unique without size= runs eagerly (jit cannot trace it); moved by a probe step, an input
    next to another gives more or fewer unique values. Those steps have no slope (as at a NaN); the
    audit reports what unique does (AD drops the tangent) instead of failing with an internal error."""
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    at = np.array([[-1.0, 0.0, np.finfo(np.float32).smallest_normal], [2.9356484, -2.3061085, -np.inf]], np.float32)
    audit = gradaudit.audit(lambda x: jnp.unique_all(x).values, at)
    assert not audit.passed and "wrong" in {str(f.finding_class) for f in audit.findings}


@pytest.mark.parametrize("function", [sinc, sin_of_pi_times])
def test_finer_steps_decide_where_they_settle_above_the_noise_of_an_intermediates_rounding(function):
    """sinc(x) and sin(pi x) at 1e6 in float64: period 2, so the usual step (7.6) spans periods and finite
    differences give nearly 0; finer steps settle on the derivative (1e-6 and pi) from 1e-4 to 7e-6, and part
    again below by the rounding of sin's argument pi x = 3.1e6, which the output's own rounding (of a value
    near 0) does not show. Where they settle, they decide: a note; rules 1.5 and 1.0001 times too large
    stay wrong."""
    import numpy as np

    import gradaudit
    from gradaudit.jaxenv import x64

    at = np.array([1e6], np.float64)
    with x64(True):  # the API takes arrays as JAX would: float64 only with x64 on
        right = gradaudit.audit(function, at)
        wrong = {factor: gradaudit.audit(off_by(function, factor), at) for factor in (1.5, 1.0001)}
    assert right.passed and not right.findings, [f.message for f in right.findings]
    assert any("settle on" in n.message for n in right.notes), [n.message for n in right.notes]
    for factor, audit in wrong.items():
        assert not audit.passed and {str(f.finding_class) for f in audit.findings} == {"wrong"}, factor


def _wiggles(frequency: float):
    """sin(x) plus a wiggle of amplitude 1 / frequency: smooth, derivative cos(x) + cos(frequency x); and the
    same with a rule that leaves the wiggle out."""
    import jax
    import jax.numpy as jnp

    def wiggle(x):
        return jnp.sin(x) + jnp.sin(frequency * x) / frequency

    without = jax.custom_jvp(wiggle)
    without.defjvp(lambda primals, tangents: (wiggle(primals[0]), jnp.cos(primals[0]) * tangents[0]))
    return wiggle, without


@pytest.mark.parametrize("frequency", [1e7, 1e9])
@pytest.mark.parametrize("at", [0.3, 1.0])
def test_a_slope_that_settles_below_a_fast_wiggles_period_decides_and_no_jump_is_read_there(at, frequency):
    """float64: the usual step (6e-6) spans many periods of the wiggle, so finite differences see cos(x)
    alone; finer steps resolve the wiggle and settle on cos(x) + cos(frequency x) (at 1e9, between 1e-10
    and 7e-12), below which they part by rounding. The two finest steps the output's rounding leaves resolved
    part like a jump's one-sided slopes: the right derivative was `non-differentiable` (at 1e9) or `wrong`
    (at 1e7), and a rule that leaves the wiggle out `non-differentiable` too (a hidden defect: the class does
    not fail). Now the settled slope decides: the right derivative is consistent with a note, the rule
    without the wiggle wrong."""
    import numpy as np

    import gradaudit
    from gradaudit.jaxenv import x64

    wiggle, without = _wiggles(frequency)
    with x64(True):
        right = gradaudit.audit(wiggle, np.array([at]))
        wrong = gradaudit.audit(without, np.array([at]))
    assert right.passed and not right.findings, [f.message for f in right.findings]
    assert any("settle on" in n.message for n in right.notes), [n.message for n in right.notes]
    assert not wrong.passed and {str(f.finding_class) for f in wrong.findings} == {"wrong"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floor_divide_by_a_tiny_divisor_differs_by_design_and_a_wrong_rule_around_it_stays_wrong(dtype):
    """floor_divide(0.62, 1e-37): the quotient 6.2e36 is beyond every float's fraction, so round returns it and
    rem's sawtooth is finer than the float grid: the float function is x / y, finite differences see 1e37,
    and the AD paths' 0 is round's and rem's convention (a note naming both). A rule of twice that slope
    around the same function is not explained by any convention: still wrong."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit
    from gradaudit.jaxenv import x64

    @jax.custom_jvp
    def doubled(x, y):
        return jnp.floor_divide(x, y)

    doubled.defjvp(lambda primals, tangents: (doubled(*primals), 2 * tangents[0] / primals[1]))

    with x64(dtype == "float64"):
        x, y = np.array(0.62, dtype), np.array(1e-37, dtype)
        plain = gradaudit.audit(jnp.floor_divide, x, y, argnums=0)
        wrong = gradaudit.audit(doubled, x, y, argnums=0)
    assert plain.passed and not plain.findings, plain
    [note] = [n for n in plain.notes if "differ by design" in n.message]
    assert "rem's" in note.message and "round's" in note.message and "as finite differences do" in note.message
    assert not wrong.passed and "wrong" in {str(f.finding_class) for f in wrong.findings}
    assert not any("differ by design" in n.message for n in wrong.notes)


def _rule_off(function, factor: float, plus: float = 0.0):
    """`function` with a JVP rule `factor` times its derivative plus `plus` times the tangent."""
    import jax

    wrapped = jax.custom_jvp(function)
    wrapped.defjvp(lambda p, t: (wrapped(p[0]), factor * jax.jvp(function, p, t)[1] + plus * t[0]))
    return wrapped


def _hidden_behind_a_convention():
    """Wrong rules that a convention's derivative must not explain (a fresh-eyes review's cases): the convention's
    zero would leave nothing of the rule feeding it, or its operand is another function's, or the step spans
    reduce_precision's steps (float64 reading float32's staircase at its usual step), or floor meets a huge
    value at another output than the wrong rule's."""
    import jax.numpy as jnp
    from jax import lax

    doubled, sine, plus_one = _rule_off(lambda x: x, 2.0), _rule_off(jnp.sin, 2.0), _rule_off(jnp.sin, 1.0, 1.0)
    return {
        "reduce_precision of a doubled rule": (lambda x: lax.reduce_precision(doubled(x), 5, 2), 1.0),
        "rem of a doubled sine by a tiny divisor": (lambda x: lax.rem(sine(x), jnp.float32(1e-37)), 0.7),
        "a wrong rule beside float32 rounding": (lambda x: plus_one(x) + lax.reduce_precision(x, 8, 23), 0.7),
        "a wrong rule beside a huge floor": (
            lambda x: jnp.stack([jnp.floor(x * 2.0**30) / 2.0**30, _rule_off(jnp.sin, 1.01)(x)]),
            0.7,
        ),
    }


@pytest.mark.parametrize("case", list(_hidden_behind_a_convention()))
def test_a_convention_explains_no_wrong_rule_that_feeds_it_or_stands_beside_it(case):
    import numpy as np

    import gradaudit

    function, at = _hidden_behind_a_convention()[case]
    result = gradaudit.audit(function, np.float32(at))
    wrong = [f for f in result.findings if str(f.finding_class) == "wrong"]
    assert not result.passed and wrong, (case, result)
    if case == "a wrong rule beside a huge floor":  # the finding counts and leads with the wrong entry only
        finding = next(f for f in wrong if f.location)
        assert finding.count == 1 and finding.location == "d out[1]/d x", finding


def test_a_wrong_rule_beside_a_nan_input_is_wrong_where_its_eager_and_jit_twins_agree():
    """A sin rule 1.2 times its slope at [1, nan, 0.5]: the NaN input parts jacfwd from jit(jacfwd) at its own
    entries (NaN against 0), so the AD paths stand on different sides; at d out[2]/d x[2] every one of them gives
    1.0531 against finite differences' 0.8776. That is one rule wrong, not one transform giving two answers
    (a review found it classed eager-jit): `wrong` there, the NaN's entries `non-finite`."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit
    from gradaudit.model.paths import FINITE_DIFFERENCE

    @jax.custom_jvp
    def sine(x):
        return jnp.sin(x)

    sine.defjvp(lambda p, t: (jnp.sin(p[0]), 1.2 * jnp.cos(p[0]) * t[0]))
    result = gradaudit.audit(sine, np.array([1.0, np.nan, 0.5], np.float32))
    at_finite = [f for f in result.findings if FINITE_DIFFERENCE in f.paths]
    assert at_finite and {str(f.finding_class) for f in at_finite} == {"wrong"}, [f.labelled for f in at_finite]
    assert {str(f.finding_class) for f in result.findings} == {"wrong", "non-finite"}


def test_an_infinite_rule_where_the_function_is_smooth_is_wrong_and_the_nans_it_makes_beside_it_are_not():
    """A sin rule giving inf at x = 0.5: every AD path's d out[0]/d x[0] is inf against finite differences'
    0.8776. That infinity is no excuse for itself (it passed as `0 × inf` when an entry crossed its own row):
    `wrong` there; the NaNs a zero tangent or cotangent makes of it beside it are `non-finite`. xlogy(x, x) at 0
    (every AD path NaN at its own entry, as finite differences are: x log x has no left side) splits its row and
    column as -entr(x) does (-inf there): `non-finite`, 0 × NaN as 0 × inf, nothing wrong and no routing."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.scipy.special import entr, xlogy

    import gradaudit
    from gradaudit.model.paths import FINITE_DIFFERENCE

    @jax.custom_jvp
    def sine(x):
        return jnp.sin(x)

    sine.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.where(p[0] == 0.5, jnp.inf, jnp.cos(p[0])) * t[0]))
    result = gradaudit.audit(sine, np.array([0.5, 1.0, 2.0], np.float32))
    assert not result.passed
    wrong = [f for f in result.findings if str(f.finding_class) == "wrong"]
    assert wrong and all(FINITE_DIFFERENCE in f.paths and f.location == "d out[0]/d x[0]" for f in wrong), [
        f.labelled for f in wrong
    ]
    assert {str(f.finding_class) for f in result.findings} == {"wrong", "non-finite"}
    at = np.array([0.0, 0.5, 2.0], np.float32)
    for function in (lambda x: xlogy(x, x), lambda x: -entr(x)):
        split = gradaudit.audit(function, at)
        assert split.findings and {str(f.finding_class) for f in split.findings} == {"non-finite"}, [
            f.labelled for f in split.findings
        ]


@pytest.mark.slow
def test_nans_every_ad_path_gives_where_the_function_is_smooth_excuse_neither_each_other_nor_a_neighbour():
    """A review's cases of the rule above: a NaN rule at two points of a sum (each NaN excused the other as
    0 × NaN), a custom_vjp whose backward pass is NaN everywhere (its reverse paths the only AD paths), and a
    NaN rule beside a norm at 0 (whose NaN, a kink, excused it) all passed; finite differences find a number at
    each, so each is `wrong` there. A NaN leaked from `where(x > 0, sqrt(x), 0)` beside a NaN rule stays `leak`."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import gradaudit

    twice = jax.custom_jvp(jnp.sin)
    twice.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.where((p[0] == 0.5) | (p[0] == 1.0), jnp.nan, jnp.cos(p[0])) * t[0]))
    both = gradaudit.audit(lambda x: jnp.sum(twice(x)), np.array([0.5, 1.0], np.float32))
    assert not both.passed and {str(f.finding_class) for f in both.findings} == {"wrong"}

    @jax.custom_vjp
    def square(x):
        return x * x

    square.defvjp(lambda x: (x * x, x), lambda x, g: (g * jnp.sqrt(x - 10.0),))
    backward = gradaudit.audit(lambda x: jnp.sum(square(x)), np.array([0.5, 1.0, 2.0], np.float32))
    assert not backward.passed and {str(f.finding_class) for f in backward.findings} == {"wrong"}

    once = jax.custom_jvp(jnp.sin)
    once.defjvp(lambda p, t: (jnp.sin(p[0]), jnp.where(p[0] == 2.0, jnp.nan, jnp.cos(p[0])) * t[0]))
    beside = gradaudit.audit(lambda x: jnp.linalg.norm(x[:2]) + once(x[2]), np.array([0.0, 0.0, 2.0], np.float32))
    assert not beside.passed
    assert {f.location for f in beside.findings if str(f.finding_class) == "wrong"} == {"d out/d x[2]"}
    leaked = gradaudit.audit(
        lambda x: jnp.where(x[0] > 0, jnp.sqrt(x[0]), 0.0) + once(x[1]), np.array([-1.0, 2.0], np.float32)
    )
    assert not leaked.passed and "leak" in {str(f.finding_class) for f in leaked.findings}
