"""The strong-Wolfe line search of ``functrax.scipy.optimize`` (as JAX's, after Nocedal &
Wright, "Numerical Optimization", 2nd ed., Algorithms 3.5 and 3.6).

Written with ``lax.while_loop`` and selects only, so that it runs under ``jit`` and ``vmap``:
each iteration tries a step (the first from the previous decrease, then doubling); a bracket
goes to ``zoom``, which interpolates (cubic, then quadratic, then bisection) until the strong
Wolfe conditions hold. Both zooms are traced every iteration and run only when selected.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import functrax.numpy as fnp
from functrax import dtypes, lax
from functrax.transforms import value_and_grad


class LineSearchResults(NamedTuple):
    """Results of the line search.

    Attributes:
      failed: True if the strong Wolfe conditions were not satisfied.
      nit: the iterations.
      nfev, ngev: function and gradient evaluations.
      k: the final iteration counter.
      a_k: the step size.
      f_k: the function value at ``xk + a_k pk``.
      g_k: the gradient there.
      status: 0 (passed), 1 (zoom failed) or 3 (maxiter reached).
    """
    failed: object
    nit: object
    nfev: object
    ngev: object
    k: object
    a_k: object
    f_k: object
    g_k: object
    status: object


class _ZoomState(NamedTuple):
    done: object
    failed: object
    j: object
    a_lo: object
    phi_lo: object
    dphi_lo: object
    a_hi: object
    phi_hi: object
    dphi_hi: object
    a_rec: object
    phi_rec: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object
    nfev: object
    ngev: object


class _SearchState(NamedTuple):
    done: object
    failed: object
    i: object
    a_i1: object
    phi_i1: object
    dphi_i1: object
    nfev: object
    ngev: object
    a_star: object
    phi_star: object
    dphi_star: object
    g_star: object


def _where(pred, new: dict, state):
    """``state`` with the fields of ``new`` taken where ``pred`` (a scalar bool)."""
    return state._replace(**{k: fnp.where(pred, v, getattr(state, k)) for k, v in new.items()})


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    """The minimizer of the cubic through ``(a, fa)`` with slope ``fpa``, ``(b, fb)`` and
    ``(c, fc)`` (NaN if none; the bounds check then rejects it)."""
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    rhs_b, rhs_c = fb - fa - fpa * db, fc - fa - fpa * dc
    big_a = (dc ** 2 * rhs_b - db ** 2 * rhs_c) / denom
    big_b = (-dc ** 3 * rhs_b + db ** 3 * rhs_c) / denom
    radical = big_b * big_b - 3.0 * big_a * fpa
    return a + (-big_b + fnp.sqrt(radical)) / (3.0 * big_a)


def _quadmin(a, fa, fpa, b, fb):
    """The minimizer of the quadratic through ``(a, fa)`` with slope ``fpa`` and ``(b, fb)``."""
    db = b - a
    big_b = (fb - fa - fpa * db) / (db ** 2)
    return a - fpa / (2.0 * big_b)


def _zoom_step(phi_and_grad, wolfe_one, wolfe_two, state):
    dalpha = state.a_hi - state.a_lo
    lo, hi = fnp.minimum(state.a_hi, state.a_lo), fnp.maximum(state.a_hi, state.a_lo)
    cchk, qchk = 0.2 * dalpha, 0.1 * dalpha
    threshold = 1e-10 if dtypes.finfo(state.a_lo.dtype).bits >= 64 else 1e-5
    state = state._replace(failed=state.failed | (fnp.abs(dalpha) <= threshold))
    a_cubic = _cubicmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi,
                        state.a_rec, state.phi_rec)
    use_cubic = (state.j > 0) & (a_cubic > lo + cchk) & (a_cubic < hi - cchk)
    a_quad = _quadmin(state.a_lo, state.phi_lo, state.dphi_lo, state.a_hi, state.phi_hi)
    use_quad = (~use_cubic) & (a_quad > lo + qchk) & (a_quad < hi - qchk)
    a_j = fnp.where(use_cubic, a_cubic,
                    fnp.where(use_quad, a_quad, (state.a_lo + state.a_hi) / 2.0))
    phi_j, dphi_j, g_j = phi_and_grad(a_j)
    state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)
    hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= state.phi_lo)
    star_to_j = wolfe_two(dphi_j) & (~hi_to_j)
    hi_to_lo = (dphi_j * (state.a_hi - state.a_lo) >= 0.0) & (~hi_to_j) & (~star_to_j)
    lo_to_j = (~hi_to_j) & (~star_to_j)
    state = _where(hi_to_j, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=state.a_hi,
                                 phi_rec=state.phi_hi), state)
    state = _where(star_to_j, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j),
                   state._replace(done=star_to_j | state.done))
    state = _where(hi_to_lo, dict(a_hi=state.a_lo, phi_hi=state.phi_lo, dphi_hi=state.dphi_lo,
                                  a_rec=state.a_hi, phi_rec=state.phi_hi), state)
    state = _where(lo_to_j, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j, a_rec=state.a_lo,
                                 phi_rec=state.phi_lo), state)
    j = state.j + 1
    return state._replace(j=j, failed=state.failed | (j >= 30))


def _zoom(phi_and_grad, wolfe_one, wolfe_two, lo, hi, g_0, pass_through):
    """Zoom into the bracket ``lo``/``hi`` (each ``(a, phi, dphi)``); skipped if
    ``pass_through``."""
    (a_lo, phi_lo, dphi_lo), (a_hi, phi_hi, dphi_hi) = lo, hi
    false = fnp.zeros((), bool)
    zero = fnp.zeros((), np.int32)
    state = _ZoomState(done=false, failed=false, j=zero, a_lo=a_lo, phi_lo=phi_lo,
                       dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi,
                       a_rec=(a_lo + a_hi) / 2.0, phi_rec=(phi_lo + phi_hi) / 2.0,
                       a_star=fnp.ones_like(a_lo), phi_star=phi_lo, dphi_star=dphi_lo,
                       g_star=g_0, nfev=zero, ngev=zero)
    return lax.while_loop(lambda s: (~s.done) & (~pass_through) & (~s.failed),
                          lambda s: _zoom_step(phi_and_grad, wolfe_one, wolfe_two, s), state)


def line_search(f, xk, pk, old_fval=None, old_old_fval=None, gfk=None, c1=1e-4, c2=0.9,
                maxiter=20):
    """A step ``a_k`` along ``pk`` from ``xk`` satisfying the strong Wolfe conditions
    (``c1`` sufficient decrease, ``c2`` curvature).

    Returns:
      ``LineSearchResults``.
    """
    xk, pk = fnp.asarray(xk), fnp.asarray(pk)
    if xk.dtype != pk.dtype:
        dt = fnp.result_type(xk, pk, float)
        xk, pk = xk.astype(dt), pk.astype(dt)
    vg = value_and_grad(f)

    def phi_and_grad(t):
        phi, g = vg(xk + t.astype(pk.dtype) * pk)
        return phi, fnp.real(fnp.dot(g, pk)), g

    fresh = old_fval is None or gfk is None
    if fresh:
        phi_0, dphi_0, gfk = phi_and_grad(fnp.zeros((), fnp.real(pk).dtype))
    else:
        phi_0, dphi_0 = fnp.asarray(old_fval), fnp.real(fnp.dot(gfk, pk))
    if old_old_fval is not None:
        start = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
        start = fnp.where(start > 1, 1.0, start)
    else:
        start = fnp.ones((), phi_0.dtype)

    def wolfe_one(a_i, phi_i):  # the negation of Armijo's condition
        return phi_i > phi_0 + c1 * a_i * dphi_0

    def wolfe_two(dphi_i):
        return fnp.abs(dphi_i) <= -c2 * dphi_0

    count = fnp.asarray(1 if fresh else 0, np.int32)
    state = _SearchState(done=fnp.zeros((), bool), failed=fnp.zeros((), bool),
                         i=fnp.ones((), np.int32), a_i1=fnp.zeros((), phi_0.dtype),
                         phi_i1=phi_0, dphi_i1=dphi_0, nfev=count, ngev=count,
                         a_star=fnp.zeros((), phi_0.dtype), phi_star=phi_0,
                         dphi_star=dphi_0, g_star=gfk)

    def body(state):
        a_i = fnp.where(state.i == 1, start, state.a_i1 * 2.0).astype(phi_0.dtype)
        phi_i, dphi_i, g_i = phi_and_grad(a_i)
        state = state._replace(nfev=state.nfev + 1, ngev=state.ngev + 1)
        to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= state.phi_i1) & (state.i > 1))
        to_i = wolfe_two(dphi_i) & (~to_zoom1)
        to_zoom2 = (dphi_i >= 0.0) & (~to_zoom1) & (~to_i)
        prev, cur = (state.a_i1, state.phi_i1, state.dphi_i1), (a_i, phi_i, dphi_i)
        zoom1 = _zoom(phi_and_grad, wolfe_one, wolfe_two, prev, cur, gfk, ~to_zoom1)
        zoom2 = _zoom(phi_and_grad, wolfe_one, wolfe_two, cur, prev, gfk, ~to_zoom2)
        state = state._replace(nfev=state.nfev + zoom1.nfev + zoom2.nfev,
                               ngev=state.ngev + zoom1.ngev + zoom2.ngev)
        star = ("a_star", "phi_star", "dphi_star", "g_star")
        state = _where(to_zoom1, {k: getattr(zoom1, k) for k in star},
                       state._replace(done=to_zoom1 | state.done,
                                      failed=(to_zoom1 & zoom1.failed) | state.failed))
        state = _where(to_i, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i),
                       state._replace(done=to_i | state.done))
        state = _where(to_zoom2, {k: getattr(zoom2, k) for k in star},
                       state._replace(done=to_zoom2 | state.done,
                                      failed=(to_zoom2 & zoom2.failed) | state.failed))
        return state._replace(i=state.i + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

    state = lax.while_loop(lambda s: (~s.done) & (s.i <= maxiter) & (~s.failed), body, state)
    status = fnp.where(state.failed, 1, fnp.where(state.i > maxiter, 3, 0)).astype(np.int32)
    alpha = state.a_star
    if dtypes.finfo(alpha.dtype).bits != 64:  # too small steps stall in 32-bit precision
        alpha = fnp.where(fnp.abs(alpha) < 1e-8, fnp.sign(alpha) * 1e-8, alpha)
    return LineSearchResults(failed=state.failed | (~state.done), nit=state.i - 1,
                             nfev=state.nfev, ngev=state.ngev, k=state.i, a_k=alpha,
                             f_k=state.phi_star, g_k=state.g_star, status=status)
