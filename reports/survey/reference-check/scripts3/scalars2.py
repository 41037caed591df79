# Run from reports/survey with the project's interpreter and mpmath on the path (PYTHONPATH).
import mpmath as mp, numpy as np, jax, jax.numpy as jnp
import jax.scipy.stats as st
mp.mp.dps=50
f32=np.float32
a=mp.mpf(float(f32(0.62)))
xe=1-mp.mpf(float(f32(1)-f32(1e-7)))
print("beta: fl(1-x) effective x",xe)
sf=lambda t: 1-mp.betainc(a,a,0,t,regularized=True)
print(" logsf at x_eff",mp.nstr(mp.log(sf(xe)),10),"deriv at x_eff",mp.nstr(mp.diff(lambda t: mp.log(sf(t)),xe),10))
print("== angle x=1e-37")
x=jnp.asarray(f32(1e-37))
print(" value",float(jnp.angle(x)),"jacfwd",float(jax.jacfwd(jnp.angle)(x)),"jacrev",float(jax.jacrev(jnp.angle)(x)))
print(" x*x in f32:",float(x*x))
for v in [1e-37,1e-3,0.5]:
    print("  angle(%g)"%v,float(jnp.angle(jnp.asarray(f32(v)))), "angle(-%g)"%v, float(jnp.angle(jnp.asarray(f32(-v)))))
print("== floor_divide 0.62 // 1e-37")
a_=[jnp.asarray(f32(.62)),jnp.asarray(f32(1e-37))]
print(" value",float(jnp.floor_divide(*a_)),"ratio f32",float(a_[0]/a_[1]))
q=mp.mpf(float(a_[0]))/mp.mpf(float(a_[1]))
print(" exact ratio",mp.nstr(q,45),"frac part",mp.nstr(q-mp.floor(q),10))
print(" jacfwd",[float(v) for v in jax.jacfwd(jnp.floor_divide,(0,1))(*a_)])
print(" spacing of f32 at value",np.spacing(f32(6.2e36)))
print("== custom_root x=1e-34")
from gradaudit.survey.wrappers import custom_root
x=jnp.asarray(f32(1e-34))
print(" value",float(custom_root(x)),"cbrt",float(jnp.cbrt(x)),"jacfwd",float(jax.jacfwd(custom_root)(x)),"jacrev",float(jax.jacrev(custom_root)(x)))
xm=mp.mpf(float(x)); print(" mp d cbrt",mp.nstr(mp.cbrt(xm)**-2/3,10), " wrapper tangent 1/(3r^2+1e-3)", mp.nstr(1/(3*mp.cbrt(xm)**2+mp.mpf('1e-3')),10))
x=jnp.asarray(f32(8.0)); print(" at x=8: jacfwd",float(jax.jacfwd(custom_root)(x)),"true",1/12)
