"""#74 and #75: jnp.linalg.lstsq(a, b, numpy_resid=False) with square, well-conditioned a.
out = [x (9), resid (3), s (3)] (rank is an integer and is not differentiated).
For square nonsingular a (no singular value cut: sigma_3 >> rcond*sigma_1) x = a^-1 b exactly and
resid = ||b - a x||^2 is identically 0 near the input, so d resid/d a = 0 and d x/d a_kl = -a^-1 E_kl x.
References: mpmath at 50 digits at the exact float32 inputs. Run from reports/survey."""
import numpy as np, jax, jax.numpy as jnp, mpmath as mp
mp.mp.dps = 50
np.set_printoptions(linewidth=160, precision=7)

def flat(out):
    leaves = [l for l in jax.tree_util.tree_leaves(out) if jnp.issubdtype(jnp.result_type(l), jnp.floating)]
    return jnp.concatenate([jnp.ravel(l) for l in leaves])

f = lambda a, b: flat(jnp.linalg.lstsq(a, b, numpy_resid=False))
T = [[0.6200000047683716, -1.3700000047683716, 0.25], [1.809999942779541, -0.4399999976158142, 1.090000033378601], [0.9300000071525574, -1.7200000286102295, 0.3799999952316284]]

def exact_dx(a, b, k, l):
    A = mp.matrix(a.astype(float).tolist()); B = mp.matrix(b.astype(float).tolist()); Ai = A ** -1; X = Ai * B
    E = mp.zeros(3, 3); E[k, l] = 1
    return X, -Ai * E * X

for label, a, b, out, (k, l) in (
        ('74 lstsq-2: a = T, b = T with b[0,1]=1e8; d out[10] (= resid[1]) / d a[1,0]', np.array(T, np.float32),
         np.array([[0.62, 1e8, 0.25]] + T[1:], np.float32), 10, (1, 0)),
        ('75 lstsq-6: a = T with a[0,1]=-1.4970703125, b = T; d out[0] (= x[0,0]) / d a[0,0]',
         np.array([[0.6200000047683716, -1.4970703125, 0.25]] + T[1:], np.float32), np.array(T, np.float32), 0, (0, 0))):
    print('==', label)
    sv = np.linalg.svd(a.astype(float), compute_uv=False)
    print('  singular values of a', sv, ' cutoff rcond*s0 =', 3 * np.finfo(np.float32).eps * sv[0], ' cond', sv[0] / sv[-1])
    X, dX = exact_dx(a, b, k, l)
    print('  exact x =', [[mp.nstr(X[i, j], 10) for j in range(3)] for i in range(3)])
    print('  exact d x / d a[%d,%d] =' % (k, l), [[mp.nstr(dX[i, j], 10) for j in range(3)] for i in range(3)], '; exact d resid = 0')
    y = np.asarray(f(a, b)); print('  f32 primal out[9:12] (resid) =', y[9:12], ' out[%d] =' % out, y[out])
    for dt in (np.float32, np.float64):
        jax.config.update('jax_enable_x64', dt == np.float64)
        A, B = jnp.asarray(a.astype(dt)), jnp.asarray(b.astype(dt))
        Jf = np.asarray(jax.jacfwd(f)(A, B)); Jr = np.asarray(jax.jacrev(f)(A, B))
        print('  %s: primal resid %s' % (dt.__name__, np.asarray(f(A, B))[9:12]))
        print('  %s: jacfwd d out[%d]/d a[%d,%d] = %.7g, jacrev = %.7g' % (dt.__name__, out, k, l, Jf[out, k, l], Jr[out, k, l]))
        print('  %s: resid rows d resid/d a, jacfwd:\n%s\n  jacrev:\n%s' % (dt.__name__, Jf[9:12].reshape(3, 9), Jr[9:12].reshape(3, 9)))
        print('  %s: max |d x/d a| (x block, jacfwd) = %.4g; NaN rows fwd %s rev %s' % (dt.__name__, np.nanmax(np.abs(Jf[:9])),
              np.where(np.isnan(Jf).any(axis=(1, 2)))[0].tolist(), np.where(np.isnan(Jr).any(axis=(1, 2)))[0].tolist()))
    jax.config.update('jax_enable_x64', False)

print('== 74: how big is float32 rounding in resid? residual vector of column 1, computed in f32 vs exact 0')
a = np.array(T, np.float32); b = np.array([[0.62, 1e8, 0.25]] + T[1:], np.float32)
x, resid, rank, s = jnp.linalg.lstsq(a, b)
r = np.asarray(b - a @ x)
print('  f32 residual column 1 =', r[:, 1], ' |r| =', np.linalg.norm(r[:, 1]), ' resid[1] =', float(resid[1]), '(exact 0)')
print('  |x[:,1]| =', np.linalg.norm(np.asarray(x)[:, 1]), '; d resid/d a[1,0] = -2 r[1] x[0,1] along the computed r:', -2 * r[1, 1] * float(x[0, 1]))
print('  eps32 * |b[:,1]| =', np.finfo(np.float32).eps * 1e8)
print('== 75: the NaN source: resid = norm(r)**2 with r = 0 exactly in column 2 (jnp.linalg.norm has a NaN derivative at 0)')
print('  jacfwd of norm(v)**2 at v=0:', jax.jacfwd(lambda v: jnp.linalg.norm(v) ** 2)(jnp.zeros(3)), ' jacrev:', jax.jacrev(lambda v: jnp.linalg.norm(v) ** 2)(jnp.zeros(3)))
