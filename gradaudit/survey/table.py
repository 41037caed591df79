"""The surveyed surface: public differentiable functions of JAX, as data.

Each entry names a function by its public dotted path and says what its positional arguments are
(their roles, `ROLES`), which static keyword arguments it takes with their alternatives, and the
shapes it is drawn at. The values come from the shared tables of `edges.py`: nothing here names a
value or says what a function should give. Functions whose arguments a signature cannot say (an
index expression, a window, a mask) are written out in `wrappers.py` and named from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gradaudit.survey.edges import SURVEY_FLOATS

ROLES: dict[str, str] = {
    "x": "a floating array of the drawn shape (differentiated)",
    "v": "a floating vector (differentiated)",
    "m": "a floating square matrix (differentiated)",
    "i": "an integer index array into the first argument's leading axis (held fixed)",
    "starts": "integer start indices, one per axis of the first argument (held fixed)",
    "w": "a selector, boolean or integer, choosing among the floating arguments after it (held fixed)",
    "mask": "a boolean array of the drawn shape (held fixed)",
    "seg": "integer segment ids, one per element of the first argument's leading axis (held fixed)",
}
"""What each role token of a signature stands for."""

SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "any": ((), (3,), (2, 3)),
    "array": ((3,), (2, 3)),
    "vector": ((4,),),
    "matrix": ((2, 3),),
    "square": ((3, 3),),
}
"""The shapes a signature's arrays are drawn at (shrinking toward the first)."""

Derived = Callable[[tuple[int, ...]], object]
"""A static argument that follows from the drawn shape (a slice size, a segment count)."""


@dataclass(frozen=True)
class Surveyed:
    """One function: its public path, its arguments' roles, static options and shapes."""

    path: str
    """Public dotted path, `jax.numpy.take`; or `gradaudit.survey.wrappers.NAME` for a written-out call."""
    signature: tuple[str, ...]
    options: dict[str, tuple] = field(default_factory=dict)
    """Static keyword arguments and their alternatives (the first is drawn most, and shrunk toward)."""
    shapes: str = "any"
    derived: dict[str, Derived] = field(default_factory=dict)
    """Static keyword arguments computed from the drawn shape."""
    floats: tuple[str, ...] = SURVEY_FLOATS
    """The floating dtypes it takes (LAPACK and FFT kernels take float32 and float64 only)."""

    @property
    def short(self) -> str:
        """The name files and reports use: the path without `jax.` (`numpy.take`, `lax.select_n`)."""
        return self.path.removeprefix("jax.").removeprefix("gradaudit.survey.")

    @property
    def fn(self) -> str:
        """`module:function`, as a scenario file names it."""
        module, _, name = self.path.rpartition(".")
        return f"{module}:{name}"


def _each(module: str, names: str, signature: str, shapes: str = "any", **options: tuple) -> list[Surveyed]:
    return [Surveyed(f"{module}.{name}", tuple(signature.split()), dict(options), shapes) for name in names.split()]


WIDE = ("float32", "float64")


def _wide(entries: list[Surveyed]) -> list[Surveyed]:
    return [replace(entry, floats=WIDE) for entry in entries]


def _half(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(max(1, d // 2) for d in shape)


AXES = (None, 0, -1)

TABLE: tuple[Surveyed, ...] = (
    # jax.numpy, elementwise
    *_each(
        "jax.numpy",
        "abs negative positive sign floor ceil round rint trunc exp exp2 expm1 log log2 log10 log1p sqrt cbrt square "
        "reciprocal sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh deg2rad rad2deg sinc i0 "
        "fabs nan_to_num",
        "x",
    ),
    *_each(
        "jax.numpy",
        "add subtract multiply divide true_divide floor_divide power float_power remainder fmod maximum minimum fmax "
        "fmin hypot arctan2 copysign logaddexp logaddexp2 heaviside",
        "x x",
    ),
    Surveyed("jax.numpy.clip", ("x", "x", "x")),
    Surveyed("jax.numpy.where", ("mask", "x", "x")),
    # jax.numpy, reductions and scans
    *_each(
        "jax.numpy",
        "sum prod mean max min var std median nansum nanmean nanmax nanmin nanprod ptp",
        "x",
        "array",
        axis=AXES,
    ),
    *_each("jax.numpy", "cumsum cumprod", "x", "array", axis=(None, 0)),
    Surveyed("jax.numpy.sort", ("x",), {"axis": (-1, 0)}, "array"),
    Surveyed("jax.numpy.diff", ("x",), {}, "array"),
    Surveyed("jax.numpy.interp", ("v", "v", "v"), {}, "vector"),
    # jax.numpy, indexing
    Surveyed(
        "jax.numpy.take", ("x", "i"), {"mode": (None, "clip", "wrap", "fill")}, "array", {"axis": lambda shape: 0}
    ),
    Surveyed("jax.numpy.take_along_axis", ("x", "i"), {}, "vector", {"axis": lambda shape: 0}),
    Surveyed("jax.numpy.roll", ("x",), {"shift": (1, -1, 5)}, "array"),
    Surveyed("jax.numpy.flip", ("x",), {}, "array"),
    Surveyed("jax.numpy.outer", ("v", "v"), {}, "vector"),
    Surveyed("jax.numpy.dot", ("v", "v"), {}, "vector"),
    Surveyed("jax.numpy.matmul", ("m", "m"), {}, "square"),
    Surveyed("jax.numpy.kron", ("v", "v"), {}, "vector"),
    Surveyed("jax.numpy.convolve", ("v", "v"), {"mode": ("full", "same", "valid")}, "vector"),
    Surveyed("jax.numpy.polyval", ("v", "x"), {}, "vector"),
    # jax.numpy.linalg and fft
    *_wide(_each("jax.numpy.linalg", "inv det slogdet pinv eigh qr svd cholesky", "m", "square")),
    *_wide(
        [
            Surveyed("jax.numpy.linalg.norm", ("x",), {"ord": (None, 1, 2, "fro")}, "matrix"),
            Surveyed("jax.numpy.linalg.solve", ("m", "m"), {}, "square"),
            Surveyed("jax.numpy.linalg.matrix_power", ("m",), {"n": (2, 3, -1)}, "square"),
        ]
    ),
    Surveyed("jax.numpy.trace", ("m",), {}, "square"),
    *_wide(_each("jax.numpy.fft", "fft ifft rfft irfft", "v", "vector")),
    Surveyed("jax.numpy.fft.fft2", ("x",), {}, "matrix", floats=WIDE),
    # jax.lax, elementwise
    *_each(
        "jax.lax",
        "abs neg sign floor ceil round exp exp2 expm1 log log1p sqrt rsqrt cbrt sin cos tan asin acos atan sinh cosh "
        "tanh asinh acosh atanh logistic erf erfc erf_inv lgamma digamma bessel_i0e bessel_i1e square reciprocal",
        "x",
    ),
    *_each("jax.lax", "add sub mul div rem pow max min atan2", "x x"),
    Surveyed("jax.lax.integer_pow", ("x",), {"y": (2, 3, -1, 0)}),
    Surveyed("jax.lax.clamp", ("x", "x", "x")),
    Surveyed("jax.lax.select", ("mask", "x", "x")),
    Surveyed("jax.lax.select_n", ("w", "x")),
    Surveyed("jax.lax.select_n", ("w", "x", "x")),
    Surveyed("jax.lax.select_n", ("w", "x", "x", "x")),
    # jax.lax, slicing and gathering
    Surveyed("jax.lax.dynamic_slice", ("x", "starts"), {}, "array", {"slice_sizes": _half}),
    Surveyed("jax.lax.dynamic_update_slice", ("x", "x", "starts"), {}, "array"),
    Surveyed("jax.lax.dynamic_index_in_dim", ("x", "i"), {"keepdims": (False, True)}, "array"),
    Surveyed("jax.lax.sort", ("x",), {}, "array"),
    Surveyed("jax.lax.cumsum", ("x",), {"reverse": (False, True)}, "array"),
    Surveyed("jax.lax.cummax", ("x",), {"reverse": (False, True)}, "array"),
    Surveyed("jax.lax.cumlogsumexp", ("x",), {}, "array"),
    Surveyed("jax.lax.reduce_precision", ("x",), {"exponent_bits": (5, 8), "mantissa_bits": (2, 10)}),
    # jax.nn
    *_each(
        "jax.nn",
        "relu relu6 sigmoid softplus soft_sign silu gelu elu celu selu leaky_relu hard_tanh hard_sigmoid hard_silu "
        "log_sigmoid mish sparse_plus squareplus",
        "x",
    ),
    *_each("jax.nn", "softmax log_softmax standardize logsumexp", "x", "array", axis=(-1, 0)),
    Surveyed("jax.nn.glu", ("x",), {}, "vector"),
    # jax.scipy.special
    *_each(
        "jax.scipy.special",
        "erf erfc erfinv expit logit gammaln digamma entr i0 i0e i1 i1e ndtr ndtri log_ndtr spence",
        "x",
    ),
    *_each("jax.scipy.special", "xlogy xlog1py betaln gammainc gammaincc rel_entr kl_div zeta", "x x"),
    Surveyed("jax.scipy.special.logsumexp", ("x",), {"axis": AXES}, "array"),
    # jax.ops: segment reductions
    *(
        Surveyed(f"jax.ops.{name}", ("x", "seg"), {}, "array", {"num_segments": lambda shape: shape[0]})
        for name in ("segment_sum", "segment_max", "segment_min")
    ),
    # written out: an index expression, a window, a mask
    Surveyed("gradaudit.survey.wrappers.getitem", ("x", "i"), {}, "array"),
    Surveyed("gradaudit.survey.wrappers.at_get", ("x", "i"), {"mode": ("promise_in_bounds", "clip", "fill")}, "array"),
    Surveyed("gradaudit.survey.wrappers.at_set", ("x", "i", "x"), {}, "vector"),
    Surveyed("gradaudit.survey.wrappers.at_add", ("x", "i", "x"), {}, "vector"),
    Surveyed("gradaudit.survey.wrappers.window_max", ("x",), {}, "vector"),
    Surveyed("gradaudit.survey.wrappers.window_sum", ("x",), {}, "vector"),
    Surveyed("gradaudit.survey.wrappers.masked_max", ("x", "mask"), {}, "array"),
    Surveyed("gradaudit.survey.wrappers.masked_sum", ("x", "mask"), {}, "array"),
    Surveyed("gradaudit.survey.wrappers.choose", ("w", "x", "x"), {"mode": ("clip", "wrap")}, "vector"),
    Surveyed("gradaudit.survey.wrappers.cond_branch", ("w", "x", "x"), {}, "any"),
    Surveyed("gradaudit.survey.wrappers.switch_branch", ("w", "x", "x", "x"), {}, "any"),
    Surveyed("gradaudit.survey.wrappers.top_k_values", ("x",), {}, "vector"),
    Surveyed("gradaudit.survey.wrappers.argmax_value", ("x",), {}, "array"),
)


def by_path() -> dict[str, list[Surveyed]]:
    """Entries per public path (select_n has several: one per number of cases)."""
    found: dict[str, list[Surveyed]] = {}
    for entry in TABLE:
        found.setdefault(entry.path, []).append(entry)
    return found
