"""Every error of the foundation: triggered, its type and its message (what, where, fix)."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax, make_jaxpr
from functrax.core import Primitive
from functrax.errors import (
    ConcretizationTypeError, MissingRuleError, TracerArrayConversionError,
    TracerBoolConversionError, TracerIntegerConversionError, UnexpectedTracerError,
)


def _raises(exc, fn, *args, **kwargs) -> str:
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    return str(info.value)


# --- tracer conversions ---


def test_error_classes_are_type_errors_as_in_jax():
    assert issubclass(ConcretizationTypeError, TypeError)
    assert issubclass(TracerBoolConversionError, ConcretizationTypeError)
    assert issubclass(TracerIntegerConversionError, TypeError)
    assert issubclass(TracerArrayConversionError, TypeError)
    assert issubclass(UnexpectedTracerError, functrax.errors.JAXTypeError)  # as in JAX
    assert functrax.TracerBoolConversionError is TracerBoolConversionError


def branchy(x, y):
    if y > 0:
        return x
    return -x


def test_bool_conversion_names_function_argument_and_fix():
    msg = _raises(TracerBoolConversionError, make_jaxpr(branchy), 1.0, 2.0)
    assert "boolean conversion" in msg and "bool[]" in msg
    assert "branchy" in msg and "make_jaxpr" in msg
    assert "argument y" in msg and "argument x" not in msg
    assert "lax.cond" in msg and "static_argnums" in msg


def test_bool_conversion_names_every_argument_it_depends_on():
    def f(a, b, c):
        return a if (a * b).sum() > 0 else c
    msg = _raises(TracerBoolConversionError, make_jaxpr(f), fnp.ones(2), fnp.ones(2), 1.0)
    assert "the value of the arguments a, b." in msg


def test_bool_conversion_names_pytree_leaf():
    def f(params, x):
        return x if params["scale"] > 1 else -x
    msg = _raises(TracerBoolConversionError, make_jaxpr(f), {"scale": 2.0, "w": 1.0}, 1.0)
    assert "argument params['scale']" in msg


def test_bool_conversion_of_value_not_depending_on_arguments():
    def f(x):
        if fnp.ones(()) > 0:  # traced under omnistaging, though constant
            return x
        return x
    msg = _raises(TracerBoolConversionError, make_jaxpr(f), 1.0)
    assert "not depend on any argument" in msg


def test_static_argnums_avoid_the_bool_error():
    closed = make_jaxpr(branchy, static_argnums=1)(1.0, -2.0)
    assert [e.primitive.name for e in closed.eqns] == ["neg"]


def test_concretization_float_of_tracer():
    msg = _raises(ConcretizationTypeError, make_jaxpr(lambda x: float(x)), 1.0)
    assert "Abstract tracer value encountered where concrete value is expected" in msg
    assert "`float` function" in msg and "argument x" in msg
    _raises(ConcretizationTypeError, make_jaxpr(lambda x: int(x)), 1)
    _raises(ConcretizationTypeError, make_jaxpr(lambda x: complex(x)), 1.0)


def test_concretization_arange_of_tracer():
    msg = _raises(ConcretizationTypeError, make_jaxpr(lambda n: fnp.arange(n)), 3)
    assert "arange" in msg and "argument n" in msg
    assert "static" in msg


def test_integer_conversion_range_and_list_index():
    def f(n):
        return sum(range(n))
    msg = _raises(TracerIntegerConversionError, make_jaxpr(f), 3)
    assert "__index__" in msg and "i32[]" in msg and "argument n" in msg
    assert "static_argnums" in msg
    msg = _raises(TracerIntegerConversionError, make_jaxpr(lambda i: [1, 2, 3][i]), 1)
    assert "argument i" in msg


def test_array_conversion_numpy_on_tracer():
    msg = _raises(TracerArrayConversionError, make_jaxpr(lambda x: np.sin(x)), fnp.ones(3))
    assert "__array__" in msg and "f32[3]" in msg and "argument x" in msg
    assert "functrax.numpy" in msg
    _raises(TracerArrayConversionError, make_jaxpr(lambda x: np.asarray(x)), 1.0)


# --- leaked tracers ---


def test_unexpected_tracer_used_after_its_trace_ended():
    leaked = []

    def stash(x):
        leaked.append(fnp.sin(x))
        return x
    make_jaxpr(stash)(1.0)
    msg = _raises(UnexpectedTracerError, fnp.sin, leaked[0])
    assert "unexpected tracer" in msg
    assert "'sin'" in msg and "stash" in msg and "make_jaxpr" in msg
    assert "return the value" in msg
    # inside another transformation it is detected too
    msg = _raises(UnexpectedTracerError, make_jaxpr(lambda y: y + leaked[0]), 1.0)
    assert "after its transformation ended" in msg


def test_leaked_tracer_as_lax_operand():
    box = {}
    make_jaxpr(lambda x: box.setdefault("t", x))(fnp.ones(2))
    _raises(UnexpectedTracerError, lax.add, box["t"], fnp.ones(2))


# --- shapes and dtypes ---


def test_lax_add_shape_mismatch_names_op_and_shapes():
    msg = _raises(TypeError, lax.add, fnp.ones(3), fnp.ones(4))
    assert "add" in msg and "(3,)" in msg and "(4,)" in msg


def test_fnp_add_shape_mismatch_names_function_and_shapes():
    msg = _raises(ValueError, fnp.add, fnp.ones(3), fnp.ones(4))
    assert "add" in msg and "(3,)" in msg and "(4,)" in msg
    assert "broadcast" in msg


def test_shape_mismatch_under_tracing():
    msg = _raises(TypeError, make_jaxpr(lambda a, b: lax.mul(a, b)), fnp.ones(3),
                  fnp.ones((2, 3)))
    assert "mul" in msg and "(3,)" in msg and "(2, 3)" in msg


def test_lax_dtype_mismatch():
    msg = _raises(TypeError, lax.add, fnp.ones(3), fnp.ones(3, dtype=np.int32))
    assert "add" in msg and "float32" in msg and "int32" in msg
    assert "same dtype" in msg


def test_lax_op_rejects_wrong_dtype_kind():
    msg = _raises(TypeError, lax.sin, fnp.ones(3, dtype=np.int32))
    assert "sin" in msg and "int32" in msg


def test_lax_reshape_wrong_size():
    msg = _raises(TypeError, lax.reshape, fnp.ones(6), (4,))
    assert "reshape" in msg and "(6,)" in msg and "(4,)" in msg


def test_array_of_string():
    msg = _raises(TypeError, fnp.array, "abc")
    assert "abc" in msg and "array" in msg


def test_make_jaxpr_invalid_argument_names_it():
    msg = _raises(TypeError, make_jaxpr(lambda x, name: x), 1.0, "abc")
    assert "'name'" in msg and "str" in msg and "static_argnums" in msg
    msg = _raises(TypeError, make_jaxpr(lambda cfg: cfg["k"]), {"k": object()})
    assert "cfg['k']" in msg and "object" in msg


def test_make_jaxpr_invalid_output():
    with pytest.raises(TypeError, match="str"):
        make_jaxpr(lambda x: "abc")(1.0)


# --- rules ---


def test_missing_rule_error_text():
    prim = Primitive("cumsum_demo")
    err = MissingRuleError("vmap", prim)
    assert isinstance(err, NotImplementedError)
    assert str(err).startswith("vmap has no rule for 'cumsum_demo'")
    prim.def_abstract_eval(lambda x: x)
    msg = _raises(MissingRuleError, prim.bind, 1.0)
    assert "eager evaluation" in msg and "'cumsum_demo'" in msg
