import numpy as np, jax, jax.numpy as jnp
from jax import lax
np.set_printoptions(precision=4, suppress=True, linewidth=150)
qr = lambda A: lax.linalg.qr(jnp.asarray(A, jnp.float32), pivoting=False, full_matrices=True)[0]
print('== 37 QR at the zero matrix: Q for tiny perturbations in different directions')
for name, E in (('0', np.zeros((3, 3))), ('+1e-3 e00', np.eye(3)[:, [0]] @ np.eye(3)[[0]] * 1e-3), ('+1e-3 e10', np.eye(3)[:, [1]] @ np.eye(3)[[0]] * 1e-3), ('-1e-3 e00', -np.eye(3)[:, [0]] @ np.eye(3)[[0]] * 1e-3)):
    print(' ', name, 'Q[:,0] =', np.asarray(qr(E))[:, 0])
print('== 38 QR of diag(0,0,1)-like: first column zero')
B = np.zeros((3, 3)); B[2, 2] = 1
for name, E in (('0', 0 * B), ('+1e-3 e02', np.outer(np.eye(3)[0], np.eye(3)[2]) * 1e-3), ('+1e-3 e10', np.outer(np.eye(3)[1], np.eye(3)[0]) * 1e-3)):
    print(' ', name, 'Q[:,0] =', np.asarray(qr(B + E))[:, 0])
print('== 39 jacfwd vs jacrev at the 1e-36 matrix, entry d Q[0,2]/d A[0,2] (true 0)')
T = jnp.asarray([[6.1999999896465404e-37, -1.3699999586566751e-36, 2.5000000898478246e-37],
                 [1.80999996370792e-36, -4.400000050512449e-37, 1.0899999880542835e-36],
                 [9.30000043288532e-37, -1.7199999219096646e-36, 3.799999921329249e-37]], jnp.float32)
f = lambda A: jnp.concatenate([jnp.ravel(t) for t in lax.linalg.qr(A, pivoting=False, full_matrices=True)])
print('  jacfwd', float(jax.jacfwd(f)(T)[2, 0, 2]), ' jacrev', float(jax.jacrev(f)(T)[2, 0, 2]))
print('== 51 rsf2csf(T, Z) at T=Z=0 (bfloat16 in the entry; float32 here): outputs as T[1,0] moves')
from jax.scipy.linalg import rsf2csf
for d in (-1e-2, 0.0, 1e-2):
    Tm = jnp.zeros((3, 3), jnp.float32).at[1, 0].set(d)
    To, Zo = rsf2csf(Tm, jnp.zeros((3, 3), jnp.float32))
    print('  T[1,0]=%g  T_out real=\n' % d, np.real(np.asarray(To)), '\n  imag=\n', np.imag(np.asarray(To)))
