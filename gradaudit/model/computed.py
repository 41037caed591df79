"""What an engine computed for one scenario, as data: every path, or the failure that stopped it."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np

from gradaudit.model.findings import Note
from gradaudit.model.paths import PathResult


@dataclass(frozen=True)
class Flip:
    """An output element whose sign flips as one input element moves: at every step from the usual one
    down to a small share of it, it is its own value negated (a singular vector LAPACK returns with
    the other sign at x + h): the function jumps there along that input, between two branches that
    differ by a sign."""

    output: int
    """The flat index of the output element that flips."""
    value: float
    """Its value at x."""
    moved: float
    """Its value at x moved by the usual step."""
    finest: float
    """The finest step at which it is still flipped (the usual step is `Probe.step`)."""


@dataclass(frozen=True)
class Probe:
    """What the function did near one entry d out[i]/d x_k[j]."""

    step: float
    """The usual step h at x_k[j]: the one the ordinary estimates took."""
    steps: tuple[float, ...]
    """The steps taken (each a move that changed x_k[j]), largest first."""
    central: tuple[float, ...]
    left: tuple[float, ...]
    right: tuple[float, ...]
    """Per step: the central difference, and the one-sided slopes from the left and the right."""
    tied: tuple[tuple[int, int], ...] = ()
    """The (argument, element) pairs equal to x_k[j], itself included: moved together for `along_tie`."""
    along_tie: float | None = None
    """The central difference of out[i] with every tied element moved together at the usual step;
    None where x_k[j] ties with nothing."""
    scaled: Probe | None = None
    """The slopes at steps relative to x_k's largest element m (eps m and eps m / 2, `steps`), where the
    usual step is absolute (x_k is small) and may outreach the input; None elsewhere."""
    flip: Flip | None = None
    """An output element (any, not only out[i]) whose sign flips as x_k[j] moves; None: none does."""
    x: float = math.nan
    """x_k[j] itself: steps that move it away from 0 do not cross 0, where a small input's kink may be."""
    convention: Convention | None = None
    """The entry's derivative with the conventional derivatives the function meets replaced by the float
    function's own; None where it meets none (`targets.triggers.conventional_column`)."""


@dataclass(frozen=True)
class Convention:
    """d out[i]/d x_k[j] as AD gives it with each primitive whose JAX derivative is a convention
    (`model.mechanisms.CONVENTIONS`: reduce_precision's straight-through one, floor's zero where it returns
    its operand) given the float function's own derivative instead, and which primitives those were."""

    slope: float
    primitives: tuple[str, ...]


Prober = Callable[[int, int, int], "Probe | None"]
"""(argument, element, output element) -> its Probe, or None where the function could not be evaluated."""


Jacobians = tuple[np.ndarray, ...]
"""A first-order Jacobian as a path holds it: a block per differentiated input."""


@dataclass(frozen=True)
class Moved:
    """float64 Jacobians at a narrow scenario's inputs widened, and at those inputs with one element
    moved up and down by the narrow dtype's epsilon times its size (`sizes`, per differentiated input),
    element by element, and by a quarter of that: how float64's derivative moves where the narrow
    dtype's rounding could move the inputs (`engines.probe.moved_jacobians`; the float64 referee reads it)."""

    center: Jacobians
    moved: tuple[tuple[Jacobians, Jacobians], ...]
    closer: tuple[tuple[Jacobians, Jacobians], ...]
    sizes: tuple[np.ndarray, ...]


MOVED_ELEMENTS = 16
"""Most input elements whose moves the float64 referee's probes evaluate (`engines.probe`: four float64 Jacobians
each, or a scan of the value and a Jacobian per crossing)."""


@dataclass(frozen=True)
class Backward:
    """Where float64 gives a narrow run's value of one output element with a single input element moved (a backward
    error along that element), and float64's Jacobian there (`engines.probe.backward_points`; the float64
    referee reads it)."""

    argument: int
    element: int
    move: float
    jacobian: Jacobians
    crossings: int
    """How often float64's value crosses the narrow one over the element's moves (one: the value names this point
    alone)."""


@dataclass(frozen=True)
class Failure:
    """Why a scenario has no paths: it timed out, its worker crashed, or it was too large."""

    message: str
    error_type: str
    """`TimeoutError`, `WorkerCrash`, or `LimitExceeded` (bad input: an error of the report, not a result)."""


@dataclass(frozen=True, eq=False)
class Computed:
    """One scenario's paths from one engine (or the failure that stopped it)."""

    paths: dict[str, PathResult]
    arg_names: tuple[str, ...] = ()
    inputs: tuple[np.ndarray, ...] = ()
    """The values the paths were evaluated at, one per differentiated argument."""
    bindings: tuple[str, ...] = ("",)
    """The bindings the path names carry (see model.paths.path_name): ('',) or ('traced', 'constant')."""
    seconds: float = 0.0
    """This scenario's share of the engine's time."""
    engine: str = "literal"
    failure: Failure | None = None
    notes: tuple[Note, ...] = ()
    primitives: Callable[[], frozenset[str]] | None = None
    """The primitives of the scenario's function (traced on first use), for diagnoses."""
    triggers: Callable[..., frozenset[str]] | None = None
    """The failure mechanisms its function meets at its inputs (`targets.triggers.triggered`; the
    arguments: push tangents too, else which primitives to check), evaluated on first use, for diagnoses."""
    probe: Prober | None = None
    """More finite-difference evidence at one entry (`engines.probe`), for the judge to ask where AD
    paths agree with each other against finite differences."""
    twins: Callable[[Collection[str]], dict[str, PathResult]] | None = None
    """The eager twins of these compiled Hessian paths (`paths.EAGER_TWINS`), computed when asked:
    where a compiled Hessian disagrees, to tell an eager/jit split from a wrong rule."""


def failed(failure: Failure, seconds: float = 0.0, engine: str = "literal") -> Computed:
    return Computed(paths={}, seconds=seconds, engine=engine, failure=failure)
