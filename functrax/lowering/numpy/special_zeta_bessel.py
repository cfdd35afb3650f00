"""Hurwitz zeta, polygamma and the exponentially scaled Bessel functions ``i0e``/``i1e`` on
numpy arrays, without scipy (computed in float64, rounded once to the operands' dtype).

- ``zeta(x, q)``: Cephes' scheme. Direct summation of ``(q + k) ** -x`` until at least 9
  terms are summed and ``q + k > 9`` (so negative non-integer ``q`` with integer ``x`` work),
  then the Euler-Maclaurin tail with 12 Bernoulli terms. ``x == 1`` gives inf, ``x < 1``
  NaN, a pole ``q`` (a non-positive integer) inf, and ``q <= 0`` with non-integer ``x`` NaN.
- ``polygamma(m, x) = (-1) ** (m + 1) m! zeta(m + 1, x)`` (``digamma`` for ``m == 0``);
  NaN unless ``m`` is a non-negative integer.
- ``i0e``/``i1e``: Cephes' Chebyshev expansions on [0, 8] and (8, inf).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from functrax.lowering.numpy.special_functions import (
    EPS64, as_f64, digamma64, finish, lgamma64,
)

__all__ = ["zeta", "polygamma", "zeta64", "bessel_i0e", "bessel_i1e", "I0E_A", "I0E_B",
           "I1E_A", "I1E_B", "ZETA_BERNOULLI"]


def _bernoulli(n):
    """Exact Bernoulli numbers B_0 .. B_n (B_1 = -1/2), by the Akiyama-Tanigawa algorithm."""
    out, a = [], []
    for m in range(n + 1):
        a.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    out[1] = -out[1] if n >= 1 else None
    return out


def _factorial(n):
    f = 1
    for k in range(2, n + 1):
        f *= k
    return f


# (2k)! / B_2k, k = 1..12: the Euler-Maclaurin denominators
_B = _bernoulli(24)
ZETA_BERNOULLI = tuple(float(_factorial(2 * k) / _B[2 * k]) for k in range(1, 13))


def zeta64(x, q):
    """Hurwitz zeta of broadcast float64 arrays (flat)."""
    x, q = np.asarray(x, np.float64), np.asarray(q, np.float64)
    out = np.full(x.shape, np.nan)
    pole = (q <= 0) & (q == np.floor(q))
    ok = ~np.isnan(x) & ~np.isnan(q) & (x > 1) & ~pole & ~((q <= 0) & (x != np.floor(x)))
    ok &= np.isfinite(q)
    idx = np.flatnonzero(ok)
    xs, a = x[idx], q[idx].copy()
    with np.errstate(all="ignore"):
        s = np.power(a, -xs)
        b = np.zeros_like(a)
        running = np.arange(idx.size)
        done = np.zeros(idx.size, bool)
        i = 0
        while running.size:  # direct sum until q + k > 9 (and at least 9 terms)
            i += 1
            a[running] += 1.0
            b[running] = np.power(a[running], -xs[running])
            s[running] += b[running]
            tiny = np.abs(b[running]) < EPS64 * np.abs(s[running])
            done[running[tiny]] = True
            running = running[~tiny & ((i < 9) | (a[running] <= 9.0))]
        tail = ~done
        w, bt, xt = a[tail], b[tail], xs[tail]
        st = s[tail] + bt * w / (xt - 1.0) - 0.5 * bt
        fac = np.ones_like(w)
        k = 0.0
        finished = np.zeros(w.shape, bool)
        for coef in ZETA_BERNOULLI:
            fac = fac * (xt + k)
            bt = bt / w
            t = fac * bt / coef
            st = np.where(finished, st, st + t)
            finished |= np.abs(t) < EPS64 * np.abs(st)
            k += 1.0
            fac = fac * (xt + k)
            bt = bt / w
            k += 1.0
        s[tail] = st
    out[idx] = s
    out = np.where(x == 1, np.inf, out)
    out = np.where(pole & (x > 1), np.inf, out)
    out = np.where((q == np.inf) & (x > 1), 0.0, out)
    return out


def zeta(x, q):
    (x64, q64), dt = as_f64(x, q)
    return finish(zeta64(x64.ravel(), q64.ravel()).reshape(x64.shape), dt)


def polygamma(m, x):
    (m64, x64), dt = as_f64(m, x)
    shape = m64.shape
    m64, x64 = m64.ravel(), x64.ravel()
    with np.errstate(all="ignore"):
        z = zeta64(m64 + 1.0, x64)
        sign = np.where(np.fmod(m64, 2.0) == 0, -1.0, 1.0)  # (-1) ** (m + 1)
        val = sign * np.exp(lgamma64(m64 + 1.0)) * z
        out = np.where(m64 == 0, digamma64(x64), val)
    valid = (m64 >= 0) & (m64 == np.floor(m64))
    return finish(np.where(valid, out, np.nan).reshape(shape), dt)


# --- exponentially scaled Bessel functions (Cephes' Chebyshev coefficients) ---

I0E_A = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1,
)
I0E_B = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1,
)
I1E_A = (
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1,
)
I1E_B = (
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1,
)


def _chbevl(y, coeffs):
    """Clenshaw's sum of a Chebyshev series (Cephes' ``chbevl``)."""
    b0 = np.zeros_like(y)
    b1 = np.zeros_like(y)
    b2 = b1
    for c in coeffs:
        b2 = b1
        b1 = b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _scaled_bessel(x, small, large, odd):
    (v,), dt = as_f64(x)
    z = np.abs(v)
    with np.errstate(all="ignore"):
        lo = _chbevl(0.5 * z - 2.0, small)
        hi = _chbevl(32.0 / z - 2.0, large) / np.sqrt(z)
        out = np.where(z <= 8.0, lo * z if odd else lo, hi)
        out = np.where(z == np.inf, 0.0, out)
        if odd:
            out = np.where(v < 0, -out, out)
    return finish(out, dt)


def bessel_i0e(x):
    return _scaled_bessel(x, I0E_A, I0E_B, False)


def bessel_i1e(x):
    return _scaled_bessel(x, I1E_A, I1E_B, True)
