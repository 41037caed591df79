# Run from reports/survey with the project's interpreter and mpmath on the path (PYTHONPATH).
import mpmath as mp, numpy as np, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64",True)
mp.mp.dps=80
A=np.array([[-1.6978713274002075, -0.7043499946594238, -2.220446049250313e-16], [-0.7043499946594238, 1.1424673795700073, 2.2250738585072014e-308], [-0.7043499946594238, -0.7043499946594238, 2.2250738585072014e-308]])
def f(a):
    u,s,vh=jnp.linalg.svd(a,full_matrices=True,compute_uv=True); return jnp.concatenate([u.ravel(),s,vh.ravel()])
u,s,vh=jnp.linalg.svd(jnp.asarray(A)); print("s",np.asarray(s)); print("vh\n",np.asarray(vh)); print("u\n",np.asarray(u))
J=np.asarray(jax.jacfwd(f)(jnp.asarray(A))); Jr=np.asarray(jax.jacrev(f)(jnp.asarray(A)))
print("AD d out[19]/dA[1,2]",J[19,1,2],Jr[19,1,2])
bad=np.argwhere(np.abs(J)>0)  # nothing
# mp svd
Am=mp.matrix(A.tolist())
U,S,V=mp.svd_r(Am); print("mp s",[mp.nstr(x,10) for x in S]); print("mp Vh row2",[mp.nstr(V[2,j],10) for j in range(3)])
# derivative of V row 2 via mp finite diff, sign-fixed to match jax's sign
sgn = 1 if np.sign(float(V[2,1]))==np.sign(np.asarray(vh)[2,1]) else -1
def vh21(t):
    B=Am.copy(); B[1,2]=B[1,2]+t; U,S,V=mp.svd_r(B)
    # fix sign: choose sign so that V[2,2] has same sign as reference
    ref=V0[2,2]
    sg = 1 if V[2,2]*ref>0 else -1
    return sg*V[2,1]
V0=V
for h in ['1e-30','1e-20','1e-12','1e-6']:
    h=mp.mpf(h); print(" mp central d Vh[2,1]/dA[1,2] (sign tied to Vh[2,2]) h=",mp.nstr(h,3),mp.nstr(sgn*(vh21(h)-vh21(-h))/(2*h),10))
# FD as gradaudit with jax float64
for h in [7.62939453125e-06,1e-9]:
    Ap=A.copy();Ap[1,2]+=h; Am_=A.copy();Am_[1,2]-=h
    print(" jax FD h",h,(f(jnp.asarray(Ap))[19]-f(jnp.asarray(Am_))[19])/(2*h), "vh[2] at +h",np.asarray(f(jnp.asarray(Ap)))[18:21],"at -h",np.asarray(f(jnp.asarray(Am_)))[18:21])
