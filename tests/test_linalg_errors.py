"""functrax.numpy products, einsum and linalg: error messages, printed IR, operators, dtypes."""
import re
import warnings

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp

F32 = np.float32


def _ones(*shape, dtype=F32):
    return np.ones(shape, dtype)


def _prims(closed):
    return [e.primitive.name for e in closed.eqns]


# --- printed IR ---


def test_dot_matvec_prints_one_dot_general():
    closed = functrax.make_jaxpr(lambda a, b: fnp.dot(a, b))(_ones(4, 3), _ones(3))
    assert len(closed.eqns) == 1
    assert closed.pretty_print(width=200) == (
        "{ lambda ; a:f32[4,3] b:f32[3]. let c:f32[4] = dot_general[dimension_numbers=(([1], "
        "[0]), ([], [])) preferred_element_type=float32] a b in (c,) }")
    assert "dot_general[\n      dimension_numbers=(([1], [0]), ([], []))\n      " \
           "preferred_element_type=float32\n    ] a b" in str(closed)


@pytest.mark.parametrize("fn, shapes, dn", [
    (fnp.matmul, ((2, 3), (3, 4)), "(([1], [0]), ([], []))"),
    (fnp.matmul, ((3,), (3, 4)), "(([0], [0]), ([], []))"),
    (fnp.matmul, ((5, 2, 3), (5, 3, 4)), "(([2], [1]), ([0], [0]))"),
    (fnp.dot, ((2, 3), (4, 3, 5)), "(([1], [1]), ([], []))"),
    (lambda a, b: fnp.einsum("bij,bjk->bik", a, b), ((5, 2, 3), (5, 3, 4)),
     "(([2], [1]), ([0], [0]))"),
    (lambda a, b: fnp.tensordot(a, b, 1), ((2, 3), (3, 4)), "(([1], [0]), ([], []))"),
])
def test_single_dot_general_equation(fn, shapes, dn):
    closed = functrax.make_jaxpr(fn)(*[_ones(*s) for s in shapes])
    assert _prims(closed) == ["dot_general"], str(closed)
    assert f"dimension_numbers={dn}" in closed.pretty_print(width=200)
    assert "preferred_element_type=float32" in closed.pretty_print(width=200)


def test_int_dot_sets_int_preferred_element_type():
    closed = functrax.make_jaxpr(fnp.dot)(_ones(2, 3, dtype=np.int32), _ones(3, dtype=np.int32))
    assert "preferred_element_type=int32" in str(closed)


@pytest.mark.parametrize("fn", [
    lambda x: fnp.einsum("ii->i", x), lambda x: fnp.einsum("ii", x),
    lambda x: fnp.diagonal(x, 1), lambda x: fnp.trace(x, -1),
])
def test_diagonals_are_gather_free_and_traceable(fn):
    x = np.arange(16, dtype=F32).reshape(4, 4)
    closed = functrax.make_jaxpr(fn)(x)
    functrax.check_jaxpr(closed)
    assert not any("gather" in p for p in _prims(closed)), str(closed)
    out = functrax.eval_jaxpr(closed.jaxpr, closed.consts, x)[0]
    np.testing.assert_array_equal(np.asarray(out), np.asarray(fn(fnp.asarray(x))))


# --- mismatched contraction sizes ---


@pytest.mark.parametrize("name, fn, shapes", [
    ("dot", fnp.dot, ((2, 3), (4, 5))),
    ("dot", fnp.dot, ((2, 3), (4,))),
    ("matmul", fnp.matmul, ((2, 3), (4, 5))),
    ("matmul", fnp.matmul, ((5, 2, 3), (4,))),
    ("matmul", lambda a, b: fnp.asarray(a) @ fnp.asarray(b), ((2, 3), (4, 5))),
    ("tensordot", lambda a, b: fnp.tensordot(a, b, 1), ((2, 3), (4, 5))),
    ("tensordot", lambda a, b: fnp.tensordot(a, b, ((0,), (1,))), ((2, 3), (4, 5))),
    ("inner", fnp.inner, ((2, 3), (4, 5))),
    ("vdot", fnp.vdot, ((2, 3), (4, 5))),
    ("linalg.matmul", fnp.linalg.matmul, ((2, 3), (4, 5))),
])
def test_contraction_size_mismatch_names_function_and_shapes(name, fn, shapes):
    a, b = (_ones(*s) for s in shapes)
    with pytest.raises(TypeError) as e:
        fn(a, b)
    msg = str(e.value)
    assert name.split(".")[-1] in msg and str(shapes[0]) in msg and str(shapes[1]) in msg, msg


def test_contraction_mismatch_under_tracing():
    with pytest.raises(TypeError, match=r"dot.*\(2, 3\).*\(4, 5\)"):
        functrax.make_jaxpr(fnp.dot)(_ones(2, 3), _ones(4, 5))


def test_matmul_batch_mismatch():
    with pytest.raises(ValueError, match=r"matmul.*\(2, 2, 3\).*\(5, 3, 4\)"):
        fnp.matmul(_ones(2, 2, 3), _ones(5, 3, 4))


def test_matmul_rejects_scalars():
    with pytest.raises(ValueError, match="matmul input operand 0 must have ndim at least 1"):
        fnp.matmul(2.0, _ones(3))
    with pytest.raises(ValueError, match="operand 1"):
        fnp.matmul(_ones(3), np.float32(2))


def test_vecdot_mismatch():
    with pytest.raises(ValueError, match=r"vecdot.*\(2, 3\).*\(2, 4\)"):
        fnp.vecdot(_ones(2, 3), _ones(2, 4))


def test_einsum_size_mismatch():
    with pytest.raises(ValueError, match=r"einsum.*'j'.*\(2, 3\).*\(4, 5\)"):
        fnp.einsum("ij,jk->ik", _ones(2, 3), _ones(4, 5))


def test_tensordot_bad_axes():
    with pytest.raises(TypeError, match="tensordot"):
        fnp.tensordot(_ones(2, 3), _ones(3, 4), axes=3)
    with pytest.raises(TypeError, match="equal length"):
        fnp.tensordot(_ones(2, 3), _ones(3, 4), axes=((0, 1), (0,)))
    with pytest.raises(TypeError, match="axes argument"):
        fnp.tensordot(_ones(2, 3), _ones(3, 4), axes="ij")


# --- bad einsum subscripts ---


@pytest.mark.parametrize("subscripts, shapes, pattern", [
    ("i2", ((2, 3),), "invalid subscript '2'"),
    ("ij,jk", ((2, 3),), "2 operand"),
    ("ij", ((2, 3), (3,)), "1 operand"),
    ("ij->ii", ((2, 3),), "more than once"),
    ("ij->k", ((2, 3),), "'k' never appears"),
    ("i..j", ((2, 3),), "'.' that is not part of an ellipsis"),
    ("i......", ((2, 3),), "more than one ellipsis"),
    ("ijk", ((2, 3),), r"names 3 dimensions.*\(2, 3\)"),
    ("i", ((2, 3),), r"names 1 dimensions.*\(2, 3\)"),
    ("i->i->i", ((3,),), "'->'"),
    ("i-i", ((3,),), "'->'"),
    ("i...->i", ((2, 3),), "no '...'"),
    ("ii", ((2, 3),), r"repeated subscript 'i'.*2 != 3"),
    ("i,i->", ((3,), (4,)), r"label 'i'.*\(4\).*\(3\)"),
])
def test_bad_einsum_subscripts(subscripts, shapes, pattern):
    with pytest.raises(ValueError) as e:
        fnp.einsum(subscripts, *[_ones(*s) for s in shapes])
    msg = str(e.value)
    assert msg.startswith("einsum") and repr(subscripts) in msg, msg
    assert re.search(pattern, msg), msg


def test_einsum_needs_operands():
    with pytest.raises(ValueError, match="at least one operand"):
        fnp.einsum("")


def test_einsum_bad_sublist():
    with pytest.raises(ValueError, match="sublist"):
        fnp.einsum(_ones(2), ["a"])


# --- einsum extras ---


def test_einsum_interleaved_form_matches_numpy():
    a, b = np.random.RandomState(0).randn(2, 3), np.random.RandomState(1).randn(3, 4)
    got = fnp.einsum(a.astype(F32), [0, 1], b.astype(F32), [1, 27], [27, 0])
    np.testing.assert_allclose(np.asarray(got), np.einsum(a, [0, 1], b, [1, 27], [27, 0]),
                               rtol=1e-5)
    got = fnp.einsum(a.astype(F32), [Ellipsis, 1])
    np.testing.assert_allclose(np.asarray(got), np.einsum(a, [Ellipsis, 1]), rtol=1e-6)


def test_einsum_preferred_element_type():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.arange(12, dtype=np.int32).reshape(3, 4)
    c = np.arange(8, dtype=np.int32).reshape(4, 2)
    got = fnp.einsum("ij,jk,kl->il", a, b, c, preferred_element_type=np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), (a @ b @ c).astype(F32))
    closed = functrax.make_jaxpr(lambda x, y: fnp.einsum("ij,jk", x, y,
                                                         preferred_element_type=np.float32))(a, b)
    assert "preferred_element_type=float32" in str(closed)


def test_einsum_optimize_accepted():
    a = _ones(2, 3)
    for opt in (True, False, "greedy", "optimal", "auto"):
        np.testing.assert_array_equal(np.asarray(fnp.einsum("ij->j", a, optimize=opt)),
                                      np.full(3, 2.0, F32))


# --- dtypes and weak types ---


def test_dot_keeps_narrow_dtype_with_python_scalar():
    x = np.arange(3, dtype=np.int8)
    assert fnp.dot(x, 2).dtype == np.int8
    assert fnp.dot(x, x).dtype == np.int8
    assert fnp.dot(x, np.ones(3, F32)).dtype == np.float32
    assert fnp.dot(2.0, 3.0).weak_type


def test_dot_preferred_element_type():
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    got = fnp.dot(x, x.T, preferred_element_type=np.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), x.astype(np.int32) @ x.T.astype(np.int32))


# --- the @ operator ---


class _Other:
    def __rmatmul__(self, other):
        return "rmatmul"

    def __matmul__(self, other):
        return "matmul"


def test_matmul_operator_defers_to_unknown_types():
    a = fnp.ones((2, 2))
    assert a @ _Other() == "rmatmul"
    assert _Other() @ a == "matmul"
    with pytest.raises(TypeError):
        a @ "not an array"  # noqa: B018
    assert a.__matmul__(object()) is NotImplemented
    assert a.__rmatmul__(object()) is NotImplemented


def test_numpy_array_matmul_functrax_array():
    out = np.ones((2, 3), F32) @ fnp.ones((3, 4))
    assert isinstance(out, functrax.Array)
    np.testing.assert_array_equal(np.asarray(out), np.full((2, 4), 3.0, F32))


def test_matmul_operator_on_tracers():
    closed = functrax.make_jaxpr(lambda a, b: (a @ b, b.T @ a.T))(_ones(2, 3), _ones(3, 4))
    functrax.check_jaxpr(closed)
    assert _prims(closed).count("dot_general") == 2


def test_array_methods():
    x = np.arange(9, dtype=F32).reshape(3, 3)
    a = fnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(a.dot(a)), x.dot(x))
    np.testing.assert_array_equal(np.asarray(a.diagonal(1)), x.diagonal(1))
    np.testing.assert_array_equal(np.asarray(a.trace()), x.trace())


# --- other errors ---


def test_diagonal_and_trace_need_2d():
    with pytest.raises(ValueError, match="diagonal requires an array of at least two"):
        fnp.diagonal(_ones(3))
    with pytest.raises(ValueError, match="trace requires an array of at least two"):
        fnp.trace(_ones(3))
    with pytest.raises(ValueError, match="axis1 and axis2 cannot be the same"):
        fnp.diagonal(_ones(3, 3), axis1=1, axis2=-1)
    with pytest.raises(TypeError, match="offset"):
        fnp.diagonal(_ones(3, 3), offset=1.5)


def test_matrix_transpose_needs_2d():
    with pytest.raises(ValueError, match="at least two-dimensional for matrix_transpose"):
        fnp.matrix_transpose(_ones(3))


def test_cross_errors_and_2d_vectors():
    with pytest.raises(ValueError, match=r"cross.*size 4 and 3"):
        fnp.cross(_ones(4), _ones(3))
    with pytest.raises(ValueError, match="cross"):
        fnp.cross(_ones(2, 3), _ones(4, 3))
    with pytest.raises(ValueError, match="3-dimensional vectors"):
        fnp.linalg.cross(_ones(2), _ones(2))
    a, b = np.array([1.0, 2.0], F32), np.array([3.0, 5.0], F32)
    np.testing.assert_array_equal(np.asarray(fnp.cross(a, b)), F32(1 * 5 - 2 * 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        c = np.array([1.0, -1.0, 2.0], F32)
        np.testing.assert_allclose(np.asarray(fnp.cross(a, c)), np.cross(a, c))


def test_norm_errors():
    x = _ones(3, 3)
    for ord in (2, -2, "nuc"):  # through the SVD (tests/test_linalg_decompositions.py)
        np.testing.assert_allclose(np.asarray(fnp.linalg.norm(x, ord=ord)),
                                   np.linalg.norm(x, ord=ord), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Invalid order 'inf' for vector norm"):
        fnp.linalg.norm(_ones(3), ord="inf")
    with pytest.raises(ValueError, match="Invalid order 'bad' for matrix norm"):
        fnp.linalg.norm(x, ord="bad")
    with pytest.raises(ValueError, match="Invalid order"):
        fnp.linalg.norm(x, ord=3)
    with pytest.raises(ValueError, match="Invalid axis values"):
        fnp.linalg.norm(_ones(2, 2, 2), ord=1)
    with pytest.raises(ValueError, match="at least two dimensions"):
        fnp.linalg.matrix_norm(_ones(3))


def test_linalg_outer_needs_1d():
    with pytest.raises(ValueError, match="one-dimensional"):
        fnp.linalg.outer(_ones(2, 2), _ones(2))


def test_matrix_power_errors():
    with pytest.raises(TypeError, match="square"):
        fnp.linalg.matrix_power(_ones(2, 3), 2)
    with pytest.raises(TypeError, match="integer"):
        fnp.linalg.matrix_power(_ones(2, 2), 1.5)


def test_list_inputs_rejected_with_hint():
    with pytest.raises(TypeError, match="asarray"):
        fnp.dot([1.0, 2.0], [3.0, 4.0])
