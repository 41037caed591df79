import numpy as np, jax, jax.numpy as jnp
from jax import lax
T = np.array([[6.1999999896465404e-37, -1.3699999586566751e-36, 2.5000000898478246e-37],
              [1.80999996370792e-36, -4.400000050512449e-37, 1.0899999880542835e-36],
              [9.30000043288532e-37, -1.7199999219096646e-36, 3.799999921329249e-37]])
s = 2.0 ** 120
f = lambda A: jnp.concatenate([jnp.ravel(t) for t in lax.linalg.qr(A, pivoting=False, full_matrices=True)])
def qr_flat(A):
    Q, R = np.linalg.qr(A, mode='complete'); return np.concatenate([Q.ravel(), R.ravel()])
# true Jacobian by float64 central differences at the scaled (O(1)) matrix, then unscaled
S = T * s; J = np.zeros((18, 3, 3))
for i in range(3):
    for j in range(3):
        E = np.zeros((3, 3)); E[i, j] = 1e-6
        J[:, i, j] = (qr_flat(S + E) - qr_flat(S - E)) / 2e-6
Jt = J.copy(); Jt[:9] *= s       # Q part scales as 1/scale of A
print('cond(A)', np.linalg.cond(T))
for name, A, Jref in (('tiny 1e-36 matrix', T, Jt), ('same matrix scaled to O(1)', S, J)):
    for m in ('jacfwd', 'jacrev'):
        Ja = np.asarray(getattr(jax, m)(f)(jnp.asarray(A, jnp.float32)), np.float64)
        err = np.abs(Ja - Jref)[:9]
        print(name, m, ' Q-block: max|err|/max|J| = %.2e' % (err.max() / np.abs(Jref[:9]).max()), ' entry d Q[0,2]/dA[0,2] =', Ja[2, 0, 2], '(true %.1e)' % Jref[2, 0, 2])
