"""User-defined primitives as in JAX's "How JAX primitives work" tutorial (multiply_add:
impl, abstract eval, JVP, transpose, batching), through jit, grad (both modes), vmap and
their compositions; and the other names of functrax.extend.core / interpreters."""
import numpy as np
import pytest

import functrax
from functrax import lax
from functrax.extend import core
from functrax.interpreters import ad, batching

# --- the tutorial program (jax -> functrax) ---

multiply_add_p = core.Primitive("multiply_add")


def multiply_add_prim(x, y, z):
    return multiply_add_p.bind(x, y, z)


def square_add_prim(a, b):
    return multiply_add_prim(a, a, b)


def multiply_add_impl(x, y, z):
    return np.add(np.multiply(x, y), z)


multiply_add_p.def_impl(multiply_add_impl)


def multiply_add_abstract_eval(xs, ys, zs):
    assert xs.shape == ys.shape
    assert xs.shape == zs.shape
    return functrax.core.ShapedArray(xs.shape, xs.dtype)


multiply_add_p.def_abstract_eval(multiply_add_abstract_eval)


def multiply_add_value_and_jvp(arg_values, arg_tangents):
    x, y, z = arg_values
    xt, yt, zt = arg_tangents
    primal_out = multiply_add_prim(x, y, z)

    def make_zero(tan):
        return lax.zeros_like_array(x) if type(tan) is ad.Zero else tan

    output_tangent = multiply_add_prim(make_zero(xt), y,
                                       multiply_add_prim(x, make_zero(yt), make_zero(zt)))
    return (primal_out, output_tangent)


ad.primitive_jvps[multiply_add_p] = multiply_add_value_and_jvp


def multiply_add_transpose(ct, x, y, z):
    if not ad.is_undefined_primal(x):
        # This use of multiply_add is with a constant "x".
        assert ad.is_undefined_primal(y)
        ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else multiply_add_prim(
            x, ct, lax.zeros_like_array(x))
        res = None, ct_y, ct
    else:
        # This use of multiply_add is with a constant "y".
        assert ad.is_undefined_primal(x)
        ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else multiply_add_prim(
            ct, y, lax.zeros_like_array(y))
        res = ct_x, None, ct
    return res


ad.primitive_transposes[multiply_add_p] = multiply_add_transpose


def multiply_add_batch(vector_arg_values, batch_axes):
    assert batch_axes[0] == batch_axes[1]
    assert batch_axes[0] == batch_axes[2]
    res = multiply_add_prim(*vector_arg_values)
    return res, batch_axes[0]


batching.primitive_batchers[multiply_add_p] = multiply_add_batch


# --- the tutorial's checks ---

def test_eager_and_jit():
    assert float(square_add_prim(2., 10.)) == 14.0
    assert float(functrax.jit(square_add_prim)(2., 10.)) == 14.0


def test_prints_in_jaxprs():
    text = str(functrax.make_jaxpr(square_add_prim)(2., 10.))
    assert text == "{ lambda ; a:f32[] b:f32[]. let c:f32[] = multiply_add a a b in (c,) }"


def test_forward_and_reverse_mode():
    y, t = functrax.jvp(square_add_prim, (2., 10.), (1., 1.))
    assert (float(y), float(t)) == (14.0, 5.0)
    assert float(functrax.grad(square_add_prim)(2., 10.)) == 4.0
    assert float(functrax.jit(functrax.grad(square_add_prim))(2., 10.)) == 4.0


def test_vmap_and_jit_of_vmap():
    a, b = np.array([2., 3.], np.float32), np.array([10., 20.], np.float32)
    np.testing.assert_allclose(functrax.vmap(square_add_prim, in_axes=0, out_axes=0)(a, b),
                               [14., 29.])
    np.testing.assert_allclose(functrax.jit(functrax.vmap(square_add_prim))(a, b), [14., 29.])


def test_compositions_with_a_broadcasting_batcher():
    # the tutorial's batcher needs every operand batched alike; vmap of grad / jacfwd batch
    # some operands only, which defbroadcasting handles
    old = batching.primitive_batchers[multiply_add_p]
    batching.defbroadcasting(multiply_add_p)
    try:
        a, b = np.array([2., 3.], np.float32), np.array([10., 20.], np.float32)
        np.testing.assert_allclose(functrax.vmap(functrax.grad(square_add_prim))(a, b),
                                   [4., 6.])
        np.testing.assert_allclose(functrax.jacfwd(square_add_prim)(2., 10.), 4.0)
        np.testing.assert_allclose(functrax.jacrev(square_add_prim)(2., 10.), 4.0)
        np.testing.assert_allclose(
            functrax.jit(functrax.vmap(functrax.grad(square_add_prim)))(a, b), [4., 6.])
    finally:
        batching.primitive_batchers[multiply_add_p] = old


def test_tables_are_functrax_tables():
    from functrax.transforms.batching import vmap_rules
    from functrax.transforms.jvp import jvp_rules
    from functrax.transforms.transpose import transpose_rules
    assert ad.primitive_jvps is jvp_rules and ad.primitive_transposes is transpose_rules
    assert multiply_add_p in vmap_rules and multiply_add_p in batching.primitive_batchers
    # a built-in rule seen with JAX's convention
    sin_rule = batching.primitive_batchers[functrax.primitives.sin_p]
    out, d = sin_rule((np.ones((3, 2), np.float32),), (1,))
    assert d == 1 and out.shape == (3, 2)


def test_missing_impl_and_rules_raise():
    p = core.Primitive("no_impl")
    p.def_abstract_eval(lambda x: x)
    with pytest.raises(functrax.MissingRuleError):
        p.bind(np.float32(1.0))
    q = core.Primitive("no_jvp")
    q.def_impl(lambda x: x)
    q.def_abstract_eval(lambda x: x)
    with pytest.raises(functrax.MissingRuleError):
        functrax.grad(lambda x: q.bind(x))(1.0)


def test_deflinear_defbilinear_defvectorized():
    scale = core.Primitive("scale3")
    scale.def_impl(lambda x: 3 * x)
    scale.def_abstract_eval(lambda x: x)
    ad.deflinear2(scale, lambda ct, x: [scale.bind(ct)])
    batching.defvectorized(scale)
    assert float(functrax.grad(lambda x: scale.bind(x))(1.0)) == 3.0
    np.testing.assert_allclose(functrax.vmap(lambda x: scale.bind(x))(np.ones(2, np.float32)),
                               [3., 3.])
    mul = core.Primitive("my_mul")
    mul.def_impl(np.multiply)
    mul.def_abstract_eval(lambda x, y: x)
    ad.defbilinear(mul, lambda ct, x, y: mul.bind(ct, y), lambda ct, x, y: mul.bind(x, ct))
    assert functrax.grad(lambda x, y: mul.bind(x, y), (0, 1))(2.0, 5.0) == (5.0, 2.0)


def test_multiple_results_primitive():
    p = core.Primitive("split2")
    p.multiple_results = True
    p.def_impl(lambda x: [x, 2 * x])
    p.def_abstract_eval(lambda x: [x, x])
    a, b = p.bind(np.float32(1.5))
    assert (float(a), float(b)) == (1.5, 3.0)
    assert "split2" in str(functrax.make_jaxpr(lambda x: p.bind(x))(1.0))


def test_call_primitive():
    my_call = core.CallPrimitive("my_call")
    f = lambda x: my_call.bind(lambda v: lax.sin(v) * 2.0, x)[0]  # noqa: E731
    np.testing.assert_allclose(f(1.0), 2 * np.sin(1.0), rtol=1e-6)
    assert "my_call[" in str(functrax.make_jaxpr(f)(1.0))
    np.testing.assert_allclose(functrax.jvp(f, (1.0,), (1.0,))[1], 2 * np.cos(1.0), rtol=1e-6)
    np.testing.assert_allclose(functrax.vmap(f)(np.ones(2, np.float32)), 2 * np.sin([1., 1.]),
                               rtol=1e-6)
    assert core.call_impl(lambda x: x + 1, 1) == 2


def test_jaxpr_helpers():
    closed = functrax.make_jaxpr(lambda x: x * 2.0)(1.0)
    core.check_jaxpr(closed)
    assert float(core.jaxpr_as_fun(closed)(3.0)[0]) == 6.0
    a = functrax.core.ShapedArray((4, 3), np.float32)
    assert core.mapped_aval(4, 0, a).shape == (3,)
    assert core.unmapped_aval(5, 1, a).shape == (4, 5, 3)
    with pytest.raises(ValueError):
        core.mapped_aval(2, 0, a)
    assert core.primal_dtype_to_tangent_dtype(np.int32) == functrax.float0
    assert core.primal_dtype_to_tangent_dtype(np.float32) == np.float32
    assert core.valid_jaxtype(1.0) and not core.valid_jaxtype("x")
    eqn = closed.jaxpr.eqns[0]
    new = core.new_jaxpr_eqn(eqn.invars, [core.DropVar(eqn.outvars[0].aval)], eqn.primitive,
                             eqn.params, None)
    assert isinstance(new, core.JaxprEqn) and repr(new.outvars[0]) == "_"
    assert issubclass(core.DropVar, core.Var)
    assert isinstance(closed, core.ClosedJaxpr) and isinstance(closed.jaxpr, core.Jaxpr)
    assert core.Literal is functrax.core.Literal
