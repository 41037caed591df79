# Index/integer-limit defects: compare the primal (eager, jit, jit with the index as a constant) with
# the derivative each AD mode gives; the true function is fixed by the documented semantics.
import numpy as np, jax, jax.numpy as jnp
from jax import lax
import gradaudit.survey.wrappers as W  # read-only import of the wrapper under test
jax.config.update('jax_enable_x64', False)
x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
import importlib.util, sys
# take x exactly as the reproducer does
src = open(__import__('pathlib').Path(__file__).resolve().parents[2] / 'found' / 'wrappers.scatter-1.py').read()
start = src.index('np.array([') + len('np.array(')
x = np.array(eval(src[start:src.index('], dtype', start) + 1]), np.float32)
print('x[0], x[127], x[255], x[299] =', x[0], x[127], x[255], x[299])

def report(name, f, args, argnum, outidx, inidx):
    g_const = lambda *a: f(*a)
    print('--', name)
    try: ep = np.asarray(f(*args))[outidx]
    except Exception as e: ep = 'raises ' + type(e).__name__
    print(' eager primal at', outidx, ep, ' jit primal', np.asarray(jax.jit(f)(*args))[outidx])
    for mode in ('jacfwd', 'jacrev'):
        J = getattr(jax, mode)(f, argnums=argnum)(*args)
        Jj = jax.jit(getattr(jax, mode)(f, argnums=argnum))(*args)
        print(' ', mode, np.asarray(J)[outidx + inidx], ' jit', np.asarray(Jj)[outidx + inidx],
              ' nonzero/nan entries:', int(np.count_nonzero(np.asarray(J))), int(np.isnan(np.asarray(J)).sum()))

# 27 scatter(x, int8 127, y): true: out = x.at[127].set(y[0]); d out[127]/d y[0] = 1
i = np.int8(127)
f = lambda a, b: W.scatter(a, i, b)          # index captured as a constant
report('27 scatter, int8 127 as constant', f, (x, x), 1, (127,), (0,))
f2 = lambda a, idx, b: W.scatter(a, idx, b)
print('  eager primal out[127] with index passed', np.asarray(f2(x, i, x))[127], 'jit passed', np.asarray(jax.jit(f2)(x, i, x))[127])
# 33 dynamic_slice_in_dim(x, uint8 255, 1): true out[0] = x[255]
u = np.uint8(255)
f = lambda a: lax.dynamic_slice_in_dim(a, u, 1)
report('33 dynamic_slice_in_dim uint8 255 const', f, (x,), 0, (0,), (0,))
print('  entry [0,255]: jacfwd', np.asarray(jax.jacfwd(f)(x))[0,255], 'jit(jacfwd)', np.asarray(jax.jit(jax.jacfwd(f))(x))[0, 255], 'jacrev', np.asarray(jax.jacrev(f)(x))[0,255], 'jit(jacrev)', np.asarray(jax.jit(jax.jacrev(f))(x))[0,255])
# 43 select_n(int32 max, x)
w = np.int32(2147483647)
f = lambda v: lax.select_n(w, v)
report('43 select_n which=2^31-1 const', f, (np.float32(0.62),), 0, (), ())
# 59 getitem(x, [0, 300]): JAX clamps out-of-bounds gathers -> out[1] = x[299]
idx = jnp.asarray(np.array([0, 300], np.int32))
f = lambda a, j: W.getitem(a, j)
report('59 getitem [0,300] (index passed, traced)', f, (x, idx), 0, (1,), (299,))
# 60 scatter_max(x, 300, y, clip): out[299] = max(x[299], y[0]); d out[299]/d x[0] must be 0
f = lambda a, b: W.scatter_max(a, np.int32(300), b, mode='clip')
report('60 scatter_max clip 300 (d/dx operand)', f, (x, x), 0, (299,), (0,))
J = jax.jacfwd(f, argnums=(0, 1))(x, x)
print('  jacfwd d out[299]/d x[299], d out[299]/d y[0]:', J[0][299, 299], J[1][299, 0], ' nan count', int(np.isnan(J[0]).sum()), int(np.isnan(J[1]).sum()))
print('  nan rows/cols of jacfwd wrt x:', np.unique(np.argwhere(np.isnan(J[0]))[:, 0])[:5], np.unique(np.argwhere(np.isnan(J[0]))[:, 1])[:5])
# 62 dynamic_slice(x, [int8 127], [150]): out[0] = x[127]
f = lambda a: lax.dynamic_slice(a, [np.int8(127)], [150])
report('62 dynamic_slice int8 127 size 150', f, (x,), 0, (0,), (127,))
