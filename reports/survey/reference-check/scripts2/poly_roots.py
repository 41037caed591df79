"""#78, #79, #80 (jnp.poly of a 3x3 matrix), #82, #83 (jnp.roots of a cubic), #98 (scipy.linalg.companion),
#112 (lu_solve with b ~ 1e37). Exact references in mpmath (50 digits) at the exact float32 inputs.
poly(A) = characteristic polynomial [1, -tr A, M2(A), -det A] (M2 = sum of principal 2x2 minors): its
coefficients are polynomials in the entries, real for real A, so the imaginary parts JAX returns are
identically 0 and their derivatives are 0. Run from reports/survey with mpmath on PYTHONPATH."""
import numpy as np, jax, jax.numpy as jnp, mpmath as mp
mp.mp.dps = 50
np.set_printoptions(linewidth=160, precision=7)

def flat(out):
    leaves = []
    for leaf in jax.tree_util.tree_leaves(out):
        leaves += [jnp.real(leaf), jnp.imag(leaf)] if jnp.iscomplexobj(leaf) else [leaf]
    floating = [l for l in leaves if jnp.issubdtype(jnp.result_type(l), jnp.floating)]
    return jnp.concatenate([jnp.ravel(l) for l in floating]) if len(floating) > 1 else jnp.ravel(floating[0])

def charpoly(M):
    tr = M[0][0] + M[1][1] + M[2][2]
    m2 = (M[0][0] * M[1][1] - M[0][1] * M[1][0]) + (M[0][0] * M[2][2] - M[0][2] * M[2][0]) + (M[1][1] * M[2][2] - M[1][2] * M[2][1])
    det = (M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) - M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0])
           + M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]))
    return [mp.mpf(1), -tr, m2, -det]

def exact_poly_jac(A):
    M = [[mp.mpf(float(v)) for v in row] for row in A]
    J = np.zeros((8, 9))
    for k in range(3):
        for l in range(3):
            for i in range(4):
                def g(h, i=i, k=k, l=l):
                    N = [row[:] for row in M]; N[k][l] = N[k][l] + h
                    return charpoly(N)[i]
                J[i, 3 * k + l] = float(mp.diff(g, 0))   # exact: polynomial in h
    return J   # rows 4..7 (imaginary parts) stay 0

T = [[0.6200000047683716, -1.3700000047683716, 0.25], [1.809999942779541, -0.4399999976158142, 1.090000033378601], [0.9300000071525574, -1.7200000286102295, 0.3799999952316284]]
P = lambda a: flat(jnp.poly(a))
for label, A, (o, k, l) in (('78 poly-2: T with a[0,1]=-1e9; d out[6] (= imag c2) / d a[0,0]', [[0.62, -1e9, 0.25]] + T[1:], (6, 0, 0)),
                            ('79 poly-3: T with a[0,1]=-999999986991104 (f32 of -1e15); d out[6] / d a[1,0]', [[0.62, -999999986991104.0, 0.25]] + T[1:], (6, 1, 0)),
                            ('80 poly-8: A = E21 (nilpotent); d out[2] (= real c2 = M2) / d a[1,2]', [[0, 0, 0], [0, 0, 0], [0, 1, 0]], (2, 1, 2))):
    A = np.array(A, np.float32)
    print('==', label)
    print('  eigenvalues (float64 of the f32 matrix)', np.linalg.eigvals(A.astype(float)))
    print('  f32 primal', np.asarray(P(A)))
    Je = exact_poly_jac(A)
    Jf = np.asarray(jax.jacfwd(P)(A)).reshape(8, 9); Jr = np.asarray(jax.jacrev(P)(A)).reshape(8, 9)
    print('  disputed entry: exact %.7g, jacfwd %.7g, jacrev %.7g' % (Je[o, 3 * k + l], Jf[o, 3 * k + l], Jr[o, 3 * k + l]))
    print('  exact Jacobian (real part rows 0-3):\n', Je[:4])
    print('  max|J exact| = %.4g; max|fwd - exact| = %.4g (real rows %.4g, imag rows %.4g); max|rev - exact| = %.4g (real %.4g, imag %.4g)' % (
        np.abs(Je).max(), np.abs(Jf - Je).max(), np.abs(Jf - Je)[:4].max(), np.abs(Jf - Je)[4:].max(),
        np.abs(Jr - Je).max(), np.abs(Jr - Je)[:4].max(), np.abs(Jr - Je)[4:].max()))
    print('  relative to max|J|: fwd %.3g, rev %.3g; eps32 = %.3g' % (np.abs(Jf - Je).max() / np.abs(Je).max(), np.abs(Jr - Je).max() / np.abs(Je).max(), np.finfo(np.float32).eps))
    print('  jacfwd:\n', Jf); print('  jacrev:\n', Jr)
    if label.startswith('80'):
        for h in (1e-3, -1e-3):
            B = A.copy(); B[1, 2] += h
            print('  primal with a[1,2] %+g: %s (exact M2 = -a21*a12 = %g)' % (h, np.asarray(P(B))[:4], -h))

R = lambda p: flat(jnp.roots(p, strip_zeros=True))
for label, p, (o, k), scale in (('82 roots-1: p ~ 1e-18; d out[5] (= imag r2) / d p[3]', [6.19999993249321e-19, -1.3700000017602056e-18, 2.5000001145342624e-19, 1.8100000136464297e-18], (5, 3), 2 ** 60),
                                ('83 roots-2: p ~ 1e-5; d out[2] (= real r2) / d p[3]', [6.199999916134402e-06, -1.3699999726668466e-05, 2.499999936844688e-06, 1.809999957913533e-05], (2, 3), 2 ** 17)):
    p = np.array(p, np.float32)
    print('==', label)
    y = np.asarray(R(p)); print('  f32 primal [re r0..r2, im r0..r2]', y)
    mpp = [mp.mpf(float(v)) for v in p]
    rts = mp.polyroots(mpp, maxsteps=200, extraprec=200)
    print('  mpmath roots', [mp.nstr(r, 12) for r in rts])
    dp = lambda x: 3 * mpp[0] * x ** 2 + 2 * mpp[1] * x + mpp[2]
    # dr/dp[k] = -r^(3-k) / p'(r) (implicit function theorem for a simple root)
    for r in rts:
        print('   root %s: d r/d p[3] = %s' % (mp.nstr(r, 10), mp.nstr(-1 / dp(r), 10)))
    Jf = np.asarray(jax.jacfwd(R)(p))
    print('  jacfwd d out/d p[3] =', Jf[:, 3], '; disputed out[%d]: %.7g' % (o, Jf[o, k]))
    Jex = np.zeros((6, 4))
    order = [min(range(3), key=lambda j: abs(complex(rts[j]) - complex(y[i], y[i + 3]))) for i in range(3)]
    for i, j in enumerate(order):
        for kk in range(4):
            d = -rts[j] ** (3 - kk) / dp(rts[j])
            Jex[i, kk] = float(mp.re(d)); Jex[i + 3, kk] = float(mp.im(d))
    print('  exact Jacobian (rows matched to JAX root order):\n', Jex)
    print('  jacfwd:\n', Jf)
    print('  max|J exact| %.4g, max|fwd - exact| %.4g (relative %.3g)' % (np.abs(Jex).max(), np.abs(Jf - Jex).max(), np.abs(Jf - Jex).max() / np.abs(Jex).max()))
    try:
        Jr = np.asarray(jax.jacrev(R)(p)); print('  jacrev:\n', Jr)
    except Exception as e:
        print('  jacrev error:', type(e).__name__, str(e)[:120])
    # the tool's FD step 2^-8 (= 0.0039) against the coefficient size; FD with a step proportional to p[3]:
    for h in (2.0 ** -8, float(p[3]) * 1e-3):
        vals = []
        for s in (1, -1):
            q = p.astype(np.float64).copy(); q[3] += s * h
            vals.append(np.sort_complex(np.roots(q)))
        print('  float64 np.roots with p[3] +- %.3g: roots+ %s  roots- %s' % (h, vals[0], vals[1]))
    q = p.astype(np.float64) * scale
    for h in (1e-4, 1e-6):
        fp = np.roots(q + np.array([0, 0, 0, h])); fm = np.roots(q - np.array([0, 0, 0, h]))
        re = lambda r: r[np.argmin(np.abs(r.imag))].real
        print('  float64 FD on exactly rescaled p (x 2^%d), h=%g: d(real root)/d p3 = %.10g' % (np.log2(scale), h, (re(fp) - re(fm)) / (2 * h) * scale))

print('== 98 scipy.linalg.companion(a = [6.2e-37, -1.37e-36, 2.5e-37] f32); d out[0,0] / d a[1]')
from jax.scipy.linalg import companion
a = np.array([6.1999999896465404e-37, -1.3699999586566751e-36, 2.5000000898478246e-37], np.float32)
print('  primal', np.asarray(companion(a)).tolist())
A0, A1, A2 = (mp.mpf(float(v)) for v in a)
print('  exact: out[0,0] = -a1/a0 =', mp.nstr(-A1 / A0, 10), '; d/d a1 = -1/a0 =', mp.nstr(-1 / A0, 10), '; d/d a0 = a1/a0^2 =', mp.nstr(A1 / A0 ** 2, 10),
      '; d out[0,1]/d a0 = a2/a0^2 =', mp.nstr(A2 / A0 ** 2, 10), '(float32 max 3.4028e38)')
print('  jacfwd', np.asarray(jax.jacfwd(companion)(a)).reshape(4, 3).tolist()); print('  jacrev', np.asarray(jax.jacrev(companion)(a)).reshape(4, 3).tolist())
print('  a0**2 in float32 =', np.float32(a[0]) * np.float32(a[0]), '(underflow)')

print('== 112 lu_solve(lu_factor(a), b), a = T, b = T*1e37 (f32); d out[0,0] / d a[0,0]')
from gradaudit.survey import wrappers as W
a = np.array(T, np.float32)
b = np.array([[6.199999857553756e+36, -1.3699999491002965e+37, 2.499999983453953e+36], [1.8099999512587947e+37, -4.4000000215849815e+36, 1.090000016871285e+37], [9.300000103243284e+36, -1.720000054534151e+37, 3.800000076262057e+36]], np.float32)
Am = mp.matrix(a.astype(float).tolist()); Bm = mp.matrix(b.astype(float).tolist()); Ai = Am ** -1; X = Ai * Bm
E = mp.zeros(3, 3); E[0, 0] = 1; dX = -Ai * E * X
print('  exact x[0,0] =', mp.nstr(X[0, 0], 10), '; exact d x/d a[0,0] =', [[mp.nstr(dX[i, j], 8) for j in range(3)] for i in range(3)])
g = lambda a, b: W.lu_solve(a, b, trans=0)
print('  primal', np.asarray(g(a, b)).tolist())
Jf = np.asarray(jax.jacfwd(g, argnums=(0, 1))(a, b)[0]); Jr = np.asarray(jax.jacrev(g, argnums=(0, 1))(a, b)[0])
print('  jacfwd d x/d a[0,0]:\n', Jf[:, :, 0, 0]); print('  jacrev d x/d a[0,0]:\n', Jr[:, :, 0, 0])
ex = np.array([[float(dX[i, j]) for j in range(3)] for i in range(3)])
print('  max |exact d x/d a| over all a entries:', max(abs(float((-Ai * mp.matrix([[1 if (r, c) == (k, l) else 0 for c in range(3)] for r in range(3)]) * X)[i, j])) for k in range(3) for l in range(3) for i in range(3) for j in range(3)))
print('  non-finite entries: fwd', int((~np.isfinite(Jf)).sum()), 'rev', int((~np.isfinite(Jr)).sum()), 'of', Jf.size, '(d x / d a block)')
# exact power-of-two rescaling: x is linear in b, so J(b) = 2^123 J(b / 2^123); float32 AD on the rescaled problem:
s = 2.0 ** 123
Jf_s = np.asarray(jax.jacfwd(g, argnums=0)(a, (b / s).astype(np.float32)))
print('  float32 jacfwd on b/2^123, times 2^123: d x[0,0]/d a[0,0] = %.7g (exact %.7g)' % (Jf_s[0, 0, 0, 0] * s, ex[0, 0]))
