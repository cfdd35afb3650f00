"""The functrax.numpy names that the op-spec table does not reach: input/output round trips,
print options, index tricks, vectorize signatures, ufunc methods, the dtype names, JAX's
errors under jit (data-dependent output sizes), concrete-only functions, and the doctests of
the modules that hold them."""
import doctest
import importlib
import io
import operator
import warnings

import ml_dtypes
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax.errors import ConcretizationTypeError

MODULES = ("array_edit", "bit_ops", "calculus", "dtype_checks", "histograms", "index_grids",
           "io", "joining", "polynomial", "set_ops", "statistics", "ufunc_class", "vectorize",
           "windows")


@pytest.mark.parametrize("name", MODULES)
def test_module_exports_and_doctests(name):
    mod = importlib.import_module(f"functrax.numpy.{name}")
    for n in mod.__all__:
        assert getattr(fnp, n) is getattr(mod, n), n
        assert getattr(mod, n).__doc__ or not callable(getattr(mod, n)), f"{n}: no docstring"
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0, result


# --- dtype names ---


def test_dtype_aliases():
    assert fnp.bool is fnp.bool_ and fnp.single is fnp.float32 and fnp.double is fnp.float64
    assert fnp.csingle is fnp.complex64 and fnp.cdouble is fnp.complex128
    assert fnp.uint is fnp.uint64
    assert fnp.object_ is np.object_ and fnp.flexible is np.flexible
    assert fnp.character is np.character
    assert fnp.ComplexWarning is np.exceptions.ComplexWarning
    assert fnp.bool(1).dtype == np.bool_ and fnp.single(2).dtype == np.float32


NARROW = ("int1", "int2", "int4", "uint1", "uint2", "uint4", "float8_e3m4", "float8_e4m3",
          "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
          "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
          "float4_e2m1fn")


@pytest.mark.parametrize("name", NARROW)
def test_narrow_ml_dtypes_names(name):
    t = getattr(fnp, name)
    assert np.dtype(t) == np.dtype(getattr(ml_dtypes, name))
    assert np.asarray([1], dtype=t).dtype == np.dtype(getattr(ml_dtypes, name))
    with pytest.raises(TypeError, match=f"do not support dtype {name}"):
        t(1.0)


# --- input / output ---


def test_save_load_roundtrips(tmp_path):
    x = fnp.arange(6.0).reshape(2, 3)
    path = tmp_path / "x.npy"
    fnp.save(path, x)
    y = fnp.load(path)
    assert isinstance(y, functrax.Array) and y.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    buf = io.BytesIO()
    fnp.save(buf, x.astype(fnp.bfloat16))
    buf.seek(0)
    assert fnp.load(buf).dtype == np.dtype(ml_dtypes.bfloat16)
    fnp.savez(tmp_path / "xy.npz", a=x, b=fnp.array([1, 2]))
    with fnp.load(tmp_path / "xy.npz") as z:
        np.testing.assert_array_equal(z["b"], [1, 2])
        assert z["a"].shape == (2, 3)


def test_from_constructors():
    np.testing.assert_array_equal(fnp.frombuffer(b"\x01\x02\x03", dtype=np.uint8), [1, 2, 3])
    assert fnp.frombuffer(np.arange(3.0).tobytes()).dtype == np.float32  # canonicalized
    np.testing.assert_array_equal(fnp.fromstring("1 2 3", dtype=int, sep=" "), [1, 2, 3])
    np.testing.assert_array_equal(fnp.from_dlpack(np.arange(4, dtype=np.int32)), np.arange(4))
    with pytest.raises(TypeError, match="__dlpack__"):
        fnp.from_dlpack([1, 2])
    for f, what in ((fnp.fromfile, "fromfile"), (fnp.fromiter, "fromiter")):
        with pytest.raises(NotImplementedError, match=f"{what}.*non-pure"):
            f(iter([1, 2]))
    out = fnp.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=int)
    np.testing.assert_array_equal(out, np.fromfunction(lambda i, j: i * 10 + j, (2, 3)))


# --- printing ---


def test_printoptions_govern_array_repr():
    x = fnp.array([1.23456789, 2.5])
    with fnp.printoptions(precision=2):
        assert repr(x) == "Array([1.23, 2.5 ], dtype=float32)"
        assert str(x) == "[1.23 2.5 ]"
        assert fnp.get_printoptions()["precision"] == 2
    assert "1.2345679" in repr(x)
    with fnp.printoptions(threshold=5, edgeitems=2):
        assert repr(fnp.arange(10)) == "Array([0, 1, ..., 8, 9], dtype=int32)"
    old = fnp.get_printoptions()
    try:
        fnp.set_printoptions(suppress=True, precision=3)
        assert repr(fnp.array([1e-9, 1.0])) == "Array([0., 1.], dtype=float32)"
    finally:
        fnp.set_printoptions(**old)
    assert fnp.array_repr(fnp.array([1, 2])) == "Array([1, 2], dtype=int32)"
    assert fnp.array_str(fnp.array([1.5, 2.0]), precision=1) == "[1.5 2. ]"


# --- index tricks ---


def _same(a, b):
    if isinstance(b, (list, tuple)):
        assert isinstance(a, (list, tuple)) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert isinstance(a, functrax.Array)
    np.testing.assert_allclose(np.asarray(a), b, rtol=1e-6)
    assert np.shape(a) == np.shape(b)


@pytest.mark.parametrize("expr", [
    lambda m: m.mgrid[0:4, 0:3], lambda m: m.mgrid[-1:1:5j], lambda m: m.mgrid[0:1:3j, 1:7:2],
    lambda m: m.ogrid[0:4, 0:3], lambda m: m.ogrid[0:2:4j], lambda m: m.mgrid[3:0:-1],
    lambda m: m.r_[np.array([1, 2, 3]), 0, 0, np.array([4, 5, 6])],
    lambda m: m.r_[-1:1:6j, [0] * 3, 5, 6], lambda m: m.r_["-1", np.ones((2, 2)), np.eye(2)],
    lambda m: m.r_["0,2", [1, 2, 3], [4, 5, 6]], lambda m: m.r_["0,2,0", [1, 2, 3], [4, 5]],
    lambda m: m.r_["1,2,0", [1, 2, 3], [4, 5, 6]], lambda m: m.r_["r", [1, 2, 3], [4, 5, 6]],
    lambda m: m.r_["c", [1, 2, 3], [4, 5, 6]], lambda m: m.r_["0,3,-2", np.array([1, 2])],
    lambda m: m.c_[np.array([1, 2, 3]), np.array([4, 5, 6])],
    lambda m: m.c_[np.array([[1, 2, 3]]), 0, 0, np.array([[4, 5, 6]])],
])
def test_index_grids_match_numpy(expr):
    _same(expr(fnp), expr(np))


def test_index_exp_and_s_are_numpys():
    assert fnp.s_[1:3, ::2] == np.s_[1:3, ::2]
    assert fnp.index_exp[1:3] == (slice(1, 3, None),)


def test_index_grid_errors():
    with pytest.raises(ValueError, match="could not understand directive"):
        fnp.r_["a,b", [1]]
    with pytest.raises(ValueError, match="string directive must be placed at the beginning"):
        fnp.r_[[1], "0"]
    with pytest.raises(ConcretizationTypeError, match="slice stop of functrax.numpy.mgrid"):
        functrax.jit(lambda n: fnp.mgrid[0:n])(3)


# --- vectorize ---


def _mv(m, v):
    assert m.ndim == 2 and v.ndim == 1  # the core dims, whatever the loop dims
    return m @ v


def test_vectorize_signature_shapes_and_broadcasting():
    f = fnp.vectorize(_mv, signature="(n,k),(k)->(n)")
    assert f(fnp.ones((2, 3)), fnp.ones(3)).shape == (2,)
    assert f(fnp.ones((2, 3)), fnp.ones((4, 3))).shape == (4, 2)
    assert f(fnp.ones((5, 1, 2, 3)), fnp.ones((4, 3))).shape == (5, 4, 2)
    cross = fnp.vectorize(lambda a, b: fnp.stack([a[1] * b[2] - a[2] * b[1],
                                                  a[2] * b[0] - a[0] * b[2],
                                                  a[0] * b[1] - a[1] * b[0]]),
                          signature="(k),(k)->(k)")
    assert cross(fnp.ones((1, 2, 3)), fnp.ones((2, 1, 3))).shape == (2, 2, 3)
    two = fnp.vectorize(lambda x: (x.sum(), x * 2), signature="(n)->(),(n)")
    s, d = two(fnp.ones((4, 3)))
    assert s.shape == (4,) and d.shape == (4, 3)


def test_vectorize_under_transforms():
    f = fnp.vectorize(lambda x, y: fnp.where(x > y, x * y, x - y))
    x, y = fnp.arange(4.0), fnp.array(1.5)
    np.testing.assert_allclose(functrax.jit(f)(x, y), f(x, y))
    np.testing.assert_allclose(functrax.grad(lambda x: f(x, y).sum())(x), [1, 1, 1.5, 1.5])


def test_vectorize_excluded_and_none():
    f = fnp.vectorize(lambda x, n, *, scale: x * n * scale, excluded={1, "scale"})
    np.testing.assert_allclose(f(fnp.arange(3.0), 2, scale=10), [0, 20, 40])
    g = fnp.vectorize(lambda x, y: x if y is None else x + y)
    np.testing.assert_allclose(g(fnp.arange(3.0), None), [0, 1, 2])
    with pytest.raises(TypeError, match=r"keyword arguments \['scale'\] are not excluded"):
        fnp.vectorize(lambda x, scale: x * scale)(fnp.ones(2), scale=2)


@pytest.mark.parametrize("sig, args, match", [
    ("(n,k),(k)->(n)", ((3,), (3,)), "does not have enough dimensions"),
    ("(n),(n)->()", ((3,), (4,)), "inconsistent size for core dimension 'n': 4 vs 3"),
    ("(n)->(n)", ((3,), (3,)), "wrong number of positional arguments"),
    ("(n)->(m)(", ((3,),), "not a valid gufunc signature"),
])
def test_vectorize_signature_errors(sig, args, match):
    f = fnp.vectorize(lambda *xs: xs[0], signature=sig)
    with pytest.raises((ValueError, TypeError), match=re_escape(match)):
        f(*[fnp.ones(s) for s in args])


def re_escape(s):
    import re
    return re.escape(s)


def test_vectorize_output_checks():
    with pytest.raises(ValueError, match="output shape"):
        fnp.vectorize(lambda x: x, signature="(n)->()")(fnp.ones((2, 3)))
    with pytest.raises(TypeError, match="output must be a tuple"):
        fnp.vectorize(lambda x: x, signature="(n)->(n),(n)")(fnp.ones(3))
    with pytest.raises(TypeError, match="can only exclude integer or string"):
        fnp.vectorize(lambda x: x, excluded={1.5})
    with pytest.raises(ValueError, match="negative numbers"):
        fnp.vectorize(lambda x: x, excluded={-1})


# --- ufuncs ---


def test_ufunc_objects():
    assert isinstance(fnp.add, fnp.ufunc) and repr(fnp.add) == "<functrax.numpy.ufunc 'add'>"
    assert (fnp.add.nin, fnp.add.nout, fnp.add.nargs, fnp.add.identity) == (2, 1, 2, 0)
    assert fnp.multiply.identity == 1 and fnp.maximum.identity is None
    assert fnp.logical_and.identity is True and fnp.bitwise_and.identity == -1
    x = fnp.arange(3.0)
    assert functrax.jit(fnp.add)(x, 1.0).dtype == np.float32
    np.testing.assert_allclose(functrax.vmap(fnp.multiply)(x, x), [0, 1, 4])
    assert functrax.grad(fnp.multiply)(2.0, 3.0) == 3.0
    with pytest.raises(NotImplementedError, match="out argument"):
        fnp.add(x, x, out=x)


def test_ufunc_reduce_options():
    x = fnp.arange(1.0, 7.0).reshape(2, 3)
    np.testing.assert_allclose(fnp.add.reduce(x, axis=None, keepdims=True), [[21.0]])
    np.testing.assert_allclose(fnp.add.reduce(x, axis=1, initial=10.0), [16, 25])
    m = fnp.frompyfunc(lambda a, b: a * b, nin=2, nout=1, identity=1)
    w = fnp.array([True, False, True])
    np.testing.assert_allclose(m.reduce(x, axis=1, where=w), [3, 24])
    np.testing.assert_allclose(m.reduce(x, axis=0, keepdims=True), [[4, 10, 18]])
    with pytest.raises(ValueError, match="does not have an identity"):
        fnp.frompyfunc(operator.add, 2, 1).reduce(x, where=w)
    with pytest.raises(ValueError, match="zero-size array"):
        fnp.frompyfunc(operator.add, 2, 1).reduce(fnp.zeros((0,)))
    with pytest.raises(ValueError, match="only supported for binary ufuncs"):
        fnp.frompyfunc(fnp.sin, 1, 1).reduce(x)
    with pytest.raises(NotImplementedError, match="tuple of axes"):
        m.reduce(x, axis=(0, 1))


def test_ufunc_at_and_two_outputs():
    a = fnp.zeros(4)
    with pytest.raises(NotImplementedError, match="inplace=False"):
        fnp.add.at(a, 0, 1.0)
    np.testing.assert_allclose(fnp.subtract.at(a, fnp.array([1, 1]), 1.0, inplace=False),
                               [0, -2, 0, 0])
    np.testing.assert_allclose(fnp.maximum.at(a, fnp.array([0, 3]), fnp.array([2.0, -1.0]),
                                              inplace=False), [2, 0, 0, 0])
    neg = fnp.frompyfunc(lambda v: -v, nin=1, nout=1)
    np.testing.assert_allclose(neg.at(fnp.arange(3.0), fnp.array([0, 2]), inplace=False),
                               [0, 1, -2])
    dm = fnp.frompyfunc(lambda a, b: (a // b, a % b), nin=2, nout=2)
    q, r = dm(fnp.arange(5), 2)
    np.testing.assert_array_equal(q, [0, 0, 1, 1, 2])
    np.testing.assert_array_equal(r, [0, 1, 0, 1, 0])
    with pytest.raises(ValueError, match="returning a single value"):
        dm.outer(fnp.arange(2), fnp.arange(2))


# --- data-dependent output sizes: JAX's errors under jit, and the size= escape ---


@pytest.mark.parametrize("fn", [
    lambda x: fnp.unique_values(x), lambda x: fnp.unique_counts(x),
    lambda x: fnp.unique_inverse(x), lambda x: fnp.unique_all(x),
    lambda x: fnp.union1d(x, x), lambda x: fnp.setdiff1d(x, x),
    lambda x: fnp.setxor1d(x, x), lambda x: fnp.intersect1d(x, x),
    lambda x: fnp.trim_zeros(x), lambda x: fnp.roots(x),
    lambda x: fnp.delete(x, x.astype(int)), lambda x: fnp.choose(x.astype(int), [x, x]),
    lambda x: fnp.histogram(x, bins=x.shape[0] + x.sum().astype(int)),
])
def test_data_dependent_functions_raise_under_jit(fn):
    with pytest.raises(ConcretizationTypeError):
        functrax.jit(fn)(fnp.array([0.0, 1.0, 1.0]))


def test_size_makes_set_functions_traceable():
    a, b = fnp.array([1, 2, 3, 4, 4]), fnp.array([3, 4, 5, 6])
    f = functrax.jit(lambda a, b: (fnp.union1d(a, b, size=8, fill_value=-1),
                                   fnp.setdiff1d(a, b, size=3),
                                   fnp.setxor1d(a, b, size=5),
                                   fnp.intersect1d(a, b, size=3, return_indices=True),
                                   fnp.unique_counts(a, size=5, fill_value=0)))
    u, d, x, (i, i1, i2), uc = f(a, b)
    np.testing.assert_array_equal(u, [1, 2, 3, 4, 5, 6, -1, -1])
    np.testing.assert_array_equal(d, [1, 2, 0])
    np.testing.assert_array_equal(x, [1, 2, 5, 6, 1])
    np.testing.assert_array_equal(i, [3, 4, 3])
    np.testing.assert_array_equal(i1, [2, 3, 5])   # padding: out of bounds
    np.testing.assert_array_equal(i2, [0, 1, 4])
    np.testing.assert_array_equal(uc.values, [1, 2, 3, 4, 0])
    np.testing.assert_array_equal(uc.counts, [1, 1, 1, 2, 0])


def test_unique_results_are_named_and_nan_distinct():
    r = fnp.unique_all(fnp.array([3.0, np.nan, 1.0, np.nan, 3.0]))
    assert type(r).__name__ == "UniqueAllResult"
    assert r._fields == ("values", "indices", "inverse_indices", "counts")
    np.testing.assert_array_equal(r.values, [1.0, 3.0, np.nan, np.nan])  # equal_nan=False
    np.testing.assert_array_equal(r.counts, [1, 2, 1, 1])
    inv = fnp.unique_inverse(fnp.array([[2, 1], [1, 2]])).inverse_indices
    assert inv.shape == (2, 2)


@pytest.mark.parametrize("trim", ["fb", "f", "b", "FB"])
@pytest.mark.parametrize("values", [[0, 0, 1, 2, 0, 3, 0], [0, 0], [5], [1, 0]])
def test_trim_zeros_matches_numpy(values, trim):
    x = np.asarray(values, np.int32)
    np.testing.assert_array_equal(fnp.trim_zeros(fnp.asarray(x), trim), np.trim_zeros(x, trim))


def test_trim_zeros_rejects_2d():
    with pytest.raises(TypeError, match="must be 1-D"):
        fnp.trim_zeros(fnp.zeros((2, 2)))


# --- roots ---


def _match(got, want):
    got = list(np.asarray(got))
    err = 0.0
    for w in want:
        k = int(np.argmin([abs(w - g) for g in got]))
        err = max(err, abs(w - got.pop(k)))
    return err


@pytest.mark.parametrize("degree", [1, 2, 3, 5, 8, 13])
def test_roots_random_polynomials(degree):
    rng = np.random.RandomState(degree)
    p = rng.randn(degree + 1).astype(np.float32)
    want = np.roots(p.astype(np.float64))
    assert _match(fnp.roots(p), want) < 1e-4 * max(1.0, np.abs(want).max())
    cp = (rng.randn(degree + 1) + 1j * rng.randn(degree + 1)).astype(np.complex64)
    assert _match(fnp.roots(cp), np.roots(cp.astype(np.complex128))) < 1e-4 * max(
        1.0, np.abs(np.roots(cp)).max())


def test_roots_leading_zeros_and_jit():
    p = np.array([0.0, 0.0, 1.0, -3.0, 2.0], np.float32)
    np.testing.assert_allclose(np.sort(fnp.roots(p).real), [1, 2], rtol=1e-5)
    r = functrax.jit(lambda p: fnp.roots(p, strip_zeros=False))(p)
    assert r.shape == (4,) and r.dtype == np.complex64
    np.testing.assert_allclose(np.sort(np.asarray(r[:2]).real), [1, 2], rtol=1e-5)
    assert np.isnan(np.asarray(r[2:])).all()
    assert fnp.roots(fnp.array([3.0])).shape == (0,)
    assert fnp.roots(fnp.zeros(3)).shape == (0,)
    with pytest.raises(ValueError, match="rank-1"):
        fnp.roots(fnp.ones((2, 2)))


def test_roots_derivative_is_implicit():
    # p(x) = (x - a)(x - 2): d(root a)/da = 1
    def root_a(a):
        r = fnp.roots(fnp.stack([1.0, -(a + 2.0), 2.0 * a]), strip_zeros=False)
        return fnp.min(r.real)
    assert abs(float(functrax.grad(root_a)(0.5)) - 1.0) < 1e-4


# --- other behaviours outside the op-spec table ---


def test_inplace_functions_need_inplace_false():
    a = fnp.zeros((2, 2))
    for call in (lambda: fnp.place(a, a > 0, fnp.ones(1)), lambda: fnp.put(a, 0, 1.0),
                 lambda: fnp.put_along_axis(a, fnp.zeros((2, 1), int), 1.0, 1)):
        with pytest.raises(ValueError, match="inplace=False"):
            call()
    with pytest.raises(NotImplementedError, match="inplace=False"):
        fnp.fill_diagonal(a, 1.0)
    with pytest.raises(NotImplementedError, match="'raise' mode"):
        fnp.put(a, 0, 1.0, mode="raise", inplace=False)


def test_type_predicates():
    assert fnp.iscomplexobj(fnp.ones(2, fnp.complex64)) and not fnp.iscomplexobj(fnp.ones(2))
    assert fnp.iscomplexobj(1j) and not fnp.iscomplexobj(None)
    assert fnp.isrealobj(np.ones(2)) and not fnp.isrealobj(np.ones(2, complex))
    assert fnp.isscalar(1.0) and fnp.isscalar(np.float32(1)) and fnp.isscalar(fnp.array(1))
    assert not fnp.isscalar(fnp.ones(1)) and not fnp.isscalar([1])
    assert fnp.iterable([1]) and not fnp.iterable(1)
    traced = []
    functrax.jit(lambda x: traced.append(fnp.isscalar(x)) or x)(1.0)
    assert traced == [True]


def test_astype_conversions():
    z = fnp.array([1 + 2j, 0j])
    with pytest.warns(DeprecationWarning, match="complex to real"):
        np.testing.assert_allclose(fnp.astype(z, np.float32), [1, 0])
    np.testing.assert_array_equal(fnp.astype(z, bool), [True, False])
    assert fnp.astype(fnp.arange(2), None).dtype == np.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fnp.astype(fnp.arange(2), np.int8, copy=True).dtype == np.int8


def test_interp_extrapolate():
    xp, fp = fnp.array([0.0, 1.0, 2.0]), fnp.array([0.0, 10.0, 30.0])
    out = fnp.interp(fnp.array([-1.0, 3.0]), xp, fp, left="extrapolate", right="extrapolate")
    np.testing.assert_allclose(out, [-10.0, 50.0])
    with pytest.raises(ValueError, match="'extrapolate'"):
        fnp.interp(1.0, xp, fp, left="linear")
    with pytest.raises(ValueError, match="one-dimensional arrays of equal size"):
        fnp.interp(1.0, xp, fp[:2])


def test_einsum_path():
    a, b, c = np.ones((2, 3)), np.ones((3, 40)), np.ones((40, 5))
    path, info = fnp.einsum_path("ij,jk,kl->il", a, b, c)
    assert path == [(1, 2), (0, 1)] and "Complete contraction:  ij,jk,kl->il" in info
    assert fnp.einsum_path("ij,jk", a, b)[0] == [(0, 1)]
    assert fnp.einsum_path("ii->i", np.ones((3, 3)))[0] == [(0,)]
    assert fnp.einsum_path(a, [0, 1], b, [1, 2])[0] == [(0, 1)]
    with pytest.raises(ValueError, match="einsum"):
        fnp.einsum_path("ij,jk", a, c)


def test_errors_name_function_and_fix():
    with pytest.raises(TypeError, match="polyadd requires ndarray or scalar arguments"):
        fnp.polyadd([1, 2], fnp.ones(2))
    with pytest.raises(ValueError, match="polynomial coefficients must be 1-D"):
        fnp.polyadd(fnp.ones((2, 2)), fnp.ones(2))
    with pytest.raises(NotImplementedError, match="string values for `bins`"):
        fnp.histogram_bin_edges(fnp.ones(3), bins="auto")
    with pytest.raises(ValueError, match="bins must be a 1-dimensional array"):
        fnp.digitize(fnp.ones(3), fnp.ones((2, 2)))
    with pytest.raises(ValueError, match="method='bogus' is not implemented"):
        fnp.isin(fnp.ones(2), fnp.ones(2), method="bogus")
    with pytest.raises(NotImplementedError, match="edge_order"):
        fnp.gradient(fnp.ones(3), edge_order=2)
    with pytest.raises(ValueError, match="at least \\(edge_order \\+ 1\\)"):
        fnp.gradient(fnp.ones(1))
    with pytest.raises(ValueError, match="either 2 or 3 functions"):
        fnp.piecewise(fnp.ones(2), [fnp.ones(2) > 0, fnp.ones(2) > 1], [1.0])
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        fnp.choose(fnp.array([0, 3]), [fnp.ones(2), fnp.ones(2)])
    with pytest.raises(ValueError, match="Mismatched list depths"):
        fnp.block([fnp.ones(2), [fnp.ones(2)]])
    with pytest.raises(ValueError, match="does not allow tuples"):
        fnp.block((fnp.ones(2),))
    with pytest.raises(ValueError, match="rank > 0"):
        fnp.unstack(fnp.array(1.0))
    with pytest.raises(TypeError, match="uint8"):
        fnp.unpackbits(fnp.ones(2, int))
    with pytest.raises(TypeError, match="complex"):
        fnp.frexp(fnp.ones(2, fnp.complex64))
    with pytest.raises(ValueError, match="complex"):
        fnp.spacing(1j)
    with pytest.raises(ValueError, match="m has more than 2 dimensions"):
        fnp.cov(fnp.ones((2, 2, 2)))
    with pytest.raises(ConcretizationTypeError, match="'N' argument of functrax.numpy.vander"):
        functrax.jit(lambda n: fnp.vander(fnp.ones(3), n))(2)
    with pytest.raises(ConcretizationTypeError, match="M argument of functrax.numpy.hanning"):
        functrax.jit(fnp.hanning)(3)


def test_i0_derivative_is_i1_and_zero_at_zero():
    import scipy.special as sp
    xs = np.array([-3.0, -0.5, 0.0, 0.25, 2.0])
    g = functrax.vmap(functrax.grad(fnp.i0))(fnp.asarray(xs, fnp.float32))
    np.testing.assert_allclose(np.asarray(g), sp.i1(xs), rtol=2e-6, atol=1e-7)
    assert float(functrax.grad(fnp.i0)(0.0)) == 0.0
    with pytest.raises(ValueError, match="Unsupported input type to functrax.numpy.i0"):
        fnp.i0(fnp.ones(2, fnp.complex64))
    with pytest.raises(ConcretizationTypeError, match="M argument of functrax.numpy.kaiser"):
        functrax.jit(fnp.kaiser)(3, 1.0)
