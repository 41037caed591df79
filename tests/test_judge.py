"""Judging on hand-made path results: independent of which JAX rule is installed."""

from __future__ import annotations

import numpy as np

from gradaudit.judging.judge import judge
from gradaudit.judging.tolerances import Tolerances
from gradaudit.model.findings import CONSISTENT, DISAGREEMENT, ERROR, MISMATCH, RAISED, ROUTING
from gradaudit.model.paths import FINITE_DIFFERENCE, JACFWD, JACREV, JIT_JACFWD, JIT_JACREV, VALUE, PathError
from tests.helpers import path_results

TOL = Tolerances(fd_rtol=1e-3, fd_atol=1e-3, ad_rtol=1e-6, ad_atol=1e-6)
NAMES = ("case 0", "case 1")


def _results(value, fwd, rev, jit_rev, fd):
    return path_results(
        {VALUE: value, JACFWD: fwd, JIT_JACFWD: fwd, JACREV: rev, JIT_JACREV: jit_rev, FINITE_DIFFERENCE: fd}
    )


def test_agreeing_paths_are_consistent_with_provenance():
    results = _results([5.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0 + 1e-4])
    verdict = judge(results, NAMES, TOL)
    assert verdict.status == CONSISTENT
    assert verdict.findings == ()
    assert verdict.provenance.value_from == ((1,),)
    assert verdict.provenance.routes == {JACFWD: ((1,),), JIT_JACFWD: ((1,),), JACREV: ((1,),), JIT_JACREV: ((1,),)}


def test_derivative_sent_nowhere_is_a_routing_mismatch():
    results = _results([5.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 1.0])
    verdict = judge(results, NAMES, TOL)
    assert verdict.status == MISMATCH
    routing = [f for f in verdict.findings if f.kind == ROUTING]
    assert [f.message for f in routing] == ["value from case 1 · jacrev and jit(jacrev) send it nowhere"]
    disagreements = [f for f in verdict.findings if f.kind == DISAGREEMENT]
    # Paths that agree with each other are named together: one finding per disagreeing pair of groups.
    assert [f.paths for f in disagreements] == [
        (JACREV, JIT_JACREV, JACFWD, JIT_JACFWD),
        (JACREV, JIT_JACREV, FINITE_DIFFERENCE),
    ]
    ad_vs_ad, versus_fd = disagreements
    assert ad_vs_ad.message == (
        "jacrev and jit(jacrev) disagree with jacfwd and jit(jacfwd) on 1 of 2 entries; "
        "at d out/d case 1: 1 from jacfwd and jit(jacfwd), "
        "0 from jacrev and jit(jacrev) (difference 1, relative 1; tolerance 2e-06)"
    )
    assert ad_vs_ad.finding_class == "wrong" and ad_vs_ad.reason.startswith("inputs and output finite (out = 5)")
    assert (versus_fd.count, versus_fd.of) == (1, 2)
    assert versus_fd.values == {FINITE_DIFFERENCE: 1.0, JACREV: 0.0, JIT_JACREV: 0.0}
    assert versus_fd.location == "d out/d case 1"


def test_per_element_routing_counts_only_the_wrong_elements():
    # Output of shape (3,): element 0 from case 0, elements 1 and 2 from case 1; rev loses element 2.
    fd = [np.diag([1.0, 0.0, 0.0]), np.diag([0.0, 1.0, 1.0])]
    rev = [np.diag([1.0, 0.0, 0.0]), np.diag([0.0, 1.0, 0.0])]
    results = _results([[1.0, 2.0, 3.0]], fd, rev, fd, fd)
    verdict = judge(results, NAMES, TOL)
    assert verdict.provenance.value_from == ((0,), (1,), (1,))
    assert verdict.provenance.routes[JACREV] == ((0,), (1,), ())
    routing = [f for f in verdict.findings if f.kind == ROUTING]
    assert len(routing) == 1
    assert routing[0].message == "element [2]: value from case 1 · jacrev sends it nowhere (1 of 3 elements)"
    assert routing[0].count == 1 and routing[0].of == 3


def test_all_ad_paths_agreeing_against_finite_differences_is_still_a_mismatch():
    results = _results([5.0], [0.0, 2.0], [0.0, 2.0], [0.0, 2.0], [0.0, 1.0])
    verdict = judge(results, NAMES, TOL)
    assert verdict.status == MISMATCH
    assert [f.paths for f in verdict.findings if f.kind == DISAGREEMENT] == [
        (JACFWD, JIT_JACFWD, JACREV, JIT_JACREV, FINITE_DIFFERENCE)
    ]


def test_tolerance_separates_rounding_from_disagreement():
    inside = _results([5.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0009])
    outside = _results([5.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.01])
    assert judge(inside, NAMES, TOL).status == CONSISTENT
    assert judge(outside, NAMES, TOL).status == MISMATCH


def test_a_path_that_raises_makes_an_error_and_keeps_the_others():
    error = PathError(type="IndexError", message="tuple index out of range", where="lax.py:1 in rule")
    results = _results([5.0], [1.0], error, error, [1.0])
    verdict = judge(results, ("case 0",), TOL)
    assert verdict.status == ERROR
    assert [f.message for f in verdict.findings if f.kind == RAISED] == [
        "jacrev and jit(jacrev) raised IndexError: tuple index out of range"
    ]
    assert verdict.provenance.value_from == ((0,),)
    assert JACREV not in verdict.provenance.routes


def test_evaluation_failure_is_an_error_without_provenance():
    error = PathError(type="TypeError", message="bad", where="")
    results = _results(error, error, error, error, error)
    verdict = judge(results, NAMES, TOL)
    assert verdict.status == ERROR
    assert verdict.provenance is None
    assert verdict.findings[0].message.startswith("evaluating the function raised TypeError: bad")
