"""functrax.scipy.linalg and the functrax.lax.linalg primitives it adds, against scipy.linalg
(and LAPACK through scipy.linalg.lapack) on random well-conditioned matrices, in float32 and
float64 (complex where it matters), with batches; JAX's error texts; derivatives where JAX
defines them (and its NotImplementedError where it does not); jit and vmap."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.linalg.lapack as lapack

import functrax
import functrax.numpy as fnp
from functrax.lax import linalg as lax_linalg
from functrax.scipy import linalg as L
from functrax.test_util import check_grads, enable_x64

DTYPES = (np.float32, np.float64)
TOL = {np.dtype(np.float32): 2e-4, np.dtype(np.float64): 1e-10,
       np.dtype(np.complex64): 2e-4, np.dtype(np.complex128): 1e-10}


@pytest.fixture(params=DTYPES, ids=lambda d: np.dtype(d).name)
def dtype(request):
    with enable_x64(np.dtype(request.param) == np.float64):
        yield np.dtype(request.param)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _well(rng, shape, dtype):
    """Random matrices with singular values in [1, 2]."""
    *batch, m, n = shape
    k = min(m, n)
    q1 = np.linalg.qr(rng.standard_normal((*batch, m, m)))[0]
    q2 = np.linalg.qr(rng.standard_normal((*batch, n, n)))[0]
    s = np.zeros((*batch, m, n))
    s[..., np.arange(k), np.arange(k)] = np.linspace(2.0, 1.0, k)
    a = q1 @ s @ q2
    if np.dtype(dtype).kind == "c":
        a = a + 0.5j * (q1 @ s @ q2.swapaxes(-1, -2))
    return a.astype(dtype)


def _spd(rng, shape, dtype):
    a = _well(rng, shape, dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + np.eye(shape[-1])).astype(dtype)


def _close(got, want, dtype, scale=1.0):
    tol = TOL[np.dtype(dtype)] * scale
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=tol, rtol=tol)


def _loop(fn, *arrays):
    """``fn`` per batch element of arrays ``[b, ...]`` (tuple results stacked)."""
    outs = [fn(*[a[i] for a in arrays]) for i in range(arrays[0].shape[0])]
    if isinstance(outs[0], tuple):
        return tuple(np.stack([o[j] for o in outs]) for j in range(len(outs[0])))
    return np.stack(outs)


# --- Cholesky, LU, solves ---


@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_and_cho_solve(dtype, lower):
    rng = _rng()
    a, b = _spd(rng, (2, 4, 4), dtype), rng.standard_normal((2, 4, 3)).astype(dtype)
    c = L.cholesky(a, lower=lower)
    assert c.dtype == dtype
    _close(c, _loop(lambda x: sl.cholesky(x, lower=lower), a), dtype, 10)
    c2, low = L.cho_factor(a[0], lower=lower)
    assert low is lower
    _close(L.cho_solve((c2, lower), b[0]), sl.cho_solve(sl.cho_factor(a[0], lower=lower), b[0]),
           dtype, 10)
    _close(L.cho_solve(L.cho_factor(a, lower=lower), b), np.linalg.solve(a, b), dtype, 10)
    _close(L.cho_solve((c2, lower), b[0, :, 0]), np.linalg.solve(a[0], b[0, :, 0]), dtype, 10)


def test_cholesky_reads_one_triangle():
    a = _spd(_rng(), (3, 3), np.float32)
    junk = a + np.triu(np.full((3, 3), 7.0, np.float32), 1)
    _close(L.cholesky(junk, lower=True), sl.cholesky(a, lower=True), np.float32, 10)
    junk = a + np.tril(np.full((3, 3), 7.0, np.float32), -1)
    _close(L.cholesky(junk), sl.cholesky(a), np.float32, 10)


def test_cholesky_not_positive_definite_gives_nans():
    assert np.all(np.isnan(np.asarray(L.cholesky(-np.eye(3, dtype=np.float32)))))


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_lu_factor_and_solve(dtype, trans):
    rng = _rng(1)
    a = _well(rng, (5, 5), dtype)
    b = rng.standard_normal((5, 2)).astype(dtype)
    lu, piv = L.lu_factor(a)
    lus, pivs = sl.lu_factor(a)
    _close(lu, lus, dtype, 10)
    np.testing.assert_array_equal(np.asarray(piv), pivs)
    assert piv.dtype == np.int32
    _close(L.lu_solve((lu, piv), b, trans=trans), sl.lu_solve((lus, pivs), b, trans=trans),
           dtype, 10)
    _close(L.lu_solve((lu, piv), b[:, 0], trans=trans),
           sl.lu_solve((lus, pivs), b[:, 0], trans=trans), dtype, 10)


def test_lu_solve_complex_conjugate_transpose_and_batches():
    with enable_x64():
        rng = _rng(2)
        a = _well(rng, (3, 4, 4), np.complex128)
        b = (rng.standard_normal((3, 4)) + 1j).astype(np.complex128)
        x = L.lu_solve(L.lu_factor(a), b, trans=2)
        _close(x, np.linalg.solve(np.conj(np.swapaxes(a, -1, -2)), b[..., None])[..., 0],
               np.complex128, 10)
    with pytest.raises(ValueError, match="'trans' value must be 0, 1, or 2"):
        L.lu_solve(L.lu_factor(np.eye(2)), np.ones(2), trans=3)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("permute_l", [False, True])
def test_lu(dtype, shape, permute_l):
    a = _well(_rng(3), shape, dtype)
    got = L.lu(a, permute_l=permute_l)
    if len(shape) == 2:
        for g, w in zip(got, sl.lu(a, permute_l=permute_l)):
            _close(g, w, dtype, 10)
    recon = got[0] @ got[1] if permute_l else got[0] @ got[1] @ got[2]
    _close(recon, a, dtype, 10)


@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos"])
def test_solve(dtype, assume_a):
    rng = _rng(4)
    a = _spd(rng, (4, 4), dtype)
    b = rng.standard_normal((4, 2)).astype(dtype)
    _close(L.solve(a, b, assume_a=assume_a), sl.solve(a, b, assume_a=assume_a), dtype, 10)
    _close(L.solve(a, b[:, 0], assume_a=assume_a, lower=True),
           sl.solve(a, b[:, 0], assume_a=assume_a, lower=True), dtype, 10)


def test_solve_bad_assume_a():
    with pytest.raises(ValueError, match="Expected assume_a to be one of"):
        L.solve(np.eye(2), np.ones(2), assume_a="banded")


def test_solve_pos_gradient_is_that_of_the_full_matrix():
    with enable_x64():
        rng = _rng(5)
        a, b = _spd(rng, (3, 3), np.float64), rng.standard_normal(3)
        g = functrax.grad(lambda a: fnp.sum(L.solve(a, b, assume_a="pos")))(a)
        g_gen = functrax.grad(lambda a: fnp.sum(L.solve(a, b)))(a)
        _close(g, g_gen, np.float64, 100)
        check_grads(lambda b: L.solve(a, b, assume_a="pos"), (b,), order=2)


@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular(trans, lower):
    with enable_x64():
        rng = _rng(6)
        a = np.triu(_well(rng, (4, 4), np.complex128)) + 2 * np.eye(4)
        a = a.T if lower else a
        b = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
        for unit in (False, True):
            want = sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
            got = L.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
            _close(got, want, np.complex128, 100)


def test_solve_triangular_batched_vector_and_errors():
    rng = _rng(7)
    a = np.triu(_well(rng, (2, 3, 3), np.float32)) + 2 * np.eye(3, dtype=np.float32)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    _close(L.solve_triangular(a, b), _loop(sl.solve_triangular, a, b), np.float32, 10)
    with pytest.raises(ValueError, match="Invalid 'trans' value"):
        L.solve_triangular(a, b, trans=4)
    with pytest.raises(ValueError, match="must have shapes a=\\[..., m, m\\]"):
        L.solve_triangular(a, np.ones((2, 4), np.float32))


# --- QR ---


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("mode", ["full", "economic", "r"])
@pytest.mark.parametrize("pivoting", [False, True])
def test_qr(dtype, shape, mode, pivoting):
    a = _well(_rng(8), shape, dtype)
    got = L.qr(a, mode=mode, pivoting=pivoting)
    want = sl.qr(a, mode=mode, pivoting=pivoting)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if np.asarray(w).dtype.kind in "iu":
            np.testing.assert_array_equal(np.asarray(g), w)
            assert g.dtype == np.int32
        else:
            _close(g, w, dtype, 10)


def test_qr_errors_and_batches():
    with pytest.raises(ValueError, match="Unsupported QR decomposition mode 'raw'"):
        L.qr(np.eye(2), mode="raw")
    a = _well(_rng(9), (3, 4, 3), np.float32)
    q, r, p = L.qr(a, pivoting=True, mode="economic")
    _close(np.take_along_axis(a, np.asarray(p)[:, None, :], axis=-1), q @ r, np.float32, 10)


def test_qr_pivoting_is_differentiable():
    with enable_x64():
        a = _well(_rng(10), (4, 3), np.float64)
        check_grads(lambda a: L.qr(a, mode="economic", pivoting=True)[:2], (a,), order=2,
                    modes=("fwd", "rev"))


@pytest.mark.parametrize("mode", ["left", "right"])
@pytest.mark.parametrize("conjugate", [False, True])
def test_qr_multiply(mode, conjugate):
    with enable_x64():
        rng = _rng(11)
        a = _well(rng, (5, 3), np.complex128)
        for c in (rng.standard_normal((2, 5) if mode == "right" else (3, 2)),
                  rng.standard_normal(5 if mode == "right" else 3)):
            got = L.qr_multiply(a, c, mode=mode, conjugate=conjugate)
            want = sl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
            for g, w in zip(got, want):
                _close(g, w, np.complex128, 10)
        got = L.qr_multiply(a, c, mode=mode, pivoting=True)
        want = sl.qr_multiply(a, c, mode=mode, pivoting=True)
        for g, w in zip(got, want):
            _close(g, w, np.complex128, 10)
    with pytest.raises(ValueError, match="mode must be 'left' or 'right'"):
        L.qr_multiply(np.eye(2), np.eye(2), mode="up")


# --- eigh, svd, det, inv ---


def test_eigh_and_svd(dtype):
    rng = _rng(12)
    a = _well(rng, (4, 4), dtype)
    s = (a + a.T) / 2
    for lower in (True, False):
        w, v = L.eigh(s, lower=lower)
        ws, vs = sl.eigh(s, lower=lower)
        _close(w, ws, dtype, 10)
        _close(np.abs(v), np.abs(vs), dtype, 100)
    _close(L.eigh(np.triu(s), lower=False, eigvals_only=True), ws, dtype, 10)
    u, sv, vh = L.svd(a)
    _close(sv, sl.svd(a, compute_uv=False), dtype, 10)
    _close((u * sv) @ vh, a, dtype, 10)
    _close(L.det(a), sl.det(a), dtype, 10)
    _close(L.inv(a), sl.inv(a), dtype, 10)


def test_eigh_not_implemented_options():
    with pytest.raises(NotImplementedError, match="Only the b=None case"):
        L.eigh(np.eye(2), np.eye(2))
    with pytest.raises(NotImplementedError, match="Only the type=1 case"):
        L.eigh(np.eye(2), type=2)
    with pytest.raises(NotImplementedError, match="Only the eigvals=None case"):
        L.eigh(np.eye(2), eigvals=(0, 1))


def test_eigh_tridiagonal(dtype):
    rng = _rng(13)
    d, e = rng.standard_normal(6).astype(dtype), rng.standard_normal(5).astype(dtype)
    w = L.eigh_tridiagonal(d, e, eigvals_only=True)
    assert w.dtype == dtype
    _close(w, sl.eigh_tridiagonal(d, e, eigvals_only=True), dtype, 10)
    _close(L.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(2, 4)),
           sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(2, 4)),
           dtype, 10)
    ec = (e * np.exp(1j * rng.uniform(0, 6, 5))).astype(np.result_type(dtype, np.complex64))
    dc = d.astype(ec.dtype)
    t = np.diag(dc) + np.diag(ec, -1) + np.diag(np.conj(ec), 1)
    _close(L.eigh_tridiagonal(dc, ec, eigvals_only=True), np.linalg.eigvalsh(t), dtype, 10)


def test_eigh_tridiagonal_errors_and_gradient():
    d, e = np.ones(3, np.float32), np.ones(2, np.float32)
    with pytest.raises(NotImplementedError, match="Calculation of eigenvectors"):
        L.eigh_tridiagonal(d, e)
    with pytest.raises(NotImplementedError, match="select='v'"):
        L.eigh_tridiagonal(d, e, eigvals_only=True, select="v")
    with pytest.raises(ValueError, match="'select must be either"):
        L.eigh_tridiagonal(d, e, eigvals_only=True, select="x")
    with pytest.raises(ValueError, match="empty index range"):
        L.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(2, 1))
    with pytest.raises(TypeError, match="same dtype"):
        L.eigh_tridiagonal(d, e.astype(np.int32), eigvals_only=True)
    with enable_x64():
        rng = _rng(14)
        check_grads(lambda d, e: L.eigh_tridiagonal(d, e, eigvals_only=True),
                    (rng.standard_normal(4), rng.standard_normal(3)), order=2)


# --- Hessenberg, Schur, rsf2csf ---


@pytest.mark.parametrize("complex_input", [False, True])
def test_hessenberg_matches_lapack(dtype, complex_input):
    dt = np.result_type(dtype, np.complex64) if complex_input else dtype
    a = _well(_rng(15), (5, 5), dt)
    h, q = L.hessenberg(a, calc_q=True)
    hs, qs = sl.hessenberg(a, calc_q=True)
    _close(h, hs, dt, 10)
    _close(q, qs, dt, 10)
    _close(L.hessenberg(a), hs, dt, 10)
    packed, taus = lax_linalg.hessenberg(a)
    pk, tau, _ = getattr(lapack, ("c" if dt == np.complex64 else "z" if dt == np.complex128
                                  else "s" if dt == np.float32 else "d") + "gehrd")(a)
    _close(packed, pk, dt, 10)
    _close(taus, tau, dt, 10)


def test_hessenberg_batched_and_jit():
    a = _well(_rng(16), (3, 4, 4), np.float32)
    h, q = functrax.jit(lambda a: L.hessenberg(a, calc_q=True))(a)
    hs, qs = _loop(lambda x: sl.hessenberg(x, calc_q=True), a)
    _close(h, hs, np.float32, 10)
    _close(q, qs, np.float32, 10)
    v = functrax.vmap(L.hessenberg)(a)
    _close(v, hs, np.float32, 10)


def _check_schur(a, t, z, real_form, dt):
    t, z = np.asarray(t), np.asarray(z)
    n = a.shape[-1]
    _close(z @ t @ np.conj(np.swapaxes(z, -1, -2)), a, dt, 100)
    _close(np.conj(np.swapaxes(z, -1, -2)) @ z, np.broadcast_to(np.eye(n), a.shape), dt, 100)
    assert np.all(np.tril(t, -2 if real_form else -1) == 0)
    if real_form:
        for i in range(n - 1):  # standardized 2x2 blocks: equal diagonal, b c < 0
            if t[..., i + 1, i] != 0:
                assert abs(t[i, i] - t[i + 1, i + 1]) <= 1e-4 * max(1.0, abs(t[i, i]))
                assert t[i, i + 1] * t[i + 1, i] < 0
                assert i + 2 >= n or t[i + 2, i + 1] == 0
    _same_spectrum(np.linalg.eigvals(t.astype(np.complex128)),
                   np.linalg.eigvals(a.astype(np.complex128)), TOL[np.dtype(dt)] * 100)


def _same_spectrum(got, want, tol):
    """The same multiset of (complex) eigenvalues, matched greedily by distance."""
    got = list(np.ravel(got))
    for w in np.ravel(want):
        i = int(np.argmin(np.abs(np.asarray(got) - w)))
        assert abs(got[i] - w) <= tol * max(1.0, abs(w)), (got, want)
        got.pop(i)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
def test_schur_real(dtype, n):
    for seed in range(3):
        a = _rng(seed + 100 * n).standard_normal((n, n)).astype(dtype)
        t, z = L.schur(a)
        assert t.dtype == dtype and z.dtype == dtype
        _check_schur(a, t, z, True, dtype)


@pytest.mark.parametrize("n", [1, 2, 4, 7])
def test_schur_complex(dtype, n):
    rng = _rng(n)
    a = rng.standard_normal((n, n)).astype(dtype)
    t, z = L.schur(a, output="complex")
    assert t.dtype == np.result_type(dtype, np.complex64)
    _check_schur(a, t, z, False, dtype)
    ac = (a + 1j * rng.standard_normal((n, n))).astype(t.dtype)
    t, z = L.schur(ac)
    _check_schur(ac, t, z, False, dtype)


def test_schur_special_matrices():
    for a in (np.zeros((4, 4)), np.eye(3), np.diag(np.ones(4), 1), sl.companion([1, 0, 0, 0, -1]),
              np.kron(np.eye(2), np.array([[0.0, 1.0], [-1.0, 0.0]])), sl.hilbert(6),
              np.triu(np.ones((4, 4)))):
        a = a.astype(np.float32)
        t, z = L.schur(a)
        _check_schur(a, t, z, True, np.float32)


def test_schur_batched_vmap_jit_and_errors():
    a = _rng(17).standard_normal((3, 4, 4)).astype(np.float32)
    t, z = L.schur(a)
    t1, z1 = functrax.vmap(L.schur)(a)
    t2, z2 = functrax.jit(L.schur)(a)
    for i in range(3):
        _check_schur(a[i], t[i], z[i], True, np.float32)
        np.testing.assert_array_equal(np.asarray(t1[i]), np.asarray(t[i]))
        np.testing.assert_array_equal(np.asarray(t2[i]), np.asarray(t[i]))
    with pytest.raises(ValueError, match="Expected 'output' to be either 'real' or 'complex'"):
        L.schur(a, output="quasi")
    assert np.all(np.isnan(np.asarray(L.schur(np.full((2, 2), np.nan, np.float32))[0])))
    u = lax_linalg.schur(a[0], compute_schur_vectors=False)
    np.testing.assert_array_equal(np.asarray(u), np.asarray(t[0]))


def test_schur_has_no_derivative():
    with pytest.raises(NotImplementedError, match="Schur factorization have not been"):
        functrax.jvp(L.schur, (np.eye(3, dtype=np.float32),), (np.eye(3, dtype=np.float32),))


def test_rsf2csf(dtype):
    a = _rng(18).standard_normal((5, 5)).astype(dtype)
    ts, zs = sl.schur(a)
    t, z = L.rsf2csf(ts, zs)
    tcs, zcs = sl.rsf2csf(ts, zs)
    _close(t, tcs, dtype, 100)
    _close(z, zcs, dtype, 100)
    t, z = L.rsf2csf(*L.schur(a))
    _check_schur(a, t, z, False, dtype)
    b = _rng(19).standard_normal((2, 3, 3)).astype(dtype)
    tb, zb = L.rsf2csf(*L.schur(b))
    for i in range(2):
        _check_schur(b[i], tb[i], zb[i], False, dtype)


# --- polar ---


@pytest.mark.parametrize("method", ["qdwh", "svd"])
@pytest.mark.parametrize("side,shape", [("right", (5, 3)), ("right", (4, 4)),
                                        ("left", (3, 5))])
def test_polar(dtype, method, side, shape):
    a = _well(_rng(20), shape, dtype)
    u, p = L.polar(a, side=side, method=method)
    us, ps = sl.polar(a, side=side)
    _close(u, us, dtype, 100)
    _close(p, ps, dtype, 100)


def test_polar_errors_and_forward_mode():
    with pytest.raises(NotImplementedError, match="method='qdwh' only supports"):
        L.polar(np.ones((3, 5), np.float32))
    with pytest.raises(ValueError, match="2-D array"):
        L.polar(np.ones((2, 3, 3), np.float32))
    with pytest.raises(ValueError, match="Unknown polar decomposition method"):
        L.polar(np.eye(2), method="newton")
    with enable_x64():
        a = _well(_rng(21), (4, 3), np.float64)
        da = _rng(22).standard_normal((4, 3))
        _, (du, dp) = functrax.jvp(L.polar, (a,), (da,))
        _, (du_s, dp_s) = functrax.jvp(lambda a: L.polar(a, method="svd"), (a,), (da,))
        _close(du, du_s, np.float64, 1e4)
        _close(dp, dp_s, np.float64, 1e4)


def test_lax_qdwh(dtype):
    a = _well(_rng(23), (2, 5, 3), dtype)
    u, h, iters, ok = lax_linalg.qdwh(a)
    assert bool(np.all(np.asarray(ok))) and int(iters) <= 10
    for i in range(2):
        us, hs = sl.polar(a[i])
        _close(u[i], us, dtype, 100)
        _close(h[i], hs, dtype, 100)
    with pytest.raises(ValueError, match="must have M >= N"):
        lax_linalg.qdwh(np.ones((2, 3), np.float32))


# --- matrix functions ---


@pytest.mark.parametrize("scale", [0.01, 0.3, 1.0, 4.0, 20.0])
def test_expm(dtype, scale):
    a = (_rng(24).standard_normal((4, 4)) * scale / 2).astype(dtype)
    want = sl.expm(a.astype(np.float64))
    got = L.expm(a)
    assert got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=TOL[dtype] * 20,
                               atol=TOL[dtype] * 20 * np.abs(want).max())


def test_expm_batched_triangular_complex_and_nan():
    with enable_x64():
        rng = _rng(25)
        a = rng.standard_normal((3, 4, 4))
        _close(L.expm(a), _loop(sl.expm, a), np.float64, 100)
        _close(functrax.jit(L.expm)(a), _loop(sl.expm, a), np.float64, 100)
        u = np.triu(a[0])
        _close(L.expm(u, upper_triangular=True), sl.expm(u), np.float64, 100)
        c = a[0] + 1j * a[1]
        _close(L.expm(c), sl.expm(c), np.complex128, 100)
        big = np.eye(2) * 1e6
        assert np.all(np.isnan(np.asarray(L.expm(big, max_squarings=4))))
    with pytest.raises(ValueError, match="Expected A to be a \\(batched\\) square matrix"):
        L.expm(np.ones((2, 3)))


def test_expm_gradients_and_frechet():
    with enable_x64():
        rng = _rng(26)
        a, e = rng.standard_normal((3, 3)) * 0.7, rng.standard_normal((3, 3))
        check_grads(L.expm, (a,), order=2, modes=("fwd", "rev"))
        got = L.expm_frechet(a, e)
        want = sl.expm_frechet(a, e)
        for g, w in zip(got, want):
            _close(g, w, np.float64, 100)
        _close(L.expm_frechet(a, e, compute_expm=False), want[1], np.float64, 100)
    with pytest.raises(ValueError, match="expected A and E to be the same shape"):
        L.expm_frechet(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="only method='SPS' is supported"):
        L.expm_frechet(np.eye(2), np.eye(2), method="blockEnlarge")


def test_sqrtm(dtype):
    rng = _rng(27)
    # eigenvalues off the negative real axis (the branch cut, where the choice of the
    # square root depends on the sign of a rounding error)
    general = (3 * np.eye(4) + 0.7 * rng.standard_normal((4, 4))).astype(dtype)
    for a in (_spd(rng, (4, 4), dtype), general):
        r = L.sqrtm(a)
        assert r.dtype == np.result_type(dtype, np.complex64)
        _close(r, sl.sqrtm(a.astype(r.dtype)), dtype, 100)
        _close(r @ r, a, dtype, 100)
    b = _spd(rng, (2, 3, 3), dtype)
    _close(L.sqrtm(b), _loop(sl.sqrtm, b), dtype, 100)
    with pytest.raises(NotImplementedError, match="Blocked version"):
        L.sqrtm(np.eye(2), blocksize=2)


@pytest.mark.parametrize("func,ref", [(fnp.exp, sl.expm), (fnp.sin, sl.sinm),
                                      (fnp.cos, sl.cosm)])
def test_funm(dtype, func, ref):
    a = (_rng(28).standard_normal((4, 4)) * 0.8).astype(dtype)
    f = L.funm(a, func)
    assert f.dtype == np.result_type(dtype, np.complex64)
    _close(f, ref(a.astype(np.float64)), dtype, 100)
    f2, err = L.funm(a, func, disp=False)
    _close(f2, f, dtype)
    assert 0 <= float(err) <= 1
    with pytest.raises(ValueError, match="expected square array_like input"):
        L.funm(np.ones((2, 3)), fnp.exp)


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester(dtype, method):
    rng = _rng(29)
    a, b = _spd(rng, (4, 4), dtype), _spd(rng, (3, 3), dtype)
    c = rng.standard_normal((4, 3)).astype(dtype)
    x = L.solve_sylvester(a, b, c, method=method)
    assert x.dtype == dtype
    _close(x, sl.solve_sylvester(a, b, c), dtype, 100)
    cb = rng.standard_normal((2, 4, 3)).astype(dtype)
    xb = L.solve_sylvester(a, b, cb, method=method)
    _close(xb, np.stack([sl.solve_sylvester(a, b, ci) for ci in cb]), dtype, 100)


def test_solve_sylvester_singular_and_errors():
    a = np.diag([1.0, 2.0]).astype(np.float32)
    x = L.solve_sylvester(a, -a, np.ones((2, 2), np.float32))
    assert np.all(np.isnan(np.asarray(x)))
    with pytest.raises(ValueError, match="Unrecognized method"):
        L.solve_sylvester(a, a, a, method="kron")


# --- special matrices ---


def test_special_matrices_match_scipy():
    with enable_x64():
        c, r = np.array([1.0, 2.0, 3.0]), np.array([1.0, 4.0, 5.0, 6.0])
        pairs = [
            (L.toeplitz(c, r), sl.toeplitz(c, r)), (L.toeplitz(c), sl.toeplitz(c)),
            (L.toeplitz(c + 1j), sl.toeplitz(c + 1j)), (L.hankel(c, r), sl.hankel(c, r)),
            (L.hankel(c), sl.hankel(c)), (L.circulant(r), sl.circulant(r)),
            (L.companion(r), sl.companion(r)), (L.fiedler(r), sl.fiedler(r)),
            (L.leslie(r, c), sl.leslie(r, c)), (L.hilbert(5), sl.hilbert(5)),
            (L.invhilbert(6), sl.invhilbert(6)), (L.hadamard(16), sl.hadamard(16)),
            (L.helmert(6), sl.helmert(6)), (L.helmert(6, full=True), sl.helmert(6, full=True)),
            (L.block_diag(np.ones((2, 2)), 3.0, np.arange(3.0), np.zeros((1, 0))),
             sl.block_diag(np.ones((2, 2)), 3.0, np.arange(3.0), np.zeros((1, 0)))),
            (L.block_diag(), sl.block_diag()),
        ]
        assert L.fiedler_companion(np.ones(1)).shape == (0, 0)  # JAX's (scipy: (0,))
        for k in range(2, 9):
            pairs.append((L.fiedler_companion(np.arange(1.0, k + 1)),
                          sl.fiedler_companion(np.arange(1.0, k + 1))))
        for kind in ("symmetric", "lower", "upper"):
            pairs.append((L.pascal(7, kind), sl.pascal(7, kind)))
            pairs.append((L.invpascal(7, kind), sl.invpascal(7, kind)))
        for scale in (None, "n", "sqrtn"):
            pairs.append((L.dft(6, scale), sl.dft(6, scale)))
        for mode in ("full", "same", "valid"):
            for n in (1, 3, 6):
                pairs.append((L.convolution_matrix(c, n, mode),
                              sl.convolution_matrix(c, n, mode)))
        for got, want in pairs:
            assert np.shape(got) == np.shape(want)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_special_matrices_batch_dtypes_and_errors():
    rng = _rng(30)
    c, r = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    _close(L.toeplitz(c, r), _loop(sl.toeplitz, c, r), np.float32)
    _close(L.circulant(c), _loop(sl.circulant, c), np.float32)
    _close(L.companion(r + 3), _loop(sl.companion, r + 3), np.float32, 10)
    _close(L.convolution_matrix(c, 4), _loop(lambda x: sl.convolution_matrix(x, 4), c),
           np.float32)
    assert L.hadamard(4).dtype == np.int32
    assert L.hadamard(4, dtype=np.float32).dtype == np.float32
    assert L.dft(3).dtype == np.complex64 and L.hilbert(3).dtype == np.float32
    assert L.toeplitz(np.arange(3)).dtype == np.int32
    with pytest.raises(ValueError, match="power of 2"):
        L.hadamard(6)
    with pytest.raises(ValueError, match="at least 2"):
        L.companion(np.ones(1))
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        L.block_diag(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="kind must be"):
        L.pascal(3, kind="diagonal")
    with pytest.raises(ValueError, match="mode must be"):
        L.convolution_matrix(np.ones(3), 2, mode="circular")


def test_special_matrices_are_differentiable():
    with enable_x64():
        rng = _rng(31)
        c, r = rng.standard_normal(3), rng.standard_normal(4)
        for fn, args in ((L.toeplitz, (c, r)), (L.hankel, (c, r)), (L.circulant, (r,)),
                         (L.companion, (r + 3,)), (L.fiedler_companion, (r + 3,)),
                         (L.leslie, (r, c)), (lambda x: L.convolution_matrix(x, 4), (c,))):
            check_grads(fn, args, order=2, modes=("fwd", "rev"))


# --- lax.linalg primitives ---


_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
           np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("complex_input", [False, True])
def test_lax_tridiagonal_matches_lapack(dtype, lower, complex_input):
    dt = np.dtype(np.result_type(dtype, np.complex64)) if complex_input else dtype
    a = _well(_rng(32), (5, 5), dt)
    a = a + np.conj(a.T)
    fn = getattr(lapack, _PREFIX[dt] + ("hetrd" if complex_input else "sytrd"))
    c, d, e, tau, _ = fn(a, lower=int(lower))
    got = lax_linalg.tridiagonal(a, lower=lower)
    for g, w in zip(got, (c, d, e, tau)):
        _close(g, w, dt, 100)
    assert got[1].dtype == np.empty((), dt).real.dtype


def test_lax_householder_product_and_ormqr(dtype):
    rng = _rng(33)
    a = _well(rng, (5, 3), dtype)
    qr, tau, _, _ = getattr(lapack, _PREFIX[dtype] + "geqrf")(a)
    q, _, _ = getattr(lapack, _PREFIX[dtype] + "orgqr")(qr, tau)
    _close(lax_linalg.householder_product(qr, tau), q, dtype, 10)
    c = rng.standard_normal((5, 2)).astype(dtype)
    for left, transpose in ((True, False), (True, True)):
        want, _, _ = getattr(lapack, _PREFIX[dtype] + "ormqr")("L", "T" if transpose else "N",
                                                              qr, tau, c, lwork=64)
        _close(lax_linalg.ormqr(qr, tau, c, left=left, transpose=transpose), want, dtype, 10)
    ct = rng.standard_normal((2, 5)).astype(dtype)
    want, _, _ = getattr(lapack, _PREFIX[dtype] + "ormqr")("R", "N", qr, tau, ct, lwork=64)
    _close(lax_linalg.ormqr(qr, tau, ct, left=False), want, dtype, 10)
    with pytest.raises(ValueError, match="at least as many rows as columns"):
        lax_linalg.householder_product(np.ones((2, 3), dtype), np.ones(2, dtype))


def test_lax_tridiagonal_solve(dtype):
    rng = _rng(34)
    m = 6
    dl, du = rng.standard_normal((2, m)).astype(dtype), rng.standard_normal((2, m)).astype(dtype)
    d = (rng.standard_normal((2, m)) * 0.3).astype(dtype)  # needs pivoting
    b = rng.standard_normal((2, m, 3)).astype(dtype)
    dense = np.stack([np.diag(d[i]) + np.diag(dl[i, 1:], -1) + np.diag(du[i, :-1], 1)
                      for i in range(2)])
    _close(lax_linalg.tridiagonal_solve(dl, d, du, b), np.linalg.solve(dense, b), dtype, 100)
    x = functrax.vmap(lax_linalg.tridiagonal_solve, in_axes=(0, 0, 0, 2), out_axes=2)(
        dl, d, du, np.moveaxis(b, 0, 2))
    _close(np.moveaxis(np.asarray(x), 2, 0), np.linalg.solve(dense, b), dtype, 100)
    with pytest.raises(ValueError, match="same shape"):
        lax_linalg.tridiagonal_solve(dl, d, du, b[:, :4])


def test_lax_tridiagonal_solve_gradients():
    with enable_x64():
        rng = _rng(35)
        args = (rng.standard_normal(4), rng.uniform(3, 4, 4), rng.standard_normal(4),
                rng.standard_normal((4, 2)))
        check_grads(lax_linalg.tridiagonal_solve, args, order=2, modes=("fwd", "rev"))


def test_lax_eig():
    with enable_x64():
        a = _rng(36).standard_normal((2, 5, 5))
        w, vl, vr = lax_linalg.eig(a)
        for i in range(2):
            _same_spectrum(np.asarray(w[i]), sl.eigvals(a[i]), 1e-10)
            _close(a[i] @ vr[i], vr[i] * w[i], np.complex128, 100)
            vlh = np.conj(np.asarray(vl[i]).T)
            _close(vlh @ a[i], w[i][:, None] * vlh, np.complex128, 100)
            _close(np.linalg.norm(vl[i], axis=0), np.ones(5), np.complex128, 10)
        w2, vr2 = lax_linalg.eig(a, compute_left_eigenvectors=False)
        np.testing.assert_array_equal(np.asarray(vr2), np.asarray(vr))
        assert w.dtype == np.complex128
    w32 = lax_linalg.eig(np.eye(2, dtype=np.float32), compute_left_eigenvectors=False,
                         compute_right_eigenvectors=False)
    assert len(w32) == 1 and w32[0].dtype == np.complex64


def test_lax_eig_derivatives():
    with enable_x64():
        a = _rng(37).standard_normal((4, 4))

        def eigvals(a):
            return lax_linalg.eig(a, compute_left_eigenvectors=False,
                                  compute_right_eigenvectors=False)[0]
        check_grads(lambda a: fnp.real(eigvals(a)), (a,), order=1, modes=("fwd", "rev"))
        check_grads(lambda a: fnp.imag(eigvals(a)), (a,), order=1, modes=("fwd", "rev"))
        with pytest.raises(NotImplementedError, match="derivatives of eigenvectors"):
            functrax.jvp(lambda a: lax_linalg.eig(a)[2], (a,), (a,))


@pytest.mark.parametrize("prim", ["hessenberg", "tridiagonal"])
def test_lax_householder_reductions_have_no_derivative(prim):
    fn = getattr(lax_linalg, prim)
    with pytest.raises(NotImplementedError, match=f"Differentiation rule for '{prim}'"):
        functrax.jvp(fn, (np.eye(3, dtype=np.float32),), (np.eye(3, dtype=np.float32),))


def test_lax_cholesky_update_and_symmetric_product(dtype):
    rng = _rng(38)
    a = _spd(rng, (4, 4), dtype)
    r = np.linalg.cholesky(a).T
    w = rng.standard_normal(4).astype(dtype)
    _close(lax_linalg.cholesky_update(r, w), np.linalg.cholesky(a + np.outer(w, w)).T,
           dtype, 100)
    x, c = rng.standard_normal((4, 2)).astype(dtype), a
    _close(lax_linalg.symmetric_product(x, c, alpha=-1.0, beta=2.0), -x @ x.T + 2 * c,
           dtype, 10)


def test_lax_subset_by_index_and_enums():
    s = np.diag(np.arange(1.0, 6.0)).astype(np.float32)
    v, w = lax_linalg.eigh(s, subset_by_index=(1, 4))
    np.testing.assert_allclose(np.asarray(w), [2.0, 3.0, 4.0])
    assert v.shape == (5, 3)
    u, sv, vh = lax_linalg.svd(s, full_matrices=False, subset_by_index=(0, 2),
                               algorithm=lax_linalg.SvdAlgorithm.JACOBI)
    np.testing.assert_allclose(np.asarray(sv), [5.0, 4.0])
    assert u.shape == (5, 2) and vh.shape == (2, 5)
    with pytest.raises(ValueError, match="cannot both be set"):
        lax_linalg.svd(s, subset_by_index=(0, 2))
    assert lax_linalg.EighImplementation.QDWH.value == "qdwh"
    assert lax_linalg.EigImplementation.LAPACK.value == "lapack"


def test_lax_qr_pivoting_matches_lapack(dtype):
    a = _well(_rng(39), (4, 6), dtype)
    q, r, p = lax_linalg.qr(a, pivoting=True)
    qs, rs, ps = sl.qr(a, pivoting=True)
    np.testing.assert_array_equal(np.asarray(p), ps)
    _close(r, rs, dtype, 10)
    _close(q, qs, dtype, 10)


def test_new_primitives_in_jaxprs():
    a = np.eye(3, dtype=np.float32)
    text = str(functrax.make_jaxpr(lambda a: (lax_linalg.schur(a), lax_linalg.hessenberg(a)))(a))
    assert "schur[" in text and "hessenberg" in text
    functrax.check_jaxpr(functrax.make_jaxpr(lambda a: L.sqrtm(a))(a))


@pytest.mark.parametrize("module", [
    "functrax.scipy.linalg", "functrax.scipy.linalg_solve", "functrax.scipy.linalg_special",
    "functrax.scipy.linalg_matfuncs", "functrax.lax.qdwh", "functrax.lax.linalg",
    "functrax.primitives.linalg_more"])
def test_docstring_examples(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module),
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 2
