"""The differentiation extras of JAX's API: jacobian, holomorphic / allow_int (float0),
vjp/linearize results as pytrees (Partial), fwd_and_bwd, custom_gradient, closure_convert,
linear_call, symbolic zeros and nondiff_argnames of the custom derivatives."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import custom_derivatives as cd
from functrax import tree_util


def test_jacobian_is_jacrev():
    f = lambda x: fnp.sin(x) * x[0]  # noqa: E731
    x = fnp.array([0.5, 1.5, 2.0])
    np.testing.assert_allclose(functrax.jacobian(f)(x), functrax.jacfwd(f)(x), rtol=1e-6)


def test_holomorphic_grad_and_jacobians():
    z = fnp.complex64(1.0 + 2.0j)
    f = lambda z: z * z + fnp.sin(z)  # noqa: E731
    want = 2 * (1 + 2j) + np.cos(1 + 2j)
    for d in (functrax.grad(f, holomorphic=True), functrax.jacfwd(f, holomorphic=True),
              functrax.jacrev(f, holomorphic=True)):
        np.testing.assert_allclose(complex(d(z)), want, rtol=1e-5)


def test_holomorphic_error_texts():
    with pytest.raises(TypeError, match="grad requires real-valued outputs .*pass "
                                        "holomorphic=True"):
        functrax.grad(lambda z: z * z)(fnp.complex64(1j))
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex"):
        functrax.grad(lambda x: x * x, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        functrax.jacfwd(lambda z: z)(fnp.complex64(1j))


def test_allow_int_gives_float0():
    g = functrax.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert g[1].dtype == functrax.float0 and float(g[0]) == 3.0
    with pytest.raises(TypeError, match="allow_int"):
        functrax.grad(lambda x, n: x * n, argnums=1)(2.0, 3)
    j = functrax.jacrev(lambda x, n: x * n, argnums=1, allow_int=True)(fnp.ones(2), 3)
    assert j.dtype == functrax.float0 and j.shape == (2,)
    _, f_vjp = functrax.vjp(lambda x, n: x * n, 2.0, 3)
    assert f_vjp(1.0)[1].dtype == functrax.float0


def test_vjp_is_a_pytree_through_jit():
    y, f_vjp = functrax.vjp(lambda x: fnp.sin(x) * x, fnp.arange(3.0))
    leaves = tree_util.tree_leaves(f_vjp)
    assert leaves and all(hasattr(x, "shape") for x in leaves)
    ct = functrax.jit(lambda pb, c: pb(c))(f_vjp, fnp.ones(3))
    x = np.arange(3.0)
    np.testing.assert_allclose(ct[0], np.cos(x) * x + np.sin(x), rtol=1e-6)


def test_linearize_returns_partial():
    y, f_jvp = functrax.linearize(fnp.sin, 1.0)
    assert isinstance(f_jvp, tree_util.Partial)
    np.testing.assert_allclose(functrax.jit(lambda f, t: f(t))(f_jvp, 2.0), 2 * np.cos(1.0),
                               rtol=1e-6)


def test_fwd_and_bwd_compile_once():
    fwd, bwd = functrax.fwd_and_bwd(lambda x, w: fnp.sum(fnp.tanh(x @ w)), argnums=(0, 1))
    x, w = fnp.ones((2, 3)), fnp.full((3, 2), 0.1)
    y, res = fwd(x, w)
    gx, gw = bwd(res, 1.0)
    ex, ew = functrax.grad(lambda x, w: fnp.sum(fnp.tanh(x @ w)), argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, ex, rtol=1e-6)
    np.testing.assert_allclose(gw, ew, rtol=1e-6)
    _, res2 = fwd(2 * x, w)
    bwd(res2, 1.0)
    assert bwd._cache_size() == 1


def test_custom_gradient():
    @functrax.custom_gradient
    def f(x):
        return x ** 2, lambda g: (g * 10.0 * x,)
    assert float(f(3.0)) == 9.0
    assert float(functrax.grad(f)(3.0)) == 30.0
    np.testing.assert_allclose(functrax.vmap(functrax.grad(f))(fnp.arange(3.0)), [0, 10, 20])


def test_closure_convert_hoists_tracers():
    def outer(c):
        f, consts = functrax.closure_convert(lambda x: c * x, 1.0)
        assert len(consts) == 1
        return f(3.0, *consts)
    assert float(functrax.grad(outer)(2.0)) == 3.0
    f, consts = functrax.closure_convert(lambda x: fnp.float32(2.0) * x, 1.0)
    assert consts == [] and float(f(3.0)) == 6.0


def _scaled(r, x):
    return cd.linear_call(lambda r, x: r * x, lambda r, t: 2.0 * r * t, r, x)


def test_linear_call_uses_its_transpose():
    assert float(_scaled(3.0, 1.0)) == 3.0
    assert float(functrax.grad(_scaled, 1)(3.0, 1.0)) == 6.0  # the custom transpose
    assert float(functrax.jvp(lambda x: _scaled(3.0, x), (1.0,), (1.0,))[1]) == 3.0
    g = functrax.vmap(functrax.grad(_scaled, 1))(fnp.arange(3.0), fnp.ones(3))
    np.testing.assert_allclose(g, [0.0, 2.0, 4.0])
    assert float(functrax.jit(functrax.grad(_scaled, 1))(3.0, 1.0)) == 6.0
    assert "linear_call" in str(functrax.make_jaxpr(_scaled)(3.0, 1.0))


def test_linear_call_transpose_type_error():
    with pytest.raises(TypeError, match="transpose output pytree structure"):
        cd.linear_call(lambda r, x: x, lambda r, t: (t, t), 1.0, 1.0)


def test_custom_vjp_symbolic_zeros():
    seen = []

    @cd.custom_vjp
    def f(x, y):
        return x * y

    def fwd(x, y):
        seen.append((type(x).__name__, x.perturbed, y.perturbed))
        return x.value * y.value, (x.value, y.value)

    def bwd(res, g):
        x, y = res
        return g * y, cd.SymbolicZero(functrax.core.get_aval(y))

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    assert float(functrax.grad(f)(2.0, 3.0)) == 3.0
    assert seen[-1] == ("CustomVJPPrimal", True, False)
    assert cd.custom_vjp_primal_tree_values((cd.CustomVJPPrimal(1.0, True),)) == (1.0,)


def test_custom_jvp_symbolic_zeros_and_nondiff_argnames():
    @cd.custom_jvp
    def f(x, y):
        return x * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        assert isinstance(ty, cd.SymbolicZero)
        return x * y, tx * y

    f.defjvp(f_jvp, symbolic_zeros=True)
    assert float(functrax.grad(f)(2.0, 3.0)) == 3.0

    @cd.custom_jvp
    def g(x, n):
        return x * n
    g2 = cd.custom_jvp(lambda x, n: x * n, nondiff_argnames=("n",))
    g2.defjvp(lambda n, p, t: (p[0] * n, t[0] * n))
    assert float(functrax.grad(g2)(1.0, 4.0)) == 4.0
    z = cd.zero_from_primal((1.0, fnp.ones(2)), symbolic_zeros=True)
    assert isinstance(z[1], cd.SymbolicZero) and z[1].shape == (2,)


def test_optimize_remat_flag():
    @cd.custom_vjp
    def f(x):
        return fnp.sin(x)
    f.defvjp(lambda x: (fnp.sin(x), x), lambda x, g: (g * fnp.cos(x),), optimize_remat=True)
    np.testing.assert_allclose(functrax.grad(functrax.checkpoint(f))(1.0), np.cos(1.0),
                               rtol=1e-6)
    with pytest.raises(NotImplementedError):
        f.defvjp(lambda x: (x, x), lambda x, g: (g,), symbolic_zeros=True, optimize_remat=True)


@pytest.mark.parametrize("name", [
    "functrax.transforms.grad", "functrax.transforms.jacobians",
    "functrax.transforms.holomorphic", "functrax.transforms.symbolic_zeros",
    "functrax.transforms.vjp_function", "functrax.transforms.custom_gradient",
    "functrax.transforms.linear_call", "functrax.transforms.saved_residuals",
    "functrax.transforms.pmap_stages", "functrax.primitives.names",
    "functrax.control_flow.linear_solve", "functrax.custom_derivatives",
    "functrax.ad_checkpoint", "functrax.extend", "functrax.extend.core",
    "functrax.interpreters", "functrax.interpreters.ad", "functrax.interpreters.batching",
    "functrax.stages",
])
def test_doctests(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
