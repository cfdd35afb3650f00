"""``functrax.scipy.optimize``: unconstrained minimization, as ``jax.scipy.optimize``.

``minimize(fun, x0, method="BFGS")`` runs BFGS (Nocedal & Wright, "Numerical Optimization",
Algorithm 6.1) with a strong-Wolfe zoom line search (``optimize_line_search.py``);
``method="l-bfgs-experimental-do-not-rely-on-this"`` runs L-BFGS (``optimize_lbfgs.py``). Both
are ``lax.while_loop`` programs: ``jit(minimize)`` and ``vmap`` over ``x0`` work, and the
iteration counts are arrays.

>>> import functrax.numpy as fnp
>>> res = minimize(lambda x: fnp.sum((x - 2.0) ** 2), fnp.zeros(3), method="BFGS")
>>> res.x
Array([2., 2., 2.], dtype=float32)
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import functrax.numpy as fnp
from functrax import core, dtypes, lax
from functrax.scipy.optimize_lbfgs import minimize_lbfgs
from functrax.scipy.optimize_line_search import line_search
from functrax.transforms import value_and_grad

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """Results of an optimization.

    Attributes:
      x: the final solution.
      success: True if the optimization converged.
      status: the solver's return code: 0 converged, 1 maximum BFGS iterations reached,
        3 line search (zoom) failed, 4 saddle point reached, 5 maximum line search iterations
        reached, -1 undefined (L-BFGS: 1 maxiter, 2 maxfun, 3 maxgrad, 4 ftol, 5 line search).
      fun: the final function value.
      jac: the final gradient.
      hess_inv: the final inverse Hessian estimate (None for L-BFGS).
      nfev: function evaluations.
      njev: gradient evaluations.
      nit: iterations.
    """
    x: object
    success: object
    status: object
    fun: object
    jac: object
    hess_inv: object
    nfev: object
    njev: object
    nit: object


class _BFGSState(NamedTuple):
    converged: object
    failed: object
    k: object
    nfev: object
    ngev: object
    x_k: object
    f_k: object
    g_k: object
    H_k: object
    old_old_fval: object
    line_search_status: object


def _norm(x, ord):
    return fnp.linalg.norm(x, ord=ord)


def _bfgs_update(h, s, y):
    """The BFGS update of the inverse Hessian ``h``: ``(I - rho s y^T) h (I - rho y s^T) +
    rho s s^T`` with ``rho = 1 / y^T s`` (kept when ``rho`` is not finite)."""
    rho = 1.0 / fnp.dot(y, s)
    w = fnp.eye(s.shape[0], dtype=h.dtype) - rho * fnp.outer(s, y)
    new = fnp.matmul(fnp.matmul(w, h), w.T) + rho * fnp.outer(s, s)
    return fnp.where(fnp.isfinite(rho), new, h)


def minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    """BFGS from ``x0`` (1-d): a ``(state, status)`` pair (see ``minimize``)."""
    maxiter = int(np.size(x0) * 200 if maxiter is None else maxiter)
    d = x0.shape[0]
    vg = value_and_grad(fun)
    f_0, g_0 = vg(x0)
    one, zero = fnp.ones((), np.int32), fnp.zeros((), np.int32)
    state = _BFGSState(converged=_norm(g_0, norm) < gtol, failed=fnp.zeros((), bool), k=zero,
                       nfev=one, ngev=one, x_k=x0, f_k=f_0, g_k=g_0,
                       H_k=fnp.eye(d, dtype=x0.dtype),
                       old_old_fval=f_0 + fnp.linalg.norm(g_0) / 2, line_search_status=zero)

    def cond(state):
        return (~state.converged) & (~state.failed) & (state.k < maxiter)

    def body(state):
        p_k = -fnp.matmul(state.H_k, state.g_k)
        ls = line_search(fun, state.x_k, p_k, old_fval=state.f_k,
                         old_old_fval=state.old_old_fval, gfk=state.g_k,
                         maxiter=line_search_maxiter)
        s_k = ls.a_k.astype(p_k.dtype) * p_k
        y_k = ls.g_k - state.g_k
        return state._replace(
            converged=_norm(ls.g_k, norm) < gtol, failed=ls.failed, k=state.k + 1,
            nfev=state.nfev + ls.nfev, ngev=state.ngev + ls.ngev, x_k=state.x_k + s_k,
            f_k=ls.f_k, g_k=ls.g_k, H_k=_bfgs_update(state.H_k, s_k, y_k),
            old_old_fval=state.f_k, line_search_status=ls.status)

    state = lax.while_loop(cond, body, state)
    status = fnp.where(state.converged, 0, fnp.where(
        state.k == maxiter, 1, fnp.where(state.failed, 2 + state.line_search_status, -1)))
    return state, status.astype(np.int32)


def _check_x0(x0):
    x0 = fnp.asarray(x0)
    if core.get_aval(x0).ndim != 1:
        raise ValueError(f"minimize: x0 must be a 1-d array of shape (n,), got shape "
                         f"{core.get_aval(x0).shape}; ravel it and reshape inside fun")
    if not dtypes.is_inexact(x0.dtype):
        x0 = x0.astype(dtypes.default_float_dtype())
    return x0


def minimize(fun, x0, args=(), *, method="BFGS", tol=None, options=None):
    """Minimize a scalar function of one or more variables.

    Args:
      fun: the objective ``fun(x, *args) -> scalar``, differentiable with
        ``functrax.grad``.
      x0: the initial guess, a 1-d array of shape ``(n,)``.
      args: extra arguments of ``fun`` (a tuple).
      method: 'BFGS', or 'l-bfgs-experimental-do-not-rely-on-this' (case-insensitive).
      tol: accepted and unused, as in JAX: pass ``options={'gtol': ...}``.
      options: the solver's options: for BFGS ``maxiter`` (default ``200 n``), ``norm``
        (default inf), ``gtol`` (default 1e-5), ``line_search_maxiter`` (default 10); for
        L-BFGS ``maxiter``, ``norm``, ``maxcor``, ``ftol``, ``gtol``, ``maxfun``,
        ``maxgrad``, ``maxls``.

    Returns:
      ``OptimizeResults``.

    Raises:
      TypeError: ``args`` is not a tuple.
      ValueError: an unknown ``method``, or ``x0`` not 1-d.
    """
    del tol
    options = {} if options is None else dict(options)
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to functrax.scipy.optimize.minimize must be a tuple, "
                        f"got {args!r}")
    if not isinstance(method, str):
        raise TypeError(f"minimize: method must be a string, got {method!r}")

    def fun_with_args(x):
        return fun(x, *args)
    x0 = _check_x0(x0)
    if method.lower() == "bfgs":
        state, status = minimize_bfgs(fun_with_args, x0, **options)
        return OptimizeResults(x=state.x_k, success=state.converged & (~state.failed),
                               status=status, fun=state.f_k, jac=state.g_k, hess_inv=state.H_k,
                               nfev=state.nfev, njev=state.ngev, nit=state.k)
    if method.lower() == "l-bfgs-experimental-do-not-rely-on-this":
        res = minimize_lbfgs(fun_with_args, x0, **options)
        return OptimizeResults(x=res.x_k, success=res.converged & (~res.failed),
                               status=res.status, fun=res.f_k, jac=res.g_k, hess_inv=None,
                               nfev=res.nfev, njev=res.ngev, nit=res.k)
    raise ValueError(f"Method {method} not recognized: use 'BFGS' or "
                     "'l-bfgs-experimental-do-not-rely-on-this'")
