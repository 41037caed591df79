# Run from reports/survey with the project's interpreter and mpmath on the path (PYTHONPATH).
import mpmath as mp, numpy as np, jax, jax.numpy as jnp
import jax.scipy.stats as st, jax.scipy.special as sp
mp.mp.dps=50
f32=np.float32
def M(v): return mp.mpf(float(f32(v)))
def ad(f,*a,argnums=0):
    a=[jnp.asarray(f32(x)) for x in a]
    return float(jax.jacfwd(f,argnums)(*a)), float(jax.jacrev(f,argnums)(*a)), float(f(*a))
print("== gamma.logsf x=1.1754943508222875e-38 a=0.62")
x,a=M(1.1754943508222875e-38),M(0.62)
ref=mp.diff(lambda t: mp.log(mp.gammainc(a,t,mp.inf,regularized=True)), x)
print("mp value",mp.nstr(mp.log(mp.gammainc(a,x,mp.inf,regularized=True)),10),"mp deriv",mp.nstr(ref,12))
print("jax fwd,rev,val",ad(lambda t,aa: st.gamma.logsf(t,aa),1.1754943508222875e-38,0.62))
print("== beta.logsf x=1e-7 a=b=0.62")
x,a=M(1e-7),M(0.62)
sf=lambda t: 1-mp.betainc(a,a,0,t,regularized=True)
print("mp value",mp.nstr(mp.log(sf(x)),12),"mp deriv",mp.nstr(mp.diff(lambda t: mp.log(sf(t)),x),12),
      "analytic", mp.nstr(-x**(a-1)*(1-x)**(a-1)/mp.beta(a,a)/sf(x),12))
print("jax fwd,rev,val",ad(lambda t: st.beta.logsf(t,f32(0.62),f32(0.62)),1e-7))
for h in [1e-9,1e-8,3e-8]:
  v1=st.beta.logsf(f32(1e-7+h),f32(.62),f32(.62)); v0=st.beta.logsf(f32(1e-7-h),f32(.62),f32(.62)); print(" f32 FD h",h,float(v1),float(v0),(float(v1)-float(v0))/(float(f32(1e-7+h))-float(f32(1e-7-h))))
print("== boxcox x=0.62 lam=-1e-5, d/dlam")
x,l=M(0.62),M(-1e-5)
bc=lambda x,l: (x**l-1)/l
print("mp deriv d/dl",mp.nstr(mp.diff(lambda t: bc(x,t),l),12),"d/dx",mp.nstr(mp.diff(lambda t: bc(t,l),x),12))
g=lambda x,l: sp.boxcox(x,l)
a_=[jnp.asarray(f32(.62)),jnp.asarray(f32(-1e-5))]
print("jax jacfwd",[float(v) for v in jax.jacfwd(g,(0,1))(*a_)],"jacrev",[float(v) for v in jax.jacrev(g,(0,1))(*a_)],
      "jit jacrev",[float(v) for v in jax.jit(jax.jacrev(g,(0,1)))(*a_)], "value",float(g(*a_)), "mp value", mp.nstr(bc(x,l),10))
print("== comb N=1e6 k=0.62")
N,k=M(1e6),M(0.62)
cb=lambda N,k: mp.gamma(N+1)/(mp.gamma(k+1)*mp.gamma(N-k+1))
print("mp value",mp.nstr(cb(N,k),12),"d/dN",mp.nstr(mp.diff(lambda t: cb(t,k),N),12),"d/dk",mp.nstr(mp.diff(lambda t: cb(N,t),k),12))
g=lambda N,k: sp.comb(N,k)
a_=[jnp.asarray(f32(1e6)),jnp.asarray(f32(.62))]
print("jax value",float(g(*a_)),"jacfwd",[float(v) for v in jax.jacfwd(g,(0,1))(*a_)],"jacrev",[float(v) for v in jax.jacrev(g,(0,1))(*a_)])
for kk in [0.6,0.61,0.62,0.63,0.64]:
    print("  f32 comb(1e6,%g)="%kk,float(g(a_[0],jnp.asarray(f32(kk)))),"mp",mp.nstr(cb(N,M(kk)),8))
jax.config.update("jax_enable_x64",True)
a64=[jnp.asarray(np.float64(f32(1e6))),jnp.asarray(np.float64(f32(.62)))]
print("jax f64 value",float(g(*a64)),"jacfwd",[float(v) for v in jax.jacfwd(g,(0,1))(*a64)])
