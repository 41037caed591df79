import numpy as np, jax, jax.numpy as jnp
from jax import lax
f32=np.float32
print("== sort")
x=jnp.asarray(np.array([0.0, 5.877471754111438e-39, 0.0],f32))
f=lambda x: lax.sort(x,is_stable=True)
print(" input",np.asarray(x),"sorted eager",np.asarray(f(x)),"jit",np.asarray(jax.jit(f)(x)))
print(" x[1]>0 eager:",bool(x[1]>0),"jit:",bool(jax.jit(lambda x:x[1]>0)(x)))
print(" jacfwd\n",np.asarray(jax.jacfwd(f)(x)))
print(" numpy sort",np.sort(np.asarray(x),kind='stable'))
y=jnp.asarray(np.array([0.0, 1e-3, 0.0],f32)); print(" with x1=1e-3 jac\n",np.asarray(jax.jacfwd(f)(y)))
print("== eigvalsh zeros")
z=jnp.zeros((3,3),jnp.float32)
g=lambda a: jnp.linalg.eigvalsh(a,symmetrize_input=True)
J=np.asarray(jax.jacfwd(g)(z)); print(" jac out[i] wrt diag:",[[J[i,k,k] for k in range(3)] for i in range(3)])
for h in [1e-3,-1e-3]:
    a=np.zeros((3,3),f32); a[1,1]=h; print(" eigvalsh diag(0,%g,0)"%h,np.asarray(g(a)))
a=np.zeros((3,3),f32); a[0,1]=a[1,0]=1e-3; print(" eigvalsh offdiag 1e-3",np.asarray(g(a)))
print("== rsf2csf zeros")
import jax.scipy.linalg as jsl
def r(T,Z):
    o=jsl.rsf2csf(T,Z); return jnp.concatenate([jnp.ravel(v) for l in o for v in (jnp.real(l),jnp.imag(l))])
T=jnp.zeros((3,3),jnp.float32); Z=jnp.zeros((3,3),jnp.float32)
print(" value",np.asarray(r(T,Z)))
for h in [1e-3,-1e-3,1e-6,-1e-6]:
    Tp=np.zeros((3,3),f32); Tp[1,0]=h; print(" T[1,0]=%g"%h,np.asarray(r(Tp,Z))[:6])
J=jax.jacfwd(r)(T,Z)[0]; print(" AD d out[0:3]/dT[1,0]",np.asarray(J)[:3,1,0])
Zi=np.eye(3,dtype=f32)
for h in [1e-3,-1e-3]:
    Tp=np.zeros((3,3),f32); Tp[1,0]=h; print(" Z=I T[1,0]=%g T'="%h,np.round(np.asarray(jsl.rsf2csf(Tp,Zi)[0]),5).tolist())
