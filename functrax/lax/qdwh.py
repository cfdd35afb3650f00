"""QR-based dynamically weighted Halley iteration (QDWH) for the polar decomposition, as
``jax.lax.linalg.qdwh`` (Nakatsukasa, Bai & Gygi, SIAM J. Matrix Anal. Appl. 31(5), 2010).

``x = u h`` with ``u`` having orthonormal columns and ``h`` Hermitian positive semidefinite.
``x`` is scaled by ``alpha = sqrt(||x||_1 ||x||_inf) >= ||x||_2``; the lower bound ``l`` of its
smallest singular value starts at ``eps``, so the weights ``(a, b, c)`` of every step are known
before tracing (Python floats): steps with ``c > 100`` use the QR form, the others the
Cholesky form (cheaper), then Halley's method (``a, b, c = 3, 1, 3``) runs in a
``lax.while_loop`` until ``||u_k - u_{k-1}||_F <= cbrt(5 eps)`` or ``max_iterations``; one
Newton-Schulz step refines ``u``.
"""
from __future__ import annotations

import math

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.control_flow.loops import while_loop
from functrax.primitives import linalg as _la
from functrax.primitives.linalg import adjoint, batched_matmul, eye_like

_CHOLESKY_CUTOFF = 100.0


def _weights(eps: float, max_iterations: int):
    """The ``(a, b, c)`` of each dynamically weighted step (static: ``l_0 = eps``)."""
    low, tol_l, out = eps, 5.0 * eps, []
    while low + tol_l < 1 and len(out) < max_iterations:
        l2 = low * low
        dd = (4.0 * (1.0 / l2 - 1.0) / l2) ** (1.0 / 3.0)
        sqd = math.sqrt(1.0 + dd)
        a = sqd + math.sqrt(8.0 - 4.0 * dd + 8.0 * (2.0 - l2) / (l2 * sqd)) / 2.0
        b = (a - 1.0) ** 2 / 4.0
        c = a + b - 1.0
        low = low * (a + b * l2) / (1.0 + c * l2)
        out.append((a, b, c))
    return out


def _scale(x, s):
    """``x * s`` for a per-matrix scale ``s`` ``[...]`` (real)."""
    shape = core.get_aval(x).shape
    s = P.convert_element_type(s, core.get_aval(x).dtype)
    return P.mul(x, P.broadcast_in_dim(s, shape, tuple(range(len(shape) - 2))))


def _qr_step(u, a, b, c):
    """``u <- (b/c) u + (a - b/c)/sqrt(c) q1 q2^H`` with ``[sqrt(c) u; I] = [q1; q2] r``."""
    m, n = core.get_aval(u).shape[-2:]
    nd = core.get_aval(u).ndim
    e = b / c
    y = P.concatenate([P.mul(u, _full(u, math.sqrt(c))), eye_like(u, _shape(u, n, n))],
                        nd - 2)
    q, _ = _la.qr(y, full_matrices=False)
    q1 = P.slice_in_dim(q, 0, m, axis=nd - 2)
    q2 = P.slice_in_dim(q, m, m + n, axis=nd - 2)
    return P.add(P.mul(u, _full(u, e)),
                   P.mul(batched_matmul(q1, adjoint(q2)), _full(u, (a - e) / math.sqrt(c))))


def _chol_step(u, a, b, c):
    """``u <- (b/c) u + (a - b/c) u (c u^H u + I)^-1`` (by a Cholesky factorization)."""
    e = b / c
    gram = batched_matmul(adjoint(u), u)
    x = P.add(P.mul(gram, _full(gram, c)), eye_like(gram))
    chol = _la.cholesky(x, symmetrize_input=False)
    y = _la.triangular_solve(chol, u, left_side=False, lower=True, transpose_a=True,
                             conjugate_a=True)
    z = _la.triangular_solve(chol, y, left_side=False, lower=True)
    return P.add(P.mul(u, _full(u, e)), P.mul(z, _full(u, a - e)))


def _full(x, value):
    return P.full(core.get_aval(x).shape, value, core.get_aval(x).dtype)


def _shape(x, rows, cols):
    return core.get_aval(x).shape[:-2] + (rows, cols)


def _frobenius(x):
    nd = core.get_aval(x).ndim
    ax = P.abs(x)
    return P.sqrt(P.reduce_sum(P.mul(ax, ax), (nd - 2, nd - 1)))


def _norm_1_inf(x):
    nd = core.get_aval(x).ndim
    ax = P.abs(x)
    one = P.reduce_max(P.reduce_sum(ax, (nd - 2,)), (nd - 2,))
    inf = P.reduce_max(P.reduce_sum(ax, (nd - 1,)), (nd - 2,))
    return one, inf


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape=None):
    """Polar decomposition of ``x`` ``[..., m, n]`` (``m >= n``) by QDWH.

    Args:
      x: a (batch of) matrices of a LAPACK dtype.
      is_hermitian: accepted, unused (the general iteration runs).
      max_iterations: the most iterations (default 10).
      eps: the precision the iteration aims for (default: the dtype's epsilon).
      dynamic_shape: not supported (must be None).

    Returns:
      ``(u, h, num_iters, is_converged)``: ``x = u @ h``, the iterations run (int32) and
      whether every matrix converged (bool, per matrix).

    >>> import functrax.numpy as fnp
    >>> u, h, _, ok = qdwh(fnp.array([[2.0, 0.0], [0.0, -3.0]]))
    >>> h.round(4)
    Array([[2., 0.],
           [0., 3.]], dtype=float32)
    """
    del is_hermitian
    if dynamic_shape is not None:
        raise NotImplementedError("qdwh: dynamic_shape is not supported (pass None)")
    x = _la.matrix_operand("qdwh", x)
    aval = core.get_aval(x)
    _la.check_matrix("qdwh", aval)
    m, n = aval.shape[-2:]
    if m < n:
        raise ValueError(f"qdwh: the input matrix of shape M x N must have M >= N, got shape "
                         f"{aval.shape}; apply it to the conjugate transpose instead")
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    real = np.empty((), aval.dtype).real.dtype
    eps = float(dtypes.finfo(real).eps) if eps is None else float(eps)
    one, inf = _norm_1_inf(x)
    zero = P.eq(one, P.full_like(one, 0))
    alpha_inv = P.select(zero, P.full_like(one, 1), P.mul(P.rsqrt(one), P.rsqrt(inf)))
    u = _scale(x, alpha_inv)
    weights = _weights(eps, max_iterations)
    for a, b, c in weights:
        u = (_qr_step if c > _CHOLESKY_CUTOFF else _chol_step)(u, a, b, c)
    tol = (5.0 * eps) ** (1.0 / 3.0)
    u, k, not_converged = _halley(u, len(weights), max_iterations, tol)
    u = P.sub(P.mul(u, _full(u, 1.5)),
                P.mul(batched_matmul(u, batched_matmul(adjoint(u), u)), _full(u, 0.5)))
    h = batched_matmul(adjoint(u), x)
    h = P.mul(P.add(h, adjoint(h)), _full(h, 0.5))
    return u, h, k, P.bitwise_not(not_converged)


def _halley(u, k0, max_iterations, tol):
    """Halley steps (``a, b, c = 3, 1, 3``) until every matrix moved by at most ``tol``."""
    batch = core.get_aval(u).shape[:-2]

    def cond(state):
        k, _, not_converged = state
        return P.bitwise_and(P.reduce_or(not_converged, tuple(range(len(batch)))),
                               P.lt(k, P.full((), max_iterations, np.int32)))

    def body(state):
        k, u, _ = state
        new = _chol_step(u, 3.0, 1.0, 3.0)
        moved = _frobenius(P.sub(new, u))
        return (P.add(k, P.full((), 1, np.int32)), new,
                P.gt(moved, P.full_like(moved, tol)))

    init = (P.full((), k0, np.int32), u, P.full(batch, True, np.bool_))
    k, u, not_converged = while_loop(cond, body, init)
    return u, k, not_converged
