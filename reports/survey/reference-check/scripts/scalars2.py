import numpy as np, mpmath as mp
from fractions import Fraction
mp.mp.dps = 60
f32 = lambda v: mp.mpf(float(np.float32(v)))
D = mp.diff
r = []
# 67/68 squareplus(x, b=4) = (x + sqrt(x^2+4))/2
sq = lambda t: (t + mp.sqrt(t * t + 4)) / 2
for n, v in ((67, -10000.0), (68, -1e10)):
    x = f32(v); r.append((n, 'squareplus value, derivative', sq(x), D(sq, x)))
# 71 floor_divide(0.62, 1e-34): is x/y an integer? distance to nearest jump
a, b = Fraction(float(np.float32(0.62))), Fraction(float(np.float32(1e-34)))
q = a / b
frac = q - (q.numerator // q.denominator)
r.append((71, 'x/y, fractional part of x/y, jump spacing in x0 (=y)', mp.mpf(q.numerator) / q.denominator, mp.mpf(frac.numerator) / frac.denominator))
# 76 pinv float32 with A[0,1]=-1e4: exact inverse derivative d inv[2,1]/dA[2,1] = -inv[2,2]*inv[1,1]
A = [[0.62, -10000.0, 0.25], [1.81, -0.44, 1.09], [0.93, -1.72, 0.38]]
M = mp.matrix([[f32(v) for v in row] for row in A]); Mi = M ** -1
r.append((76, 'exact d inv[2,1]/dA[2,1], inv[2,1]', -Mi[2, 2] * Mi[1, 1], Mi[2, 1]))
sv = mp.svd_r(M, compute_uv=False)
r.append((76, 'singular values; jnp.pinv float32 cutoff 10*3*eps32*smax', sv, 30 * 2.0 ** -23 * sv[0]))
# 88/90 sinc(x) = sin(pi x)/(pi x)
sinc = lambda t: mp.sin(mp.pi * t) / (mp.pi * t)
for n, v in ((88, 1e-19), (90, 1e-5), (89, 1e6)):
    x = f32(v); r.append((n, 'sinc value, derivative', sinc(x), D(sinc, x)))
# 99/100 J0'(z) = -J1(z)
for n, v in ((99, 1e4), (100, 1e5)):
    z = f32(v); r.append((n, 'J0(z), J0\'(z)', mp.besselj(0, z), -mp.besselj(1, z)))
# 101/102 boxcox d/dlam
x = f32(0.62)
bc = lambda l: mp.expm1(l * mp.log(x)) / l
r.append((101, 'd/dlam boxcox(.62, 1e-5)', D(bc, f32(1e-5)), None))
bc1 = lambda l: mp.expm1(l * mp.log1p(x)) / l
r.append((102, 'd/dlam boxcox1p(.62, 1e-18)', D(bc1, f32(1e-18)), mp.log1p(x) ** 2 / 2))
# 103 i0'(0) = i1(0)
r.append((103, "I0'(0)", D(lambda t: mp.besseli(0, t), 0), None))
# 106 gamma.sf(x=1.18e-38, a=.62) d/dx = -x^(a-1) e^-x / Gamma(a)
x106, a106 = f32(1.1754943508222875e-38), f32(0.62)
r.append((106, 'd/dx gamma.sf', -x106 ** (a106 - 1) * mp.exp(-x106) / mp.gamma(a106), None))
# 107 gennorm.cdf(x=-1000, beta): for x<0, 0.5*Q(1/beta, |x|^beta)
g = lambda be: mp.gammainc(1 / be, mp.mpf(1000) ** be, mp.inf, regularized=True) / 2
be = f32(0.62)
r.append((107, 'gennorm.cdf value, d/dbeta', g(be), D(g, be)))
# 108/109 poisson entropy H(mu) = -sum p_k log p_k
def H(mu):
    return -mp.nsum(lambda k: mp.exp(k * mp.log(mu) - mu - mp.loggamma(k + 1)) * (k * mp.log(mu) - mu - mp.loggamma(k + 1)), [0, mp.inf])
r.append((108, "H'(0.001)", D(H, mp.mpf(0.001)), H(mp.mpf(0.001))))
r.append((109, "H'(0.1f)", D(H, f32(0.1)), H(f32(0.1))))
# 110 t.logpdf(x=1e19, df) d/ddf
x110 = f32(1e19)
lt = lambda nu: mp.loggamma((nu + 1) / 2) - mp.loggamma(nu / 2) - mp.log(nu * mp.pi) / 2 - (nu + 1) / 2 * mp.log1p(x110 ** 2 / nu)
r.append((110, 'd/ddf t.logpdf', D(lt, f32(0.62)), lt(f32(0.62))))
# 113 scan: d out[2]/d x0 = (1 + cos(x0)) * x1
x0, x1 = f32(6.199999696543416e+17), f32(-1.3700000094240113e+18)
r.append((113, 'cos(x0), (1+cos x0)*x1', mp.cos(x0), (1 + mp.cos(x0)) * x1))
r.append((113, 'period of sin vs FD step: 2*pi, float32 ulp(x0)', 2 * mp.pi, mp.mpf(float(np.spacing(np.float32(6.2e17))))))
for n, what, v1, v2 in r:
    fmt = lambda v: mp.nstr(v, 12) if isinstance(v, mp.mpf) else v
    print(n, what, '=>', fmt(v1), '|', fmt(v2))
