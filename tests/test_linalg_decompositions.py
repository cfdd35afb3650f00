"""Decompositions (functrax.lax.linalg / functrax.numpy.linalg) beyond the op-spec table:
errors as JAX's, NaNs on failure, singular matrices, transposition of triangular_solve,
vmap with unbatched operands, derivatives of solve/inv/det/pinv, complex inputs, lstsq."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.test_util import check_grads, enable_x64
from tests.opspec.linalg import spd, spread, symmetric, triangular

LA = fnp.linalg
F32 = np.float32


def _rng(seed=0):
    return np.random.RandomState(seed)


def _close(got, want, tol=1e-4):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


# --- errors ---


@pytest.mark.parametrize("fn, name", [
    (LA.cholesky, "cholesky"), (LA.inv, "inv"), (LA.det, "det"), (LA.slogdet, "slogdet"),
    (LA.eigh, "eigh"), (LA.eigvalsh, "eigh"),
])
def test_square_required(fn, name):
    with pytest.raises(ValueError, match=rf"{name}.*\[\.\.\., n, n\].*\(2, 3\)"):
        fn(np.ones((2, 3), F32))
    with pytest.raises(ValueError, match=r"\(3,\)"):
        fn(np.ones((3,), F32))


@pytest.mark.parametrize("fn", [LA.svd, LA.qr, LA.pinv, lax.linalg.lu])
def test_rank_two_required(fn):
    with pytest.raises(ValueError, match=r"(two dimensions|rank >= 2).*\(3,\)"):
        fn(np.ones((3,), F32))


def test_primitive_errors():
    with pytest.raises(TypeError, match="cholesky does not accept dtype float16"):
        lax.linalg.cholesky(np.eye(2, dtype=np.float16), symmetrize_input=False)
    with pytest.raises(TypeError, match="lu does not accept dtype int32"):
        lax.linalg.lu(np.eye(2, dtype=np.int32))
    with pytest.raises(ValueError, match="must be a square matrix.*\\(2, 3\\)"):
        lax.linalg.cholesky(np.ones((2, 3), F32), symmetrize_input=False)


def test_triangular_solve_errors():
    ts = lax.linalg.triangular_solve
    with pytest.raises(TypeError, match="a.ndim to be at least 2, got 1"):
        ts(np.ones(3, F32), np.ones((3, 3), F32))
    with pytest.raises(TypeError, match="last two dimensions of a to be equal"):
        ts(np.ones((2, 3), F32), np.ones((3, 3), F32))
    with pytest.raises(TypeError, match="equal batch dimensions"):
        ts(np.ones((2, 3, 3), F32), np.ones((3, 3, 3), F32))
    with pytest.raises(TypeError, match="Incompatible shapes"):
        ts(np.ones((3, 3), F32), np.ones((3, 2), F32))  # right side: b must be [..., n, 3]
    with pytest.raises(TypeError, match="same dtype"):
        ts(np.ones((3, 3), F32), np.ones((3, 3), np.float64).astype(np.complex64))


def test_solve_errors():
    with pytest.raises(ValueError, match=r"a=\[\.\.\., m, m\].*a=\(3, 3\) and b=\(2,\)"):
        LA.solve(np.eye(3, dtype=F32), np.ones(2, F32))
    with pytest.raises(ValueError, match=r"a=\(2, 3\)"):
        LA.solve(np.ones((2, 3), F32), np.ones(2, F32))
    with pytest.raises(TypeError, match="asarray"):
        LA.solve([[1.0]], [1.0])


def test_option_errors():
    with pytest.raises(ValueError, match="Unsupported QR decomposition mode 'raw'"):
        LA.qr(np.eye(2, dtype=F32), mode="raw")
    with pytest.raises(ValueError, match="UPLO must be 'L' or 'U'"):
        LA.eigh(np.eye(2, dtype=F32), UPLO="X")
    with pytest.raises(NotImplementedError, match="subset_by_index"):
        LA.svd(np.eye(2, dtype=F32), subset_by_index=(0, 1))
    with pytest.raises(ValueError, match="method"):
        LA.slogdet(np.eye(2, dtype=F32), method="qr")


def test_derivative_not_implemented_cases():
    a = spread(_rng(), (3, 4), F32)
    with pytest.raises(NotImplementedError, match="QR decomposition derivative"):
        functrax.jvp(lambda x: LA.qr(x), (a,), (a,))
    with pytest.raises(NotImplementedError, match="full matrices"):
        functrax.jvp(lambda x: LA.svd(x), (a,), (a,))


# --- values ---


def test_cholesky_failure_gives_nans_per_matrix():
    a = np.stack([spd(_rng(), (3, 3), F32), -np.eye(3, dtype=F32)])
    out = np.asarray(LA.cholesky(a))
    _close(out[0], np.linalg.cholesky(a[0]))
    assert np.isnan(out[1]).all()


def test_singular_matrices():
    z = np.array([[1.0, 2.0], [2.0, 4.0]], F32)
    assert float(LA.det(z)) == 0.0
    sign, logdet = LA.slogdet(z)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    assert not np.isfinite(np.asarray(LA.inv(z))).all()
    assert int(LA.matrix_rank(z)) == 1


def test_permutation_parity():
    p = np.eye(4, dtype=F32)[[1, 0, 3, 2]] * 2.0  # two swaps: det +16
    _close(LA.det(p), 16.0)
    _close(LA.det(p[[1, 0, 2, 3]]), -16.0)
    _close(LA.slogdet(p[[1, 0, 2, 3]]).sign, -1.0)


def test_lu_reconstructs_and_pivots_match_permutation():
    a = _rng().standard_normal((2, 5, 4)).astype(np.float64)
    with enable_x64():
        lu, piv, perm = lax.linalg.lu(a)
        perm2 = lax.linalg.lu_pivots_to_permutation(piv, 5)
    lu, piv, perm = map(np.asarray, (lu, piv, perm))
    np.testing.assert_array_equal(perm, np.asarray(perm2))
    for b in range(2):
        L = np.tril(lu[b], -1)[:, :4] + np.eye(5, 4)
        U = np.triu(lu[b])[:4]
        _close(a[b][perm[b]], L @ U, 1e-12)
        assert (np.abs(np.tril(lu[b], -1)) <= 1 + 1e-12).all()  # partial pivoting


def test_triangular_solve_reads_one_triangle_and_vectors():
    rng = _rng()
    a = triangular(rng, (3, 3), F32)
    b = rng.standard_normal(3).astype(F32)
    got = lax.linalg.triangular_solve(a + np.triu(np.ones((3, 3), F32), 1), b,
                                      left_side=True, lower=True)
    _close(got, np.linalg.solve(np.tril(a), b))
    got = lax.linalg.triangular_solve(a, b, left_side=False, lower=False)  # x @ triu(a) = b
    _close(got, np.linalg.solve(np.triu(a).T, b))


def test_lstsq_matches_numpy():
    rng = _rng()
    a = spread(rng, (5, 3), F32)
    for b in (rng.standard_normal(5).astype(F32), rng.standard_normal((5, 2)).astype(F32)):
        x, resid, rank, s = LA.lstsq(a, b, numpy_resid=True)
        xn, rn, kn, sn = np.linalg.lstsq(a, b)
        _close(x, xn)
        _close(resid, rn, 1e-3)
        assert int(rank) == kn
        _close(s, sn)


def test_complex_inputs():
    rng = _rng()
    c = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))).astype(np.complex64)
    h = c @ c.conj().T + np.eye(3, dtype=np.complex64)
    _close(LA.cholesky(h), np.linalg.cholesky(h))
    w, v = LA.eigh(h)
    assert w.dtype == F32
    _close((np.asarray(v) * np.asarray(w)) @ np.asarray(v).conj().T, h, 1e-3)
    _close(LA.svd(c, compute_uv=False), np.linalg.svd(c, compute_uv=False))
    _close(LA.det(c), np.linalg.det(c), 1e-3)
    _close(LA.solve(c, np.ones(3, F32)), np.linalg.solve(c, np.ones(3)), 1e-3)
    q, r = LA.qr(c)
    _close(np.asarray(q) @ np.asarray(r), c)


# --- transforms ---


def test_jaxpr_prints_the_primitives():
    closed = functrax.make_jaxpr(lambda a: LA.eigh(a))(np.eye(3, dtype=F32))
    functrax.check_jaxpr(closed)
    text = closed.pretty_print(width=200)
    assert "eigh[lower=True sort_eigenvalues=True]" in text, text


def test_triangular_solve_linear_transpose():
    rng = _rng()
    a = triangular(rng, (3, 3), F32)
    ct = rng.standard_normal((3, 2)).astype(F32)
    f = functools.partial(lax.linalg.triangular_solve, a, left_side=True, lower=True)
    (got,) = functrax.linear_transpose(f, np.zeros((3, 2), F32))(ct)
    _close(got, np.linalg.solve(np.tril(a).T, ct))


@pytest.mark.parametrize("a_axis, b_axis", [(None, 0), (0, None), (1, 2), (None, 1)])
def test_triangular_solve_vmap(a_axis, b_axis):
    rng = _rng()
    a = np.stack([triangular(rng, (3, 3), F32) for _ in range(2)])
    b = rng.standard_normal((2, 3, 4)).astype(F32)
    ts = functools.partial(lax.linalg.triangular_solve, left_side=True, lower=False)
    args = [a[0] if a_axis is None else np.moveaxis(a, 0, a_axis),
            b[0] if b_axis is None else np.moveaxis(b, 0, b_axis)]
    got = functrax.vmap(ts, in_axes=(a_axis, b_axis))(*args)
    want = [ts(a[0 if a_axis is None else i], b[0 if b_axis is None else i]) for i in range(2)]
    _close(got, np.stack([np.asarray(w) for w in want]))


def test_jit_and_grad_of_solve_inv_det():
    rng = _rng()
    with enable_x64():
        a = spread(rng, (3, 3), np.float64)
        b = rng.standard_normal(3)
        check_grads(LA.solve, (a, b), order=2, modes=("fwd", "rev"))
        check_grads(LA.inv, (a,), order=1, modes=("fwd", "rev"))
        check_grads(LA.det, (a,), order=2, modes=("fwd", "rev"))
        # d det / da = det * inv(a)^T
        g = functrax.grad(LA.det)(a)
        _close(g, np.linalg.det(a) * np.linalg.inv(a).T, 1e-10)
        g = functrax.grad(lambda x: LA.slogdet(x).logabsdet)(a)
        _close(g, np.linalg.inv(a).T, 1e-10)
        got = functrax.jit(LA.solve)(a, b)
        _close(got, np.linalg.solve(a, b), 1e-10)


def test_grad_of_eigh_and_cholesky_batched_under_vmap():
    rng = _rng()
    with enable_x64():
        s = symmetric(rng, (2, 3, 3), np.float64)
        g = functrax.vmap(functrax.grad(lambda x: LA.eigvalsh(x)[-1]))(s)
        # d lambda_max / dA = v v^T for the top eigenvector v
        w, v = np.linalg.eigh(s)
        _close(g, v[..., :, -1:] * v[..., None, :, -1], 1e-8)
        p = spd(rng, (3, 3), np.float64)
        check_grads(lambda x: LA.cholesky(x), (p,), order=2, modes=("fwd", "rev"))
