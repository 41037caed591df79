# Independent references for scalar special-function defects, mpmath at 50 digits.
import numpy as np, mpmath as mp
mp.mp.dps = 50
def f32(v): return mp.mpf(float(np.float32(v)))
def f16(v): return mp.mpf(float(np.float16(v)))
D = lambda f, x: mp.diff(f, x)
out = {}
# 19 expn(n=0, x): E_0(x) = e^-x / x ; d/dx
x = f32(0.62)
out[19] = ('d/dx expn(0,x)', D(lambda t: mp.expint(0, t), x), -mp.exp(-x)*(1/x+1/x**2))
# 20 pow(x,y) at (0,0): f(x,0)=x**0=1 for every x -> partial wrt x = 0
out[20] = ('d/dx pow(x,0) at x=0 (x^0 == 1 for all real x)', mp.mpf(0), None)
# 21 / 46 hyp1f1 d/da at a=tiny / 0, b=x=0.62
b = f32(0.62); z = f32(0.62)
a21 = f32(1.1754943508222875e-38)
out[21] = ('d/da 1F1(a;b;z) a=1.18e-38', D(lambda a: mp.hyp1f1(a, b, z), a21),
           mp.nsum(lambda n: z**n/(n*mp.rf(b, n)), [1, mp.inf]))
out[46] = ('d/da 1F1(a;b;z) a=0', D(lambda a: mp.hyp1f1(a, b, z), mp.mpf(0)), None)
# 22 betainc(a=10000,b=0.62,x=0.62) float16: d/dx = x^(a-1)(1-x)^(b-1)/B(a,b)
a = f16(10000); bb = f16(0.62); xx = f16(0.62)
out[22] = ('d/dx I_x(1e4, .62) float16 inputs', xx**(a-1)*(1-xx)**(bb-1)/mp.beta(a, bb), None)
# 23 igammac(a=0, x=.62) = Gamma(0,x)/Gamma(0) -> limit a->0+ ; d/dx = -x^(a-1) e^-x / Gamma(a)
for aa in ['1e-10', '1e-20', '1e-40']:
    aa = mp.mpf(aa)
    out['23 a=%s' % mp.nstr(aa, 3)] = ('Q(a,x) and d/dx Q at small a', mp.gammainc(aa, x, mp.inf, regularized=True), -x**(aa-1)*mp.exp(-x)/mp.gamma(aa))
# 25 boxcox(x=.62, lam=1e-18) d/dlam ; (x^l - 1)/l
l = f32(1e-18)
out[25] = ('d/dlam boxcox', D(lambda t: mp.expm1(t*mp.log(x))/t, l), mp.log(x)**2/2)
# 26 log_ndtr(-1e4) derivative phi/Phi
x26 = f32(-10000.0)
out[26] = ('d/dx log_ndtr(-1e4)', mp.npdf(x26)/mp.ncdf(x26), D(lambda t: mp.log(mp.ncdf(t)), x26))
# 29 angle(1e-36) real = atan2(0, x) -> 0 for x>0
out[29] = ('d/dx atan2(0,x) at x=1e-36', D(lambda t: mp.atan2(0, t), f32(1e-36)), None)
# 30 hyp1f1(a=.62, b=-1000, z=.62): b is a non-positive integer -> pole.
try:
    v = mp.hyp1f1(f32(0.62), mp.mpf(-1000), f32(0.62))
except Exception as e:
    v = repr(e)
out[30] = ('1F1(.62;-1000;.62) value at b=-1000 (pole?)', v,
           [mp.hyp1f1(f32(0.62), mp.mpf(-1000)+d, f32(0.62)) for d in (mp.mpf('1e-10'), mp.mpf('-1e-10'), mp.mpf('1e-30'))])
# 32 atan2(y=.62, x=1e20): d/dy = x/(x^2+y^2)
y = f32(0.62); X = f32(1e20)
out[32] = ('d/dy atan2(y,1e20)', X/(X**2+y**2), float(np.float32(float(X/(X**2+y**2)))))
# 45 erfcx'(1e5)
x45 = f32(100000.0)
out[45] = ("erfcx'(1e5)", D(lambda t: mp.exp(t**2)*mp.erfc(t), x45), 2*x45*mp.exp(x45**2)*mp.erfc(x45) - 2/mp.sqrt(mp.pi))
# 47 poch(z=0, m): (z)_m = Gamma(z+m)/Gamma(z) = 0 at z=0 -> d/dm = 0 ; check via rf at tiny z
out[47] = ('d/dm rf(z,m) at z=1e-30, m=.62', D(lambda m: mp.rf(mp.mpf('1e-30'), m), f32(0.62)), None)
# 48 chi2.cdf(x=0, df): P(df/2, 0) = 0 for all df -> d/ddf = 0
out[48] = ('d/ddf chi2.cdf(0, df)', D(lambda df: mp.gammainc(df/2, 0, 0, regularized=True), f32(0.62)), None)
# 52 bessel_jn(z, v=0)[0] = J0(z) ; d/dz = -J1(z)
z52 = f32(-4.0078125)
out[52] = ("J0'(-4.0078125)", -mp.besselj(1, z52), mp.besselj(0, z52))
# 53 spence(z) = int_1^z log t/(1-t) dt ; d/dz = log z/(1-z) -> -1 at z=1
out[53] = ("spence'(1)", D(lambda t: mp.polylog(2, 1-t), mp.mpf(1)), None)
# 54 spence'(1e37) = log z/(1-z)
z54 = f32(1e37)
out[54] = ("spence'(1e37)", mp.log(z54)/(1-z54), None)
# 55 beta.logsf(x=.62; a=100, b=.62) d/dx = -pdf/sf
a55, b55, x55 = f32(100.), f32(0.62), f32(0.62)
sf = mp.betainc(a55, b55, x55, 1, regularized=True)
pdf = x55**(a55-1)*(1-x55)**(b55-1)/mp.beta(a55, b55)
out[55] = ('d/dx beta.logsf', -pdf/sf, {'sf': sf, 'logsf': mp.log(sf), 'float32 logsf': float(np.float32(float(mp.log(sf)))), 'change of logsf over +-h=2^-8': D(lambda t: mp.log(mp.betainc(a55, b55, t, 1, regularized=True)), x55)*2**-8})
# 56 cauchy.isf(q)=tan(pi/2 - pi q): q = 1e10 (an integer) is a pole
q = f32(1e10)
out[56] = ('cauchy.isf(q) at q=1e10: pi/2-pi*q mod pi', mp.fmod(mp.pi/2 - mp.pi*q, mp.pi), [mp.tan(mp.pi/2 - mp.pi*(q+d)) for d in (mp.mpf('1e-6'), mp.mpf('-1e-6'))])
# 57 gamma.cdf(x=1e-35, a=.62): d/dx = x^(a-1) e^-x / Gamma(a)
x57, a57 = f32(1e-35), f32(0.62)
out[57] = ('d/dx gamma.cdf', x57**(a57-1)*mp.exp(-x57)/mp.gamma(a57), D(lambda t: mp.gammainc(a57, 0, t, regularized=True), x57))
for k, v in out.items():
    print(k, v[0], '=>', mp.nstr(v[1], 12) if isinstance(v[1], mp.mpf) else v[1], '|', v[2] if not isinstance(v[2], mp.mpf) else mp.nstr(v[2], 12))
