"""#85-87, 91-97: jnp set functions (setdiff1d, setxor1d, union1d, unique*) at the stored inputs.
For each: the primal at x and at x +- d (small steps, both eager and jit where jit compiles), the
full Jacobian from jacfwd/jacrev, and the exact derivative read off from the primal (the set
operation is a sort/selection: nearby, out[0] is literally the same input element, so its derivative
is 1 unless the order or membership changes). Run from reports/survey."""
import numpy as np, jax, jax.numpy as jnp

def flat(out):
    leaves = [l for l in jax.tree_util.tree_leaves(out) if jnp.issubdtype(jnp.result_type(l), jnp.floating)]
    return jnp.concatenate([jnp.ravel(l) for l in leaves]) if len(leaves) > 1 else jnp.ravel(leaves[0])

def show(label, f, args, k, steps=(1e-6, 1e-3, 2**-9)):
    args = [jnp.asarray(a) for a in args]
    print('==', label)
    y = f(*args)
    print('  primal', np.asarray(y))
    for d in steps:
        for s in (+1, -1):
            moved = list(args); moved[k] = args[k] + np.float32(s * d)
            print('  x%d %+g -> %s' % (k, s * d, np.asarray(f(*moved))))
    try:
        print('  jacfwd', np.asarray(jax.jacfwd(f, argnums=k)(*args)).tolist())
    except Exception as e:
        print('  jacfwd error', type(e).__name__, e)
    try:
        print('  jacrev', np.asarray(jax.jacrev(f, argnums=k)(*args)).tolist())
    except Exception as e:
        print('  jacrev error', type(e).__name__, e)

f32 = np.float32
show('85 setdiff1d(x=0, y=0.62); d out[0]/d x', lambda a, b: flat(jnp.setdiff1d(a, b)), [f32(0), f32(0.62)], 0)
show('86 setxor1d(x=0.62, int 2); d out[0]/d x', lambda a: flat(jnp.setxor1d(a, jnp.int32(2))), [f32(0.62)], 0)
show('87 setxor1d(x=0, y=0.62); d out/d x and d out/d y', lambda a, b: flat(jnp.setxor1d(a, b)), [f32(0), f32(0.62)], 0)
show('87 (wrt y)', lambda a, b: flat(jnp.setxor1d(a, b)), [f32(0), f32(0.62)], 1)
show('91 union1d(x=0.62, int 2); d out[0]/d x', lambda a: flat(jnp.union1d(a, jnp.int32(2))), [f32(0.62)], 0)
show('92 union1d(x=0, y=0.62); d out/d x', lambda a, b: flat(jnp.union1d(a, b)), [f32(0), f32(0.62)], 0)
show('92 (wrt y)', lambda a, b: flat(jnp.union1d(a, b)), [f32(0), f32(0.62)], 1)
show('93 unique([.62,-1.37,.25], axis=0, equal_nan=True); d out/d x', lambda a: flat(jnp.unique(a, axis=0, equal_nan=True)),
     [np.array([0.62, -1.37, 0.25], f32)], 0)
show('94 unique_all(0); floating outputs only', lambda a: flat(jnp.unique_all(a)), [f32(0)], 0)
show('95 unique_counts(0)', lambda a: flat(jnp.unique_counts(a)), [f32(0)], 0)
show('96 unique_inverse(0)', lambda a: flat(jnp.unique_inverse(a)), [f32(0)], 0)
show('97 unique_values(0)', lambda a: flat(jnp.unique_values(a)), [f32(0)], 0)
print('== what each returns at 0 (structure)')
for name in ('unique_all', 'unique_counts', 'unique_inverse', 'unique_values'):
    print(' ', name, getattr(jnp, name)(jnp.float32(0)))
print('== the same functions with a non-zero scalar (0.62), to see whether 0 matters')
for name in ('unique_all', 'unique_counts', 'unique_inverse', 'unique_values'):
    g = lambda a, name=name: flat(getattr(jnp, name)(a))
    print(' ', name, 'jacfwd', np.asarray(jax.jacfwd(g)(f32(0.62))).tolist(), 'jacrev', np.asarray(jax.jacrev(g)(f32(0.62))).tolist())
g = lambda a, b: flat(jnp.setdiff1d(a, b))
print('  setdiff1d(0.3, 0.62) jacfwd', np.asarray(jax.jacfwd(g)(f32(0.3), f32(0.62))).tolist())
print('  setdiff1d(1-D [0.3, 5.], 0.62) jacfwd', np.asarray(jax.jacfwd(g)(np.array([0.3, 5.], f32), f32(0.62))).tolist())
print('  jnp.sort jacfwd on [0.62,-1.37,0.25]', np.asarray(jax.jacfwd(jnp.sort)(np.array([0.62, -1.37, 0.25], f32))).tolist())
print('== contrast: the same calls with a static size= (no concrete_or_error on the data)')
print('  unique(size=3) jacfwd', np.asarray(jax.jacfwd(lambda a: jnp.unique(a, size=3))(np.array([0.62, -1.37, 0.25], f32))).tolist())
print('  union1d(0, .62, size=2) jacfwd wrt x', np.asarray(jax.jacfwd(lambda a, b: jnp.union1d(a, b, size=2))(f32(0), f32(0.62))).tolist())
print('  setdiff1d(0, .62, size=1) jacfwd wrt x', np.asarray(jax.jacfwd(lambda a, b: jnp.setdiff1d(a, b, size=1))(f32(0), f32(0.62))).tolist())
print('  unique_values via unique(0., size=1) jacfwd', np.asarray(jax.jacfwd(lambda a: jnp.unique(a, size=1))(f32(0))).tolist())
