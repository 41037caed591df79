"""lax.select_n.2: [wrong] jacrev, jit(jacrev), jacrev with constants and jit(jacrev) with constants disagree with jacfwd, jit(jacfwd), jacfwd with constants and jit(jacfwd) with constants on 1 of 2 entries; at d out/d x2: 1 from jacfwd, jit(jacfwd), jacfwd with constants and jit(jacfwd) with constants, 0 from jacrev, jit(jacrev), jacrev with constants and jit(jacrev) with constants (difference 1, relative 1; tolerance 3.81e-06)

Why: inputs and output finite (x2 = 0.62; out = 0.62); finite differences 1 (slope 1 from the left, 1 from the right), both sides agree

gradaudit 0.1.0 (JAX 0.10.2) reported at d out/d x2: jacrev 0, jit(jacrev) 0, jacrev with constants 0, jit(jacrev) with constants 0, jacfwd 1, jit(jacfwd) 1, jacfwd with constants 1, jit(jacfwd) with constants 1.
Written from <survey>:2:3; needs only JAX and NumPy: python lax.select_n.2-1.py
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

function = importlib.import_module('jax.lax')
for attribute in 'select_n'.split("."):
    function = getattr(function, attribute)
KWARGS = {}

# Each positional argument and how it reaches the function: d differentiated, h held fixed (passed
# as an argument), c an integer input: passed as an argument (traced), or captured as a constant.
PATTERN = 'cdd'
ARGUMENTS = [
    np.array(2147483647, dtype=np.int32),
    np.array(0.6200000047683716, dtype=np.float32),
    np.array(0.6200000047683716, dtype=np.float32),
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

print('at d out/d x2:')
print('jacrev', entry(jax.jacrev(traced, argnums=ARGNUMS)(*INPUTS, *PASSED)[1], ()), sep=': ')
print('jit(jacrev)', entry(jax.jit(jax.jacrev(traced, argnums=ARGNUMS))(*INPUTS, *PASSED)[1], ()), sep=': ')
print('jacrev with constants', entry(jax.jacrev(with_constants, argnums=ARGNUMS)(*INPUTS, *HELD)[1], ()), sep=': ')
print('jit(jacrev) with constants', entry(jax.jit(jax.jacrev(with_constants, argnums=ARGNUMS))(*INPUTS, *HELD)[1], ()), sep=': ')
print('jacfwd', entry(jax.jacfwd(traced, argnums=ARGNUMS)(*INPUTS, *PASSED)[1], ()), sep=': ')
print('jit(jacfwd)', entry(jax.jit(jax.jacfwd(traced, argnums=ARGNUMS))(*INPUTS, *PASSED)[1], ()), sep=': ')
print('jacfwd with constants', entry(jax.jacfwd(with_constants, argnums=ARGNUMS)(*INPUTS, *HELD)[1], ()), sep=': ')
print('jit(jacfwd) with constants', entry(jax.jit(jax.jacfwd(with_constants, argnums=ARGNUMS))(*INPUTS, *HELD)[1], ()), sep=': ')
