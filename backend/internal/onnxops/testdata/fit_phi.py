#!/usr/bin/python3
"""Fits the polynomial of backend/internal/onnxops/gelu.go (phiBlock).

erfc(z) = t·exp(−z² + P(t)) with t = 1/(1 + z/2) (the form of Numerical
Recipes' erfcc); P is fitted in u = (30t − 17)/13, which maps t over
[2/15, 1] (z over [0, 13]) to [−1, 1], by least squares in the Chebyshev
basis on 6000 Chebyshev nodes, with erfc from mpmath at 40 digits, and
printed in the power basis of u. The largest error of P, which is the
relative error of erfc, is about 3e-10 (TestPhiBlockAccuracy bounds it).

    /usr/bin/python3 backend/internal/onnxops/testdata/fit_phi.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
Z = 13.0
TMIN = 1 / (1 + Z / 2)


def target(t):
    z = (1 / mp.mpf(t) - 1) * 2
    return float(mp.log(mp.erfc(z)) + z * z - mp.log(t))


ts = np.cos(np.linspace(0, np.pi, 6000)) * (1 - TMIN) / 2 + (1 + TMIN) / 2
ps = np.array([target(t) for t in ts])
u = (2 * ts - (1 + TMIN)) / (1 - TMIN)
power = np.polynomial.chebyshev.cheb2poly(np.polynomial.chebyshev.chebfit(u, ps, 12))
for i, a in enumerate(power):
    print(f"phiC{i} = {float(a)!r}")
