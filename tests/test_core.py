"""The core: avals, primitive dispatch, the jaxpr IR, check_jaxpr, eval_jaxpr, make_jaxpr."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import core, lax, make_jaxpr
from functrax import primitives as P
from functrax.core import (
    ClosedJaxpr, Jaxpr, JaxprEqn, Primitive, ShapedArray, Var, check_jaxpr, eval_jaxpr,
)
from functrax.errors import JaxprTypeError, MissingRuleError
from functrax.core.tracing import ShapeDtypeStruct, eval_shape

F32 = np.dtype(np.float32)


# --- ShapedArray ---


def test_shaped_array_equality_and_hash():
    a = ShapedArray((2, 3), np.float32)
    b = ShapedArray([2, 3], "float32")
    assert a == b and hash(a) == hash(b)
    assert a != ShapedArray((3, 2), np.float32)
    assert a != ShapedArray((2, 3), np.int32)
    assert a != ShapedArray((2, 3), np.float32, weak_type=True)
    assert a != (2, 3)
    assert len({a, b, ShapedArray((2, 3), np.float32, True)}) == 2
    assert core.typematch(a, ShapedArray((2, 3), np.float32, True))
    assert not core.typematch(a, ShapedArray((2, 3), np.int32))


def test_shaped_array_properties_and_update():
    a = ShapedArray((2, 3, 4), np.int32)
    assert a.ndim == 3 and a.size == 24 and a.dtype == np.int32
    assert ShapedArray((), np.float32).size == 1
    assert ShapedArray((0, 5), np.float32).size == 0
    assert a.update(shape=(5,)) == ShapedArray((5,), np.int32)
    w = a.update(weak_type=True)
    assert w.weak_type and w.strip_weak_type() == a
    assert a.strip_weak_type() is a


def test_shaped_array_text():
    a = ShapedArray((2, 3), np.float32)
    assert a.str_short() == "f32[2,3]"
    assert str(a) == "float32[2,3]"  # as JAX: print(jax.typeof(x)) (../shared/vectors)
    assert a.str_short(short_dtypes=False) == "float32[2,3]"
    assert ShapedArray((), np.bool_).str_short() == "bool[]"
    assert ShapedArray((4,), np.uint8).str_short() == "u8[4]"
    assert repr(a) == "ShapedArray(float32[2,3])"
    assert repr(ShapedArray((), np.int32, True)) == "ShapedArray(int32[], weak_type=True)"


def test_get_aval():
    assert core.get_aval(1.0) == ShapedArray((), np.float32, True)
    assert core.get_aval(1) == ShapedArray((), np.int32, True)
    assert core.get_aval(True) == ShapedArray((), np.bool_, False)
    assert core.get_aval(np.float64(1)) == ShapedArray((), np.float32)
    assert core.get_aval(np.zeros((2, 3), np.int64)) == ShapedArray((2, 3), np.int32)
    assert core.get_aval(fnp.ones(3)) == ShapedArray((3,), np.float32)
    with pytest.raises(TypeError, match="str is not a valid functrax type"):
        core.get_aval("abc")


# --- Primitive.bind dispatch ---


class RecordingTrace(core.Trace):
    def __init__(self, parent):
        super().__init__(parent)
        self.calls = []

    def process_primitive(self, prim, args, params):
        self.calls.append((prim, args, params))
        return "recorded"


def test_bind_dispatches_to_the_current_trace():
    trace = RecordingTrace(core.current_trace())
    with core.set_current_trace(trace):
        out = lax.integer_pow(1.5, 3)
    assert out == "recorded"
    assert trace.calls == [(P.integer_pow_p, (1.5,), {"y": 3})]
    assert isinstance(core.current_trace(), core.EvalTrace)


def test_bind_eager_uses_backend_rule():
    out = P.sin_p.bind(np.float32(0.5))
    assert isinstance(out, functrax.Array)
    np.testing.assert_allclose(np.asarray(out), np.sin(np.float32(0.5)))
    outs = P.sort_p.bind(np.array([3, 1, 2], np.int32), dimension=0, is_stable=True, num_keys=1)
    assert isinstance(outs, list) and np.asarray(outs[0]).tolist() == [1, 2, 3]


def test_bind_missing_rules():
    no_rule = Primitive("demo_no_rule")
    with pytest.raises(MissingRuleError,
                       match="abstract evaluation has no rule for 'demo_no_rule'"):
        no_rule.bind(1.0)
    no_rule.def_abstract_eval(lambda x: x)
    with pytest.raises(MissingRuleError, match="eager evaluation .* no rule for 'demo_no_rule'"):
        no_rule.bind(1.0)
    # staging needs only the abstract rule
    closed = make_jaxpr(lambda x: no_rule.bind(x))(1.0)
    assert str(closed) == "{ lambda ; a:f32[]. let b:f32[] = demo_no_rule a in (b,) }"


def test_trace_restored_after_exception():
    leaked = []

    def f(x):
        leaked.append(x)
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        make_jaxpr(f)(1.0)
    assert isinstance(core.current_trace(), core.EvalTrace)
    assert not leaked[0]._trace.valid
    assert float(fnp.sin(0.0)) == 0.0


# --- check_jaxpr ---


def _sin_jaxpr():
    return make_jaxpr(lambda x: fnp.sin(x) * 2.0)(fnp.ones(3)).jaxpr


def test_check_jaxpr_accepts_traced_programs():
    check_jaxpr(_sin_jaxpr())
    check_jaxpr(make_jaxpr(lambda x: x + fnp.arange(3.0))(fnp.ones(3)))


def test_check_jaxpr_var_used_before_bound():
    a, b, c = Var(ShapedArray((3,), F32)), Var(ShapedArray((3,), F32)), Var(
        ShapedArray((3,), F32))
    eqns = [JaxprEqn([b], [c], P.sin_p, {}), JaxprEqn([a], [b], P.cos_p, {})]
    with pytest.raises(JaxprTypeError, match="used before it is bound") as e:
        check_jaxpr(Jaxpr([], [a], [c], eqns))
    assert "sin" in str(e.value)
    undefined = Var(ShapedArray((3,), F32))
    with pytest.raises(JaxprTypeError, match="used before it is bound"):
        check_jaxpr(Jaxpr([], [a], [undefined], []))


def test_check_jaxpr_var_bound_twice():
    a, b = Var(ShapedArray((3,), F32)), Var(ShapedArray((3,), F32))
    eqns = [JaxprEqn([a], [b], P.sin_p, {}), JaxprEqn([b], [b], P.cos_p, {})]
    with pytest.raises(JaxprTypeError, match="bound twice"):
        check_jaxpr(Jaxpr([], [a], [b], eqns))
    with pytest.raises(JaxprTypeError, match="bound twice"):
        check_jaxpr(Jaxpr([], [a, a], [a], []))


def test_check_jaxpr_outvar_type_disagrees_with_abstract_eval():
    a = Var(ShapedArray((3,), F32))
    wrong = Var(ShapedArray((4,), F32))
    with pytest.raises(JaxprTypeError) as e:
        check_jaxpr(Jaxpr([], [a], [wrong], [JaxprEqn([a], [wrong], P.sin_p, {})]))
    msg = str(e.value)
    assert "f32[4]" in msg and "f32[3]" in msg
    assert "= sin " in msg  # the equation's text
    wrong_dtype = Var(ShapedArray((3,), np.int32))
    with pytest.raises(JaxprTypeError, match="i32\\[3\\]"):
        check_jaxpr(Jaxpr([], [a], [wrong_dtype], [JaxprEqn([a], [wrong_dtype], P.cos_p, {})]))


def test_check_jaxpr_ill_typed_inputs_and_result_count():
    a, b = Var(ShapedArray((3,), F32)), Var(ShapedArray((4,), F32))
    out = Var(ShapedArray((3,), F32))
    with pytest.raises(JaxprTypeError, match="add") as e:
        check_jaxpr(Jaxpr([], [a, b], [out], [JaxprEqn([a, b], [out], P.add_p, {})]))
    assert "(3,)" in str(e.value) and "(4,)" in str(e.value)
    o1, o2 = Var(ShapedArray((3,), F32)), Var(ShapedArray((3,), F32))
    eqn = JaxprEqn([a], [o1, o2], P.sort_p, dict(dimension=0, is_stable=True, num_keys=1))
    with pytest.raises(JaxprTypeError, match="produces 1 results but the equation binds 2"):
        check_jaxpr(Jaxpr([], [a], [o1], [eqn]))


def test_check_jaxpr_wrong_number_of_consts():
    c = fnp.arange(3.0)
    closed = make_jaxpr(lambda x: x + c)(fnp.ones(3))
    assert len(closed.consts) == 1
    check_jaxpr(closed)
    with pytest.raises(JaxprTypeError, match="0 consts for 1 constvars"):
        check_jaxpr(ClosedJaxpr(closed.jaxpr, []))


def test_check_jaxpr_checks_sub_jaxprs():
    a, b = Var(ShapedArray((), F32)), Var(ShapedArray((), np.int32))
    bad_inner = Jaxpr([], [a], [b], [JaxprEqn([a], [b], P.sin_p, {})])
    call = Primitive("demo_call")
    call.def_abstract_eval(lambda x, *, jaxpr: x)
    x, y = Var(ShapedArray((), F32)), Var(ShapedArray((), F32))
    outer = Jaxpr([], [x], [y], [JaxprEqn([x], [y], call, {"jaxpr": bad_inner})])
    with pytest.raises(JaxprTypeError, match="i32"):
        check_jaxpr(outer)


# --- eval_jaxpr ---


def test_eval_jaxpr_matches_numpy():
    def f(x, y):
        return fnp.sum(fnp.sin(x) * y + 2.0), x * 3.0
    x, y = np.array([0.1, 0.2, 0.3], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    closed = make_jaxpr(f)(fnp.ones(3), fnp.ones(3))
    s, t = eval_jaxpr(closed.jaxpr, closed.consts, fnp.asarray(x), fnp.asarray(y))
    np.testing.assert_allclose(np.asarray(s), np.sum(np.sin(x) * y + 2.0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t), x * 3.0)
    run = functrax.jaxpr_as_fun(closed)
    np.testing.assert_allclose(np.asarray(run(x, y)[1]), x * 3.0)


def test_eval_jaxpr_with_consts_and_literal_outputs():
    c = np.array([1.0, 2.0], np.float32)
    closed = make_jaxpr(lambda x: (x + c, 7))(fnp.zeros(2))
    assert len(closed.consts) == 1
    out, seven = eval_jaxpr(closed.jaxpr, closed.consts, np.array([10.0, 20.0], np.float32))
    assert np.asarray(out).tolist() == [11.0, 22.0]
    assert int(seven) == 7


def test_eval_jaxpr_wrong_arg_count():
    closed = make_jaxpr(lambda x, y: x + y)(1.0, 2.0)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        eval_jaxpr(closed.jaxpr, closed.consts, 1.0)


def test_eval_jaxpr_under_make_jaxpr_retraces():
    inner = make_jaxpr(lambda x: fnp.exp(x) + 1.0)(1.0)
    outer = make_jaxpr(lambda x: eval_jaxpr(inner.jaxpr, inner.consts, x)[0] * 2.0)(1.0)
    assert [e.primitive.name for e in outer.eqns] == ["exp", "add", "mul"]


# --- make_jaxpr ---


def test_omnistaging_records_ops_without_inputs():
    closed = make_jaxpr(lambda x: fnp.ones(3) * 2)(1.0)
    names = [e.primitive.name for e in closed.eqns]
    assert "broadcast_in_dim" in names and "mul" in names
    assert closed.jaxpr.outvars[0] is closed.eqns[-1].outvars[0]
    assert not closed.consts
    closed = make_jaxpr(lambda: lax.iota(np.int32, 4))()
    assert [e.primitive.name for e in closed.eqns] == ["iota"]


def test_closed_over_arrays_are_constvars_scalars_are_literals():
    arr = fnp.arange(3.0)
    np_arr = np.ones(3, np.float32)

    def f(x):
        return x + arr + np_arr + arr + 2.0 + np.float32(3) + 4
    closed = make_jaxpr(f)(fnp.ones(3))
    assert len(closed.jaxpr.constvars) == 2  # arr once, np_arr once
    assert closed.consts[0] is arr
    np.testing.assert_array_equal(np.asarray(closed.consts[1]), np_arr)
    lits = [v for v in closed.literals]
    assert sorted(float(v.val) for v in lits) == [2.0, 3.0, 4.0]
    assert all(v.aval.shape == () for v in lits)
    text = str(closed)
    assert text.startswith("{ lambda a:f32[3] b:f32[3]; c:f32[3]. let")
    assert "2.0:f32[]" in text and "3.0:f32[]" in text


def test_make_jaxpr_static_argnums():
    def f(x, n, flag):
        for _ in range(n):
            x = fnp.sin(x)
        return -x if flag else x
    closed = make_jaxpr(f, static_argnums=(1, 2))(1.0, 3, True)
    assert [e.primitive.name for e in closed.eqns] == ["sin", "sin", "sin", "neg"]
    assert len(closed.jaxpr.invars) == 1
    closed = make_jaxpr(f, static_argnums=(-2, -1))(1.0, 1, False)
    assert [e.primitive.name for e in closed.eqns] == ["sin"]
    closed = make_jaxpr(lambda n, x: x * n, static_argnums=0)(5, fnp.ones(2))
    assert str(closed) == "{ lambda ; a:f32[2]. let b:f32[2] = mul a 5.0:f32[] in (b,) }"


def test_make_jaxpr_pytrees_in_and_out():
    def f(params, xs):
        return {"y": params["w"] * xs[0] + params["b"], "rest": (xs[1], [xs[0]])}
    params = {"w": fnp.ones((2,)), "b": 1.0}
    closed, shapes = make_jaxpr(f, return_shape=True)(params, (fnp.ones(2), fnp.zeros(3)))
    # dict leaves in sorted key order: b, w; then the tuple
    assert [v.aval.str_short() for v in closed.jaxpr.invars] == ["f32[]", "f32[2]", "f32[2]",
                                                                 "f32[3]"]
    assert list(shapes) == ["rest", "y"]
    assert shapes["y"] == ShapeDtypeStruct((2,), np.float32)
    assert shapes["rest"][0] == ShapeDtypeStruct((3,), np.float32)
    assert shapes["rest"][1][0] == ShapeDtypeStruct((2,), np.float32)
    assert len(closed.jaxpr.outvars) == 3
    check_jaxpr(closed)


def test_make_jaxpr_kwargs():
    closed = make_jaxpr(lambda x, *, scale: x * scale)(fnp.ones(2), scale=fnp.ones(2))
    assert len(closed.jaxpr.invars) == 2
    assert str(closed) == "{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = mul a b in (c,) }"


def test_make_jaxpr_weak_types_and_numpy_args():
    closed = make_jaxpr(lambda x, y, z: (x, y, z))(1.0, np.float32(1.0), np.arange(3))
    avals = closed.in_avals
    assert avals[0] == ShapedArray((), np.float32, weak_type=True)
    assert avals[1] == ShapedArray((), np.float32)
    assert avals[2] == ShapedArray((3,), np.int32)


def test_make_jaxpr_accepts_shape_dtype_structs():
    closed = make_jaxpr(fnp.sin)(ShapeDtypeStruct((2, 2), np.float32))
    assert str(closed) == "{ lambda ; a:f32[2,2]. let b:f32[2,2] = sin a in (b,) }"


def test_nested_make_jaxpr():
    seen = {}

    def f(x):
        seen["inner"] = make_jaxpr(lambda y: fnp.sin(y) * x)(x)
        seen["free"] = make_jaxpr(fnp.cos)(2.0)
        return fnp.exp(x)
    closed = make_jaxpr(f)(1.0)
    assert str(closed) == "{ lambda ; a:f32[]. let b:f32[] = exp a in (b,) }"
    # the inner jaxpr closes over the outer tracer x as a constvar
    assert str(seen["inner"]) == (
        "{ lambda a:f32[]; b:f32[]. let c:f32[] = sin b; d:f32[] = mul c a in (d,) }")
    assert str(seen["free"]) == "{ lambda ; a:f32[]. let b:f32[] = cos a in (b,) }"
    check_jaxpr(seen["inner"])


def test_nested_make_jaxpr_evaluated_inside_outer():
    def f(x):
        inner = make_jaxpr(lambda y: fnp.sin(y) * x)(x)
        return eval_jaxpr(inner.jaxpr, inner.consts, x)[0]
    closed = make_jaxpr(f)(1.0)
    assert str(closed) == "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b a in (c,) }"
    out = eval_jaxpr(closed.jaxpr, closed.consts, np.float32(0.5))[0]
    np.testing.assert_allclose(float(out), np.sin(0.5) * 0.5, rtol=1e-6)


# --- eval_shape ---


def test_eval_shape_with_shape_dtype_structs():
    def f(x, y):
        return {"sum": fnp.sum(x * y, axis=0), "cast": x.astype(np.int32)}
    x = ShapeDtypeStruct((4, 3), np.float32)
    out = eval_shape(f, x, ShapeDtypeStruct((3,), np.float32))
    assert out == {"sum": ShapeDtypeStruct((3,), np.float32),
                   "cast": ShapeDtypeStruct((4, 3), np.int32)}


def test_eval_shape_does_not_compute():
    huge = ShapeDtypeStruct((100_000, 100_000), np.float32)  # 40 GB if materialized
    out = eval_shape(lambda x: fnp.sin(x) + 1.0, huge)
    assert out == ShapeDtypeStruct((100_000, 100_000), np.float32)


def test_eval_shape_weak_type_and_mixed_args():
    assert eval_shape(lambda x: x * 2, 1.0) == ShapeDtypeStruct((), np.float32, weak_type=True)
    out = eval_shape(lambda a, b: a + b, fnp.ones(3, dtype=np.int32), np.int8(1))
    assert out == ShapeDtypeStruct((3,), np.int32)
    assert repr(out) == "ShapeDtypeStruct(shape=(3,), dtype=int32)"
