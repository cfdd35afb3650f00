"""L-BFGS for ``functrax.scipy.optimize.minimize(method="l-bfgs-experimental-do-not-rely-on-
this")``, as JAX's (Nocedal & Wright, "Numerical Optimization", Algorithm 7.4 and 7.5).

The last ``maxcor`` steps ``s`` and gradient changes ``y`` are kept in fixed-size histories
(rolled, newest last); the search direction is the two-loop recursion over the filled part
(``lax.fori_loop`` with a traced bound), scaled by ``gamma = s^T y / y^T y``. Complex ``x``
are supported (the objective must be real).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import functrax.numpy as fnp
from functrax import lax
from functrax.scipy.optimize_line_search import line_search
from functrax.transforms import value_and_grad


class LBFGSResults(NamedTuple):
    """The state of L-BFGS (``status``: 0 converged, 1 maxiter, 2 maxfun, 3 maxgrad, 4 ftol
    reached, 5 the line search failed)."""
    converged: object
    failed: object
    k: object
    nfev: object
    ngev: object
    x_k: object
    f_k: object
    g_k: object
    s_history: object
    y_history: object
    rho_history: object
    gamma: object
    status: object
    ls_status: object


def _two_loop_recursion(state):
    his_size = state.rho_history.shape[0]
    curr = fnp.minimum(state.k, his_size)
    rho_dtype = state.rho_history.dtype

    def first(j, carry):
        q, a_his = carry
        i = his_size - 1 - j
        a_i = state.rho_history[i] * fnp.real(fnp.dot(fnp.conj(state.s_history[i]), q))
        a_i = a_i.astype(rho_dtype)
        return q - a_i * fnp.conj(state.y_history[i]), a_his.at[i].set(a_i)

    q, a_his = lax.fori_loop(0, curr, first, (-fnp.conj(state.g_k),
                                              fnp.zeros_like(state.rho_history)))
    q = state.gamma * q

    def second(j, q):
        i = his_size - curr + j
        b_i = (state.rho_history[i] * fnp.real(fnp.dot(state.y_history[i], q))).astype(rho_dtype)
        return q + (a_his[i] - b_i) * state.s_history[i]
    return lax.fori_loop(0, curr, second, q)


def _push(history, new):
    return fnp.roll(history, -1, axis=0).at[-1].set(new)


def _limit(value):
    return np.inf if value is None else value


def minimize_lbfgs(fun, x0, maxiter=None, norm=np.inf, maxcor=10, ftol=2.220446049250313e-09,
                   gtol=1e-05, maxfun=None, maxgrad=None, maxls=20):
    """L-BFGS from ``x0`` (1-d): the final ``LBFGSResults``."""
    d = x0.shape[0]
    dt = x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = d * 200  # at least one termination condition
    maxiter, maxfun, maxgrad = _limit(maxiter), _limit(maxfun), _limit(maxgrad)
    vg = value_and_grad(fun)
    f_0, g_0 = vg(x0)
    zero, one = fnp.zeros((), np.int32), fnp.ones((), np.int32)
    state = LBFGSResults(
        converged=fnp.zeros((), bool), failed=fnp.zeros((), bool), k=zero, nfev=one, ngev=one,
        x_k=x0, f_k=f_0, g_k=g_0, s_history=fnp.zeros((maxcor, d), dt),
        y_history=fnp.zeros((maxcor, d), dt), rho_history=fnp.zeros((maxcor,), dt),
        gamma=fnp.ones((), dt), status=zero, ls_status=zero)

    def body(state):
        p_k = _two_loop_recursion(state)
        ls = line_search(fun, state.x_k, p_k, old_fval=state.f_k, gfk=state.g_k, maxiter=maxls)
        s_k = ls.a_k.astype(p_k.dtype) * p_k
        y_k = ls.g_k - state.g_k
        rho_inv = fnp.real(fnp.dot(y_k, s_k))
        rho_k = (1.0 / rho_inv).astype(y_k.dtype)
        gamma = rho_inv / fnp.real(fnp.dot(fnp.conj(y_k), y_k))
        status = fnp.where(state.f_k - ls.f_k < ftol, 4, 0)
        status = fnp.where(state.ngev >= maxgrad, 3, status)
        status = fnp.where(state.nfev >= maxfun, 2, status)
        status = fnp.where(state.k >= maxiter, 1, status)
        status = fnp.where(ls.failed, 5, status).astype(np.int32)
        converged = fnp.linalg.norm(ls.g_k, ord=norm) < gtol
        return state._replace(
            converged=converged, failed=(status > 0) & (~converged), k=state.k + 1,
            nfev=state.nfev + ls.nfev, ngev=state.ngev + ls.ngev,
            x_k=(state.x_k + s_k).astype(dt), f_k=ls.f_k.astype(state.f_k.dtype),
            g_k=ls.g_k.astype(dt), s_history=_push(state.s_history, s_k),
            y_history=_push(state.y_history, y_k), rho_history=_push(state.rho_history, rho_k),
            gamma=gamma.astype(dt), status=fnp.where(converged, 0, status).astype(np.int32),
            ls_status=ls.status)

    return lax.while_loop(lambda s: (~s.converged) & (~s.failed), body, state)
