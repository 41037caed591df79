"""Known failure signatures: what a finding or an exception means, and how to fix it.

A diagnosis matches on the data a scenario produced (an exception's type, message and innermost
frame, or the shape of a finding), never on the scenario's name, so it applies to a user's own
functions as much as to the shipped catalog. `gradaudit explain ID` prints an entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gradaudit.model.findings import DISAGREEMENT, ROUTING, Finding, Note
from gradaudit.model.mechanisms import (
    CLAMP_INVERTED,
    NON_FINITE_UNSELECTED,
    PRIMITIVES,
    READ_OUT_OF_RANGE,
    SELECT_OUT_OF_RANGE,
    TANGENT_TRIGGERS,
)
from gradaudit.model.paths import (
    FINITE_DIFFERENCE,
    FIRST_ORDER_PATHS,
    HESSIAN_FINITE_DIFFERENCE,
    JACFWD,
    JIT_JACFWD,
    MODES_NEEDED,
    PathResult,
    base_name,
)


def nothing_met(tangents: bool, checked: frozenset[str] = frozenset()) -> frozenset[str]:
    """What a function that was not evaluated meets: nothing (no diagnosis blames a primitive)."""
    return frozenset()


@dataclass(frozen=True)
class Evidence:
    """What a diagnosis may look at: the paths, findings and notes, and (traced only when a
    signature asks) the primitives of the function's jaxpr."""

    paths: Mapping[str, PathResult]
    findings: Sequence[Finding]
    notes: Sequence[Note]
    trace: Callable[[], frozenset[str]] = frozenset
    """The primitives of the function (targets.base.primitives); tracing happens on first use."""
    evaluate: Callable[..., frozenset[str]] = nothing_met
    """The mechanisms the function meets at its inputs (targets.triggers.triggered: with tangents, or
    without them those of the primitives given), on first use."""

    def errors(self):
        return [p.error for p in self.paths.values() if p.error is not None]

    @cached_property
    def primitives(self) -> frozenset[str]:
        try:
            return self.trace()
        except Exception:  # noqa: BLE001 - a function that cannot be traced binds nothing a diagnosis can name
            return frozenset()

    def binds(self, *names: str) -> bool:
        """Whether the function's jaxpr binds any of these primitives."""
        return any(name in self.primitives for name in names)

    @cached_property
    def _met(self) -> dict[tuple[bool, frozenset[str]], frozenset[str]]:
        return {}

    def meets(self, *names: str) -> bool:
        """Whether evaluating the function at the scenario's inputs meets any of these mechanisms (a
        primitive with the operands that trigger it, `targets.triggers`): what a diagnosis that
        blames a primitive must see, not merely the primitive in the jaxpr. Values alone where they
        decide, and then only what feeds the primitives these mechanisms name."""
        tangents = any(name in TANGENT_TRIGGERS for name in names)
        checked = frozenset().union(*(PRIMITIVES.get(name, frozenset()) for name in names))
        asked = (True, frozenset()) if tangents else (False, checked)
        if asked not in self._met:
            try:
                self._met[asked] = self.evaluate(True) if tangents else self.evaluate(False, checked=checked)
            except Exception:  # noqa: BLE001 - a function that cannot be evaluated meets nothing a diagnosis may name
                self._met[asked] = frozenset()
        return any(name in self._met[asked] for name in names)


@dataclass(frozen=True)
class Diagnosis:
    id: str
    title: str
    explanation: str
    fixes: tuple[str, ...]
    references: tuple[str, ...]
    matches: Callable[[Evidence], bool]
    evidence: str = ""
    """What must be seen for this diagnosis, in words (`gradaudit explain` prints it)."""

    def __reduce__(self):
        # Matchers may be lambdas: a diagnosis travels between processes by its id.
        return (by_id, (self.id,))

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "explanation": self.explanation,
            "fixes": list(self.fixes),
            "references": list(self.references),
            "evidence": self.evidence,
        }


def _raised(type_name: str, fragment: str, where: str = "") -> Callable[[Evidence], bool]:
    def match(evidence: Evidence) -> bool:
        return any(
            e.type == type_name and fragment in e.message and (not where or any(w in e.where for w in where.split("|")))
            for e in evidence.errors()
        )

    return match


FORWARD_PATHS = frozenset({JACFWD, JIT_JACFWD})


def _modes(paths: Sequence[str]) -> set[str]:
    """Which modes ('forward', 'reverse', 'reference') a finding's paths cover: a Hessian path is
    reverse where any of its passes is (it goes through the transpose rules), else forward, and
    finite differences of the Jacobian are the reference as finite differences are."""
    modes = set()
    for path in paths:
        base = base_name(path)
        needed = MODES_NEEDED.get(base, frozenset())
        modes.add(
            "reverse"
            if "rev" in needed
            else "forward"
            if "fwd" in needed
            else "reference"
            if base in (FINITE_DIFFERENCE, HESSIAN_FINITE_DIFFERENCE)
            else "other"
        )
    return modes


def _sent_nowhere(evidence: Evidence) -> list[Finding]:
    return [f for f in evidence.findings if f.kind == ROUTING and f.wrong in ("nowhere", "mixed")]


def _forward_ran(evidence: Evidence) -> bool:
    """Whether forward mode computed Jacobians (it does not apply to a custom_vjp function)."""
    return any(base_name(name) in FORWARD_PATHS and path.ok for name, path in evidence.paths.items())


def _reverse_only_sends_nowhere(evidence: Evidence) -> bool:
    """The value came from an input; reverse paths send its derivative nowhere, forward paths (which
    ran) route it right."""
    routing = [f for f in evidence.findings if f.kind == ROUTING]
    return (
        _forward_ran(evidence)
        and any(_modes(f.paths) == {"reverse"} for f in _sent_nowhere(evidence))
        and not any("forward" in _modes(f.paths) for f in routing)
    )


def _every_mode_sends_nowhere(evidence: Evidence) -> bool:
    """The value came from an input; forward and reverse paths alike send its derivative nowhere."""
    return any({"forward", "reverse"} <= _modes(f.paths) for f in _sent_nowhere(evidence))


def _only_against_finite_differences(evidence: Evidence) -> bool:
    """Forward and reverse paths ran and agree with each other, and disagree with finite differences
    of the function."""
    disagreements = [f for f in evidence.findings if f.kind == DISAGREEMENT]
    return (
        _forward_ran(evidence)
        and bool(disagreements)
        and all("reference" in _modes(f.paths) for f in disagreements)
        and any({"forward", "reverse"} <= _modes(f.paths) for f in disagreements)
    )


def _nan_gradient(evidence: Evidence) -> bool:
    """A first-order AD path gives NaN where finite differences of the (finite, smooth) function give a number."""
    first_order = set(FIRST_ORDER_PATHS)
    for finding in evidence.findings:
        if finding.kind != DISAGREEMENT:
            continue
        nan = [p for p, v in finding.values.items() if np.isnan(v) and base_name(p) in first_order]
        smooth = [p for p, v in finding.values.items() if base_name(p) == FINITE_DIFFERENCE and np.isfinite(v)]
        if nan and smooth:
            return True
    return False


def _reverse_disagrees_with_finite_differences(evidence: Evidence) -> bool:
    return any(f.kind == DISAGREEMENT and {"reverse", "reference"} <= _modes(f.paths) for f in evidence.findings)


def _not_applicable(fragment: str) -> Callable[[Evidence], bool]:
    return lambda evidence: any(fragment in n.message for n in evidence.notes)


def _no_forward_paths(evidence: Evidence) -> bool:
    """Forward mode was not asked for (modes=["rev"]): nothing tells whether it would apply."""
    return not any(base_name(path) in FORWARD_PATHS for path in evidence.paths)


CATALOG: tuple[Diagnosis, ...] = (
    Diagnosis(
        id="GA001",
        title="select_n's reverse rule looks for a second case that does not exist",
        evidence=(
            "reverse paths raise IndexError (tuple index out of range) in select_n's transpose rule; the function "
            "binds select_n"
        ),
        explanation=(
            "With a single case and a boolean selector, the forward computation returns the only case, but the "
            "pre-#40814 transpose rule of lax.select_n assumes a boolean chooses between two cases and reads "
            "cases[1], so reverse mode raises IndexError although evaluation succeeds."
        ),
        fixes=(
            "Upgrade to a JAX that contains PR #40814: its rule hands a single case the incoming cotangent directly.",
            "Drop the select_n: with one case the result is that case.",
            "Check a JAX upgrade or a patched rule first: `gradaudit run PATH --rule fixed`.",
        ),
        references=("https://github.com/jax-ml/jax/pull/40814",),
        matches=lambda evidence: (
            _raised("IndexError", "tuple index out of range", "_select_transpose_rule|gradaudit/jaxenv.py")(evidence)
            and evidence.binds("select_n")
        ),
    ),
    Diagnosis(
        id="GA002",
        title="select_n's reverse rule sends the derivative of an out-of-range selector's case nowhere",
        evidence=(
            "a value comes from an input, forward paths route its derivative there, reverse paths send it nowhere; "
            "evaluated at the scenario's inputs, the function calls select_n with an integer selector out of range"
        ),
        explanation=(
            "The function selects with lax.select_n on an integer selector. For an out-of-range selector the forward "
            "lowering routes the value to an endpoint case (negative to case 0, past the end to the last), and forward "
            "mode follows it, but the pre-#40814 transpose rule matches `which == i` exactly and finds no case, so "
            "reverse mode gives every case a zero derivative. Out-of-range selectors are implementation-defined in "
            "JAX's documentation."
        ),
        fixes=(
            "Make the index policy explicit: `which = jnp.clip(which, 0, len(cases) - 1)` before select_n.",
            "Upgrade to a JAX that contains PR #40814 (the transpose rule clamps the selector in its own dtype).",
            "Compare the rules on your scenarios: `gradaudit compare PATH --rules legacy fixed`.",
        ),
        references=("https://github.com/jax-ml/jax/pull/40814", "https://github.com/jax-ml/jax/issues/10993"),
        matches=lambda evidence: _reverse_only_sends_nowhere(evidence) and evidence.meets(SELECT_OUT_OF_RANGE),
    ),
    Diagnosis(
        id="GA010",
        title="reverse mode drops the derivative of an element read at an index the read clamps or wraps",
        evidence=(
            "a value comes from an input, forward paths route its derivative there, reverse paths send it nowhere; "
            "evaluated at the scenario's inputs, the function reads with gather or dynamic_slice at an index outside "
            "the array, or in an integer dtype too narrow for it"
        ),
        explanation=(
            "The function reads with gather (x[i], jnp.take, .at[].get) or dynamic_slice at an index outside the "
            "array, "
            "or one its integer dtype cannot hold once JAX normalises it (a negative index plus the length, a start "
            "clamped to length - size). The forward read clamps or wraps that index and supplies an element, and "
            "forward mode follows it, but the reverse rule (a scatter-add, or a dynamic_update_slice) places the "
            "derivative by its own reading of the index and drops it, so the element that supplied the value gets "
            "no gradient."
        ),
        fixes=(
            "Make the index policy explicit before the read: `idx = jnp.clip(idx, 0, n - 1)` (or `% n` to wrap).",
            "Use an index dtype wide enough for the array and the normalisation (int32 rather than int8 or uint8).",
            "Choose the out-of-range behaviour you mean: `x.at[idx].get(mode='clip')` or `mode='fill'`; "
            "'promise_in_bounds' is a promise the caller must keep.",
        ),
        references=("https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html",),
        matches=lambda evidence: _reverse_only_sends_nowhere(evidence) and evidence.meets(READ_OUT_OF_RANGE),
    ),
    Diagnosis(
        id="GA011",
        title="lax.clamp with lo > hi returns a bound but differentiates none",
        evidence=(
            "a value comes from an input, forward and reverse paths alike send its derivative nowhere; evaluated at "
            "the scenario's inputs, the function calls clamp with lo > hi"
        ),
        explanation=(
            "lax.clamp(lo, x, hi) is min(max(x, lo), hi): with lo > hi it returns hi unless x is above hi. Its JVP "
            "rule gives lo the derivative only where x < lo < hi, x only where lo < x < hi, and hi only where hi < x; "
            "with inverted bounds and x at or below hi none of these holds, so forward mode, and reverse mode "
            "derived from it, send the derivative of the returned bound nowhere."
        ),
        fixes=(
            "Keep lo <= hi: validate or order the bounds (`lo, hi = jnp.minimum(lo, hi), jnp.maximum(lo, hi)`).",
            "Write the intended rule out: `jnp.minimum(jnp.maximum(x, lo), hi)` differentiates the bound it returns.",
        ),
        references=("https://docs.jax.dev/en/latest/_autosummary/jax.lax.clamp.html",),
        matches=lambda evidence: _every_mode_sends_nowhere(evidence) and evidence.meets(CLAMP_INVERTED),
    ),
    Diagnosis(
        id="GA007",
        title="a custom_vjp backward rule disagrees with the function it differentiates",
        evidence=(
            "forward mode does not apply (custom_vjp) or was not asked for, and reverse paths disagree with finite "
            "differences; the function calls a custom_vjp of the user's own code"
        ),
        explanation=(
            "The function is a jax.custom_vjp (forward mode does not apply), and its reverse-mode derivative "
            "differs from finite differences of the function itself: the hand-written bwd rule computes "
            "something other than the derivative of fwd's output, or uses the residuals wrongly."
        ),
        fixes=(
            "Check the bwd rule against jax.grad of the undecorated function at the inputs the finding names.",
            "Check that fwd saves the residuals bwd expects, in the order it unpacks them.",
            "Make bwd return one cotangent per primal input, shaped like that input.",
        ),
        references=("https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",),
        matches=lambda evidence: (
            (_not_applicable("custom_vjp")(evidence) or _no_forward_paths(evidence))
            and _reverse_disagrees_with_finite_differences(evidence)
            and evidence.binds("custom_vjp_call:user", "custom_vjp_call_jaxpr:user")
        ),
    ),
    Diagnosis(
        id="GA012",
        title="a custom_jvp rule disagrees with the function it differentiates",
        evidence=(
            "forward and reverse paths agree with each other and all disagree with finite differences; the function "
            "calls a custom_jvp of the user's own code"
        ),
        explanation=(
            "The function (or something it calls) is a jax.custom_jvp, and forward and reverse mode, which both "
            "follow its hand-written JVP rule, agree with each other but not with finite differences of the function "
            "itself: the rule computes something other than the derivative of the primal output (a wrong sign, "
            "factor or argument), or is right only on part of the domain. At second order the Hessian paths "
            "differentiate the rule itself, against finite differences of the Jacobian: a rule right at first "
            "order can still be wrong there (a tangent computed through stop_gradient or a constant)."
        ),
        fixes=(
            "Check the JVP rule against jax.jvp of the undecorated function at the inputs the finding names.",
            "For a second-order finding, check that the rule's tangent is differentiable in the primals: no "
            "stop_gradient, no value computed outside JAX.",
            "Check the rule's tangent output: it must be linear in the tangents and shaped like the primal output.",
            "Where the rule is meant for stability (log-sum-exp, softplus), compare it with the plain formula on both "
            "tails.",
        ),
        references=("https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",),
        matches=lambda evidence: _only_against_finite_differences(evidence) and evidence.binds("custom_jvp_call:user"),
    ),
    Diagnosis(
        id="GA003",
        title="a differentiated value is written into an array reference that is not differentiated",
        evidence="a path raises 'performing a set/swap operation with a differentiated value'",
        explanation=(
            "In the JVP rule for swap, JAX requires that if the value written carries a tangent, the reference "
            "must carry one too. A reference captured from an enclosing scope (or created outside the "
            "differentiated function and passed in undifferentiated) has none, so differentiation cannot "
            "propagate and JAX raises 'performing a set/swap operation with a differentiated value on a "
            "non-differentiated array reference'."
        ),
        fixes=(
            "Move the Ref inside the differentiated function's argument list so JAX threads a tangent through it.",
            "Recompute the ref inside the traced function (allocate buffers within the jvp-traced region).",
            "If gradients through the state aren't needed, stop-gradient the value before swapping: "
            "`lax.stop_gradient(x)`.",
            "Use higher-level APIs (e.g. custom_vjp or structural state handling) instead of raw swap under autodiff.",
        ),
        references=("jax/_src/state/primitives.py: _swap_jvp",),
        matches=_raised("Exception", "performing a set/swap operation with a differentiated value"),
    ),
    Diagnosis(
        id="GA004",
        title="jacfwd writes a batched value into an array reference that is not batched",
        evidence="a path raises 'performing a set/swap operation with vmapped value'",
        explanation=(
            "jacfwd pushes all tangent directions through at once with vmap. A reference captured from an "
            "enclosing scope is not batched, so writing a batched value into it fails with 'performing a "
            "set/swap operation with vmapped value on an unbatched array reference'."
        ),
        fixes=(
            "Allocate the reference inside the differentiated function, or pass it in as an argument.",
            "Use jacrev or jvp one direction at a time if the state must stay shared.",
        ),
        references=("jax/_src/state/primitives.py",),
        matches=_raised("Exception", "performing a set/swap operation with vmapped value"),
    ),
    Diagnosis(
        id="GA005",
        title="jacfwd cannot batch the tangents of an array reference allocated inside the function",
        evidence="a path raises ValueError 'got axis spec None but output was batched'",
        explanation=(
            "jax.jvp and jax.vmap each handle a function that allocates a jax.new_ref and writes into it, but "
            "jacfwd composes them (vmap of jvp), and in this JAX the batched tangent of the fresh reference "
            "fails with 'at vmap out_axes[0], got axis spec None but output was batched'. Reverse mode works."
        ),
        fixes=(
            "Use jacrev (or grad) for this function.",
            "Build the forward-mode Jacobian one column at a time with jax.jvp instead of jacfwd.",
            "Keep array references out of code that must run under jacfwd, or report it upstream with this scenario.",
        ),
        references=("https://github.com/jax-ml/jax/issues",),
        matches=_raised("ValueError", "got axis spec None but output was batched"),
    ),
    Diagnosis(
        id="GA006",
        title="a NaN from a branch that was not selected poisons the gradient",
        evidence=(
            "an AD path gives NaN where finite differences of the function give a finite number; evaluated at the "
            "scenario's inputs, a select_n of the function (jnp.where, lax.select; not one inside a library's own "
            "derivative rule) has an unselected case whose derivative is inf or NaN"
        ),
        explanation=(
            "jnp.where (and lax.select) differentiate both branches and multiply the unselected one's derivative "
            "by zero; if that derivative is inf or NaN (log, sqrt or division at a point the branch was meant to "
            "avoid), 0 * NaN is NaN, so AD returns NaN where the function itself is smooth and finite."
        ),
        fixes=(
            "Use the double-where trick: `safe = jnp.where(mask, x, 1.0); y = jnp.where(mask, f(safe), other)`.",
            "Use a function that is finite on the whole input domain (e.g. jnp.log1p, jax.nn.softplus).",
        ),
        references=("https://docs.jax.dev/en/latest/faq.html#gradients-contain-nan-where-using-where",),
        matches=lambda evidence: _nan_gradient(evidence) and evidence.meets(NON_FINITE_UNSELECTED),
    ),
    Diagnosis(
        id="GA009",
        title="jit cannot compile this function: Python control flow, conversions or slice bounds on traced values",
        evidence="jit paths do not apply: tracing raised a concretization or tracer conversion error",
        explanation=(
            "The function branches with a Python `if` on an input, converts an input with float(), int() or "
            "bool(), or slices with an input as a bound (`x[:n]`). jit traces with abstract values and cannot "
            "compile any of them, so the compiled paths are not applicable and finite differences run eagerly. "
            "A branch still works eagerly (eager jacfwd and jacrev "
            "see concrete values); a float() or int() conversion breaks eager differentiation too, which then "
            "shows as an error of jacfwd and jacrev."
        ),
        fixes=(
            "Express the branch with jnp.where, lax.select or lax.cond instead of a Python `if`.",
            "Write loops over values with lax.fori_loop, lax.while_loop or lax.scan.",
            "If the input is configuration rather than data, make it static: jax.jit(f, static_argnums=…).",
            "Slice by a traced bound with lax.dynamic_slice (a fixed size) or a mask: "
            "jnp.where(jnp.arange(len(x)) < n, x, 0).",
        ),
        references=("https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError",),
        matches=_not_applicable("jit cannot compile"),
    ),
    Diagnosis(
        id="GA008",
        title="forward mode cannot differentiate a custom_vjp function",
        evidence="forward paths do not apply: jvp of a custom_vjp function raised TypeError",
        explanation=(
            "A jax.custom_vjp function defines only a reverse-mode rule, so jvp, jacfwd and forward-over-reverse "
            "Hessians raise TypeError. gradaudit reports those paths as not applicable; the reverse paths and "
            "finite differences are still compared."
        ),
        fixes=(
            "Use jacrev or grad for this function.",
            "Define the rule with jax.custom_jvp instead: JAX derives reverse mode from it by transposition.",
        ),
        references=("https://docs.jax.dev/en/latest/notebooks/Custom_derivative_rules_for_Python_code.html",),
        matches=_not_applicable("custom_vjp"),
    ),
)

BY_ID: dict[str, Diagnosis] = {d.id: d for d in CATALOG}


def by_id(diagnosis_id: str) -> Diagnosis:
    return BY_ID[diagnosis_id]


def diagnose(evidence: Evidence) -> Diagnosis | None:
    """The first catalog entry whose signature matches, if any."""
    return next((d for d in CATALOG if d.matches(evidence)), None)
