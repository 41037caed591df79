# Run from reports/survey with the project's interpreter and mpmath on the path (PYTHONPATH).
import mpmath as mp, numpy as np, jax, jax.numpy as jnp
from gradaudit.survey.wrappers import lu_solve
mp.mp.dps=60
f32=np.float32
B=np.array([[0.62,-1.37,0.25],[1.81,-0.44,1.09],[0.93,-1.72,0.38]],f32)
A1=np.array([[6.19999993249321e-19, -1.3700000017602056e-18, 2.5000001145342624e-19],[1.8100000136464297e-18, -4.400000118862241e-19, 1.0899999847964652e-18],[9.299999898739816e-19, -1.719999971266093e-18, 3.8000000086559564e-19]],f32)
A2=np.array([[6.1999999896465404e-37, -1.3699999586566751e-36, 2.5000000898478246e-37],[1.80999996370792e-36, -4.400000050512449e-37, 1.0899999880542835e-36],[9.30000043288532e-37, -1.7199999219096646e-36, 3.799999921329249e-37]],f32)
def exact(A):
    Am=mp.matrix([[mp.mpf(float(v)) for v in row] for row in A]); Bm=mp.matrix([[mp.mpf(float(v)) for v in row] for row in B])
    Ai=Am**-1; X=Ai*Bm
    # dX[i,j]/dA[k,l] = -Ai[i,k]*X[l,j]
    J=np.empty((3,3,3,3),dtype=object)
    for i in range(3):
     for j in range(3):
      for k in range(3):
       for l in range(3): J[i,j,k,l]=-Ai[i,k]*X[l,j]
    return X,J
for name,A,fn in [("solve-2",A1,jnp.linalg.solve),("lu_solve-1",A1,lambda a,b: lu_solve(a,b)),("lu_solve-2",A2,lambda a,b: lu_solve(a,b))]:
    X,J=exact(A)
    print("==",name,"cond(A)",np.linalg.cond(A.astype(np.float64)))
    print(" exact X\n",np.array([[mp.nstr(X[i,j],6) for j in range(3)] for i in range(3)]))
    print(" jax X\n",np.asarray(fn(jnp.asarray(A),jnp.asarray(B))))
    Jf=np.asarray(jax.jacfwd(fn)(jnp.asarray(A),jnp.asarray(B))); Jr=np.asarray(jax.jacrev(fn)(jnp.asarray(A),jnp.asarray(B)))
    for idx in [(2,1,0,2),(1,2,0,0),(1,1,1,2),(0,2,1,2),(0,0,1,2),(0,0,1,0)]:
        print(" d X%s/dA%s exact %s fwd %g rev %g"%(idx[:2],idx[2:],mp.nstr(J[idx],8),Jf[idx],Jr[idx]))
    Jex=np.array(J.tolist(),dtype=np.float64)
    with np.errstate(all='ignore'):
        rel=np.abs(Jf-Jex)/np.abs(Jex)
    print(" max rel err fwd (finite exact within f32 range)",np.nanmax(np.where(np.abs(Jex)<3e38,rel,np.nan)), "count exact>f32max",int((np.abs(Jex)>3.4e38).sum()))
    with np.errstate(all='ignore'):
        relr=np.abs(Jr-Jex)/np.abs(Jex)
    print(" max rel err rev",np.nanmax(np.where(np.abs(Jex)<3e38,relr,np.nan)))
print("==== extra")
X,J=exact(A1)
print("exact dX01/dA02",mp.nstr(J[0,1,0,2],8),"exact dX10/dA01",mp.nstr(J[1,0,0,1],8))
jax.config.update("jax_enable_x64",True)
A64=jnp.asarray(A1.astype(np.float64)); B64=jnp.asarray(B.astype(np.float64))
J64=np.asarray(jax.jacfwd(jnp.linalg.solve)(A64,B64))
print("jax f64 AD dX01/dA02",J64[0,1,0,2],"dX10/dA01",J64[1,0,0,1])
Jex=np.array(J.tolist(),dtype=np.float64); print("f64 AD max rel err",np.max(np.abs(J64-Jex)/np.abs(Jex)))
Jf32=np.asarray(jax.jacfwd(jnp.linalg.solve)(jnp.asarray(A1),jnp.asarray(B)))
print("f32 AD: normwise rel err ||J-Jex||/||Jex||",np.linalg.norm((Jf32-Jex).ravel())/np.linalg.norm(Jex.ravel()), " f32 eps*cond",np.finfo(np.float32).eps*195.7)
print("f32 AD dX01/dA02",Jf32[0,1,0,2])
for h in [1e-21,1e-20,1e-19]:
    P=A1.astype(np.float64).copy(); P[0,1]+=h; Q=A1.astype(np.float64).copy(); Q[0,1]-=h
    print(" f64 FD dX10/dA01 h=%g"%h, (np.asarray(jnp.linalg.solve(jnp.asarray(P),B64))[1,0]-np.asarray(jnp.linalg.solve(jnp.asarray(Q),B64))[1,0])/(2*h))
