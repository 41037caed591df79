"""Function scenarios on real functions: bindings, not-applicable paths, kinks, diagnoses, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradaudit.sources.scenario_files import load_paths
from tests.helpers import run_cli, write_yaml

FUNCTIONS = """
import jax
import jax.numpy as jnp
from jax import lax


def huber(x, y):
    r = x - y[:2]
    return jnp.sum(jnp.where(jnp.abs(r) < 1.0, 0.5 * r**2, jnp.abs(r) - 0.5))


def absolute(x):
    return jnp.abs(x)


def inverted_clamp(lo, x, hi):
    return lax.clamp(lo, x, hi)


def doubled(x):
    return 2.0 * x


def tree(x, k):
    return {"scaled": x * k, "pair": (jnp.sum(x**2), jnp.int32(1))}


def window(x, start):
    return lax.dynamic_slice(x, (start,), (3,))


def chosen(which, a, b):
    return lax.select_n(which, a, b) ** 2


def log_or_zero(x):
    return jnp.where(x > 0, jnp.log(x), 0.0)


@jax.custom_vjp
def cube(x):
    return x**3


cube.defvjp(lambda x: (x**3, x), lambda x, g: (3 * x**2 * g,))


@jax.custom_vjp
def wrong_cube(x):
    return x**3


wrong_cube.defvjp(lambda x: (x**3, x), lambda x, g: (2 * x**2 * g,))

def branchy(x):
    if x > 0:
        return x**2
    return -x


def imports_when_called(x):
    from neighbour import triple

    return triple(x)


STATE = jax.new_ref(jnp.zeros(2))


def closed_over(x):
    STATE[...] = x * 3.0
    return STATE[...]
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "mylib").mkdir()
    (tmp_path / "mylib" / "__init__.py").write_text("")
    (tmp_path / "mylib" / "fns.py").write_text(FUNCTIONS)
    (tmp_path / "neighbour.py").write_text("def triple(x):\n    return 3 * x\n")
    return tmp_path


def audit(folder: Path, yaml_text: str, *args: str) -> tuple[int, dict]:
    write_yaml(folder, "suite.yaml", yaml_text)
    result = run_cli("run", str(folder / "suite.yaml"), "--json", "-", "--json-detail", "full", *args)
    assert result.exception is None
    return result.exit_code, result.json()


def only(report: dict) -> dict:
    (entry,) = report["results"]
    return entry


def test_user_function_with_fill_inputs_and_fixed_integer_is_consistent(suite):
    code, report = audit(
        suite,
        """
        scenarios:
          - name: huber
            fn: mylib.fns:huber
            inputs:
              - {dtype: float32, value: [0.5, -1.25]}
              - {dtype: float32, shape: [300], fill: arange}
          - name: pytree
            fn: mylib.fns:tree
            inputs:
              - {dtype: float32, fill: normal, shape: [3], seed: 2}
              - {dtype: uint8, value: 100}
        """,
    )
    assert code == 0, report
    huber, tree = report["results"]
    assert huber["status"] == "consistent"
    # d/dx of the sum: r = x - y[:2] = (0.5, -2.25) -> (0.5, -1.0); d/dy[:2] is minus that, the rest 0.
    assert huber["paths"]["jacrev"]["jacobians"]["x0"] == [0.5, -1.0]
    assert huber["paths"]["jacrev"]["jacobians"]["x1"][:3] == [-0.5, 1.0, 0.0]
    assert len(huber["paths"]["finite_difference"]["jacobians"]["x1"]) == 300
    # The pytree's floating leaves flatten to 3 + 1 outputs; the integer leaf is dropped.
    assert tree["status"] == "consistent"
    assert len(tree["paths"]["value"]["value"]) == 4
    assert set(tree["paths"]) >= {"jacrev", "jacrev:const", "finite_difference:const", "jit_value:const"}


def test_binding_decides_whether_a_captured_unsigned_start_misreads(suite):
    text = """
        scenarios:
          - name: window
            fn: mylib.fns:window
            bind: {bind}
            inputs:
              - {{dtype: float32, fill: arange, shape: [8]}}
              - {{dtype: uint8, value: 255}}
        """
    code, traced = audit(suite, text.format(bind="traced"))
    assert code == 0 and only(traced)["status"] == "consistent"
    assert only(traced)["paths"]["value"]["value"] == [5.0, 6.0, 7.0]
    code, both = audit(suite, text.format(bind="both"))
    entry = only(both)
    assert code == 1 and entry["status"] == "mismatch"
    # Eagerly and traced the start 255 is clamped to 5; captured as a constant under jit it reads elsewhere.
    assert entry["paths"]["jit_value"]["value"] == [5.0, 6.0, 7.0]
    assert entry["paths"]["jit_value:const"]["value"] != [5.0, 6.0, 7.0]
    assert any(f["paths"] == ["jit_value:const", "value"] for f in entry["findings"])


def test_custom_vjp_forward_paths_are_not_applicable_and_say_why(suite):
    code, report = audit(
        suite,
        """
        scenarios:
          - name: cube
            fn: mylib.fns:cube
            order: 2
            inputs: [{dtype: float32, value: [0.5, 2.0]}]
          - name: wrong-cube
            fn: mylib.fns:wrong_cube
            inputs: [{dtype: float32, value: [0.5, 2.0]}]
        """,
    )
    cube, wrong = report["results"]
    assert cube["status"] == "consistent"
    assert cube["paths"]["jacfwd"]["status"] == "not_applicable"
    assert (
        cube["paths"]["jacfwd"]["reason"]
        == "forward mode cannot differentiate a custom_vjp function: it defines only a reverse rule"
    )
    assert cube["paths"]["jacrev"]["jacobians"]["x0"] == [[0.75, 0.0], [0.0, 12.0]]
    # The Hessian's reference falls back to differences of jacrev; d2(x^3)/dx2 = 6x.
    hessian = cube["paths"]["finite_difference_jacobian"]["hessian"]["x0 d x0"]
    assert hessian[0][0][0] == pytest.approx(3.0, rel=1e-2) and hessian[1][1][1] == pytest.approx(12.0, rel=1e-2)
    assert any("jacfwd does not apply" in n["message"] for n in cube["notes"])
    assert cube["diagnosis"]["id"] == "GA008"
    assert wrong["status"] == "mismatch" and wrong["diagnosis"]["id"] == "GA007"
    assert code == 1


def test_a_wrong_reverse_rule_is_found_even_with_a_step_its_dtype_cannot_take(suite):
    # eps 1e-5 is below float16's resolution at 10 (a spacing of 2**-7), and a step of a spacing or
    # two would leave rounding noise larger than the error: the step is raised to sqrt(epsilon) * |x|
    # and the wrong cube rule (2 x**2 instead of 3 x**2) disagrees with finite differences.
    code, report = audit(
        suite,
        """
        scenarios:
          - name: wrong-cube-float16
            fn: mylib.fns:wrong_cube
            eps: 1.0e-5
            inputs: [{dtype: float16, value: 10.0}]
        """,
    )
    entry = only(report)
    assert entry["status"] == "mismatch" and code == 1
    assert entry["paths"]["jacrev"]["jacobians"]["x0"] == 200.0
    assert entry["paths"]["finite_difference"]["jacobians"]["x0"] == pytest.approx(300.0, rel=0.01)


def test_kinks_are_notes_but_real_disagreements_stay_findings(suite):
    code, report = audit(
        suite,
        """
        scenarios:
          - name: abs-at-zero
            fn: mylib.fns:absolute
            inputs: [{dtype: float32, value: [0.0, 1.5, -2.0]}]
          - name: clamp-lo-above-hi
            fn: mylib.fns:inverted_clamp
            inputs:
              - {dtype: float32, value: 1.0}
              - {dtype: float32, value: -3.0}
              - {dtype: float32, value: -1.0}
          - name: non-finite-input
            fn: mylib.fns:doubled
            inputs: [{dtype: float32, value: [.nan, 1.0]}]
        """,
    )
    kink, clamp, nonfinite = report["results"]
    assert kink["status"] == "consistent" and kink["findings"] == []
    (note,) = kink["notes"]
    assert note["message"].startswith("kink or jump at d out[0]/d x0[0]: slope -1 from the left, 1 from the right")
    # lax.clamp with lo > hi returns hi: d/dhi is 1, yet every AD path says 0 at x below hi.
    assert clamp["status"] == "mismatch"
    assert clamp["paths"]["finite_difference"]["jacobians"]["x2"] == 1.0
    assert all(clamp["paths"][p]["jacobians"]["x2"] == 0.0 for p in ("jacfwd", "jacrev", "jit_jacrev", "jit_jacfwd"))
    assert nonfinite["status"] == "consistent"
    assert any(
        "non-finite inputs or outputs, or a step past the dtype's range: 3 of 4 entries" in n["message"]
        for n in nonfinite["notes"]
    )
    assert code == 1


def test_diagnoses_for_routing_nan_gradients_and_closed_over_refs(suite):
    code, report = audit(
        suite,
        """
        scenarios:
          - name: chosen-out-of-range
            fn: mylib.fns:chosen
            inputs:
              - {dtype: int32, value: 3}
              - {dtype: float32, value: 1.5}
              - {dtype: float32, value: -2.0}
          - name: log-at-zero
            fn: mylib.fns:log_or_zero
            inputs: [{dtype: float32, value: [0.0, 2.0]}]
          - name: closed-over-ref
            fn: mylib.fns:closed_over
            inputs: [{dtype: float32, value: [1.0, 2.0]}]
        """,
        "--rule",
        "legacy",
    )
    routed, nan, ref = report["results"]
    assert routed["status"] == "mismatch" and routed["diagnosis"]["id"] == "GA002"
    assert nan["status"] == "mismatch" and nan["diagnosis"]["id"] == "GA006"
    assert ref["status"] == "error"
    assert ref["paths"]["jacrev"]["error"]["message"].startswith(
        "performing a set/swap operation with a differentiated value"
    )
    assert ref["diagnosis"]["id"] == "GA003"
    diagnosis = report["diagnoses"]["GA003"]
    assert len(diagnosis["fixes"]) == 4
    assert diagnosis["fixes"][0].startswith("Move the Ref inside the differentiated function's argument list")
    assert "lax.stop_gradient" in diagnosis["fixes"][2]
    result = run_cli("run", str(suite / "suite.yaml"), "--rule", "legacy")
    assert "GA003 a differentiated value is written into an array reference that is not differentiated" in result.stdout
    assert "fix 4: Use higher-level APIs" in result.stdout
    assert code == 1


def test_explain_prints_an_entry_and_rejects_unknown_ids():
    listing = run_cli("explain")
    assert listing.exit_code == 0 and "GA003" in listing.stdout and "GA006" in listing.stdout
    entry = run_cli("explain", "ga006")
    assert entry.exit_code == 0
    assert "a NaN from a branch that was not selected poisons the gradient" in entry.stdout
    assert "double-where" in entry.stdout
    unknown = run_cli("explain", "GA99")
    assert unknown.exit_code == 2 and "no diagnosis 'GA99'" in unknown.stderr


BAD_FUNCTIONS = {
    "missing-module": (
        "fn: nowhere:f\n    inputs: [{dtype: float32, value: 1.0}]",
        "3:9",
        "cannot import module 'nowhere'",
    ),
    "missing-function": (
        "fn: mylib.fns:hubr\n    inputs: [{dtype: float32, value: 1.0}]",
        "3:9",
        "has no function 'hubr'; did you mean 'huber'?",
    ),
    "not-module-colon-function": (
        "fn: huber\n    inputs: [{dtype: float32, value: 1.0}]",
        "3:9",
        "fn must be 'module:function'",
    ),
    "input-without-value": (
        "fn: mylib.fns:doubled\n    inputs: [{dtype: float32}]",
        "4:14",
        "needs either a 'value' or a 'fill'",
    ),
    "no-float-input": (
        "fn: mylib.fns:doubled\n    inputs: [{dtype: int32, value: 1}]",
        "4:13",
        "no input to differentiate",
    ),
    "every-float-held": (
        "fn: mylib.fns:doubled\n    inputs: [{dtype: float32, value: 1.0, held: true}]",
        "4:13",
        "no input to differentiate: give at least one input of a floating dtype not marked `held: true`",
    ),
    "held-integer": (
        "fn: mylib.fns:doubled\n    inputs: [{dtype: float32, value: 1.0}, {dtype: int32, value: 1, held: true}]",
        "4:75",
        "held applies to floating inputs (int32 inputs are held anyway)",
    ),
    "int-out-of-range": (
        "fn: mylib.fns:doubled\n    inputs: [{dtype: uint8, value: 256}, {dtype: float32, value: 1.0}]",
        "4:36",
        "input value 256 is not representable in uint8",
    ),
    "select-key-in-function": (
        "fn: mylib.fns:doubled\n    cases: 2\n    inputs: [{dtype: float32, value: 1.0}]",
        "4:5",
        "'cases' does not apply to a function scenario",
    ),
    "bad-bind": (
        "fn: mylib.fns:doubled\n    bind: sometimes\n    inputs: [{dtype: float32, value: 1.0}]",
        "4:11",
        "bind must be one of traced, constant, both",
    ),
    "normal-int": (
        "fn: mylib.fns:doubled\n    inputs: [{dtype: int8, fill: normal, shape: [2]}, {dtype: float32, value: 1.0}]",
        "4:34",
        "fill 'normal' needs a floating dtype",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_FUNCTIONS))
def test_bad_function_scenarios_are_exit_2_with_location(suite, name):
    body, where, message = BAD_FUNCTIONS[name]
    path = write_yaml(suite, "bad.yaml", f"scenarios:\n  - name: f\n    {body}\n")
    result = run_cli("run", str(path))
    assert result.exit_code == 2 and result.exception is None, result.stderr
    assert any(line.startswith(f"{path}:{where}") and message in line for line in result.stderr.splitlines()), (
        result.stderr
    )


ROOT = Path(__file__).resolve().parents[1]


def test_catalog_loads_every_suite_and_keeps_the_seed_suite_apart():
    loaded = load_paths([str(ROOT / "scenarios")])
    assert loaded.errors == []
    suites = {s.suite for s in loaded.scenarios}
    assert {
        "select_n",
        "select",
        "where",
        "switch_cond",
        "dynamic_slice",
        "gather",
        "clamp",
        "reductions",
        "refs",
    } <= suites
    assert sum(s.suite == "select_n" for s in loaded.scenarios) == 17


@pytest.mark.slow
def test_catalog_audit_has_a_line_per_suite_and_the_seed_counts(tmp_path):
    out = tmp_path / "catalog.json"
    result = run_cli("run", str(ROOT / "scenarios"), "--rule", "legacy", "--json", str(out))
    assert result.exit_code == 1
    assert "  select_n: 17 scenarios: 6 consistent, 9 mismatch, 2 error" in result.stdout
    report = json.loads(out.read_text())
    assert report["suites"]["select_n"] == {"total": 17, "consistent": 6, "mismatch": 9, "error": 2}
    by_name = {r["name"]: r for r in report["results"]}
    # Controls stay consistent; kinks are notes; known defects are found and diagnosed.
    for control in ("where-log-double-where", "switch-in-range", "clamp-at-bounds", "max-with-tie", "take-clip"):
        assert by_name[control]["status"] == "consistent", control
    assert by_name["ref-closed-over-written"]["diagnosis"]["id"] == "GA003"
    assert by_name["where-log-at-zero"]["diagnosis"]["id"] == "GA006"
    assert by_name["select-n-uint32-max"]["diagnosis"]["id"] == "GA002"


SMOOTH = """
import jax
import jax.numpy as jnp


def ratio(x, y):
    return x / y


def network(w, x):
    return jnp.tanh(x @ w).sum(axis=0)


def scaled_sum(x):
    return 1000.0 * jnp.sum(x**2)


def loop(x):
    return jax.lax.fori_loop(0, 5, lambda i, v: v * 1.1 + jnp.sin(v), x)


@jax.custom_jvp
def wrong_square(x):
    return x**2


wrong_square.defjvp(lambda primals, tangents: (primals[0] ** 2, 3.0 * primals[0] * tangents[0]))
"""


def test_smooth_functions_with_strong_curvature_or_large_values_are_consistent(tmp_path):
    (tmp_path / "smooth.py").write_text(SMOOTH)
    code, report = audit(
        tmp_path,
        """
        scenarios:
          - {name: ratio-near-pole, fn: "smooth:ratio", inputs: [{dtype: float32, value: [1.0, 3.0]}, \
{dtype: float32, value: [0.1, -7.0]}]}
          - {name: network, fn: "smooth:network", inputs: [{dtype: float32, fill: normal, shape: [4, 3], seed: 2}, \
{dtype: float32, fill: normal, shape: [5, 4], seed: 3}]}
          - {name: large-values, fn: "smooth:scaled_sum", inputs: [{dtype: float32, fill: arange, shape: [300]}]}
          - {name: half-precision, fn: "smooth:loop", inputs: [{dtype: float16, value: [0.5, 1.0]}]}
          - {name: loop-order-2, fn: "smooth:loop", order: 2, inputs: [{dtype: float64, value: [0.5, 1.0]}]}
          - {name: wrong-custom-jvp, fn: "smooth:wrong_square", inputs: [{dtype: float32, value: [1.5, -2.0]}]}
        """,
    )
    statuses = {r["name"]: r["status"] for r in report["results"]}
    assert statuses == {
        "ratio-near-pole": "consistent",
        "network": "consistent",
        "large-values": "consistent",
        "half-precision": "consistent",
        "loop-order-2": "consistent",
        # Every AD path follows the wrong rule (3x instead of 2x); only finite differences tell.
        "wrong-custom-jvp": "mismatch",
    }
    wrong = report["results"][-1]
    (finding,) = [f for f in wrong["findings"] if f["kind"] == "disagreement"]
    # The message and values show the largest disagreement: at x = -2, -6 against -4 (at 1.5 it is 4.5 against 3).
    assert finding["values"]["finite_difference"] == pytest.approx(-4.0, rel=1e-3)
    assert finding["values"]["jacrev"] == pytest.approx(-6.0)
    assert finding["wrong"] == "x1.5"
    assert code == 1


def test_functions_jit_cannot_compile_are_checked_eagerly_and_may_import_when_called(suite):
    code, report = audit(
        suite,
        """
        scenarios:
          - name: branchy
            fn: mylib.fns:branchy
            inputs: [{dtype: float32, value: 1.5}]
          - name: lazy-import
            fn: mylib.fns:imports_when_called
            inputs: [{dtype: float32, value: [1.0, 2.0]}]
        """,
    )
    branchy, lazy = report["results"]
    assert branchy["status"] == "consistent" and branchy["diagnosis"]["id"] == "GA009"
    assert branchy["paths"]["jit_jacrev"]["status"] == "not_applicable"
    assert branchy["paths"]["jacrev"]["jacobians"]["x0"] == 3.0
    assert branchy["paths"]["finite_difference"]["jacobians"]["x0"] == pytest.approx(3.0, rel=1e-3)
    assert lazy["status"] == "consistent"
    assert lazy["paths"]["jacrev"]["jacobians"]["x0"] == [[3.0, 0.0], [0.0, 3.0]]
    assert code == 0


def test_static_keyword_arguments_reach_an_installed_function_and_reports_keep_them(tmp_path):
    path = write_yaml(
        tmp_path,
        "kw.yaml",
        """
        scenarios:
          - name: take-clip
            fn: jax.numpy:take
            inputs:
              - {dtype: float32, fill: arange, shape: [5]}
              - {dtype: int32, value: [7, 1]}
            kwargs: {mode: clip}
          - name: slice-three
            fn: jax.lax:dynamic_slice
            inputs:
              - {dtype: float32, fill: arange, shape: [8]}
              - {dtype: int32, value: [2]}
            kwargs: {slice_sizes: [3]}
        """,
    )
    result = run_cli("run", str(path), "--json", "-", "--json-detail", "full")
    report = result.json()
    take, sliced = report["results"]
    assert take["scenario"]["kwargs"] == {"mode": "clip"} and sliced["scenario"]["kwargs"] == {"slice_sizes": [3]}
    assert take["status"] == sliced["status"] == "consistent"
    assert take["paths"]["jacrev"]["jacobians"]["x0"] == [
        [0, 0, 0, 0, 1],
        [0, 1, 0, 0, 0],
    ]  # index 7 clipped to the last
    assert sliced["paths"]["jacrev"]["jacobians"]["x0"] == [
        [0, 0, 1, 0, 0, 0, 0, 0],
        [0, 0, 0, 1, 0, 0, 0, 0],
        [0, 0, 0, 0, 1, 0, 0, 0],
    ]
    line = "  - {name: b, fn: 'jax.numpy:take', inputs: [{dtype: float32, value: 1.0}], kwargs: {1x: 2}}"
    bad = write_yaml(tmp_path, "bad.yaml", f"scenarios:\n{line}\n")
    refused = run_cli("run", str(bad))
    assert (
        refused.exit_code == 2
        and f"{bad}:2:{line.index('1x') + 1}: kwargs keys must be keyword names, got '1x'" in refused.stderr
    )


def test_a_captured_int64_made_before_x64_is_on_is_not_reused_truncated():
    """Building a scenario's targets outside its x64 context (a size check does) must not cache a
    captured constant truncated to int32 for the audit that follows."""
    from gradaudit.service import audit_one
    from gradaudit.sources.scenario_files import load_text
    from gradaudit.targets import build_targets

    text = (
        "scenarios:\n  - {name: far, fn: 'jax.numpy:take', kwargs: {mode: clip},\n"
        "     inputs: [{dtype: float32, fill: arange, shape: [4]}, {dtype: int64, value: 4611686018427387905}]}\n"
    )
    (scenario,), errors = load_text(text, "far.yaml")
    assert not errors
    build_targets(scenario)  # x64 off here: int64 values cannot be held yet
    result = audit_one(scenario)
    assert result.status == "consistent", [f.message for f in result.findings]
    assert float(result.paths["jit_value:const"].arrays[0]) == float(result.paths["value"].arrays[0]) == 3.0


def test_nan_against_a_number_at_non_finite_values_is_classed_non_finite_and_passes_the_default_gate(tmp_path):
    """sqrt at 0 has an infinite derivative, and sin at inf a NaN one: a zero tangent or cotangent
    times it is NaN in one mode and 0 in the other (IEEE), also between a path and its jit twin (XLA
    simplifying 0 * x to 0): entry by entry, each such split is at a non-finite input or output, or
    crosses an infinite derivative, so it is `non-finite`: reported, not failed. Where the inputs and
    output are finite (where's NaN gradients) such differences fail: `leak`, the NaN born inside."""
    path = write_yaml(
        tmp_path,
        "ieee.yaml",
        """
        scenarios:
          - {name: sqrt-at-zero, fn: 'jax.numpy:sqrt', inputs: [{dtype: float32, value: [0.0, 0.0, 1.0]}]}
          - {name: sin-at-inf, fn: 'jax.numpy:sin', inputs: [{dtype: float32, value: [0.0, 0.5, .inf]}]}
        """,
    )
    result = run_cli("run", str(path), "--json", "-", "-v")
    assert result.exit_code == 0, result.stdout
    for entry in result.json()["results"]:
        assert entry["findings"] and {f["class"] for f in entry["findings"]} == {"non-finite"}, entry["name"]
        assert all(("not finite at the entry" in f["reason"]) or ("0 × inf" in f["reason"]) for f in entry["findings"])
        assert entry["outcome"]["passed"] and len(entry["outcome"]["reported"]) == len(entry["findings"])
    assert run_cli("run", str(path), "--fail-on", "all", "-q").exit_code == 1
    catalog = run_cli(
        "run",
        str(Path(__file__).parents[1] / "scenarios" / "where"),
        str(Path(__file__).parents[1] / "scenarios" / "reductions"),
        "--json",
        "-",
    )
    statuses = {entry["name"]: entry["status"] for entry in catalog.json()["results"]}
    assert statuses["where-log-at-zero"] == statuses["max-with-nan"] == "mismatch"
    classes = {entry["name"]: {f["class"] for f in entry["findings"]} for entry in catalog.json()["results"]}
    # where's NaN gradients at finite numbers fail; the maximum of a vector holding NaN is NaN itself.
    assert "leak" in classes["where-log-at-zero"] and classes["max-with-nan"] == {"non-finite"}


def test_a_held_floating_input_is_passed_but_never_differentiated(tmp_path):
    """betainc has no gradient in its shape parameters: differentiated, every AD path raises; held, it audits."""
    inputs = "[{dtype: float32, value: 1.5%s}, {dtype: float32, value: 2.5%s}, {dtype: float32, value: 0.3}]"
    for name, held, status in (("held", ", held: true", 0), ("free", "", 1)):
        write_yaml(
            tmp_path,
            f"{name}.yaml",
            f"scenarios:\n  - name: {name}\n    fn: jax.scipy.special:betainc\n    inputs: {inputs % (held, held)}\n",
        )
        result = run_cli("run", str(tmp_path / f"{name}.yaml"), "--json", str(tmp_path / f"{name}.json"))
        assert result.exit_code == status, result.output
    free = json.loads((tmp_path / "free.json").read_text())["results"][0]
    assert free["status"] == "error" and "not supported" in json.dumps(free["findings"])


def test_functions_without_floating_output_say_so(tmp_path):
    folder = tmp_path
    (folder / "edge.py").write_text(
        "import jax.numpy as jnp\n\n\ndef integers(x):\n    return jnp.arange(3)\n\n\n"
        "def nothing(x):\n    return None\n"
    )
    path = write_yaml(
        folder,
        "s.yaml",
        """
        scenarios:
          - {name: integers, fn: "edge:integers", inputs: [{dtype: float32, value: 1.0}]}
          - {name: nothing, fn: "edge:nothing", inputs: [{dtype: float32, value: 1.0}]}
        """,
    )
    results = run_cli("run", str(path), "--json", "-").json()["results"]
    for entry in results:
        assert entry["status"] == "error"
        assert "the function returned no floating-point output to differentiate" in entry["findings"][0]["message"]
