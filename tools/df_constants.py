# Prints the double-float constants of shaders/oracle/df_math.wgsl (hi = f32(v), lo = f32(v - hi), v in
# 60-digit precision; ln 2 also in 16 + 16 + df bits for exact range reduction). Needs mpmath.
from mpmath import mp, mpf, log, sqrt, pi, factorial, floor, ldexp, frexp
import struct
mp.dps = 60
def f32(v):
    return struct.unpack('f', struct.pack('f', float(v)))[0]
def pair(v):
    hi = f32(v); lo = f32(v - mpf(hi)); return hi, lo
def bits(v, nb):
    m, e = frexp(v)
    return ldexp(floor(ldexp(m, nb) + mpf(0.5)), e - nb)
ln2 = log(2)
L1 = bits(ln2, 16); L2 = bits(ln2 - L1, 16); L3 = pair(ln2 - L1 - L2)
print('L1', repr(float(L1)), 'L2', repr(float(L2)), 'L3', [repr(x) for x in L3], 'resid', float(ln2 - L1 - L2 - L3[0] - L3[1]))
print('inv ln2', repr(f32(1/ln2)))
for n in range(2, 10): print('1/%d!' % n, [repr(x) for x in pair(1/factorial(n))])
tsp = 2/sqrt(pi)
for n in range(0, 14): print('erf c%d' % n, [repr(x) for x in pair(tsp * (-1)**n / (factorial(n)*(2*n+1)))])
for name, v in [('2/sqrt(pi)', tsp), ('1/sqrt2', 1/sqrt(2)), ('1/sqrt(2pi)', 1/sqrt(2*pi)), ('1/sqrt(pi)', 1/sqrt(pi))]:
    print(name, [repr(x) for x in pair(v)])
# erfc for 0.5 <= z < 3 (df_erfcx_mid): erfcx(c) = e^(c²)·erfc(c) at the centres c = 0.625 + 0.25·j, c·√2 (GELU's
# centres in x), and 1/k for k = 2..13 (the Taylor recurrence's divisions).
from mpmath import erfc, exp
for j in range(10):
    c = mpf('0.625') + mpf('0.25') * j
    print('erfcx(%s)' % c, [repr(x) for x in pair(exp(c * c) * erfc(c))], '%s*sqrt2' % c, [repr(x) for x in pair(c * sqrt(2))])
for k in range(2, 14): print('1/%d' % k, [repr(x) for x in pair(mpf(1) / k)])
