"""Classes of disagreement, decided entry by entry (judging/classes.py), on hand-made numbers."""

from __future__ import annotations

import numpy as np
import pytest

from gradaudit.judging.classes import Reference, Surroundings, classify, crossing_non_finite, explain
from gradaudit.judging.judge import judge
from gradaudit.judging.tolerances import Tolerances
from gradaudit.model.findings import FindingClass
from gradaudit.model.paths import FINITE_DIFFERENCE, JACFWD, JACREV, JIT_JACFWD, JIT_JACREV, VALUE
from tests.helpers import path_results

NAN, INF = float("nan"), float("inf")
F32_MAX = float(np.finfo(np.float32).max)


def _surroundings(x, out) -> Surroundings:
    return Surroundings(
        inputs=(np.asarray(x, dtype=np.float64),),
        output=np.asarray(out, dtype=np.float64),
        arg_names=("x",),
        largest=F32_MAX,
    )


def _reference(shape, kink=(), undefined=(), extrapolated=None) -> Reference:
    masks = []
    for flat in (kink, undefined):
        mask = np.zeros(shape, bool)
        mask.reshape(-1)[list(flat)] = True
        masks.append((mask,))
    estimates = (
        {} if extrapolated is None else {"extrapolated": (np.asarray(extrapolated, dtype=np.float64).reshape(shape),)}
    )
    return Reference(kink=masks[0], undefined=masks[1], estimates=estimates)


def _classes(surroundings, reference, flat, got, want, twins=False, crossing=None, block_size=None) -> list[str]:
    size = block_size or surroundings.output.size * surroundings.inputs[0].size
    return classify(
        surroundings,
        reference,
        0,
        1,
        size,
        np.asarray(flat),
        np.asarray(got, float),
        np.asarray(want, float),
        twins,
        crossing,
    ).tolist()


def test_an_entry_whose_own_input_or_output_is_not_finite_is_non_finite_whatever_else_holds():
    # Elementwise over x = [0, inf]: entry (0, 1) has input x[1] = inf; entry (1, 0) has output out[1] = nan.
    here = _surroundings([0.0, INF], [1.0, NAN])
    assert _classes(here, None, [1, 2], [NAN, NAN], [0.0, 0.0], twins=True) == ["non-finite", "non-finite"]


def test_nan_at_a_finite_entry_beside_a_non_finite_input_is_a_leak_and_without_one_is_wrong():
    # A reduction of x = [4, nan, 5] to one finite number: d out/d x[0] NaN against finite differences' 0.
    leaking = _surroundings([4.0, NAN, 5.0], 9.0)
    assert _classes(leaking, None, [0, 2], [NAN, NAN], [0.0, 0.0]) == ["leak", "leak"]
    # The same NaN where every input and the output are finite: nothing excuses it.
    smooth = _surroundings([4.0, 1.0, 5.0], 9.0)
    assert _classes(smooth, None, [0], [NAN], [-1.0]) == ["wrong"]
    # Two finite numbers that disagree beside a NaN input are not a leak: the NaN does not reach them.
    assert _classes(leaking, None, [0], [0.5], [0.0]) == ["wrong"]


def test_a_kink_is_non_differentiable_and_outranks_an_eager_jit_split():
    here = _surroundings([0.0, 1.0], [0.0, 1.0])
    reference = _reference((2, 2), kink=[0])
    assert _classes(here, reference, [0, 3], [1.0, 2.0], [0.0, 1.0], twins=True) == ["non-differentiable", "eager-jit"]
    assert _classes(here, reference, [0, 3], [1.0, 2.0], [0.0, 1.0]) == ["non-differentiable", "wrong"]


def test_a_kink_excuses_a_derivative_between_its_one_sided_slopes_and_nothing_outside_them():
    here = _surroundings([0.0], [0.0])
    kink = _reference((1, 1), kink=[0])

    def slopes(half, usual):
        names = ("left_half", "right_half", "left", "right")
        estimates = {name: (np.asarray([[v]]),) for name, v in zip(names, (*half, *usual), strict=True)}
        return Reference(kink=kink.kink, undefined=kink.undefined, estimates=estimates)

    # abs at 0: slopes -1 and 1 at the usual step and half of it; AD's 0 or 1 is a subgradient, 5 or -3 is not.
    absolute = slopes((-1.0, 1.0), (-1.0, 1.0))
    for got, expected in ((0.0, "non-differentiable"), (1.0, "non-differentiable"), (5.0, "wrong"), (-3.0, "wrong")):
        assert _classes(here, absolute, [0], [got], [0.0]) == [expected], got
    # One-sided slopes that part by rounding only (111.4 and 112.5) excuse nothing of the opposite sign.
    noisy = slopes((112.5, 111.4), (112.4, 111.5))
    assert _classes(here, noisy, [0], [-111.8], [111.9]) == ["wrong"]
    # A pole the step crosses (1/x next to 0): slopes that grow as the step halves bound nothing.
    pole = slopes((2e6, -2e6), (1e6, -1e6))
    assert _classes(here, pole, [0], [-1e9], [0.0]) == ["non-differentiable"]
    # AD's NaN at a kink (a norm at the origin) is the kink's, not a wrong derivative nor a leak.
    assert _classes(here, absolute, [0], [NAN], [0.0]) == ["non-differentiable"]


@pytest.mark.slow
def test_a_wrong_rule_is_wrong_at_a_kink_and_along_random_directions(tmp_path):
    import jax
    import jax.numpy as jnp

    import gradaudit

    @jax.custom_jvp
    def steep_abs(x):
        return jnp.abs(x)

    steep_abs.defjvp(lambda primals, tangents: (steep_abs(primals[0]), 5.0 * tangents[0]))
    at_kink = gradaudit.audit(steep_abs, np.float32(0.0))
    assert not at_kink.passed and {str(f.finding_class) for f in at_kink.findings} == {"wrong"}

    @jax.custom_jvp
    def flipped_sin(w):
        return jnp.sin(w)

    flipped_sin.defjvp(lambda primals, tangents: (flipped_sin(primals[0]), -jnp.cos(primals[0]) * tangents[0]))
    directional = gradaudit.audit(
        lambda w: jnp.sum(flipped_sin(w)), np.linspace(-2, 2, 50, dtype=np.float32), directional_above=0
    )
    assert not directional.passed and "wrong" in {str(f.finding_class) for f in directional.findings}


def test_a_derivative_beyond_the_dtypes_range_or_without_an_estimate_at_the_edge_is_non_finite():
    here = _surroundings([1e30], [1e30])
    # Finite differences (float64 arithmetic) put the derivative past float32's largest value.
    beyond = _reference((1, 1), extrapolated=[4e38])
    assert _classes(here, beyond, [0], [INF], [3e38]) == ["non-finite"]
    # No estimate (the step left the range) and one side infinite: at the edge, not a wrong derivative.
    edge = _reference((1, 1), undefined=[0])
    assert _classes(here, edge, [0], [INF], [2.0]) == ["non-finite"]
    # Without an infinity involved, a finite split at the edge stays wrong.
    assert _classes(here, edge, [0], [1.0], [2.0]) == ["wrong"]


def test_crossing_non_finite_mark_the_row_and_column_of_an_infinite_derivative():
    # 1/x at x = [0, 1]: d out[0]/d x[0] = -inf; the rest of its row (out[0]) and column (x[0]) is crossed.
    jacobian = np.array([[-INF, 0.0], [0.0, -1.0]])
    (crossed,) = crossing_non_finite([(jacobian,)], 2)
    assert crossed.tolist() == [[False, True], [True, False]]
    here = _surroundings([0.0, 1.0], [INF, 1.0])
    # d out[1]/d x[0]: its own input 0 and output 1 are finite, but 0 × inf is NaN in reverse mode.
    assert _classes(here, None, [2], [NAN], [0.0], crossing=crossed) == ["non-finite"]
    assert _classes(here, None, [2], [NAN], [0.0]) == ["wrong"]


def test_a_nan_every_path_gives_crosses_its_row_and_column_but_not_itself():
    # xlogy(x, x) at [0, 0.5]: every AD path NaN at d out[0]/d x[0] (log 0 + 0/0); forward mode's NaN at
    # d out[0]/d x[1] is 0 × NaN, as entr's is 0 × inf.
    forward = np.array([[NAN, NAN], [0.0, 0.31]])
    reverse = np.array([[NAN, 0.0], [NAN, 0.31]])
    (crossed,) = crossing_non_finite([(forward,), (reverse,)], 2)
    assert crossed.tolist() == [[False, True], [True, False]]
    # An infinity one path alone gives crosses nothing.
    (alone,) = crossing_non_finite([(np.array([[INF, 0.0], [0.0, 1.0]]),), (np.eye(2),)], 2)
    assert not alone.any()
    # A rule giving inf where sin is smooth: the entry is its own infinity, so it stays wrong.
    here = _surroundings([0.5, 1.0], [0.479, 0.841])
    (rule,) = crossing_non_finite([(np.array([[INF, NAN], [0.0, 0.54]]),), (np.array([[INF, 0.0], [NAN, 0.54]]),)], 2)
    assert _classes(here, None, [0], [INF], [0.8776], crossing=rule) == ["wrong"]
    assert _classes(here, None, [1], [NAN], [0.0], crossing=rule) == ["non-finite"]


def test_the_reason_names_the_entry_its_numbers_and_what_decided():
    here = _surroundings([4.0, NAN, 5.0], 9.0)
    reason, evidence = explain(FindingClass.LEAK, here, None, 0, 1, 3, 0, (NAN, 0.0))
    assert "x[0] = 4" in reason and "x[1] = nan elsewhere" in reason
    assert evidence["input x[0]"] == 4.0 and evidence["output out"] == 9.0
    reference = Reference(
        kink=(np.zeros((1, 1), bool),),
        undefined=(np.zeros((1, 1), bool),),
        estimates={
            "left_half": (np.array([[-1.0]]),),
            "right_half": (np.array([[-1.0]]),),
            "extrapolated": (np.array([[-1.0]]),),
        },
    )
    smooth = Surroundings(inputs=(np.array([0.0]),), output=np.array(-0.0), arg_names=("mu",), largest=F32_MAX)
    reason, evidence = explain(FindingClass.WRONG, smooth, reference, 0, 1, 1, 0, (NAN, -1.0))
    assert reason == (
        "inputs and output finite (mu[0] = 0; out = -0); finite differences -1 (slope -1 from the left, "
        "-1 from the right), both sides agree"
    )
    assert evidence["finite_difference"] == -1.0 and evidence["slope_left"] == -1.0


TOL = Tolerances(fd_rtol=1e-3, fd_atol=1e-3, ad_rtol=1e-6, ad_atol=1e-6)


def _judged(x, value, fwd, rev, fd, jit_rev=None):
    results = path_results(
        {
            VALUE: value,
            JACFWD: fwd,
            JIT_JACFWD: fwd,
            JACREV: rev,
            JIT_JACREV: rev if jit_rev is None else jit_rev,
            FINITE_DIFFERENCE: fd,
        }
    )
    return judge(results, ("x",), TOL, inputs=(np.asarray(x, dtype=np.float32),))


@pytest.mark.parametrize(
    ("x", "value", "fwd", "rev", "fd", "expected"),
    [
        # Every AD path NaN where the function is smooth and finite (xlogy's 0/0): wrong.
        ([0.0], [-0.0], [[NAN]], [[NAN]], [[-1.0]], {"wrong"}),
        # Reverse NaN beside a NaN input, at entries whose own numbers are finite: a leak.
        ([4.0, NAN], [4.0], [[0.0, 0.0]], [[NAN, NAN]], [[0.0, NAN]], {"leak", "non-finite"}),
        # Off-diagonal 0 × inf of an elementwise function at a pole: non-finite, not wrong.
        (
            [0.0, 1.0],
            [[INF, 1.0]],
            [np.array([[-INF, 0.0], [0.0, -1.0]])],
            [np.array([[-INF, 0.0], [NAN, -1.0]])],
            [np.array([[NAN, 0.0], [0.0, -1.0]])],
            {"non-finite"},
        ),
    ],
)
def test_a_scenario_holds_one_finding_per_class_its_entries_have(x, value, fwd, rev, fd, expected):
    verdict = _judged(x, value, fwd, rev, fd)
    assert {str(f.finding_class) for f in verdict.findings} == expected
    for finding in verdict.findings:
        assert finding.reason and finding.fingerprint.startswith(f"{finding.finding_class}:")


def test_one_noise_entry_does_not_excuse_a_wrong_entry_of_the_same_comparison():
    # x = [4, nan, 1]: reverse NaN at x[0] (beside the NaN: a leak) and 0 at x[2] where finite
    # differences say 2 (a wrong derivative at finite numbers); judged apart, not as one scenario.
    verdict = _judged([4.0, NAN, 1.0], [6.0], [[0.0, 0.0, 2.0]], [[NAN, NAN, 0.0]], [[0.0, NAN, 2.0]])
    classes = {(str(f.finding_class), f.location) for f in verdict.findings if "finite differences" in f.message}
    assert ("wrong", "d out/d x[2]") in classes and ("leak", "d out/d x[0]") in classes


def test_a_probe_settles_by_the_numbers_it_holds():
    from gradaudit.judging.classes import FINER_AGREES, UNRESOLVED, settle
    from gradaudit.model.computed import Probe

    h = 2.0**-8
    steps = tuple(h * 2.0**p for p in (8, 4, 0, -4, -8, -12))

    def probe(central, left=None, right=None, tied=(), along=None):
        return Probe(h, steps, tuple(central), tuple(left or central), tuple(right or central), tied, along)

    def outcome(found, got, want, predicted=None, followed=None):
        settled = settle(found, got, want, predicted, rtol=1e-3, atol=1e-3, rounding_at=0.0, followed=followed)
        return None if settled is None else settled.outcome

    # A line of slope 1 at every step where AD says 0: nothing to settle, the entry stays wrong.
    assert outcome(probe([1.0] * 6), 0.0, 1.0) is None
    # Finer steps agree with AD where the usual one did not: its step spans the function's periods.
    assert outcome(probe([0.0, 0.0, 0.0, 1.0, 1.0, 1.0]), 1.0, 0.0) == FINER_AGREES
    # Flat at and below the usual step, AD's slope over the largest: a staircase.
    assert outcome(probe([1.0, 0.4, 0.0, 0.0, 0.0, 0.0]), 1.0, 0.0) == "non-differentiable"
    # Flat everywhere: AD's 1 is followed by nothing; still wrong.
    assert outcome(probe([0.0] * 6), 1.0, 0.0) is None
    # One-sided slopes that part at the finest steps and do not close: a jump finer than the step.
    jump = probe([5.0] * 6, left=[5.0, 5.0, 5.0, 5.0, 1e3, 1e6], right=[5.0, 5.0, 5.0, 5.0, 0.0, 0.0])
    assert outcome(jump, 0.0, 5.0) == "non-differentiable"
    # A kink finer than the step (slopes 1 and 9): AD's 5 lies between them, AD's -5 outside: wrong, kink or not.
    kink = probe([5.0] * 6, left=[5.0, 5.0, 5.0, 5.0, 1.0, 1.0], right=[5.0, 5.0, 5.0, 5.0, 9.0, 9.0])
    assert outcome(kink, 5.0, 4.0) == "non-differentiable"
    assert outcome(kink, -5.0, 4.0) is None
    # Tied inputs whose diagonal slope is not the sum of their partial slopes: no derivative.
    tie = probe([0.0] * 6, tied=((0, 0), (0, 1)), along=1.0)
    assert outcome(tie, 1.0, 0.0, predicted=0.0) == "non-differentiable"
    assert outcome(tie, 1.0, 0.0, predicted=1.0) is None
    # AD's partials summed over the tie give its slope there (sort's one-sided choice): still no derivative.
    assert outcome(tie, 1.0, 0.0, predicted=0.0, followed=1.0) == "non-differentiable"
    # AD's partials sum to -1 along a tie whose slope is 1: wrong along the tie as well.
    assert outcome(tie, -1.0, 0.0, predicted=0.0, followed=-1.0) is None
    # The function changes by about its whole range over every step that moves the input (sin at 1e12
    # in float32): no step resolves a slope, so nothing can be said either way.
    aliased = probe([(-1) ** k * 0.7 / s for k, s in enumerate(steps)])
    assert outcome(aliased, 0.9, 0.7 / h) == UNRESOLVED
    # ... but an AD path's NaN there stays a finding: nothing about the steps excuses it.
    assert outcome(aliased, float("nan"), 0.7 / h) is None
    # Where the finest steps change the function in proportion to the step, they resolve a slope: wrong stays.
    assert outcome(probe([3.0] * 6), 0.9, 3.0) is None


def test_nan_born_inside_the_function_is_a_leak_and_the_evaluation_is_asked_only_for_such_a_split():
    # Every input and the output finite; an equation inside gives NaN from finite operands.
    asked = []

    def inside() -> str:
        asked.append(True)
        return "sqrt"

    here = Surroundings(
        inputs=(np.array([-1.0, 4.0]),), output=np.array(2.0), arg_names=("x",), largest=F32_MAX, inside_of=inside
    )
    # Two finite numbers that disagree: the function is not evaluated again, and the entry is wrong.
    assert _classes(here, None, [0], [0.5], [0.0]) == ["wrong"] and not asked
    assert _classes(here, None, [0], [NAN], [0.0]) == ["leak"] and asked
    reason, _ = explain(FindingClass.LEAK, here, None, 0, 1, 2, 0, (NAN, 0.0))
    assert "`sqrt` inside the function gives inf or NaN from finite operands" in reason
    # Nothing born inside: the same NaN is wrong.
    plain = Surroundings(
        inputs=(np.array([-1.0, 4.0]),), output=np.array(2.0), arg_names=("x",), largest=F32_MAX, inside_of=lambda: None
    )
    assert _classes(plain, None, [0], [NAN], [0.0]) == ["wrong"]


def test_a_hessian_diagonal_entry_names_its_input_once():
    # d2 out/d x[1] d x[1] of a scalar function of x = [0.3, 1]: one input element, named once.
    here = _surroundings([0.3, 1.0], 0.84)
    why, evidence = explain(FindingClass.WRONG, here, None, 0, 2, 4, 3, (0.0, -0.84))
    assert why.count("x[1] = 1") == 1 and evidence["input x[1]"] == 1.0


@pytest.mark.slow
def test_an_eager_jit_split_seen_across_modes_is_eager_jit():
    """A layer norm whose variance is E[x^2] - E[x]^2 (flax's fast variance) at float32 inputs near 1000: eager
    and jit round the cancelling sums apart (values 5% apart), each binding's jacfwd and jacrev agree, and
    jacfwd against jit(jacrev) parts by the same split. That pair was classed `wrong` (a red team's case); it is
    the eager/jit split seen across modes: `eager-jit`, as jacfwd against jit(jacfwd) is."""
    import jax
    import jax.numpy as jnp

    import gradaudit

    def fast_norm(x):
        mean = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean(x * x, -1, keepdims=True) - mean * mean
        return jnp.tanh((x - mean) * jax.lax.rsqrt(jnp.maximum(var, 0.0) + 1e-6))

    at = (1000.0 + np.random.default_rng(0).standard_normal((2, 6))).astype(np.float32)
    audit = gradaudit.audit(fast_norm, at)
    classes = {(str(f.finding_class), frozenset(f.paths)) for f in audit.findings}
    assert ("eager-jit", frozenset({VALUE, "jit_value"})) in classes, classes
    assert ("eager-jit", frozenset({JACFWD, JIT_JACREV})) in classes, classes
    assert not any(c == "wrong" and FINITE_DIFFERENCE not in paths for c, paths in classes), classes


def test_a_mode_split_within_one_binding_stays_wrong_beside_an_eager_jit_split():
    """Hand-made paths over two entries: at the first, eager and jit part (jacfwd = jacrev = 1.0, both jit forms
    1.1), each binding's modes agreeing: nothing there is `wrong`, the cross pair (the eager paths against
    jit(jacfwd)) included. At the second, jit(jacrev) alone is twice the rest (a reverse rule wrong under jit):
    jit(jacfwd) against jit(jacrev) is `wrong`, whatever the eager/jit split at the first entry (a review found it
    `eager-jit`: the twin of jit(jacrev) in the eager binding, jacrev, gives jit(jacfwd)'s number)."""
    x = [0.5, 0.7]
    results = path_results(
        {
            VALUE: ([0.48, 0.64],),
            JACFWD: ([[1.0, 0.0], [0.0, 0.76]],),
            JACREV: ([[1.0, 0.0], [0.0, 0.76]],),
            JIT_JACFWD: ([[1.1, 0.0], [0.0, 0.76]],),
            JIT_JACREV: ([[1.1, 0.0], [0.0, 1.52]],),
            FINITE_DIFFERENCE: ([[1.0, 0.0], [0.0, 0.76]],),
        }
    )
    verdict = judge(results, ("x",), TOL, inputs=(np.asarray(x, dtype=np.float32),))
    classes = {(str(f.finding_class), frozenset(f.paths), f.location) for f in verdict.findings}
    assert ("eager-jit", frozenset({JACFWD, JACREV, JIT_JACFWD}), "d out[0]/d x[0]") in classes, classes
    assert not any(c == "wrong" and at == "d out[0]/d x[0]" for c, _, at in classes), classes
    assert ("wrong", frozenset({JIT_JACFWD, JIT_JACREV}), "d out[1]/d x[1]") in classes, classes
