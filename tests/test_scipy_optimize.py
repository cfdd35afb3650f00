"""functrax.scipy.optimize.minimize (BFGS and L-BFGS) against scipy.optimize (test-only) on
quadratic and Rosenbrock problems, eagerly, under jit and under vmap over x0; the result
fields, options and errors as JAX's."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so

import functrax
import functrax.numpy as fnp
from functrax.scipy import optimize
from functrax.scipy.optimize import OptimizeResults, minimize
from functrax.test_util import enable_x64

LBFGS = "l-bfgs-experimental-do-not-rely-on-this"
METHODS = ("BFGS", LBFGS)


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_np(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


_A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
_B = np.array([1.0, -2.0, 0.5])


def quadratic(x, a, b):
    return 0.5 * x @ (a @ x) - b @ x


def test_results_fields_are_jax_s():
    assert OptimizeResults._fields == ("x", "success", "status", "fun", "jac", "hess_inv",
                                       "nfev", "njev", "nit")
    assert set(optimize.__all__) == {"OptimizeResults", "minimize"}


@pytest.mark.parametrize("method", METHODS)
def test_quadratic_matches_the_solution(method):
    with enable_x64():
        a, b = fnp.asarray(_A), fnp.asarray(_B)
        options = {"gtol": 1e-9} if method == "BFGS" else {}  # L-BFGS stops on ftol first
        res = minimize(quadratic, fnp.zeros(3), args=(a, b), method=method, options=options)
        want = np.linalg.solve(_A, _B)
        np.testing.assert_allclose(np.asarray(res.x), want, atol=1e-8 if options else 1e-5)
        np.testing.assert_allclose(float(res.fun), quadratic(want, _A, _B), atol=1e-10)
        np.testing.assert_allclose(np.asarray(res.jac), _A @ np.asarray(res.x) - _B, atol=1e-8)
        assert bool(res.success) and int(res.status) == 0
        assert int(res.nfev) >= int(res.nit) >= 1 and int(res.njev) == int(res.nfev)
        if method == "BFGS":  # the inverse Hessian estimate of a quadratic is exact-ish
            np.testing.assert_allclose(np.asarray(res.hess_inv), np.linalg.inv(_A), atol=1e-3)
        else:
            assert res.hess_inv is None


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("x0", [(-1.2, 1.0), (-1.2, 1.0, 0.9, 1.2, 1.1), (2.0, -1.0, 0.5)])
def test_bfgs_rosenbrock_matches_scipy(x64, x0):
    x0 = np.array(x0)  # (the 5-d start ends in Rosenbrock's local minimum, as scipy's)
    want = so.minimize(rosen_np, x0, method="BFGS")
    with enable_x64(x64):
        res = minimize(rosen, fnp.asarray(x0), method="BFGS")
        tol = 5e-5 if x64 else 2e-3  # scipy's own accuracy (gtol 1e-5)
        np.testing.assert_allclose(np.asarray(res.x), want.x, atol=tol)
        assert res.x.dtype == (np.float64 if x64 else np.float32)
        if x64:
            assert bool(res.success) and int(res.status) == 0
            assert abs(int(res.nit) - want.nit) <= 10


def test_lbfgs_rosenbrock():
    with enable_x64():
        x0 = np.array([-1.2, 1.0, 0.9, 1.2])
        res = minimize(rosen, fnp.asarray(x0), method=LBFGS, options={"gtol": 1e-8})
        want = so.minimize(rosen_np, x0, method="L-BFGS-B")  # a local minimum
        np.testing.assert_allclose(np.asarray(res.x), want.x, atol=1e-4)
        res = minimize(rosen, fnp.asarray(np.array([-1.2, 1.0])), method=LBFGS)
        np.testing.assert_allclose(np.asarray(res.x), np.ones(2), atol=1e-4)


def test_lbfgs_complex_parameters():
    with enable_x64():
        c = fnp.asarray(np.array([1 + 2j, -0.5j, 3.0]))
        res = minimize(lambda z: fnp.sum(fnp.abs(z - c) ** 2), fnp.zeros(3, np.complex128),
                       method=LBFGS)
        np.testing.assert_allclose(np.asarray(res.x), np.asarray(c), atol=1e-8)
        assert bool(res.success)


@pytest.mark.parametrize("method", METHODS)
def test_jit_matches_eager(method):
    x0 = fnp.asarray(np.array([-1.2, 1.0, 0.5]))
    eager = minimize(rosen, x0, method=method)
    jitted = functrax.jit(lambda x: minimize(rosen, x, method=method))(x0)
    for f in ("x", "fun", "nit", "nfev", "status", "success"):
        np.testing.assert_allclose(np.asarray(getattr(jitted, f)), np.asarray(getattr(eager, f)),
                                   rtol=1e-5, atol=1e-6, err_msg=f)


@pytest.mark.parametrize("method", METHODS)
def test_vmap_over_x0_matches_a_loop(method):
    with enable_x64():
        a, b = fnp.asarray(_A), fnp.asarray(_B)
        x0s = fnp.asarray(np.random.default_rng(0).standard_normal((4, 3)))

        def solve(x0):
            return minimize(quadratic, x0, args=(a, b), method=method)
        batched = functrax.vmap(solve)(x0s)
        for i in range(4):
            single = solve(x0s[i])
            np.testing.assert_allclose(np.asarray(batched.x[i]), np.asarray(single.x),
                                       atol=1e-9)
            assert int(batched.nit[i]) == int(single.nit)
            assert bool(batched.success[i]) == bool(single.success)
        np.testing.assert_allclose(np.asarray(batched.x),
                                   np.tile(np.linalg.solve(_A, _B), (4, 1)), atol=1e-6)


def test_vmap_rosenbrock_and_jit_of_vmap():
    x0s = fnp.asarray(np.array([[-1.2, 1.0], [2.0, 2.0], [0.5, -0.5]]))
    fn = functrax.jit(functrax.vmap(lambda x: minimize(rosen, x, method="BFGS").x))
    np.testing.assert_allclose(np.asarray(fn(x0s)), np.ones((3, 2)), atol=2e-3)


def test_options_maxiter_and_gtol():
    x0 = fnp.asarray(np.array([-1.2, 1.0]))
    res = minimize(rosen, x0, method="BFGS", options={"maxiter": 3})
    assert int(res.nit) == 3 and int(res.status) == 1 and not bool(res.success)
    loose = minimize(rosen, x0, method="BFGS", options={"gtol": 1e-1})
    tight = minimize(rosen, x0, method="BFGS")
    assert int(loose.nit) < int(tight.nit)
    res = minimize(rosen, x0, method=LBFGS, options={"maxiter": 2})
    assert int(res.status) == 1 and not bool(res.success)


def test_already_optimal_start():
    res = minimize(rosen, fnp.ones(3), method="BFGS")
    assert int(res.nit) == 0 and bool(res.success)


def test_gradient_of_the_solution_through_fun_args():
    # the solution of a quadratic, as a function of b, through the unrolled BFGS loop is
    # not differentiable in reverse mode (a while_loop), but forward mode works
    with enable_x64():
        a = fnp.asarray(_A)

        def x_of_b(b):
            return minimize(quadratic, fnp.zeros(3), args=(a, b), method="BFGS").x
        _, dx = functrax.jvp(x_of_b, (fnp.asarray(_B),), (fnp.asarray(np.eye(3)[0]),))
        np.testing.assert_allclose(np.asarray(dx), np.linalg.solve(_A, np.eye(3)[0]),
                                   atol=1e-4)


def test_errors():
    with pytest.raises(TypeError, match="args argument to .* must be a tuple"):
        minimize(rosen, fnp.zeros(2), args=[1.0])
    with pytest.raises(ValueError, match="Method Nelder-Mead not recognized"):
        minimize(rosen, fnp.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match="x0 must be a 1-d array"):
        minimize(rosen, fnp.zeros((2, 2)))
    res = minimize(lambda x: fnp.sum((x - 1.0) ** 2), np.zeros(2, np.int32), method="bfgs")
    assert res.x.dtype == np.float32


def test_docstring_examples():
    import doctest
    result = doctest.testmod(optimize, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted >= 2
