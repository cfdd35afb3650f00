"""Indexing: x[idx] (basic, traced, advanced, boolean), x.at[idx], and the index functions.

Results are compared with numpy; the printed jaxprs are checked for the primitives JAX emits
(basic slicing: no gather; a traced scalar index: dynamic_slice).
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrax
import functrax.lax as lax
import functrax.numpy as fnp
from functrax.primitives.gather_scatter import GatherScatterMode


def traced(f, *args):
    """(jaxpr, outputs of evaluating it) for f on args."""
    closed = functrax.make_jaxpr(f)(*args)
    functrax.check_jaxpr(closed)
    return closed, functrax.eval_jaxpr(closed.jaxpr, closed.consts, *args)


def prims(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def check(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_array_equal(got, want)


XN = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


# --- basic indexing: static slice, no gather ---


@pytest.mark.parametrize("idx", [
    np.s_[1:, ::-2], np.s_[..., 1], np.s_[None, 0, :, None], np.s_[::-1, 1:3, -1],
    np.s_[:], np.s_[...], np.s_[-1:0:-2, None, ::3], np.s_[5:], np.s_[0, 0, 0],
])
def test_basic_slicing_emits_no_gather(idx):
    x = fnp.asarray(XN)
    closed, (out,) = traced(lambda x: x[idx], x)
    assert "gather" not in str(closed)
    # (x[None] stages a size-1 broadcast_in_dim, as JAX's lax.expand_dims does)
    assert set(prims(closed)) <= {"slice", "rev", "squeeze", "broadcast_in_dim"}
    check(out, XN[idx])
    check(x[idx], XN[idx])


def test_scalar_index_is_slice_and_squeeze():
    closed, (out,) = traced(lambda x: x[0], fnp.asarray(XN))
    assert prims(closed) == ["slice", "squeeze"]
    check(out, XN[0])
    closed, _ = traced(lambda x: x[:], fnp.asarray(XN))
    assert prims(closed) == []  # a full slice is the operand itself


def test_negative_step_is_slice_and_rev():
    closed, (out,) = traced(lambda x: x[:, ::-2], fnp.asarray(XN))
    assert prims(closed) == ["slice", "rev"]
    eqn = closed.jaxpr.eqns[0]
    assert eqn.params["strides"] == (1, 2, 1)
    check(out, XN[:, ::-2])


# --- traced scalar indices: dynamic_slice, negative wrap, clamping as JAX ---


def test_traced_scalar_index():
    x = fnp.asarray(XN[0])
    closed = functrax.make_jaxpr(lambda x, i: x[i])(x, 2)
    assert "dynamic_slice" in prims(closed) and "gather" not in prims(closed)
    for i in range(-3, 3):
        (out,) = functrax.eval_jaxpr(closed.jaxpr, closed.consts, x, fnp.asarray(i))
        check(out, XN[0][i])


def test_traced_index_with_slices_and_none():
    x = fnp.asarray(XN)
    f = lambda x, i: x[None, ::-1, i, 1:]
    closed, (out,) = traced(f, x, fnp.asarray(-2))
    assert "gather" not in prims(closed)
    check(out, XN[None, ::-1, -2, 1:])


@pytest.mark.parametrize("i,expected", [(3, 2), (7, 2), (-4, 0), (-100, 0), (-3, 0), (2, 2)])
def test_traced_out_of_bound_indices_clamp(i, expected):
    x = fnp.asarray(XN[0, :, 0])  # [0, 4, 8]
    _, (out,) = traced(lambda x, i: x[i], x, fnp.asarray(i))
    check(out, XN[0, expected, 0])
    check(x[fnp.asarray(i)], XN[0, expected, 0])  # a concrete Array index: same
    # integer-array indices: negative wrap once, then clamp (gather PROMISE_IN_BOUNDS)
    _, (out,) = traced(lambda x, i: x[i], x, fnp.asarray([i, 1]))
    check(out, XN[0, [expected, 1], 0])


def test_static_out_of_bound_int_is_clamped_as_in_jax():
    # retrieval clamps (something must be returned): JAX's gather semantics, also for
    # static Python ints; negative indices wrap once first
    x = fnp.asarray(XN)
    check(x[0, 3], XN[0, 2])
    check(x[-3], XN[0])
    check(x[7], XN[-1])
    check(functrax.jit(lambda x: x[:, :, 4])(x), XN[:, :, -1])
    check(x[5, fnp.asarray([0, 1])], XN[-1, [0, 1]])
    check(x.at[0, 3].get(), XN[0, 2])
    assert "gather" in str(functrax.make_jaxpr(lambda x: x[7])(x))
    with pytest.raises(IndexError, match="size 0"):
        fnp.zeros((0, 2))[1]


# --- advanced indexing ---


def test_advanced_indexing_is_one_gather():
    x = fnp.asarray(XN)
    closed, (out,) = traced(lambda x, i, j: x[i, :, j], x, fnp.asarray([1, 0]),
                            fnp.asarray([[3], [2]]))
    assert prims(closed).count("gather") == 1
    check(out, XN[[1, 0], :, [[3], [2]]])


@pytest.mark.parametrize("idx", [
    np.s_[[0, 1], :, [1, 2]], np.s_[:, [0, 1], None, [1, 2]], np.s_[[0, 1], None, [1, 2]],
    np.s_[[0, 1], ..., [1, 2]], np.s_[1, :, [1, 2]], np.s_[:, 1, [1, 2]],
    np.s_[[[0], [1]], ::-1, [[1, 2, 3]]], np.s_[1:, [0, -1], ::2, None],
    np.s_[None, [0, -1], None, 2], np.s_[..., [-1, 0]], np.s_[:, [[0, 2]], 1],
    np.s_[[], :], np.s_[True], np.s_[False, 0], np.s_[[0, 1], True, [1, 2]],
])
def test_advanced_indexing_matches_numpy(idx):
    x = fnp.asarray(XN)
    check(x[idx], XN[idx])
    _, (out,) = traced(lambda x: x[idx], x)
    check(out, XN[idx])


def test_top_level_list_index_is_rejected_like_jax():
    x = fnp.asarray(XN)
    with pytest.raises(TypeError, match=r"use `arr\[array\(seq\)\]`"):
        x[[0, 1]]
    with pytest.raises(TypeError, match=r"use `arr\[tuple\(seq\)\]`"):
        x[[0, slice(None)]]
    check(x[fnp.asarray([1, 0])], XN[[1, 0]])


def test_bad_indices():
    x = fnp.asarray(XN)
    with pytest.raises(TypeError, match="Indexer must have integer or boolean type, got "
                                        "indexer with type float32 at position 1"):
        x[0, fnp.asarray([1.0])]
    with pytest.raises(TypeError, match="integer or boolean type"):
        x[1.5]
    with pytest.raises(TypeError, match="string indexing"):
        x["a"]
    with pytest.raises(IndexError, match="Too many indices: 3-dimensional array indexed with 4"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError, match="could not be broadcast together"):
        x[fnp.asarray([0, 1]), fnp.asarray([0, 1, 2])]
    with pytest.raises(IndexError, match="must have static start/stop/step"):
        functrax.make_jaxpr(lambda x, i: x[i:])(x, 1)
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match="axis 0 with size 0"):
        functrax.make_jaxpr(lambda x, i: x[i])(fnp.zeros((0, 2)), 0)


# --- boolean masks ---


def test_boolean_masks_on_concrete_arrays():
    x = fnp.asarray(XN)
    m2 = XN[0] > 5
    m1 = fnp.asarray([True, False, True])
    for idx in [XN > 10, (slice(None), fnp.asarray(m2)), (1, m2), (slice(None), m1),
                (np.array([True, False]), Ellipsis, np.array([0, 3])), (XN[..., 0] > 2, None),
                np.array(True), (Ellipsis, np.array([False] * 4))]:
        check(x[idx], XN[idx])
        _, (out,) = traced(lambda x: x[idx], x)  # the mask is a constant here
        check(out, XN[idx])
    with pytest.raises(IndexError, match="boolean index did not match shape"):
        x[np.array([True, False, True])]


def test_traced_boolean_mask_raises():
    x = fnp.asarray([1.0, -1.0, 2.0])
    with pytest.raises(functrax.NonConcreteBooleanIndexError,
                       match=r"Array boolean indices must be concrete; got bool\[3\]"):
        functrax.make_jaxpr(lambda x: x[x > 0])(x)
    with pytest.raises(IndexError):  # NonConcreteBooleanIndexError is an IndexError
        functrax.make_jaxpr(lambda x: x.at[x > 0].set(0.0))(x)


def test_item_assignment_raises_with_at_hint():
    x = fnp.asarray(XN)
    with pytest.raises(TypeError, match=r"\.at\[\]"):
        x[0] = 1

    def f(x):
        x[0] = 1
        return x
    with pytest.raises(TypeError, match=r"\.at\[\]"):
        functrax.make_jaxpr(f)(x)


def test_iterating_a_tracer():
    _, outs = traced(lambda x: list(x), fnp.asarray(XN))
    for o, w in zip(outs, XN):
        check(o, w)


# --- x.at[idx] ---


def test_at_defaults_follow_jax():
    x = fnp.arange(5)
    idx = fnp.asarray([0, 7, -7, -1])
    check(x.at[idx].set(9), [9, 1, 2, 3, 9])  # out of bounds: dropped
    check(x.at[idx].add(1), [1, 1, 2, 3, 5])
    check(x.at[idx].get(), [0, 4, 0, 4])  # clamped
    check(x.at[idx].get(mode="fill", fill_value=-1), [0, -1, -1, 4])
    check(x.at[idx].get(mode="fill"), [0, np.iinfo(np.int32).min, np.iinfo(np.int32).min, 4])
    check(x.at[idx].set(9, mode="clip"), [9, 1, 2, 3, 9])
    check(x.at[fnp.asarray([7])].set(9, mode="clip"), [0, 1, 2, 3, 9])
    check(x.at[10].set(9), [0, 1, 2, 3, 4])  # static out-of-bound ints are dropped too
    with pytest.raises(ValueError, match="Unknown gather mode"):
        x.at[0].get(mode="wrap")


def test_at_dtypes_and_broadcasting():
    x = fnp.arange(5)
    out = x.at[1:3].add(2.7)  # computed in float32, cast back (as JAX)
    assert out.dtype == np.int32
    check(out, [0, 3, 4, 3, 4])
    xf = fnp.zeros((3, 4))
    out = xf.at[:, fnp.asarray([0, 2])].set(fnp.asarray([1.0, 2.0]))
    want = np.zeros((3, 4), np.float32)
    want[:, [0, 2]] = [1.0, 2.0]
    check(out, want)
    check(xf.at[1].set([1, 2, 3, 4]), np.array([[0] * 4, [1, 2, 3, 4], [0] * 4]))
    w = fnp.asarray(1.0, dtype=np.float32)
    assert w.at[()].add(1).dtype == np.float32
    weak = lax.full((3,), 1.0, np.float32)
    with pytest.raises(ValueError, match="cannot broadcast values of shape"):
        xf.at[0].set(fnp.ones(3))
    assert xf.at[0].mul(2.0).shape == (3, 4)
    assert weak.at[0].set(2.0).dtype == np.float32


def test_at_scatter_params_and_newaxis():
    x = fnp.zeros((3, 2))
    closed, (out,) = traced(lambda x, y: x.at[None, 1:, None].add(y), x, fnp.ones((2, 1, 2)))
    want = np.zeros((3, 2), np.float32)
    want[1:] += 1
    check(out, want)
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "scatter-add"]
    assert eqn.params["mode"] == GatherScatterMode.FILL_OR_DROP
    assert eqn.params["unique_indices"] and eqn.params["indices_are_sorted"]
    closed, _ = traced(lambda x, i: x.at[i].set(1.0, unique_indices=True), x,
                       fnp.asarray([0, 2]))
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "scatter"]
    assert eqn.params["unique_indices"] and not eqn.params["indices_are_sorted"]


# --- hypothesis: random basic and advanced index expressions vs numpy ---


@st.composite
def basic_indices(draw):
    """A shape and an index of ints, slices, None and at most one Ellipsis for it."""
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=4)))
    items = []  # (dimension or None, item)
    for dim, n in enumerate(shape):
        while draw(st.integers(0, 4)) == 0:
            items.append((None, None))
        if n and draw(st.booleans()):
            items.append((dim, draw(st.integers(-n, n - 1))))
        else:
            bound = st.none() | st.integers(-n - 2, n + 2)
            step = st.none() | st.sampled_from([1, 2, 3, -1, -2, -3])
            items.append((dim, slice(draw(bound), draw(bound), draw(step))))
    if draw(st.booleans()):
        items.append((None, None))
    # replace the items of dimensions [a, b) by an Ellipsis, or drop trailing ones
    a = draw(st.integers(0, len(shape)))
    b = draw(st.integers(a, len(shape)))
    keep = [(d, i) for d, i in items if d is None or not a <= d < b]
    if draw(st.booleans()):
        pos = next((k for k, (d, _) in enumerate(keep) if d is not None and d >= b), len(keep))
        keep.insert(pos, (None, Ellipsis))
    elif b == len(shape):
        keep = [(d, i) for d, i in keep if d is None or d < a]
    else:
        keep = items
    return shape, tuple(i for _, i in keep)


@settings(max_examples=120, deadline=None)
@given(basic_indices())
def test_random_basic_indexing_matches_numpy(case):
    shape, idx = case
    xn = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = fnp.asarray(xn)
    check(x[idx], xn[idx])
    closed, (out,) = traced(lambda x: x[idx], x)
    assert "gather" not in str(closed)
    check(out, xn[idx])


@st.composite
def advanced_indices(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    base = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    items, arrays = [], 0
    for n in shape:
        kind = draw(st.sampled_from(["array", "int", "full", "slice", "none"]))
        if kind == "none":  # a new axis, then a full slice for this dimension
            items.append(None)
        if kind == "array" or (kind == "int" and not arrays):
            k = draw(st.integers(0, len(base)))
            sub = tuple(1 if draw(st.booleans()) else d for d in base[len(base) - k:])
            items.append(rng.integers(-n, n, sub).astype(np.int32))
            arrays += 1
        elif kind == "int":
            items.append(int(rng.integers(-n, n)))
        elif kind == "slice":
            items.append(slice(int(rng.integers(-n, n)), None, draw(st.sampled_from([1, 2, -1]))))
        else:
            items.append(slice(None))
    if not any(isinstance(i, np.ndarray) and i.ndim for i in items):
        first = next(k for k, i in enumerate(items) if i is not None)
        items[first] = np.asarray([0, -1], np.int32)
    return shape, tuple(items)


@settings(max_examples=80, deadline=None)
@given(advanced_indices())
def test_random_advanced_indexing_matches_numpy(case):
    shape, idx = case
    xn = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = xn[idx]
    x = fnp.asarray(xn)
    check(x[idx], want)
    arrays = [i for i in idx if isinstance(i, np.ndarray)]

    def f(x, *arrs):  # the index arrays are traced
        it = iter(arrs)
        return x[tuple(next(it) if isinstance(i, np.ndarray) else i for i in idx)]
    closed, (out,) = traced(f, x, *map(fnp.asarray, arrays))
    assert prims(closed).count("gather") <= 1
    check(out, want)
    # the same index expression as a scatter
    y = np.arange(want.size, dtype=np.float32).reshape(want.shape) + 100
    expected = xn.copy()
    np.add.at(expected, idx, y)
    check(x.at[idx].add(fnp.asarray(y)), expected)
    expected = xn.copy()
    np.maximum.at(expected, idx, y - 150)
    check(x.at[idx].max(fnp.asarray(y - 150)), expected)


# --- take / take_along_axis ---


def test_take_modes():
    xn = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    x = fnp.asarray(xn)
    i = np.array([[0, -1], [5, 2]], np.int32)
    got = fnp.take(x, fnp.asarray(i), axis=1)
    want = xn[:, [[0, 3], [0, 2]]]
    want[:, 1, 0] = np.nan
    check(got, want)
    check(fnp.take(x, fnp.asarray(i), axis=1, mode="wrap"), np.take(xn, i, axis=1, mode="wrap"))
    check(fnp.take(x, fnp.asarray(i), mode="clip"), np.take(xn, i, mode="clip"))
    j = np.array([3, -2, 12, -13], np.int32)
    check(fnp.take(x, fnp.asarray(j), fill_value=-1.0), [3.0, 10.0, -1.0, -1.0])
    with pytest.raises(NotImplementedError):
        fnp.take(x, fnp.asarray(i), mode="raise")
    with pytest.raises(ValueError, match="Invalid mode"):
        fnp.take(x, fnp.asarray(i), mode="bad")
    with pytest.raises(TypeError, match="take: indices must have an integer dtype"):
        fnp.take(x, fnp.asarray([1.0]))
    with pytest.raises(TypeError, match="take requires ndarray or scalar arguments"):
        fnp.take(x, [0, 1])
    check(fnp.take(x, fnp.zeros((0,), np.int32), axis=0), np.zeros((0, 4), np.float32))


def test_take_along_axis_errors_and_none_axis():
    x = fnp.arange(6).reshape(2, 3)
    check(fnp.take_along_axis(x, fnp.asarray([5, 0]), axis=None), [5, 0])
    with pytest.raises(ValueError, match="same number of dimensions"):
        fnp.take_along_axis(x, fnp.asarray([0]), axis=1)
    with pytest.raises(ValueError, match="incompatible shapes"):
        fnp.take_along_axis(x, fnp.zeros((3, 1), np.int32), axis=1)
    check(fnp.take_along_axis(x, fnp.asarray([[2], [7]]), axis=1, mode="clip"), [[2], [5]])


# --- nonzero family ---


def test_nonzero_family():
    xn = np.array([[0, 3, 0], [1, 0, 2]], np.int32)
    x = fnp.asarray(xn)
    for g, w in zip(fnp.nonzero(x), np.nonzero(xn)):
        check(g, w)
    for g, w in zip(fnp.where(x), np.where(xn)):
        check(g, w)
    check(fnp.argwhere(x), np.argwhere(xn))
    check(fnp.flatnonzero(x), np.flatnonzero(xn))
    check(fnp.argwhere(fnp.asarray(3)), np.argwhere(3))
    check(fnp.argwhere(fnp.asarray(0)), np.argwhere(0))
    for g, w in zip(fnp.nonzero(x, size=2), np.nonzero(xn)):
        check(g, w[:2])
    with pytest.raises(functrax.ConcretizationTypeError, match="size argument"):
        functrax.make_jaxpr(fnp.nonzero)(x)
    with pytest.raises(ValueError, match="0d arrays"):
        fnp.nonzero(fnp.asarray(1))
    with pytest.raises(ValueError, match="fill_value must be a scalar or a tuple of length 2"):
        fnp.nonzero(x, size=4, fill_value=(1, 2, 3))
    _, outs = traced(lambda x: fnp.nonzero(x, size=5, fill_value=(-1, -2)), x)
    check(outs[0], [0, 1, 1, -1, -1])
    check(outs[1], [1, 0, 2, -2, -2])
    _, outs = traced(lambda x: fnp.nonzero(x, size=0), x)
    assert [o.shape for o in outs] == [(0,), (0,)]


def test_compress_extract_select():
    xn = np.arange(12).reshape(3, 4)
    x = fnp.asarray(xn)
    c = np.array([True, False, True])
    check(fnp.compress(fnp.asarray(c), x, axis=0), np.compress(c, xn, axis=0))
    check(fnp.compress(fnp.asarray(c), x), np.compress(c, xn))
    check(fnp.compress(fnp.asarray([1, 0, 1, 0, 0]), x, axis=1),
          np.compress([1, 0, 1, 0, 0], xn, axis=1))
    with pytest.raises(ValueError, match="out of bounds"):
        fnp.compress(fnp.asarray([True] * 5), x, axis=0)
    check(fnp.extract(fnp.asarray(xn % 3 == 0), x), np.extract(xn % 3 == 0, xn))
    _, (out,) = traced(lambda c, x: fnp.extract(c, x, size=6, fill_value=-1),
                       fnp.asarray(xn % 3 == 0), x)
    check(out, [0, 3, 6, 9, -1, -1])
    with pytest.raises(ValueError, match="length equal"):
        fnp.select([x > 1], [x, x])
    with pytest.raises(ValueError, match="non-empty"):
        fnp.select([], [])
    out = fnp.select([x > 8, x > 4], [x, fnp.asarray(2.5)])
    check(out, np.select([xn > 8, xn > 4], [xn, 2.5]))
    assert out.dtype == np.float32


# --- index helpers ---


def test_index_helpers():
    for g, w in zip(fnp.diag_indices(3, 3), np.diag_indices(3, 3)):
        check(g, w)
    for g, w in zip(fnp.diag_indices_from(fnp.zeros((2, 2))), np.diag_indices(2)):
        check(g, w)
    with pytest.raises(ValueError, match="nonnegative"):
        fnp.diag_indices(-1)
    for n, k, m in [(3, 0, None), (4, -1, 2), (2, 1, 5)]:
        for g, w in zip(fnp.tril_indices(n, k, m), np.tril_indices(n, k, m)):
            check(g, w)
        for g, w in zip(fnp.triu_indices(n, k, m), np.triu_indices(n, k, m)):
            check(g, w)
    a = np.zeros((3, 5))
    for g, w in zip(fnp.triu_indices_from(fnp.asarray(a), 1), np.triu_indices_from(a, 1)):
        check(g, w)
    for g, w in zip(fnp.tril_indices_from(fnp.asarray(a)), np.tril_indices_from(a)):
        check(g, w)
    check(fnp.indices((2, 3)), np.indices((2, 3)))
    check(fnp.indices(()), np.indices(()))
    for g, w in zip(fnp.indices((2, 3, 1), sparse=True), np.indices((2, 3, 1), sparse=True)):
        check(g, w)
    assert fnp.indices((2,), dtype=np.float32).dtype == np.float32
    args = (np.array([0, 2]), np.array([True, False, True, True]), np.array([], np.int32))
    for g, w in zip(fnp.ix_(*map(fnp.asarray, args)), np.ix_(*args)):
        check(g, w)
    xn = np.arange(60.0).reshape(3, 4, 5)
    check(fnp.asarray(xn)[fnp.ix_(fnp.asarray([2, 0]), fnp.asarray([1, 3]))],
          xn[np.ix_([2, 0], [1, 3])])
    with pytest.raises(ValueError, match="1-dimensional"):
        fnp.ix_(fnp.zeros((2, 2), np.int32))


def test_unravel_and_ravel_multi_index():
    i = np.array([0, 5, 11, 23], np.int32)
    for g, w in zip(fnp.unravel_index(fnp.asarray(i), (2, 3, 4)), np.unravel_index(i, (2, 3, 4))):
        check(g, w)
    for g, w in zip(fnp.unravel_index(fnp.asarray(7), 10), np.unravel_index(7, 10)):
        check(g, w)
    # out of bounds: clipped (JAX), -1 is the last element
    check(np.stack(fnp.unravel_index(fnp.asarray([30, -1, -30]), (2, 3))),
          [[1, 1, 0], [2, 2, 0]])
    mi = (np.array([1, 0]), np.array([2, 3]))
    check(fnp.ravel_multi_index(tuple(map(fnp.asarray, mi)), (2, 4)),
          np.ravel_multi_index(mi, (2, 4)))
    check(fnp.ravel_multi_index(tuple(map(fnp.asarray, mi)), (2, 4), order="F"),
          np.ravel_multi_index(mi, (2, 4), order="F"))
    bad = (fnp.asarray([1, 2]), fnp.asarray([5, -1]))
    for mode in ("wrap", "clip"):
        check(fnp.ravel_multi_index(bad, (2, 4), mode=mode),
              np.ravel_multi_index(tuple(map(np.asarray, bad)), (2, 4), mode=mode))
    with pytest.raises(ValueError, match="invalid entry"):
        fnp.ravel_multi_index(bad, (2, 4))
    with pytest.raises(functrax.ConcretizationTypeError, match="mode='raise'"):
        functrax.make_jaxpr(lambda i, j: fnp.ravel_multi_index((i, j), (2, 4)))(*bad)
    _, (out,) = traced(lambda i, j: fnp.ravel_multi_index((i, j), (2, 4), mode="wrap"), *bad)
    check(out, np.ravel_multi_index(tuple(map(np.asarray, bad)), (2, 4), mode="wrap"))
    with pytest.raises(ValueError, match="invalid order"):
        fnp.ravel_multi_index(mi, (2, 4), order="K")


# --- lax wrappers ---


def test_lax_gather_scatter_defaults():
    x = fnp.arange(5.0)
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    i = fnp.asarray([[1], [9]])
    closed, (out,) = traced(lambda x, i: lax.gather(x, i, dn, (1,)), x, i)
    assert closed.jaxpr.eqns[0].params["mode"] == GatherScatterMode.PROMISE_IN_BOUNDS
    check(out, [1.0, 4.0])
    check(lax.gather(x, i, dn, (1,), mode="fill"), [1.0, np.nan])
    check(lax.gather(x, i, dn, (1,), mode="fill", fill_value=-2.0), [1.0, -2.0])
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    u = fnp.asarray([10.0, 20.0])
    closed, (out,) = traced(lambda x, i, u: lax.scatter_add(x, i, u, sdn), x, i, u)
    assert closed.jaxpr.eqns[0].params["mode"] == GatherScatterMode.FILL_OR_DROP
    check(out, [0.0, 11.0, 2.0, 3.0, 4.0])
    check(lax.scatter(x, i, u, sdn, mode="clip"), [0.0, 10.0, 2.0, 3.0, 20.0])
    check(lax.scatter_mul(x, i, u, sdn), [0.0, 10.0, 2.0, 3.0, 4.0])
    check(lax.scatter_min(x, i, u, sdn), [0.0, 1.0, 2.0, 3.0, 4.0])
    check(lax.scatter_max(x, i, u, sdn), [0.0, 10.0, 2.0, 3.0, 4.0])
