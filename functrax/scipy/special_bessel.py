"""``functrax.scipy.special``: modified Bessel functions of order 0 and 1 (plain and
exponentially scaled), Bessel functions of the first kind of integer order, and spherical
harmonics, as ``jax.scipy.special``.

- ``i0e``/``i1e`` bind ``lax.bessel_i0e``/``lax.bessel_i1e``; ``i0``/``i1`` multiply by
  ``exp(|x|)``.
- ``bessel_jn``: JAX's algorithm, Miller's backward recurrence ``J_{k-1} = 2k/z J_k -
  J_{k+1}`` from ``k = n_iter`` (a ``scan``), normalized by ``J_0 + 2 sum J_{2k} = 1``; the
  recurrence is rescaled by 2**-40 whenever it grows past 2**40 (JAX's overflows float32
  for small ``|z|``, giving NaN), and ``z == 0`` gives ``(1, 0, ..., 0)``.
- ``sph_harm_y``: the orthonormalized associated Legendre functions by their three-term
  recurrences (the diagonal ``P_m^m`` with the Condon-Shortley phase, then up in degree), per
  element, to the static maximum degree ``n_max``.
"""
from __future__ import annotations

import operator

import numpy as np

from functrax import core, dtypes, lax
from functrax import numpy as fnp
from functrax.scipy.special_info import concrete, const, promote

__all__ = ["i0", "i0e", "i1", "i1e", "bessel_jn", "sph_harm_y"]


def i0e(x):
    """The exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I0(x)``.

    >>> round(float(i0e(1.0)), 6)
    0.46576
    """
    (x,) = promote("i0e", x)
    return lax.bessel_i0e(x)


def i0(x):
    """The modified Bessel function of order 0, ``I0(x) = sum_k (x**2 / 4)**k / (k!)**2``.

    >>> round(float(i0(1.0)), 6)
    1.266066
    """
    (x,) = promote("i0", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def i1e(x):
    """The exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I1(x)``.

    >>> round(float(i1e(1.0)), 6)
    0.20791
    """
    (x,) = promote("i1e", x)
    return lax.bessel_i1e(x)


def i1(x):
    """The modified Bessel function of order 1, ``I1(x)``.

    >>> round(float(i1(1.0)), 6)
    0.565159
    """
    (x,) = promote("i1", x)
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i1e(x))


def bessel_jn(z, *, v, n_iter=50):
    """Bessel functions of the first kind ``J_0 .. J_v`` of a real argument.

    Args:
      z: real array.
      v: the largest order (a static int).
      n_iter: the order the backward recurrence starts from (static); it must exceed
        ``v`` and ``|z|`` comfortably (about ``|z| + 20`` for full float64 accuracy).

    Returns:
      An array of shape ``(v + 1, *z.shape)``: ``J_k(z)`` at index ``k``.

    Raises:
      ValueError: for complex ``z``.

    >>> import functrax.numpy as fnp
    >>> bessel_jn(fnp.array([1.0]), v=1)
    Array([[0.7651977 ],
           [0.44005057]], dtype=float32)
    """
    (z,) = promote("bessel_jn", z)
    if dtypes.issubdtype(core.get_aval(z).dtype, np.complexfloating):
        raise ValueError("complex input not supported.")
    v = concrete(operator.index, v, "Argument v of bessel_jn.")
    n_iter = concrete(int, n_iter, "Argument n_iter of bessel_jn.")
    zero = z == 0
    zs = fnp.where(zero, const(z, 1.0), z)
    big = const(z, 2.0 ** 40)

    def body(carry, k):
        f0, f1, bs, rescales = carry
        f = 2.0 * (k + 1.0) * f1 / zs - f0
        bs = fnp.where(fnp.fmod(k, 2) == 0, bs + 2.0 * f, bs)
        # rescale by 2**-40 when the recurrence grows large (it would overflow float32);
        # each output remembers how many rescales preceded it (powers of 2: exact)
        grow = fnp.abs(f) > big
        s = fnp.where(grow, 1 / big, const(z, 1.0))
        return (f1 * s, f * s, bs * s, rescales + grow.astype(f.dtype)), (f, rescales)

    init = (fnp.zeros_like(zs), fnp.full_like(zs, 1e-16), fnp.zeros_like(zs),
            fnp.zeros_like(zs))
    ks = fnp.arange(n_iter + 1, dtype=core.get_aval(z).dtype)
    (_, _, bs, n_final), (j_vals, n_before) = lax.scan(body, init, ks, reverse=True)
    f_zero = j_vals[0] * lax.exp2(-40.0 * (n_final - n_before[0]))
    out = j_vals[:v + 1] * lax.exp2(-40.0 * (n_final - n_before[:v + 1])) / (bs - f_zero)
    at_zero = (fnp.arange(v + 1) == 0).astype(out.dtype)
    at_zero = fnp.reshape(at_zero, (v + 1,) + (1,) * core.get_aval(z).ndim)
    return fnp.where(zero, at_zero, out)


def _legendre_normalized(nn, ma, cos_t, sin_t, n_max):
    """The orthonormalized ``P_n^m(cos theta)`` (Condon-Shortley phase) of each element."""
    dt = core.get_aval(cos_t).dtype
    p_mm = fnp.full_like(cos_t, 0.5 / np.sqrt(np.pi))
    for k in range(1, n_max + 1):
        factor = -np.sqrt((2 * k + 1) / (2 * k))
        p_mm = fnp.where(k <= ma, np.asarray(factor, dt) * sin_t * p_mm, p_mm)
    p_prev, p_cur = fnp.zeros_like(p_mm), p_mm
    for j in range(1, n_max + 1):
        ell = ma + j
        ell2, m2 = ell * ell, ma * ma
        a = fnp.sqrt((4 * ell2 - 1) / (ell2 - m2))
        prev2 = (ell - 1) * (ell - 1)
        b = fnp.sqrt((prev2 - m2) / (4 * prev2 - 1))
        p_next = a * (cos_t * p_cur - b * p_prev)
        step = ell <= nn
        p_prev, p_cur = fnp.where(step, p_cur, p_prev), fnp.where(step, p_next, p_cur)
    return p_cur


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """Spherical harmonics ``Y_n^m(theta, phi) = N_n^m P_n^m(cos theta) exp(i m phi)``
    (orthonormal on the sphere, Condon-Shortley phase included), as
    ``scipy.special.sph_harm_y``.

    Args:
      n: the degrees (integers ``>= 0``).
      m: the orders (integers with ``|m| <= n``).
      theta: the polar (colatitude) angles, in [0, pi].
      phi: the azimuthal angles, in [0, 2 pi].
      diff_n: unsupported (must be None).
      n_max: the static maximum degree; degrees and orders above it are clipped to it.
        Default: ``max(n)``, which needs a concrete ``n``.

    Returns:
      A complex array of the broadcast shape of the arguments (a scalar ``theta`` counts
      as shape ``(1,)``, as JAX).

    Raises:
      NotImplementedError: if ``diff_n`` is given.

    >>> import functrax.numpy as fnp
    >>> y = sph_harm_y(fnp.array([1]), fnp.array([0]), fnp.array([0.0]), fnp.array([0.0]))
    >>> round(float(y.real[0]), 6)
    0.488603
    """
    if diff_n is not None:
        raise NotImplementedError(
            "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
    if np.isscalar(theta) or (hasattr(theta, "ndim") and theta.ndim == 0):
        theta = fnp.reshape(fnp.asarray(theta), (1,))
    if n_max is None:
        n_max = concrete(lambda v: int(np.max(v)), n, (
            "The `n_max` argument of `functrax.scipy.special.sph_harm_y` must be statically "
            "specified to use `sph_harm_y` within transformations."))
    n_max = concrete(int, n_max, "The `n_max` argument of sph_harm_y must be static.")
    theta, phi = promote("sph_harm_y", theta, phi)
    dt = core.get_aval(theta).dtype
    n = fnp.asarray(n).astype(dt)
    m = fnp.asarray(m).astype(dt)
    n, m, theta, phi = fnp.broadcast_arrays(n, m, theta, phi)
    nn = fnp.clip(n, 0, n_max)
    ma = fnp.minimum(fnp.abs(m), n_max)
    legendre = _legendre_normalized(nn, ma, lax.cos(theta), lax.sin(theta), n_max)
    angle = ma * phi
    y = legendre * lax.cos(angle) + 1j * (legendre * lax.sin(angle))
    parity = fnp.where(fnp.fmod(ma, 2) == 0, const(theta, 1.0), const(theta, -1.0))
    return fnp.where(m < 0, parity * fnp.conj(y), y)
