# Run from reports/survey with the project's interpreter and mpmath on the path (PYTHONPATH).
import mpmath as mp, numpy as np, jax, jax.numpy as jnp
import jax.scipy.linalg as jsl
mp.mp.dps=50
f32=np.float32
print("== companion")
a=jnp.asarray(np.array([1.1754943508222875e-38, 0.0, 1.0],f32))
f=lambda a: jsl.companion(a).ravel()
print(" value",np.asarray(f(a)))
print(" jacfwd\n",np.asarray(jax.jacfwd(f)(a)),"\n jacrev\n",np.asarray(jax.jacrev(f)(a)))
a0=mp.mpf(float(a[0]))
print(" exact: d out00/da0 = a1/a0^2 = 0; d out00/da1 = -1/a0 =",mp.nstr(-1/a0,8),"; d out01/da0 = a2/a0^2 =",mp.nstr(1/a0**2,8),"; d out01/da2 = -1/a0")
print("== roots")
c=np.array([6.1999999896465404e-37, -1.3699999586566751e-36, 2.5000000898478246e-37, 1.80999996370792e-36],f32)
def g(c):
    r=jnp.roots(c,strip_zeros=True); return jnp.concatenate([jnp.real(r),jnp.imag(r)])
print(" value",np.asarray(g(jnp.asarray(c))))
Jf=np.asarray(jax.jacfwd(g)(jnp.asarray(c))); Jr=np.asarray(jax.jacrev(g)(jnp.asarray(c)))
print(" jacfwd\n",Jf,"\n jacrev\n",Jr)
cm=[mp.mpf(float(v)) for v in c]
rts=mp.polyroots(cm,maxsteps=200,extraprec=200); print(" mp roots",[mp.nstr(r,8) for r in rts])
# dr/dc_k = -r^(n-k)/p'(r)
n=3
def dp(r): return sum((n-k)*cm[k]*r**(n-k-1) for k in range(n))
for r in rts:
    print("  root",mp.nstr(r,6)," d r/dc:",[mp.nstr(-r**(n-k)/dp(r),6) for k in range(4)])
