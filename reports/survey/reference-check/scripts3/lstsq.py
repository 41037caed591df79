# Run from reports/survey with the project's interpreter and mpmath on the path (PYTHONPATH).
import mpmath as mp, numpy as np, jax, jax.numpy as jnp
mp.mp.dps=50
f32=np.float32
A=np.array([[0.62, -1.4970703125, 0.25],[1.81, -0.44, 1.09],[0.93, -1.72, 0.38]],f32)
B=np.array([[0.62,-1.37,0.25],[1.81,-0.44,1.09],[0.93,-1.72,0.38]],f32)
print("svals f64",np.linalg.svd(A.astype(np.float64),compute_uv=False),"det",np.linalg.det(A.astype(np.float64)))
Am=mp.matrix([[mp.mpf(float(v)) for v in r] for r in A]); print("mp det",mp.det(Am))
def f(a,b):
    o=jnp.linalg.lstsq(a,b,numpy_resid=False)
    print("  outs", [ (getattr(l,'shape',None), getattr(l,'dtype',None)) for l in o]) if not isinstance(a,jax.core.Tracer) else None
    fl=[jnp.ravel(l) for l in o if jnp.issubdtype(l.dtype,jnp.floating)]
    return jnp.concatenate(fl)
a,b=jnp.asarray(A),jnp.asarray(B)
o=jnp.linalg.lstsq(a,b,numpy_resid=False); print("x\n",np.asarray(o[0]),"\nresid",o[1],"rank",o[2],"s",o[3])
print("rcond default: eps*max(M,N)*smax =", np.finfo(f32).eps*3*float(o[3][0]))
Jf=np.asarray(jax.jacfwd(f,(0,1))(a,b)[0]); Jr=np.asarray(jax.jacrev(f,(0,1))(a,b)[0])
print("out len",Jf.shape,"nan fwd",np.isnan(Jf).sum(),"nan rev",np.isnan(Jr).sum())
print("jacfwd nan rows", sorted(set(np.argwhere(np.isnan(Jf))[:,0].tolist())),"jacrev nan rows", sorted(set(np.argwhere(np.isnan(Jr))[:,0].tolist())))
print("d out[0]/dA[0,0] fwd",Jf[0,0,0],"rev",Jr[0,0,0])
# exact: x = A^{-1} B, dx/dA[k,l] = -Ai[:,k] x[l,:]
Ai=Am**-1; Bm=mp.matrix([[mp.mpf(float(v)) for v in r] for r in B]); X=Ai*Bm
print("exact x\n",X)
print("exact d x[0,0]/dA[0,0]",-Ai[0,0]*X[0,0])
# exact singular values and their derivatives dS_i/dA = u_i v_i^T
U,S,Vt=mp.svd_r(Am); print("exact s",S.T)
print("exact ds/dA[0,0]",[U[0,i]*Vt[i,0] for i in range(3)])
print("jacfwd ds rows 12..14 wrt A[0,0]",Jf[12:15,0,0] if Jf.shape[0]>=15 else Jf[-3:,0,0], "jacrev",Jr[-3:,0,0])
print("jacfwd row 11 (out[11]) wrt A[0,0]",Jf[11,0,0], "jacrev", Jr[11,0,0])
