# Run from reports/survey with the project's interpreter and mpmath on the path (PYTHONPATH).
import mpmath as mp, numpy as np, jax, jax.numpy as jnp
mp.mp.dps=60
f32=np.float32
A=np.array([[0.62, 1.0000000000000001e+23, 0.25],[1.81, -0.44, 1.09],[0.93, -1.72, 0.38]],f32)
def f(a):
    p=jnp.poly(a); return jnp.concatenate([jnp.real(p).ravel(),jnp.imag(p).ravel()]) if jnp.iscomplexobj(p) else p
print("out dtype",jnp.poly(jnp.asarray(A)).dtype)
v=np.asarray(f(jnp.asarray(A))); print("jax value",v)
Am=mp.matrix([[mp.mpf(float(x)) for x in r] for r in A])
# char poly coefficients exactly: c0=1, c1=-tr, c2=sum principal 2x2 minors, c3=-det
def cp(M):
    tr=M[0,0]+M[1,1]+M[2,2]
    m2=(M[0,0]*M[1,1]-M[0,1]*M[1,0])+(M[0,0]*M[2,2]-M[0,2]*M[2,0])+(M[1,1]*M[2,2]-M[1,2]*M[2,1])
    return [mp.mpf(1),-tr,m2,-mp.det(M)]
print("exact coeffs",[mp.nstr(c,10) for c in cp(Am)])
def dcp(i,j):
    h=mp.mpf('1e-20'); P=Am.copy();P[i,j]+=h; Q=Am.copy();Q[i,j]-=h
    return [(a-b)/(2*h) for a,b in zip(cp(P),cp(Q))]
Jf=np.asarray(jax.jacfwd(f)(jnp.asarray(A))); Jr=np.asarray(jax.jacrev(f)(jnp.asarray(A)))
for (i,j) in [(1,0),(0,1),(0,0),(2,1)]:
    print(" d c/dA[%d,%d] exact"%(i,j),[mp.nstr(c,8) for c in dcp(i,j)],"fwd",Jf[:4,i,j],"rev",Jr[:4,i,j])
print("eigvals f32 jax",np.asarray(jnp.linalg.eigvals(jnp.asarray(A))))
print("eigvals f64 numpy",np.linalg.eigvals(A.astype(np.float64)))
jax.config.update("jax_enable_x64",True)
A64=jnp.asarray(A.astype(np.float64))
Jf64=np.asarray(jax.jacfwd(f)(A64)); print("jax f64 value",np.asarray(f(A64))[:4],"jacfwd f64 d c/dA[1,0]",Jf64[:4,1,0])
