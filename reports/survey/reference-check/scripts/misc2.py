import numpy as np, jax, jax.numpy as jnp
from jax import lax
print('== 61 clamp(min=1, x=.62, max=.62): value as max moves (XLA: min(max(x,lo),hi))')
for d in (-1e-3, 0, 1e-3):
    print('  max=%.4f ->' % (0.62 + d), float(lax.clamp(jnp.float32(1.0), jnp.float32(0.62), jnp.float32(0.62 + d))))
print('  jacfwd wrt (min,x,max):', jax.jacfwd(lax.clamp, argnums=(0, 1, 2))(jnp.float32(1.0), jnp.float32(0.62), jnp.float32(0.62)))
print('  at untied x=.5:', jax.jacfwd(lax.clamp, argnums=(0, 1, 2))(jnp.float32(1.0), jnp.float32(0.5), jnp.float32(0.62)))
print('== 81 polydiv(u=[0,1,0,0], v=[1,0,0,0], trim_leading_zeros=True): outputs as u[2] moves')
for d in (-1e-3, 0.0, 1e-3):
    u = jnp.array([0, 1, d, 0], jnp.float32); v = jnp.array([1, 0, 0, 0], jnp.float32)
    q, r_ = jnp.polydiv(u, v, trim_leading_zeros=True)
    print('  u[2]=%g  q=%s r=%s' % (d, np.asarray(q), np.asarray(r_)))
u = jnp.array([0, 1, 0, 0], jnp.float32); v = jnp.array([1, 0, 0, 0], jnp.float32)
J = jax.jacfwd(lambda a: jnp.concatenate([jnp.ravel(t) for t in jnp.polydiv(a, v, trim_leading_zeros=True)]))(u)
print('  jacfwd d out/d u:\n', np.asarray(J))
print('== 84 setdiff1d(.62, 2)')
f = lambda a: jnp.setdiff1d(a, jnp.int32(2))
print('  value', f(jnp.float32(0.62)), ' value at .63', f(jnp.float32(0.63)), ' jacfwd', jax.jacfwd(f)(jnp.float32(0.62)), ' jacrev', jax.jacrev(f)(jnp.float32(0.62)))
print('== 73/72 ldexp(x, n): d/dx should be 2**n')
for x in (0.0, 0.5, 1e-40):
    print('  x=%g n=1: value %s jacfwd %s jacrev %s' % (x, jnp.ldexp(jnp.float32(x), 1), jax.jacfwd(jnp.ldexp)(jnp.float32(x), 1), jax.jacrev(jnp.ldexp)(jnp.float32(x), 1)))
print('== 58 custom_root cube root at x=0 (Newton, 30 steps from 1)')
from gradaudit.survey import wrappers as W
for x in (0.0, 1e-6, 1e-3):
    print('  x=%g value %s (true cbrt %s) jacfwd %s' % (x, W.custom_root(jnp.float32(x)), np.cbrt(x), jax.jacfwd(W.custom_root)(jnp.float32(x))))
print('== 105 zeta(x=[0,0,2], q=[0,0,1]) jacobian wrt q')
from jax.scipy.special import zeta
xs = jnp.array([0., 0., 2.], jnp.float32); qs = jnp.array([0., 0., 1.], jnp.float32)
print('  value', zeta(xs, qs), '\n  jacfwd', np.asarray(jax.jacfwd(zeta, argnums=1)(xs, qs)), '\n  jacrev', np.asarray(jax.jacrev(zeta, argnums=1)(xs, qs)))
