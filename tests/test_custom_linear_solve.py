"""lax.custom_linear_solve (a CG solve) and lax.custom_root (a Newton root): values,
forward and reverse gradients against finite differences and against differentiating
through the solver, vmap, jit, and JAX's errors."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.test_util import enable_x64

RNG = np.random.RandomState(0)
_M = RNG.randn(3, 3)
A0 = (_M @ _M.T + 3 * np.eye(3)).astype(np.float64)
B0 = RNG.randn(3)


def cg(matvec, b, iters=3):
    x = fnp.zeros_like(b)
    r = b - matvec(x)
    p, rs = r, fnp.dot(r, r)
    for _ in range(iters):
        Ap = matvec(p)
        alpha = rs / fnp.dot(p, Ap)
        x, r = x + alpha * p, r - alpha * Ap
        rs_new = fnp.dot(r, r)
        p, rs = r + (rs_new / rs) * p, rs_new
    return x


def loss_custom(A, b):
    return fnp.sum(lax.custom_linear_solve(lambda v: A @ v, b, cg, symmetric=True) ** 2)


def loss_nonsymmetric(A, b):
    return fnp.sum(lax.custom_linear_solve(lambda v: A @ v, b,
                                           lambda mv, r: fnp.linalg.solve(A, r),
                                           lambda vm, r: fnp.linalg.solve(A.T, r)) ** 2)


def loss_through_solver(A, b):
    return fnp.sum(cg(lambda v: A @ v, b) ** 2)


def _fd_grad(f, A, b, eps=1e-6):
    gA, gb = np.zeros_like(A), np.zeros_like(b)
    for idx in np.ndindex(A.shape):
        d = np.zeros_like(A)
        d[idx] = eps
        gA[idx] = (float(f(A + d, b)) - float(f(A - d, b))) / (2 * eps)
    for i in range(b.size):
        d = np.zeros_like(b)
        d[i] = eps
        gb[i] = (float(f(A, b + d)) - float(f(A, b - d))) / (2 * eps)
    return gA, gb


@pytest.fixture(autouse=True)
def _x64():
    with enable_x64():
        yield


@pytest.mark.parametrize("loss", [loss_custom, loss_nonsymmetric])
def test_linear_solve_gradients(loss):
    want = np.linalg.solve(A0, B0)
    np.testing.assert_allclose(float(loss(A0, B0)), np.sum(want ** 2), rtol=1e-10)
    gA, gb = functrax.grad(loss, (0, 1))(A0, B0)
    # finite differences of the exact solve (CG needs a symmetric matrix: perturbing one
    # entry of A breaks that, so CG itself is not differenced in A)
    fA, fb = _fd_grad(lambda A, b: np.sum(np.linalg.solve(A, b) ** 2), A0, B0)
    np.testing.assert_allclose(gA, fA, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(gb, fb, rtol=1e-5, atol=1e-8)
    # differentiating through the solver: equal in b, and in A along symmetric directions
    tA, tb = functrax.grad(loss_through_solver, (0, 1))(A0, B0)
    sym = lambda m: np.asarray(m) + np.asarray(m).T  # noqa: E731
    np.testing.assert_allclose(sym(gA), sym(tA), rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(gb, tb, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(functrax.jacfwd(loss, 1)(A0, B0), tb, rtol=1e-8)


def test_linear_solve_vmap_jit_and_jaxpr():
    bs = np.stack([B0, 2 * B0, -B0])
    g = functrax.vmap(functrax.grad(loss_custom, 1), (None, 0))(A0, bs)
    want = np.stack([functrax.grad(loss_through_solver, 1)(A0, b) for b in bs])
    np.testing.assert_allclose(g, want, rtol=1e-8)
    np.testing.assert_allclose(functrax.jit(functrax.grad(loss_custom, 1))(A0, B0), want[0],
                               rtol=1e-8)
    xs = functrax.vmap(lambda A: lax.custom_linear_solve(lambda v: A @ v, B0, cg,
                                                         symmetric=True))(np.stack([A0, 2 * A0]))
    np.testing.assert_allclose(xs[1], np.linalg.solve(2 * A0, B0), rtol=1e-8)
    jaxpr = functrax.make_jaxpr(lambda b: lax.custom_linear_solve(
        lambda v: A0 @ v, b, cg, symmetric=True))(B0)
    assert jaxpr.eqns[-1].primitive.name == "custom_linear_solve"


def test_linear_solve_has_aux_and_errors():
    def solve(mv, b):
        return cg(mv, b), fnp.sum(b)
    x, aux = lax.custom_linear_solve(lambda v: A0 @ v, B0, solve, solve, symmetric=True,
                                     has_aux=True)
    np.testing.assert_allclose(x, np.linalg.solve(A0, B0), rtol=1e-8)
    np.testing.assert_allclose(aux, B0.sum())
    with pytest.raises(TypeError, match="transpose_solve required for backwards mode"):
        functrax.grad(lambda b: fnp.sum(lax.custom_linear_solve(lambda v: A0 @ v, b, cg)))(B0)
    with pytest.raises(TypeError, match="matvec\\(\\) output pytree structure must match b"):
        lax.custom_linear_solve(lambda v: (v, v), B0, cg)


def newton(f, x):
    for _ in range(30):
        x = x - f(x) / functrax.grad(f)(x)
    return x


def cube_root(a):
    return lax.custom_root(lambda x: x ** 3 - a, 1.0, newton, lambda g, y: y / g(1.0))


def test_custom_root_values_and_gradients():
    a = 5.0
    np.testing.assert_allclose(float(cube_root(a)), a ** (1 / 3), rtol=1e-12)
    want = (1 / 3) * a ** (-2 / 3)
    np.testing.assert_allclose(float(functrax.grad(cube_root)(a)), want, rtol=1e-10)
    np.testing.assert_allclose(float(functrax.jvp(cube_root, (a,), (1.0,))[1]), want,
                               rtol=1e-10)
    fd = (float(cube_root(a + 1e-6)) - float(cube_root(a - 1e-6))) / 2e-6
    np.testing.assert_allclose(float(functrax.grad(cube_root)(a)), fd, rtol=1e-6)
    through = functrax.grad(lambda a: newton(lambda x: x ** 3 - a, 1.0))(a)
    np.testing.assert_allclose(float(functrax.grad(cube_root)(a)), float(through), rtol=1e-8)
    np.testing.assert_allclose(float(functrax.grad(functrax.grad(cube_root))(a)),
                               -(2 / 9) * a ** (-5 / 3), rtol=1e-8)
    np.testing.assert_allclose(functrax.vmap(cube_root)(np.array([8.0, 27.0])), [2.0, 3.0],
                               rtol=1e-12)
    np.testing.assert_allclose(float(functrax.jit(functrax.grad(cube_root))(a)), want,
                               rtol=1e-10)


def test_custom_root_errors():
    with pytest.raises(TypeError, match="f\\(\\) output pytree structure must match "
                                        "initial_guess"):
        lax.custom_root(lambda x: (x, x), 1.0, newton, lambda g, y: y)
