import numpy as np, jax, jax.numpy as jnp, itertools
import jax.scipy.linalg as jsl
jax.config.update("jax_enable_x64",True)
def r(T,Z):
    o=jsl.rsf2csf(T,Z); return jnp.concatenate([jnp.ravel(v) for l in o for v in (jnp.real(l),jnp.imag(l))])
Z=jnp.zeros((3,3))
T=jnp.zeros((3,3))
J=jax.jacfwd(r)(T,Z); print(" AD d out[1]/dT[1,0]",np.asarray(J)[1,1,0])
eps=1e-8
def dd(E): return (np.asarray(r(eps*E,Z))-np.asarray(r(-eps*E,Z)))/(2*eps), (np.asarray(r(eps*E,Z)))/eps
for name,idx in [("e10",[(1,0)]),("e00",[(0,0)]),("e11",[(1,1)]),("e00+e10",[(0,0),(1,0)]),("e01+e10",[(0,1),(1,0)]),("e11+e10",[(1,1),(1,0)])]:
    E=np.zeros((3,3));
    for i in idx: E[i]=1
    c,o=dd(E); print(name,"central",np.round(c[:9],4).tolist(),"one-sided",np.round(o[:9],4).tolist())
