"""Kinematic formulas of the ADL queries, one definition for every implementation.

Each function is a few NumPy ufuncs, so it runs unchanged on NumPy arrays, NumPy scalars and
Awkward arrays (ufuncs dispatch through `__array_ufunc__`). Inputs are NanoAOD's float32
columns; the arithmetic is float64 (`dtype=np.float64` on the first ufunc that touches a
column: a float32 value converts exactly), so that two implementations that evaluate the
same formula agree to the last bit only where they make the same operations, and a float32
rounding never moves a value across a histogram bin edge or a selection cut on its own.

Formulas (massive four-vectors from pt, eta, phi, m):
    px = pt cos(phi), py = pt sin(phi), pz = pt sinh(eta), E = sqrt((pt cosh(eta))^2 + m^2)
    m(sum of four-vectors) = sqrt(max(E^2 - px^2 - py^2 - pz^2, 0)), pt = sqrt(px^2 + py^2)
    dphi = (phi1 - phi2 + pi) mod 2 pi - pi (in [-pi, pi)), dR = sqrt(deta^2 + dphi^2)
    mT = sqrt(2 pt1 pt2 (1 - cos(dphi)))
"""
from __future__ import annotations

import math

import numpy as np

# the queries' histograms: name -> (bins, low, high); numpy.histogram's range
BINS = {
    "Q1": (100, 0.0, 200.0),        # MET
    "Q2": (100, 15.0, 60.0),        # jet pt
    "Q3": (100, 15.0, 60.0),        # jet pt, |eta| < 1
    "Q4": (100, 0.0, 200.0),        # MET, >= 2 jets with pt > 40
    "Q5": (100, 0.0, 200.0),        # MET, opposite-charge dimuon with 60 < m < 120
    "Q6_pt": (100, 15.0, 40.0),     # trijet pt, mass closest to 172.5
    "Q6_btag": (100, 0.0, 1.0),     # max b-tag in that trijet
    "Q7": (100, 15.0, 200.0),       # scalar sum of isolated jet pt
    "Q8": (100, 0.0, 200.0),        # mT of MET and the leading lepton outside the Z pair
}
TOP_MASS = 172.5
Z_MASS = 91.2


F64 = np.float64


def p4(pt, eta, phi, mass):
    """(px, py, pz, E) in float64 from float32 (pt, eta, phi, mass)."""
    px = pt * np.cos(phi, dtype=F64)
    py = pt * np.sin(phi, dtype=F64)
    pz = pt * np.sinh(eta, dtype=F64)
    p = pt * np.cosh(eta, dtype=F64)
    return px, py, pz, np.sqrt(p * p + np.square(mass, dtype=F64))


def mass(px, py, pz, e):
    """Invariant mass of a four-vector (float64); 0 where rounding makes m^2 negative."""
    return np.sqrt(np.maximum(e * e - px * px - py * py - pz * pz, 0.0))


def pt(px, py):
    """Transverse momentum of a four-vector."""
    return np.sqrt(px * px + py * py)


def delta_phi(phi1, phi2):
    """phi1 - phi2 wrapped into [-pi, pi) (float64)."""
    return (np.subtract(phi1, phi2, dtype=F64) + math.pi) % (2 * math.pi) - math.pi


def delta_r(eta1, phi1, eta2, phi2):
    """Distance in (eta, phi): sqrt(deta^2 + dphi^2) (float64)."""
    deta = np.subtract(eta1, eta2, dtype=F64)
    dphi = delta_phi(phi1, phi2)
    return np.sqrt(deta * deta + dphi * dphi)


def transverse_mass(pt1, phi1, pt2, phi2):
    """mT of two objects: sqrt(2 pt1 pt2 (1 - cos(phi1 - phi2))) (float64)."""
    return np.sqrt(2.0 * np.multiply(pt1, pt2, dtype=F64) * (1.0 - np.cos(delta_phi(phi1, phi2))))
