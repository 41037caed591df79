# Independent float64 / mpmath references for the matrix defects.
import numpy as np, scipy.linalg as sl, mpmath as mp, jax, jax.numpy as jnp
mp.mp.dps = 40
np.set_printoptions(precision=6, linewidth=150)
A0 = np.array([[0.62, -1.37, 0.25], [1.81, -0.44, 1.09], [0.93, -1.72, 0.38]])
A32 = A0.astype(np.float32).astype(np.float64)

def fd(f, A, idx, h):
    Ap = A.copy(); Am = A.copy(); Ap[idx] += h; Am[idx] -= h
    return (f(Ap) - f(Am)) / (2 * h)

def eigh_fixed(S, ref=None):
    w, v = np.linalg.eigh(S)
    if ref is not None:
        v = v * np.sign(np.sum(v * ref, axis=0))
    return w, v

print('== 24 hypot([0,0,0],[0,0,1.18e-38]) full jacobians (float32)')
x0 = jnp.zeros(3, jnp.float32); x1 = jnp.array([0, 0, 1.1754943508222875e-38], jnp.float32)
for m in ('jacfwd', 'jacrev'):
    J = getattr(jax, m)(jnp.hypot, argnums=(0, 1))(x0, x1)
    print(m, 'd/dx0\n', np.asarray(J[0]), '\n d/dx1\n', np.asarray(J[1]))
print('truth: out[i] depends only on x0[i], x1[i]; hypot(0,y)=|y| so d/dx0[2]=0, d/dx1[2]=1; at (0,0) hypot has a cone point (no derivative) but only for out[0], out[1] wrt their own inputs')

print('== 28 eigh of a 1e-36 matrix, symmetrize_input=True; eigenvalue derivative is scale-free')
T = np.array([[6.1999999896465404e-37, -1.3699999586566751e-36, 2.5000000898478246e-37],
              [1.80999996370792e-36, -4.400000050512449e-37, 1.0899999880542835e-36],
              [9.30000043288532e-37, -1.7199999219096646e-36, 3.799999921329249e-37]])
s = 2.0 ** 120
S = (T + T.T) / 2 * s
w, v = np.linalg.eigh(S)
print('scaled eigenvalues', w, ' relative gaps', np.diff(w) / np.abs(w).max())
print('d w[1]/d A[2,2] = v[2,1]^2 =', v[2, 1] ** 2)
f = lambda A: np.linalg.eigh((A + A.T) / 2)[0][1]
print('FD on scaled matrix, h=1e-6:', fd(f, T * s, (2, 2), 1e-6))
# eigenvector entries: derivative scales by 1/s
fv = lambda A: eigh_fixed((A + A.T) / 2, v)[1].ravel()
Jv = fd(fv, T * s, (2, 2), 1e-6) * s
print('d V/d A[2,2] (unscaled, true) =', Jv)
Jj = jax.jacfwd(lambda a: jnp.concatenate([jnp.ravel(t) for t in jax.lax.linalg.eigh(a, lower=True, symmetrize_input=True, sort_eigenvalues=True)]))(jnp.asarray(T, jnp.float32))
print('JAX jacfwd column d out/d A[2,2] =', np.asarray(Jj[:, 2, 2]))

print('== 34 eigh with A[0,1]=1e8, symmetrize_input=True: d V[0,0]/d A[0,0]')
B = A32.copy(); B[0, 1] = 1e8
S = (B + B.T) / 2
w, v = np.linalg.eigh(S)
print('eigenvalues', w)
fv = lambda A: eigh_fixed((A + A.T) / 2, v)[1][0, 0]
for h in (1e-3, 1e-4):
    print(' FD h=%g' % h, fd(fv, B, (0, 0), h))
# analytic: dv_k = sum_{j!=k} v_j (v_j^T dS v_k)/(w_k - w_j), dS = e0 e0^T
k = 0; dS = np.zeros((3, 3)); dS[0, 0] = 1
dv = sum(v[:, j] * (v[:, j] @ dS @ v[:, k]) / (w[k] - w[j]) for j in range(3) if j != k)
print(' analytic d V[0,0]/dA[0,0] =', dv[0], ' V[0,0]=', v[0, 0])

print('== 35 eigh lower=True symmetrize_input=False: function of the lower triangle only')
L = A32.copy()
def from_lower(A):
    Lo = np.tril(A); return Lo + np.tril(A, -1).T
w, v = np.linalg.eigh(from_lower(L))
print('eigenvalues', w)
fv = lambda A: eigh_fixed(from_lower(A), v)[1].ravel()
print(' V[2,0] =', v[2, 0])
print(' FD d V[2,0]/dA[2,1] (lower-triangle function):', fd(fv, L, (2, 1), 1e-6)[6])
fsym = lambda A: eigh_fixed((A + A.T) / 2, None)[1].ravel()
# analytic for the tangent JAX would use if it took dA literally (non-symmetric): v_j^T dA v_k
def dv_for(dA, k):
    return sum(v[:, j] * (v[:, j] @ dA @ v[:, k]) / (w[k] - w[j]) for j in range(3) if j != k)
E = np.zeros((3, 3)); E[2, 1] = 1
print(' analytic with dA = E21+E12 (true, lower-triangle semantics):', dv_for(E + E.T, 0)[2])
print(' analytic with dA = E21 only (non-symmetric tangent):', dv_for(E, 0)[2], ' with (E21+E12)/2:', dv_for((E + E.T) / 2, 0)[2])
print(' also d w[0]/dA[2,1]: true', v[2, 0] * v[1, 0] * 2)

print('== 36 lu of 1e37 matrix: d LU[1,1]/d A[1,0] (U scales linearly, so derivative is scale-free)')
C = np.array([[6.199999857553756e+36, -1.3699999491002965e+37, 2.499999983453953e+36],
              [1.8099999512587947e+37, -4.4000000215849815e+36, 1.090000016871285e+37],
              [9.300000103243284e+36, -1.720000054534151e+37, 3.800000076262057e+36]])
sc = 2.0 ** -123
P, Lm, U = sl.lu(C * sc)
print(' P^T =', P.T.argmax(1), ' LU[1,1] (scaled back)=', U[1, 1] / sc)
def lu_packed(A, perm=P):
    P2, L2, U2 = sl.lu(A)
    assert np.allclose(P2, perm)
    return (np.tril(L2, -1) + U2).ravel()
print(' FD d LU/d A[1,0] (packed, row-major):', fd(lu_packed, C * sc, (1, 0), 1e-7))

print('== 39/40 qr of 1e-36 and 1e37 matrices (Q scale-free, R linear)')
def qr_flat(A):
    Q, R = np.linalg.qr(A, mode='complete'); return np.concatenate([Q.ravel(), R.ravel()])
base = qr_flat(T * s)
Jq = fd(qr_flat, T * s, (0, 2), 1e-7)
print(' 39: at scaled tiny matrix, d out/d A[0,2]: Q part *s =', Jq[:9] * s, '\n     R part =', Jq[9:])
print('     sign check Q diag R:', np.diag(np.linalg.qr(T * s)[1]))
J40 = fd(qr_flat, C * sc, (2, 0), 1e-7)
print(' 40: d out[10]=R[0,1] / d A[2,0] =', J40[10], ' (Q part scaled back', J40[:9] * sc, ')')

print('== 41/42 svd')
def svd_flat(A, ref=None):
    U, S_, Vt = np.linalg.svd(A)
    return np.concatenate([U.ravel(), S_, Vt.ravel()])
U, S_, Vt = np.linalg.svd(T * s)
print(' 41: singular values (unscaled)', S_ / s)
def svd_fixed(A):
    U2, S2, Vt2 = np.linalg.svd(A)
    sg = np.sign(np.sum(U2 * U, axis=0))
    return np.concatenate([(U2 * sg).ravel(), S2, (Vt2 * sg[:, None]).ravel()])
J41 = fd(svd_fixed, T * s, (0, 1), 1e-7)
print(' 41: d U[0,2]/d A[0,1] (true, unscaled) =', J41[2] * s, ' float32 max', np.finfo(np.float32).max)
D = np.array([[0.62, 0.0, 0.25], [0.0, -0.44, 0.0], [0.93, 0.0, 0.38]]).astype(np.float32).astype(np.float64)
for name, Am in (('A', D), ('A+1e-4 E12', D + 1e-4 * np.eye(3)[1][:, None] * np.eye(3)[2][None, :]), ('A-1e-4 E12', D - 1e-4 * np.eye(3)[1][:, None] * np.eye(3)[2][None, :])):
    U2, S2, Vt2 = np.linalg.svd(Am)
    print(' 42:', name, 'sigma', S2, ' Vt[2]=', Vt2[2], ' U[:,2]=', U2[:, 2])
U, S_, Vt = np.linalg.svd(D)
J42 = fd(svd_fixed, D, (1, 2), 1e-7)
print(' 42: d Vt[2,1]/d A[1,2] along the sign-continuous branch through numpy value at A:', J42[19])
Uj, Sj, Vtj = [np.asarray(t) for t in jax.lax.linalg.svd(jnp.asarray(D, jnp.float32), full_matrices=True, compute_uv=True)]
print('     JAX value at A: Vt[2]=', Vtj[2], 'U[:,2]=', Uj[:, 2])
# analytic: for a simple singular triple, dv3 = sum_j ... use smooth branch from JAX's own sign
def svd_branch(A, Uref, Vtref):
    U2, S2, Vt2 = np.linalg.svd(A); sg = np.sign(np.sum(U2 * Uref, axis=0))
    return (Vt2 * sg[:, None]).ravel()
print('     FD along branch through JAX value:', fd(lambda A: svd_branch(A, Uj, Vtj), D, (1, 2), 1e-7)[7])

print('== 50 pinv float64 with A[0,1]=-1e13')
G = A0.copy(); G[0, 1] = -1e13
print(' singular values', np.linalg.svd(G, compute_uv=False), ' jnp.pinv default rtol cutoff = 10*3*eps*smax =', 10 * 3 * np.finfo(float).eps * 1e13)
Gm = mp.matrix(G.tolist()); Gi = Gm ** -1
print(' exact inverse row 1:', [mp.nstr(Gi[1, j], 6) for j in range(3)], ' inv[0,2]=', mp.nstr(Gi[0, 2], 10))
print(' exact d inv[0,2]/d A[2,1] = -inv[0,2]*inv[1,2]... i.e. -inv[0,2]*inv[1,2]:', mp.nstr(-Gi[0, 2] * Gi[1, 2], 10))
print(' jnp.pinv value [0,2]:', float(jnp.linalg.pinv(jnp.asarray(G))[0, 2]) if jax.config.jax_enable_x64 else 'x64 off')
