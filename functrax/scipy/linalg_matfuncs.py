"""Matrix functions of ``functrax.scipy.linalg``, as ``jax.scipy.linalg``'s.

- ``expm``: Higham's scaling and squaring with a Padé approximant (degrees 3-13 in float64,
  3-7 in float32, chosen from the 1-norm with ``lax.switch``; the squarings run in a
  ``lax.scan`` of ``lax.cond``), differentiable by composition; ``expm_frechet`` is its JVP.
- ``sqrtm`` and ``funm``: the complex Schur form, then a recurrence over the superdiagonals
  of the triangular factor (``R R`` and ``T F - F T`` give each superdiagonal's sums at
  once, one ``lax.fori_loop`` step per superdiagonal); as in JAX the result is complex and
  has no derivative (the Schur decomposition has none).
- ``rsf2csf``: Givens rotations that split the 2x2 blocks of a real Schur form.
- ``solve_sylvester``: Bartels-Stewart on the complex Schur forms (or eigendecompositions).
"""
from __future__ import annotations

import numpy as np

import functrax.numpy as fnp
from functrax import dtypes, lax
from functrax.lax import linalg as _la
from functrax.numpy.promotion import broadcast_shapes_named, broadcast_to_shape
from functrax.primitives.linalg import adjoint
from functrax.scipy.linalg_solve import solve_triangular
from functrax.scipy.linalg_util import check_square, dtype, inexact, shape
from functrax.transforms import jvp, vmap

__all__ = ["expm", "expm_frechet", "funm", "rsf2csf", "solve_sylvester", "sqrtm"]


def _complex(x):
    return x.astype(np.result_type(dtype(x), np.complex64))


def _eps(x):
    return float(dtypes.finfo(np.empty((), dtype(x)).real.dtype).eps)


def _mm(a, b):
    return fnp.matmul(a, b)


# --- expm ---

_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
# (max 1-norm of the scaled matrix, thresholds between the degrees, the degrees)
_EXPM_F64 = (5.371920351148152, (1.495585217958292e-002, 2.539398330063230e-001,
                                 9.504178996162932e-001, 2.097847961257068e+000),
             (3, 5, 7, 9, 13))
_EXPM_F32 = (3.925724783138660, (4.258730016922831e-001, 1.880152677804762e+000), (3, 5, 7))


def _pade(m):
    """``(u, v)`` of the degree-``m`` Padé approximant: ``exp(A) ~ (v - u)^-1 (v + u)``."""
    b = _PADE[m]

    def fn(a):
        ident = fnp.eye(shape(a)[-1], dtype=dtype(a))
        a2 = _mm(a, a)
        if m == 13:
            a4 = _mm(a2, a2)
            a6 = _mm(a4, a2)
            u = _mm(a, _mm(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
                    + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
            v = (_mm(a6, b[12] * a6 + b[10] * a4 + b[8] * a2)
                 + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * ident)
            return u, v
        powers = [ident, a2]
        while len(powers) < (m + 1) // 2:
            powers.append(_mm(powers[-1], a2))
        u = _mm(a, sum(b[2 * k + 1] * p for k, p in enumerate(powers)))
        v = sum(b[2 * k] * p for k, p in enumerate(powers))
        return u, v
    return fn


def _expm_2d(a, upper_triangular, max_squarings):
    wide = np.empty((), dtype(a)).real.dtype == np.float64
    maxnorm, conds, degrees = _EXPM_F64 if wide else _EXPM_F32
    norm = fnp.max(fnp.sum(fnp.abs(a), axis=0))
    n_sq = fnp.maximum(0.0, fnp.floor(fnp.log2(norm / maxnorm)))
    n_sq = fnp.where(fnp.isfinite(n_sq), n_sq, float(max_squarings + 1))
    scaled = a / (2.0 ** n_sq).astype(dtype(a))
    idx = sum((norm >= c).astype(np.int32) for c in conds)
    u, v = lax.switch(idx, [_pade(m) for m in degrees], scaled)
    p, q = u + v, v - u

    def compute(p, q):
        r = solve_triangular(q, p) if upper_triangular else fnp.linalg.solve(q, p)
        return _squarings(r, n_sq, max_squarings)

    def nans(p, q):
        return fnp.full_like(p, np.nan)
    return lax.cond(n_sq > max_squarings, nans, compute, p, q)


def _squarings(r, n_sq, max_squarings):
    def body(c, i):
        return lax.cond(i < n_sq, lambda x: _mm(x, x), lambda x: x, c), None
    out, _ = lax.scan(body, r, fnp.arange(max_squarings, dtype=dtype(n_sq)))
    return out


def expm(A, *, upper_triangular=False, max_squarings=16):
    """The matrix exponential of square matrices ``[..., n, n]``.

    Args:
      A: the matrices.
      upper_triangular: ``A`` is upper triangular (a triangular solve replaces the LU one).
      max_squarings: the most squarings of the scaling-and-squaring method; matrices whose
        1-norm would need more give NaNs.

    >>> import functrax.numpy as fnp
    >>> expm(fnp.zeros((2, 2)))
    Array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    A = inexact(A)
    if len(shape(A)) < 2 or shape(A)[-1] != shape(A)[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape="
                         f"{shape(A)}.")
    fn = lambda a: _expm_2d(a, bool(upper_triangular), int(max_squarings))  # noqa: E731
    for _ in range(len(shape(A)) - 2):
        fn = vmap(fn)
    return fn(A)


def expm_frechet(A, E, *, method=None, compute_expm=True):
    """The Fréchet derivative of ``expm`` at ``A`` in the direction ``E`` (both ``[n, n]``):
    ``(expm(A), L(A, E))``, or ``L(A, E)`` if not ``compute_expm``."""
    A, E = inexact(A, E)
    if len(shape(A)) != 2 or shape(A)[0] != shape(A)[1]:
        raise ValueError("expected A to be a square matrix")
    if len(shape(E)) != 2 or shape(E)[0] != shape(E)[1]:
        raise ValueError("expected E to be a square matrix")
    if shape(A) != shape(E):
        raise ValueError("expected A and E to be the same shape")
    if method is None:
        method = "SPS"
    if method != "SPS":
        raise ValueError("only method='SPS' is supported")
    expm_a, frechet = jvp(lambda a: expm(a), (A,), (E,))
    return (expm_a, frechet) if compute_expm else frechet


# --- triangular recurrences ---


def _superdiagonal_mask(n, k):
    """``j - i == k`` as a boolean ``[n, n]`` (``k`` may be traced)."""
    i = lax.broadcasted_iota(np.int32, (n, n), 0)
    j = lax.broadcasted_iota(np.int32, (n, n), 1)
    return (j - i) == k


def _diag_of(t):
    return fnp.diagonal(t, axis1=-2, axis2=-1)


def _sqrtm_triu(t):
    """The upper triangular square root of upper triangular ``t`` (complex)."""
    n = shape(t)[-1]
    d = fnp.sqrt(_diag_of(t))
    r = fnp.where(np.eye(n, dtype=bool), d[..., None, :], np.zeros((), dtype(t)))
    den = d[..., :, None] + d[..., None, :]

    def body(k, r):
        s = _mm(r, r)
        return fnp.where(_superdiagonal_mask(n, k), (t - s) / den, r)
    return lax.fori_loop(1, n, body, r) if n > 1 else r


def sqrtm(A, blocksize=1):
    """The principal square root of square matrices ``[..., n, n]`` (complex, as JAX), by
    the complex Schur form.

    Raises:
      NotImplementedError: for ``blocksize > 1`` (as JAX).
    """
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    A = inexact(A)
    check_square("sqrtm", A, "A")
    t, z = _la.schur(_complex(A))
    r = _sqrtm_triu(t)
    return _mm(_mm(z, r), adjoint(z))


def _parlett(f, t):
    """Parlett's recurrence (Golub & Van Loan, Algorithm 11.1.1): ``F`` with the diagonal
    ``f`` commuting with upper triangular ``t``; also the smallest eigenvalue gap."""
    n = shape(t)[-1]
    eye = np.eye(n, dtype=bool)
    fm = fnp.where(eye, f[..., None, :], np.zeros((), dtype(t)))
    d = _diag_of(t)
    den = d[..., None, :] - d[..., :, None]  # t[j, j] - t[i, i]
    safe = fnp.where(den == 0, np.ones((), dtype(t)), den)
    upper = np.triu(np.ones((n, n), bool), 1)
    minden = fnp.min(fnp.where(upper, fnp.abs(den), np.inf), axis=(-2, -1)) if n > 1 else \
        fnp.full(shape(t)[:-2], np.inf, np.empty((), dtype(t)).real.dtype)

    def body(k, fm):
        num = _mm(t, fm) - _mm(fm, t)
        return fnp.where(_superdiagonal_mask(n, k), num / safe, fm)
    fm = lax.fori_loop(1, n, body, fm) if n > 1 else fm
    return fm, minden


def funm(A, func, disp=True):
    """A matrix function ``func(A)`` of a square matrix by Parlett's recurrence on its Schur
    form: ``func`` maps the (complex) eigenvalues, elementwise. Returns the complex ``F``, or
    ``(F, err)`` (an estimate of the relative error) if not ``disp``.

    >>> import functrax.numpy as fnp
    >>> funm(fnp.array([[1.0, 0.0], [0.0, 2.0]]), fnp.exp).real
    Array([[2.7182817, 0.       ],
           [0.       , 7.389056 ]], dtype=float32)
    """
    A = inexact(A)
    if len(shape(A)) != 2 or shape(A)[0] != shape(A)[1]:
        raise ValueError("expected square array_like input")
    if dtype(A).kind == "c":
        t, z = _la.schur(A)
    else:
        t, z = rsf2csf(*_la.schur(A))
    f = fnp.asarray(func(_diag_of(t))).astype(dtype(t))
    fm, minden = _parlett(f, t)
    fm = _mm(_mm(z, fm), adjoint(z))
    if disp:
        return fm
    tol = _eps(t)
    minden = fnp.where(minden == 0, tol, minden)
    err = fnp.minimum(1.0, fnp.maximum(tol, (tol / minden)
                                       * fnp.linalg.norm(fnp.triu(t, 1), 1)))
    err = fnp.where(fnp.any(fnp.isinf(fm)), np.inf, err)
    return fm, err


# --- rsf2csf ---


def _first_eig_shift(t, m):
    """``mu = lambda_1 - t[m, m]`` for the 2x2 block ``t[m-1:m+1, m-1:m+1]`` (the eigenvalue
    with the nonnegative imaginary part, as LAPACK orders them)."""
    a, b = t[..., m - 1, m - 1], t[..., m - 1, m]
    c, d = t[..., m, m - 1], t[..., m, m]
    half = 0.5 * (a - d)
    return half + fnp.sqrt(half * half + b * c)


def _rotate_rows(x, g, m):
    rows = _mm(g, x[..., m - 1:m + 1, :])
    return fnp.concatenate([x[..., :m - 1, :], rows, x[..., m + 1:, :]], axis=-2)


def _rotate_cols(x, gh, m):
    cols = _mm(x[..., :, m - 1:m + 1], gh)
    return fnp.concatenate([x[..., :, :m - 1], cols, x[..., :, m + 1:]], axis=-1)


def rsf2csf(T, Z, check_finite=True):
    """Convert a real Schur form ``(T, Z)`` (``A = Z T Z^T``) to the complex one: ``T``
    upper triangular, ``Z`` unitary, both complex. Batch dimensions of ``T`` and ``Z``
    broadcast.

    >>> import functrax.numpy as fnp
    >>> t, z = rsf2csf(fnp.array([[0.0, 1.0], [-1.0, 0.0]]), fnp.eye(2))
    >>> abs(t[1, 0])
    Array(0., dtype=float32)
    """
    del check_finite
    T, Z = inexact(T, Z)
    for name, x in (("T", T), ("Z", Z)):
        check_square("rsf2csf", x, name)
    if shape(T)[-1] != shape(Z)[-1]:
        raise ValueError(f"rsf2csf: T and Z must have the same matrix shape, got {shape(T)} "
                         f"and {shape(Z)}")
    batch = broadcast_shapes_named("rsf2csf", shape(T)[:-2], shape(Z)[:-2])
    n = shape(T)[-1]
    T = _complex(broadcast_to_shape(T, batch + (n, n)))
    Z = _complex(broadcast_to_shape(Z, batch + (n, n)))
    eps = _eps(T)
    for m in range(n - 1, 0, -1):
        sub = T[..., m, m - 1]
        big = fnp.abs(sub) > eps * (fnp.abs(T[..., m - 1, m - 1]) + fnp.abs(T[..., m, m]))
        mu = _first_eig_shift(T, m)
        r = fnp.sqrt(fnp.abs(mu) ** 2 + fnp.abs(sub) ** 2)
        r = fnp.where(big & (r != 0), r, 1.0).astype(dtype(T))
        c = fnp.where(big, mu / r, 1.0)
        s = fnp.where(big, sub / r, 0.0)
        g = fnp.stack([fnp.stack([fnp.conj(c), s], -1), fnp.stack([-s, c], -1)], -2)
        gh = adjoint(g)
        T = _rotate_cols(_rotate_rows(T, g, m), gh, m)
        Z = _rotate_cols(Z, gh, m)
        T = T.at[..., m, m - 1].set(0)
    return T, Z


# --- Sylvester equation ---


def _triangular_sylvester(r, s, f):
    """``Y`` with ``R Y + Y S = F`` for upper triangular ``R`` ``[..., m, m]`` and ``S``
    ``[..., n, n]``, column by column: ``(R + S[j, j] I) y_j = f_j - Y[:, :j] S[:j, j]``."""
    m, n = shape(f)[-2:]
    eye = fnp.eye(m, dtype=dtype(r))
    cols = []
    for j in range(n):
        rhs = f[..., :, j]
        if j:
            prev = fnp.stack(cols, axis=-1)
            rhs = rhs - _mm(prev, s[..., :j, j:j + 1])[..., 0]
        cols.append(solve_triangular(r + s[..., j, j, None, None] * eye, rhs))
    return fnp.stack(cols, axis=-1)


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
    """Solve the Sylvester equation ``A X + X B = C`` (``A`` ``[..., m, m]``, ``B``
    ``[..., n, n]``, ``C`` ``[..., m, n]``; batch dimensions broadcast).

    Args:
      method: 'schur' (Bartels-Stewart on the complex Schur forms, the default) or 'eigen'
        (eigendecompositions: faster, less accurate for ill-conditioned matrices).
      tol: if an eigenvalue of ``A`` plus one of ``B`` is within ``tol`` of zero (no unique
        solution), the result is NaN.

    Returns:
      ``X`` ``[..., m, n]``, real for real inputs.
    """
    if method not in ("schur", "eigen"):
        raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                         "\"schur\" or \"eigen\".")
    A, B, C = inexact(A, B, C)
    check_square("solve_sylvester", A, "A")
    check_square("solve_sylvester", B, "B")
    m, n = shape(A)[-1], shape(B)[-1]
    if len(shape(C)) < 2 or shape(C)[-2:] != (m, n):
        raise ValueError(f"solve_sylvester: C must have shape [..., {m}, {n}] for A of shape "
                         f"{shape(A)} and B of shape {shape(B)}, got {shape(C)}")
    real = dtype(C).kind != "c"
    batch = broadcast_shapes_named("solve_sylvester", shape(A)[:-2], shape(B)[:-2],
                                   shape(C)[:-2])
    A, B, C = (_complex(broadcast_to_shape(x, batch + shape(x)[-2:])) for x in (A, B, C))
    if method == "schur":
        r, u = _la.schur(A)
        s, v = _la.schur(B)
        y = _triangular_sylvester(r, s, _mm(_mm(adjoint(u), C), v))
        x = _mm(_mm(u, y), adjoint(v))
        la, lb = _diag_of(r), _diag_of(s)
    else:
        la, u = _eigen(A)
        lb, v = _eigen(B)
        y = fnp.linalg.solve(u, _mm(C, v)) / (la[..., :, None] + lb[..., None, :])
        x = _mm(u, fnp.linalg.solve(fnp.swapaxes(v, -1, -2),
                                    fnp.swapaxes(y, -1, -2)).swapaxes(-1, -2))
    gap = fnp.min(fnp.abs(la[..., :, None] + lb[..., None, :]), axis=(-2, -1))
    x = fnp.where((gap < tol)[..., None, None], np.nan, x)
    return fnp.real(x) if real else x


def _eigen(a):
    w, v = _la.eig(a, compute_left_eigenvectors=False)
    return w, v
