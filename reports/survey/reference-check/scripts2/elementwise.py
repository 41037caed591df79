"""#63 (svd of the zero matrix), #69 (nn.standardize f16), #70 (numpy.angle f16), #77 (logspace f16),
#111 (custom_root cube root at [0,0,-1]). Run from reports/survey with mpmath on PYTHONPATH."""
import numpy as np, jax, jax.numpy as jnp, mpmath as mp
from jax import lax
mp.mp.dps = 50
np.set_printoptions(linewidth=150, precision=7)

def flat(out):
    leaves = [l for l in jax.tree_util.tree_leaves(out) if jnp.issubdtype(jnp.result_type(l), jnp.floating)]
    return jnp.concatenate([jnp.ravel(l) for l in leaves]) if len(leaves) > 1 else jnp.ravel(leaves[0])

print('== 63 lax.linalg.svd(0_3x3, full_matrices=True); out = [U(9), s(3), Vt(9)], out[10] = s[1]')
f = lambda a: flat(lax.linalg.svd(a, full_matrices=True, compute_uv=True))
A0 = np.zeros((3, 3), np.float32)
Jf = np.asarray(jax.jacfwd(f)(A0)).reshape(21, 9); Jr = np.asarray(jax.jacrev(f)(A0)).reshape(21, 9)
bad = [(i, j) for i in range(21) for j in range(9) if not (Jf[i, j] == Jr[i, j] or (np.isnan(Jf[i, j]) and np.isnan(Jr[i, j])))]
print('  entries where fwd and rev differ:', len(bad), bad)
print('  s-rows of jacfwd:\n', Jf[9:12]); print('  s-rows of jacrev:\n', Jr[9:12])
for name, D in (('E00', np.diag([1., 0, 0])), ('E00+E11', np.diag([1., 1, 0])), ('I', np.eye(3)), ('E01', np.eye(3)[[1, 0, 2]] * 0 + np.outer([1, 0, 0], [0, 1, 0]))):
    for t in (1e-3, -1e-3):
        s = np.linalg.svd(t * D, compute_uv=False)
        print('  s(%s * %s) = %s' % (t, name, s))
print('  s[1] is positively homogeneous (s(tA)=|t|s(A)) and s[1](E00+E11) = 1, so along E00+E11 it is |t|: no derivative at 0;')
print('  s[0] = ||A||_2 has no partial derivative at all: s[0](t E00) = |t|.')

print('== 69 nn.standardize([[0,0,1],[0,0,6.1035e-5]] f16, axis=-1); d out[0,0]/d x[1,0]')
x = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 6.103515625e-05]], np.float16)
g = lambda a: jax.nn.standardize(a, axis=-1)
print('  primal f16', np.asarray(g(x)).tolist())
for dt in (np.float16, np.float32):
    Jf = np.asarray(jax.jacfwd(g)(x.astype(dt))).reshape(6, 6); Jr = np.asarray(jax.jacrev(g)(x.astype(dt))).reshape(6, 6)
    print('  %s jacfwd\n%s\n  %s jacrev\n%s' % (dt.__name__, Jf, dt.__name__, Jr))
# exact reference: out[i,:] depends only on x[i,:]; row-wise formula in mpmath
def std_row(r, eps=mp.mpf('1e-5')):
    m = sum(r) / 3; v = sum((t - m) ** 2 for t in r) / 3
    return [(t - m) / mp.sqrt(v + eps) for t in r]
r1 = [mp.mpf(float(t)) for t in x[1]]
J1 = [[mp.diff(lambda h, i=i, j=j: std_row([r1[k] + (h if k == j else 0) for k in range(3)])[i], 0) for j in range(3)] for i in range(3)]
print('  exact d out[1,i]/d x[1,j] (mpmath, eps=1e-5):', [[mp.nstr(v, 8) for v in row] for row in J1])
print('  float16 max', np.finfo(np.float16).max, '; (var+eps)^(-3/2) at var~0 =', float((mp.mpf('1e-5')) ** -1.5))

print('== 70 numpy.angle(x, deg=True), real f16 x = [[6.1e-5,1.42,-0.401],[1,6.1e-5,-1.82]]; d out[0,0]/d x[0,1]')
x = np.array([[6.103515625e-05, 1.421875, -0.401123046875], [1.0, 6.103515625e-05, -1.818359375]], np.float16)
h = lambda a: jnp.angle(a, deg=True)
print('  primal', np.asarray(h(x)).tolist())
for dt in (np.float16, np.float32):
    print('  %s jacfwd\n%s\n  %s jacrev\n%s' % (dt.__name__, np.asarray(jax.jacfwd(h)(x.astype(dt))).reshape(6, 6), dt.__name__, np.asarray(jax.jacrev(h)(x.astype(dt))).reshape(6, 6)))
print('  exact: angle of a real x is 0 for x>0 and 180 for x<0, locally constant at every nonzero x: all 36 entries are 0')
print('  f16: (6.1e-5)**2 =', np.float16(6.103515625e-05) ** 2, '(underflows), so d atan2/dx = -y/(x^2+y^2) = 0/0')

print('== 77 logspace(start=[.62,10,.25], stop=[.62,-1.37,.25], num=50, base 10) f16; d out[23,1]/d start[1]')
s0 = np.array([0.6201171875, 10.0, 0.25], np.float16); s1 = np.array([0.6201171875, -1.3701171875, 0.25], np.float16)
L = lambda a, b: jnp.logspace(a, b, endpoint=True, axis=0)
print('  primal out[23,1] f16', float(L(s0, s1)[23, 1]), '; out[0,1] =', float(L(s0, s1)[0, 1]))
print('  jacfwd', float(jax.jacfwd(L, argnums=0)(s0, s1)[23, 1, 1]), ' jacrev', float(jax.jacrev(L, argnums=0)(s0, s1)[23, 1, 1]))
print('  f32 inputs: jacfwd', float(jax.jacfwd(L, argnums=0)(s0.astype(np.float32), s1.astype(np.float32))[23, 1, 1]))
a, b = mp.mpf(10), mp.mpf(float(s1[1]))
lin = a + (b - a) * mp.mpf(23) / 49
val = mp.power(10, lin); der = mp.log(10) * val * (1 - mp.mpf(23) / 49)
print('  exact: lin =', mp.nstr(lin, 12), ' out =', mp.nstr(val, 10), ' d out/d start =', mp.nstr(der, 10), '(float16 max 65504, spacing 32 there)')
print('  mpmath diff check', mp.nstr(mp.diff(lambda s: mp.power(10, s + (b - s) * mp.mpf(23) / 49), a), 10))
print('  the intermediate ln(10)*out =', mp.nstr(mp.log(10) * val, 8), '> 65504: overflows float16 before the factor 26/49')

print('== 111 wrappers.custom_root (Newton cube root, tangent solve y/(3 x**(2/3)+1e-3)) at x=[0,0,-1]; d out[0]/d x[2]')
from gradaudit.survey import wrappers as W
x = np.array([0.0, 0.0, -1.0], np.float32)
print('  primal', np.asarray(W.custom_root(x)).tolist(), ' true cbrt', np.cbrt(x.astype(float)).tolist())
print('  jacfwd\n', np.asarray(jax.jacfwd(W.custom_root)(x))); print('  jacrev\n', np.asarray(jax.jacrev(W.custom_root)(x)))
print('  the wrapper tangent solve uses x**(2/3); jnp.float32(-1)**(2/3) =', float(jnp.float32(-1.0) ** (2 / 3)))
# the primal is elementwise (each Newton iteration acts elementwise): out[0] cannot depend on x[2]
for d in (1e-3, -1e-3, 0.5):
    print('  out[0] with x[2] -> -1%+g:' % d, float(W.custom_root(x + np.array([0, 0, d], np.float32))[0]))
print('  exact d out[2]/d x[2] at the true root -1: 1/(3*(-1)^2) = 0.3333333; the computed root:', float(W.custom_root(x)[2]))
