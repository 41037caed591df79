import numpy as np, jax, jax.numpy as jnp, mpmath as mp
from jax import lax
jax.config.update('jax_enable_x64', True)
mp.mp.dps = 40
print('== 50 pinv (float64) primal and Jacobian errors vs exact inverse (no singular value is cut)')
G = np.array([[0.62, -1e13, 0.25], [1.81, -0.44, 1.09], [0.93, -1.72, 0.38]])
Gi = mp.matrix(G.tolist()) ** -1
Ex = np.array([[float(Gi[i, j]) for j in range(3)] for i in range(3)])
P = np.asarray(jnp.linalg.pinv(jnp.asarray(G)))
print(' primal rel err (max abs err / max |inv|):', np.abs(P - Ex).max() / np.abs(Ex).max(), ' err at [0,2]:', P[0, 2] - Ex[0, 2])
Jt = -np.einsum('ik,lj->ijkl', Ex, Ex)            # exact d inv[i,j] / d A[k,l]
Ja = np.asarray(jax.jacfwd(jnp.linalg.pinv)(jnp.asarray(G)))
Jr = np.asarray(jax.jacrev(jnp.linalg.pinv)(jnp.asarray(G)))
print(' exact d[0,2]/dA[2,1]', Jt[0, 2, 2, 1], ' jacfwd', Ja[0, 2, 2, 1], ' jacrev', Jr[0, 2, 2, 1])
print(' max |J exact|', np.abs(Jt).max(), ' max |jacfwd-exact|', np.abs(Ja - Jt).max(), ' max |jacrev-exact|', np.abs(Jr - Jt).max())
Jinv = np.asarray(jax.jacfwd(jnp.linalg.inv)(jnp.asarray(G)))
print(' for contrast jnp.linalg.inv jacfwd entry', Jinv[0, 2, 2, 1], ' max err', np.abs(Jinv - Jt).max())
print(' 2-norm condition number', np.linalg.cond(G), ' eps*cond', np.finfo(float).eps * np.linalg.cond(G))

print('== 44 dot_product_attention(q=.62, k=.62, v=1e45) float64')
f = lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=False)
a = [jnp.float64(0.62), jnp.float64(0.62), jnp.float64(1e45)]
try:
    print(' value', f(*a))
    print(' jacfwd', jax.jacfwd(f, argnums=(0, 1, 2))(*a), ' jacrev', jax.jacrev(f, argnums=(0, 1, 2))(*a))
except Exception as e:
    print(' error', e)
jax.config.update('jax_enable_x64', False)
print('== 49 histogram2d outputs')
x = jnp.array([6.1999999896465404e-37, -1.3699999586566751e-36, 2.5000000898478246e-37, 1.80999996370792e-36], jnp.float32)
y = jnp.array([0.62, -1.37, 0.25, 1.81], jnp.float32)
H, xe, ye = jnp.histogram2d(x, y)
print(' shapes', H.shape, xe.shape, ye.shape, ' xedges', np.asarray(xe))
print(' flat out[5]', np.concatenate([np.ravel(H), xe, ye])[5])
J = jax.jacfwd(lambda a, b: jnp.concatenate([jnp.ravel(t) for t in jnp.histogram2d(a, b)]), argnums=0)(x, y)
print(' jacfwd rows 100..110 (xedges) wrt x:', np.asarray(J[100:111]))
for h in (1e-37, 1e-38):
    xp = x.at[0].add(h); xm = x.at[0].add(-h)
    print(' small-step FD of xedges wrt x0[0], h=%g:' % h, (np.asarray(jnp.histogram2d(xp, y)[1]) - np.asarray(jnp.histogram2d(xm, y)[1])) / (2 * h))
print('== 27 scatter primal with int8 vs int32 index 127 (mode None)')
from gradaudit.survey import wrappers as W
xx = jnp.arange(300, dtype=jnp.float32); yy = -jnp.ones(300, jnp.float32)
print(' int8:', W.scatter(xx, jnp.int8(127), yy)[127], ' int32:', W.scatter(xx, jnp.int32(127), yy)[127], ' (true: -1)')
print(' int8 idx 40:', W.scatter(xx, jnp.int8(40), yy)[40], ' int8 idx 43/44:', W.scatter(xx, jnp.int8(43), yy)[43], W.scatter(xx, jnp.int8(44), yy)[44])
