"""lax.linalg.svd: [wrong] jacrev and jit(jacrev) disagree with jacfwd and jit(jacfwd) on 119 of 189 entries; largest at d out[1]/d x0[0, 0]: -6.03015e-20 from jacfwd and jit(jacfwd), nan from jacrev and jit(jacrev)

Why: inputs and output finite (x0[0, 0] = 0.62; out[1] = 0); finite differences 2.543e-06 (slope 0 from the left, 0 from the right), both sides agree; float64 agrees (1.75641405e-77 from jacrev, 1.75641405e-77 from jit_jacrev, 1.75641405e-77 from jacfwd, 1.75641405e-77 from jit_jacfwd) but float32 strays from it by more than float32's tolerance (rtol 0.0014, atol 0.0014, or rtol of the block's largest entry): jacrev nan against -1.95001e-93; jit_jacrev nan against -1.95001e-93; jacfwd nan against -1.95001e-93; jit_jacfwd nan against -1.95001e-93

gradaudit 0.1.0 (JAX 0.10.2) reported at d out[1]/d x0[0, 0]: jacrev nan, jit(jacrev) nan, jacfwd -6.03015e-20, jit(jacfwd) -6.03015e-20.
Written from <survey>:2:3; needs only JAX and NumPy: python lax.linalg.svd-5.py
"""

import numpy as np

import jax
import jax.numpy as jnp


def flat(out):
    """The function's floating outputs in one vector (an array stays as it is): what was differentiated."""
    leaves = []
    for leaf in jax.tree_util.tree_leaves(out):
        leaves += [jnp.real(leaf), jnp.imag(leaf)] if jnp.iscomplexobj(leaf) else [leaf]
    floating = [leaf for leaf in leaves if jnp.issubdtype(jnp.result_type(leaf), jnp.floating)]
    if len(leaves) == 1 and len(floating) == 1:
        return floating[0]
    return jnp.concatenate([jnp.ravel(leaf) for leaf in floating]) if len(floating) > 1 else jnp.ravel(floating[0])


def finite_difference(f, fixed, k, at, out, h):
    """Central differences of jit(f) at steps h and h/2, extrapolated (4 c(h/2) - c(h)) / 3: the
    derivative of out with respect to INPUTS[k][at] from evaluations of the function alone.
    Where jit cannot compile f (it needs an input's concrete value), f itself, as the audit does."""
    g = jax.jit(f)
    try:
        g(*INPUTS, *fixed)
    except (
        jax.errors.TracerBoolConversionError,
        jax.errors.ConcretizationTypeError,
        jax.errors.TracerIntegerConversionError,
        IndexError,
    ):
        g = f

    def central(step):
        values = []
        for sign in (1.0, -1.0):
            moved = [np.array(x) for x in INPUTS]
            moved[k][at] = (np.float64(moved[k][at]) + sign * step).astype(moved[k].dtype)
            values.append(np.float64(np.asarray(g(*moved, *fixed))[out]))
        return (values[0] - values[1]) / (2 * step)

    return (4 * central(h / 2) - central(h)) / 3


def entry(block, index):
    return float(np.asarray(block)[index])


import importlib
import sys

function = importlib.import_module('jax.lax.linalg')
for attribute in 'svd'.split("."):
    function = getattr(function, attribute)
KWARGS = {'full_matrices': True, 'compute_uv': True}

# Each positional argument and how it reaches the function: d differentiated, h held fixed (passed
# as an argument), c an integer input: passed as an argument (traced), or captured as a constant.
PATTERN = 'd'
ARGUMENTS = [
    np.array([[0.6200000047683716, 3.4028234663852886e+38, 0.25], [1.809999942779541, -0.4399999976158142, 1.090000033378601], [0.9300000071525574, -1.7200000286102295, 0.3799999952316284]], dtype=np.float32),
]
CONSTANTS = [jnp.asarray(a) for a, kind in zip(ARGUMENTS, PATTERN) if kind == "c"]


def _called(inputs, passed, captured):
    d, p, c = iter(inputs), iter(passed), iter(CONSTANTS)
    arguments = [next(d) if kind == "d" else next(c) if kind == "c" and captured else next(p) for kind in PATTERN]
    return flat(function(*arguments, **KWARGS))


def traced(*inputs):
    # The differentiated inputs, then every other input, passed as arguments.
    n = PATTERN.count("d")
    return _called(inputs[:n], inputs[n:], captured=False)


def with_constants(*inputs):
    # The differentiated inputs, then the held ones, passed; the integer inputs captured as constants.
    n = PATTERN.count("d")
    return _called(inputs[:n], inputs[n:], captured=True)


INPUTS = [jnp.asarray(a) for a, kind in zip(ARGUMENTS, PATTERN) if kind == "d"]
PASSED = [jnp.asarray(a) for a, kind in zip(ARGUMENTS, PATTERN) if kind != "d"]
HELD = [jnp.asarray(a) for a, kind in zip(ARGUMENTS, PATTERN) if kind == "h"]
ARGNUMS = tuple(range(len(INPUTS)))

print('at d out[1]/d x0[0, 0]:')
print('jacrev', entry(jax.jacrev(traced, argnums=ARGNUMS)(*INPUTS, *PASSED)[0], (1, 0, 0)), sep=': ')
print('jit(jacrev)', entry(jax.jit(jax.jacrev(traced, argnums=ARGNUMS))(*INPUTS, *PASSED)[0], (1, 0, 0)), sep=': ')
print('jacfwd', entry(jax.jacfwd(traced, argnums=ARGNUMS)(*INPUTS, *PASSED)[0], (1, 0, 0)), sep=': ')
print('jit(jacfwd)', entry(jax.jit(jax.jacfwd(traced, argnums=ARGNUMS))(*INPUTS, *PASSED)[0], (1, 0, 0)), sep=': ')
