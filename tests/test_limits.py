"""limits.check_limits: a scenario too large to audit is refused before anything is allocated, the limit named."""

from __future__ import annotations

from dataclasses import replace

from gradaudit.limits import check_limits
from gradaudit.model.errors import Location
from gradaudit.model.options import Limits
from gradaudit.model.scenario import FunctionCall, InputSpec, Scenario
from tests.helpers import make_scenario


def _sine(shape: tuple[int, ...], order: int = 1, name: str = "f") -> Scenario:
    spec = InputSpec(dtype="float32", shape=shape, fill="ones")
    target = FunctionCall(fn="jax.numpy:sin", root=".", inputs=(spec,))
    return Scenario(name=name, source=Location("s.yaml", 3, 5), target=target, order=order)


def test_each_limit_is_named_with_the_sizes_that_broke_it():
    [cases] = check_limits([make_scenario(cases=5)], Limits(cases=4))
    assert cases.message == "scenario 's' is too large: 5 cases exceed the limit of 4 (limits.cases)"
    [elements] = check_limits([_sine((100,))], Limits(elements=99))
    assert "an input of 100 elements exceeds the limit of 99 (limits.elements)" in elements.message
    assert str(elements.location) == "s.yaml:3:5"
    [jacobian] = check_limits([_sine((100,))], Limits(jacobian=9_999))  # sin's output is its input's shape
    assert "its derivatives have 10,000 entries, over the limit of 9,999 (limits.jacobian)" in jacobian.message
    [evaluations] = check_limits([_sine((100,))], Limits(evaluations=399))
    assert "finite differences need 400 evaluations" in evaluations.message


def test_second_order_counts_the_hessian_and_a_run_counts_its_whole_work():
    assert check_limits([_sine((10,), order=1)], Limits(jacobian=100)) == []
    [hessian] = check_limits([_sine((10,), order=2)], Limits(jacobian=1_099))
    assert "1,100 entries" in hessian.message  # 100 Jacobian entries and 10 x 10 x 10 Hessian ones
    three = [_sine((10,), name=f"f{i}") for i in range(3)]
    [work] = check_limits(three, Limits(work=299))
    assert work.message == "the run's derivatives have 300 entries in all, over the limit of 299 (limits.work)"


def test_untraced_functions_are_checked_on_their_inputs_alone():
    big = _sine((200,))
    # without tracing the output's size is unknown; jacfwd's tangents (inputs squared) are still counted
    [untraced] = check_limits([big], Limits(jacobian=39_999), trace=False)
    assert "jacfwd's tangents have 40,000 elements" in untraced.message and "derivatives have" not in untraced.message
    [traced] = check_limits([big], Limits(jacobian=39_999))
    assert "its derivatives have 40,000 entries" in traced.message
    [inputs] = check_limits([replace(big, name="g")], Limits(elements=10), trace=False)
    assert "an input of 200 elements" in inputs.message
