"""gather / scatter primitives: shape rules, numpy rules, eager bind.

The numpy rules are checked against loop-based references that follow the XLA operation
semantics pseudo-code position by position.
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrax.core
from functrax.core import Array, ShapedArray
from functrax.lowering.numpy import rules as numpy_backend
from functrax.primitives.gather_scatter import (
    GatherDimensionNumbers as GDN,
)
from functrax.primitives.gather_scatter import (
    GatherScatterMode as Mode,
)
from functrax.primitives.gather_scatter import (
    ScatterDimensionNumbers as SDN,
)
from functrax.primitives.gather_scatter import (
    gather_p,
    scatter_add_p,
    scatter_max_p,
    scatter_min_p,
    scatter_mul_p,
    scatter_p,
)

rules = numpy_backend.numpy_rules
SCATTERS = {"set": scatter_p, "add": scatter_add_p, "mul": scatter_mul_p,
            "min": scatter_min_p, "max": scatter_max_p}
COMBINE = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b,
           "min": lambda a, b: min(a, b) if not np.isnan(a) else a,
           "max": lambda a, b: max(a, b) if not np.isnan(a) else a}


def default_fill(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return True
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return np.nan


# --- references (XLA operation semantics, index_vector_dim = last) ---


def ref_gather(x, idx, dn, slice_sizes, mode=Mode.FILL_OR_DROP, fill_value=None):
    mode = Mode.from_any(mode)
    nb = idx.ndim - 1
    out_rank = nb + len(dn.offset_dims)
    batch_dims = [i for i in range(out_rank) if i not in dn.offset_dims]
    remapped = [d for d in range(x.ndim)
                if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    shape = [0] * out_rank
    for i, d in zip(batch_dims, range(nb)):
        shape[i] = idx.shape[d]
    for i, d in zip(dn.offset_dims, remapped):
        shape[i] = slice_sizes[d]
    out = np.empty(shape, x.dtype)
    fill = default_fill(x.dtype) if fill_value is None else fill_value
    for pos in itertools.product(*map(range, shape)):
        g = [pos[i] for i in batch_dims]
        s = idx[tuple(g)]
        s_in = [0] * x.ndim
        for k, d in enumerate(dn.start_index_map):
            s_in[d] = int(s[k])
        for od, idd in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
            s_in[od] = g[idd]
        bad = any(not 0 <= s_in[d] <= x.shape[d] - slice_sizes[d] for d in dn.start_index_map)
        if bad and mode == Mode.FILL_OR_DROP:
            out[pos] = fill
            continue
        for d in dn.start_index_map:
            s_in[d] = min(max(s_in[d], 0), x.shape[d] - slice_sizes[d])
        o_in = [0] * x.ndim
        for i, d in zip(dn.offset_dims, remapped):
            o_in[d] = pos[i]
        out[pos] = x[tuple(a + b for a, b in zip(s_in, o_in))]
    return out


def ref_scatter(kind, x, idx, upd, dn, mode=Mode.FILL_OR_DROP):
    """Returns (result, writes): writes maps a position to every value a `set` wrote there."""
    mode = Mode.from_any(mode)
    out = np.array(x, copy=True)
    writes = {}
    uwd = dn.update_window_dims
    scatter_dims = [d for d in range(upd.ndim) if d not in uwd]
    remapped = [d for d in range(x.ndim)
                if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
    wsize = [1] * x.ndim
    for d, u in zip(remapped, uwd):
        wsize[d] = upd.shape[u]
    for pos in itertools.product(*map(range, upd.shape)):
        g = [pos[i] for i in scatter_dims]
        s = idx[tuple(g)]
        s_in = [0] * x.ndim
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            s_in[d] = int(s[k])
        for od, idd in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
            s_in[od] = g[idd]
        bad = any(not 0 <= s_in[d] <= x.shape[d] - wsize[d]
                  for d in dn.scatter_dims_to_operand_dims)
        nowhere = any(x.shape[d] < wsize[d] for d in dn.scatter_dims_to_operand_dims)
        if bad and (mode == Mode.FILL_OR_DROP or nowhere):
            continue
        for d in dn.scatter_dims_to_operand_dims:
            s_in[d] = min(max(s_in[d], 0), x.shape[d] - wsize[d])
        w_in = [0] * x.ndim
        for d, u in zip(remapped, uwd):
            w_in[d] = pos[u]
        target = tuple(a + b for a, b in zip(s_in, w_in))
        if kind == "set":
            out[target] = upd[pos]
            writes.setdefault(target, []).append(upd[pos])
        else:
            out[target] = COMBINE[kind](out[target], upd[pos])
    return out, writes


def eager(prim, *args, **params):
    out = prim.bind(*[Array(a) for a in args], **params)
    assert isinstance(out, functrax.core.Array)
    return np.asarray(out)


def gparams(dn, slice_sizes, mode=None, fill_value=None):
    return {"dimension_numbers": dn, "slice_sizes": tuple(slice_sizes),
            "indices_are_sorted": False, "unique_indices": False, "mode": mode,
            "fill_value": fill_value}


def sparams(dn, mode=None):
    return {"dimension_numbers": dn, "indices_are_sorted": False, "unique_indices": False,
            "mode": mode, "update_jaxpr": None, "update_consts": ()}


def check_gather(x, idx, dn, slice_sizes, mode=None, fill_value=None, expected=None):
    params = gparams(dn, slice_sizes, mode, fill_value)
    aval = gather_p.abstract_eval(ShapedArray(x.shape, x.dtype), ShapedArray(idx.shape, idx.dtype),
                                  **params)
    got = rules[gather_p](x, idx, **params)
    ref = ref_gather(x, idx, dn, slice_sizes, Mode.from_any(mode), fill_value)
    assert aval.shape == got.shape == ref.shape and aval.dtype == got.dtype == x.dtype
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(eager(gather_p, x, idx, **params), ref)
    if expected is not None:
        np.testing.assert_array_equal(got, expected)
    return got


def check_scatter(kind, x, idx, upd, dn, mode=None, expected=None):
    params = sparams(dn, mode)
    prim = SCATTERS[kind]
    aval = prim.abstract_eval(ShapedArray(x.shape, x.dtype), ShapedArray(idx.shape, idx.dtype),
                              ShapedArray(upd.shape, upd.dtype), **params)
    assert aval == ShapedArray(x.shape, x.dtype)
    ref, writes = ref_scatter(kind, x, idx, upd, dn, Mode.from_any(mode))
    for got in (rules[prim](x, idx, upd, **params), eager(prim, x, idx, upd, **params)):
        assert got.shape == x.shape and got.dtype == x.dtype
        if kind == "set":  # duplicates: any of the written values may win
            mask = np.ones(x.shape, bool)
            for pos, vals in writes.items():
                mask[pos] = False
                assert any(got[pos] == v or (np.isnan(v) and np.isnan(got[pos])) for v in vals)
            np.testing.assert_array_equal(got[mask], ref[mask])
        else:
            np.testing.assert_array_equal(got, ref)
        if expected is not None:
            np.testing.assert_array_equal(got, expected)
    return ref


# --- gather: the forms jnp indexing and vmap produce ---


def test_take_along_axis0():  # x[idx]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    idx = np.array([4, 0, 2, 2], np.int32)
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    check_gather(x, idx[:, None], dn, (1, 3), mode=Mode.PROMISE_IN_BOUNDS, expected=x[idx])
    check_gather(x, idx[:, None], dn, (1, 3), mode=Mode.FILL_OR_DROP, expected=x[idx])


def test_take_along_axis1():
    rng = np.random.default_rng(1)
    x = rng.integers(-50, 50, (3, 5)).astype(np.int32)
    idx = rng.integers(0, 5, (2, 4)).astype(np.int32)
    dn = GDN(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,))
    check_gather(x, idx[..., None], dn, (3, 1), mode="clip", expected=np.take(x, idx, axis=1))


def test_point_gather():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    idx = np.stack([rng.integers(0, n, 7) for n in x.shape], -1).astype(np.int32)
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0, 1, 2), start_index_map=(0, 1, 2))
    check_gather(x, idx, dn, (1, 1, 1), expected=x[idx[:, 0], idx[:, 1], idx[:, 2]])
    # start_index_map in another order
    dn = GDN(offset_dims=(), collapsed_slice_dims=(0, 1, 2), start_index_map=(2, 0, 1))
    check_gather(x, idx[:, [2, 0, 1]], dn, (1, 1, 1),
                 expected=x[idx[:, 0], idx[:, 1], idx[:, 2]])


def test_operand_batching_dims():  # vmap of x[idx] over axis 0 of both
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    idx = rng.integers(0, 5, (3, 2, 1)).astype(np.int32)
    dn = GDN(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
             operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    expected = np.stack([x[b][idx[b, :, 0]] for b in range(3)])
    check_gather(x, idx, dn, (1, 1, 4), expected=expected)
    # batch dimension of the indices in the middle
    idx2 = np.moveaxis(idx, 0, 1).copy()  # (2, 3, 1)
    dn2 = dn._replace(start_indices_batching_dims=(1,))
    check_gather(x, idx2, dn2, (1, 1, 4), expected=np.moveaxis(expected, 0, 1))


def test_gather_modes_out_of_bounds():
    x = np.arange(10, dtype=np.float32)
    idx = np.array([[-1], [0], [7], [8], [10], [3]], np.int32)
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    starts_clip = [0, 0, 7, 7, 7, 3]
    clipped = np.stack([x[s:s + 3] for s in starts_clip])
    check_gather(x, idx, dn, (3,), mode=Mode.CLIP, expected=clipped)
    check_gather(x, idx, dn, (3,), mode=Mode.PROMISE_IN_BOUNDS, expected=clipped)
    filled = clipped.copy()
    filled[[0, 3, 4]] = np.nan  # the whole slice, even its in-bounds part
    check_gather(x, idx, dn, (3,), mode=Mode.FILL_OR_DROP, expected=filled)
    check_gather(x, idx, dn, (3,), mode=None, expected=filled)  # None means FILL_OR_DROP
    filled[[0, 3, 4]] = -5
    check_gather(x, idx, dn, (3,), mode="fill", fill_value=-5.0, expected=filled)
    # default fill values per dtype (as JAX)
    for dt, fill in [(np.int32, np.iinfo(np.int32).min), (np.uint8, 255), (np.bool_, True),
                     (np.int8, -128)]:
        xi = (np.arange(10) % 2).astype(dt)
        out = check_gather(xi, idx, dn, (3,), mode=Mode.FILL_OR_DROP)
        assert (out[[0, 3, 4]] == fill).all()


def test_gather_edge_shapes():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    # zero-size slices, empty batches, scalar output batch
    dn = GDN(offset_dims=(0, 1), collapsed_slice_dims=(), start_index_map=(0,))
    check_gather(x, np.array([5], np.int32), dn, (0, 2), mode="clip")
    check_gather(x, np.array([5], np.int32), dn, (0, 2), mode="fill")
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    check_gather(x, np.zeros((0, 1), np.int32), dn, (1, 4))
    # no index vector at all: every batch position gets the same slice
    dn = GDN(offset_dims=(2, 3), collapsed_slice_dims=(), start_index_map=())
    check_gather(x, np.zeros((2, 3, 0), np.int32), dn, (2, 2))
    # unsigned and 64-bit indices
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    check_gather(x, np.array([[2], [250]], np.uint8), dn, (1, 4))
    check_gather(x, np.array([[2], [2**31 - 1]], np.int64), dn, (1, 4), mode="clip")
    # (the numpy rule alone: eager Arrays canonicalize int64 to int32 while x64 is off)
    big = np.array([[2], [2**40], [-2**40]], np.int64)
    np.testing.assert_array_equal(rules[gather_p](x, big, **gparams(dn, (1, 4), "clip")),
                                  x[[2, 2, 0]])


# --- scatter ---


def test_scatter_duplicates_all_variants():
    idx = np.array([[1], [1], [3], [1], [-1], [5]], np.int32)
    upd = np.array([1, 2, 3, 4, 100, 200], np.float32)
    dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    x = np.full(5, 10, np.float32)
    check_scatter("add", x, idx, upd, dn, expected=[10, 17, 10, 13, 10])
    check_scatter("mul", x, idx, upd, dn, expected=[10, 80, 10, 30, 10])
    check_scatter("min", x, idx, upd, dn, expected=[10, 1, 10, 3, 10])
    check_scatter("max", x, idx, upd, dn, expected=[10, 10, 10, 10, 10])
    check_scatter("max", x, idx, upd * 5, dn, expected=[10, 20, 10, 15, 10])
    check_scatter("set", x, idx, upd, dn)
    # CLIP: -1 -> 0 and 5 -> 4
    check_scatter("add", x, idx, upd, dn, mode="clip", expected=[110, 17, 10, 13, 210])
    check_scatter("add", x, idx, upd, dn, mode=Mode.PROMISE_IN_BOUNDS,
                  expected=[110, 17, 10, 13, 210])
    check_scatter("set", x, idx[2:], upd[2:], dn, mode="clip", expected=[100, 4, 10, 3, 200])
    # integers and booleans
    xi = np.zeros(5, np.int32)
    check_scatter("add", xi, idx, upd.astype(np.int32), dn, expected=[0, 7, 0, 3, 0])
    xb = np.zeros(5, bool)
    check_scatter("add", xb, idx, np.array([1, 0, 1, 0, 1, 1], bool), dn,
                  expected=[0, 1, 0, 1, 0])
    check_scatter("mul", ~xb, idx, np.array([1, 0, 1, 1, 1, 1], bool), dn,
                  expected=[1, 0, 1, 1, 1])


def test_scatter_windows_drop_whole_window():
    x = np.zeros((4, 6), np.float32)
    idx = np.array([[0, 4], [2, 5], [1, -1], [3, 0]], np.int32)
    upd = np.ones((4, 2, 2), np.float32) * np.arange(1, 5, dtype=np.float32)[:, None, None]
    dn = SDN(update_window_dims=(1, 2), inserted_window_dims=(),
             scatter_dims_to_operand_dims=(0, 1))
    expected = np.zeros((4, 6), np.float32)
    expected[0:2, 4:6] += 1  # windows 1 (col 5..6), 2 (col -1) and 3 (row 3..4) are dropped
    check_scatter("add", x, idx, upd, dn, mode="drop", expected=expected)
    check_scatter("add", x, idx, upd, dn, mode="clip")
    check_scatter("set", x, idx, upd, dn, mode="drop", expected=expected)


def test_scatter_batching_dims():  # vmap of x.at[idx].add(u) over axis 0
    rng = np.random.default_rng(4)
    x = rng.integers(-5, 5, (3, 5, 2)).astype(np.int32)
    idx = rng.integers(0, 5, (3, 4, 1)).astype(np.int32)
    upd = rng.integers(-5, 5, (3, 4, 2)).astype(np.int32)
    dn = SDN(update_window_dims=(2,), inserted_window_dims=(1,),
             scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
             scatter_indices_batching_dims=(0,))
    expected = x.copy()
    for b in range(3):
        np.add.at(expected[b], idx[b, :, 0], upd[b])
    for kind in SCATTERS:
        check_scatter(kind, x, idx, upd, dn, expected=expected if kind == "add" else None)


def test_scatter_into_empty_operand():
    dn = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    x = np.zeros((0,), np.float32)
    for mode in MODES:
        out = check_scatter("add", x, np.zeros((3, 1), np.int32), np.ones(3, np.float32), dn,
                            mode=mode)
        assert out.shape == (0,)


def test_scatter_rank0_operand():
    x = np.array(1.0, np.float32)
    idx = np.zeros((3, 0), np.int32)
    upd = np.array([2.0, 3.0, 4.0], np.float32)
    dn = SDN(update_window_dims=(), inserted_window_dims=(), scatter_dims_to_operand_dims=())
    check_scatter("add", x, idx, upd, dn, expected=10.0)
    check_scatter("mul", x, idx, upd, dn, expected=24.0)
    check_scatter("set", x, idx, upd, dn)
    dn = GDN(offset_dims=(), collapsed_slice_dims=(), start_index_map=())
    check_gather(x, idx, dn, (), expected=np.ones(3, np.float32))


# --- randomized ---

MODES = [Mode.CLIP, Mode.FILL_OR_DROP, Mode.PROMISE_IN_BOUNDS]


@st.composite
def gather_cases(draw):
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    dims = list(range(rank))
    obd = sorted(draw(st.sets(st.sampled_from(dims), max_size=2))) if dims else []
    rest = [d for d in dims if d not in obd]
    collapsed = sorted(d for d in rest if draw(st.booleans()))
    sim = draw(st.permutations(rest))[:draw(st.integers(0, len(rest)))]
    slice_sizes = [1 if d in collapsed or d in obd else draw(st.integers(0, shape[d]))
                   for d in dims]
    nb = draw(st.integers(len(obd), len(obd) + 2))
    batch = [draw(st.integers(1, 3)) for _ in range(nb)]
    ibd = draw(st.permutations(range(nb)))[:len(obd)]
    for od, idd in zip(obd, ibd):
        batch[idd] = shape[od]
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    hi = max(shape, default=1) + 2
    idx = rng.integers(-2, hi, tuple(batch) + (len(sim),)).astype(np.int32)
    n_window = rank - len(collapsed) - len(obd)
    offset_dims = sorted(draw(st.permutations(range(nb + n_window)))[:n_window])
    dn = GDN(offset_dims, collapsed, sim, obd, ibd)
    dtype = draw(st.sampled_from([np.float32, np.int32, np.uint8]))
    x = rng.integers(0, 100, shape).astype(dtype)
    return x, idx, dn, slice_sizes, draw(st.sampled_from(MODES))


@settings(max_examples=60, deadline=None)
@given(gather_cases())
def test_gather_random(case):
    x, idx, dn, slice_sizes, mode = case
    check_gather(x, idx, dn, slice_sizes, mode=mode)


@st.composite
def scatter_cases(draw):
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    dims = list(range(rank))
    obd = sorted(draw(st.sets(st.sampled_from(dims), max_size=1))) if dims else []
    rest = [d for d in dims if d not in obd]
    inserted = sorted(d for d in rest if draw(st.booleans()))
    sdod = draw(st.permutations(rest))[:draw(st.integers(0, len(rest)))]
    window = [d for d in rest if d not in inserted]
    wsizes = [draw(st.integers(0, shape[d])) for d in window]
    nb = draw(st.integers(len(obd), len(obd) + 2))
    batch = [draw(st.integers(1, 4)) for _ in range(nb)]
    ibd = draw(st.permutations(range(nb)))[:len(obd)]
    for od, idd in zip(obd, ibd):
        batch[idd] = shape[od]
    uwd = sorted(draw(st.permutations(range(nb + len(window))))[:len(window)])
    ushape, b, w = [], iter(batch), iter(wsizes)
    for i in range(nb + len(window)):
        ushape.append(next(w) if i in uwd else next(b))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    idx = rng.integers(-1, max(shape, default=1) + 1, tuple(batch) + (len(sdod),)).astype(
        np.int32)
    dn = SDN(uwd, inserted, sdod, obd, ibd)
    dtype = draw(st.sampled_from([np.float32, np.int32]))
    x = rng.integers(-3, 4, shape).astype(dtype)
    upd = rng.integers(-3, 4, ushape).astype(dtype)
    return draw(st.sampled_from(list(SCATTERS))), x, idx, upd, dn, draw(st.sampled_from(MODES))


@settings(max_examples=60, deadline=None)
@given(scatter_cases())
def test_scatter_random(case):
    kind, x, idx, upd, dn, mode = case
    check_scatter(kind, x, idx, upd, dn, mode=mode)


# --- abstract eval ---


def test_abstract_eval_weak_type_and_mode():
    x = ShapedArray((5, 3), np.float32, weak_type=True)
    i = ShapedArray((4, 1), np.int32)
    dn = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    out = gather_p.abstract_eval(x, i, **gparams(dn, (1, 3)))
    assert out == ShapedArray((4, 3), np.float32, weak_type=True)
    sdn = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
              scatter_dims_to_operand_dims=(0,))
    u = ShapedArray((4, 3), np.float32)
    assert scatter_add_p.abstract_eval(x, i, u, **sparams(sdn)) == x
    assert Mode.from_any(None) is Mode.FILL_OR_DROP
    assert Mode.from_any("clip") is Mode.CLIP
    assert Mode.from_any("promise_in_bounds") is Mode.PROMISE_IN_BOUNDS
    with pytest.raises(ValueError, match="Unknown gather mode"):
        Mode.from_any("wrap")
    with pytest.raises(ValueError, match="unknown mode"):
        gather_p.abstract_eval(x, i, **gparams(dn, (1, 3), mode="wrap"))
    # dimension numbers are hashable tuples of ints
    assert hash(GDN([1], [0], [0])) == hash(dn) and GDN([1], [0], [0]) == dn
    assert hash(sdn) == hash(SDN((1,), (0,), (0,), (), ()))


def _gather_err(xshape, ishape, dn, slice_sizes, idtype=np.int32):
    return gather_p.abstract_eval(ShapedArray(xshape, np.float32), ShapedArray(ishape, idtype),
                                  **gparams(dn, slice_sizes))


@pytest.mark.parametrize("xshape,ishape,dn,sizes,match", [
    ((5, 3), (4, 1), GDN((1,), (0,), (0, 1)), (1, 3), "2 elements in start_index_map"),
    ((5, 3), (4, 1), GDN((2,), (0,), (0,)), (1, 3), "Offset dimension 0 .* out of bounds"),
    ((5, 3), (4, 1), GDN((1, 0), (), (0,)), (1, 3), "offset_dims in gather op must be sorted"),
    ((5, 3), (4, 1), GDN((1,), (0,), (2,)), (1, 3), "Invalid start_index_map"),
    ((5, 3), (4, 2), GDN((1,), (0,), (0, 0)), (1, 3), "start_index_map in gather op must not"),
    ((5, 3), (4, 1), GDN((1,), (0,), (0,)), (2, 3), "collapse slice dims with bound 1"),
    ((5, 3), (4, 1), GDN((1,), (0,), (0,)), (1, 4), "Slice size at index 1"),
    ((5, 3), (4, 1), GDN((1,), (0,), (0,)), (1,), "one slice size for every input dimension"),
    ((5, 3), (4, 1), GDN((), (0,), (0,)), (1, 3), "either be a offset dimension"),
    ((5, 3), (4, 1), GDN((1,), (3,), (0,)), (1, 3), "Invalid collapsed_slice_dims"),
    ((3, 5), (3, 1), GDN((1,), (), (1,), (0,), ()), (1, 1),
     "equal numbers of operand_batching_dims"),
    ((3, 5), (4, 1), GDN((), (1,), (1,), (0,), (0,)), (1, 1),
     "batching dimensions to have the same shape"),
    ((3, 5), (3, 1), GDN((), (1,), (1,), (0,), (1,)), (1, 1), "index vector dimension"),
    ((3, 5), (3, 1), GDN((), (1,), (0,), (0,), (0,)), (1, 1),
     "start_index_map and operand_batching_dims .* must be disjoint"),
    ((3, 5), (3, 1), GDN((), (0, 1), (1,), (0,), (0,)), (1, 1),
     "collapsed_slice_dims and operand_batching_dims .* must be disjoint"),
])
def test_gather_errors(xshape, ishape, dn, sizes, match):
    with pytest.raises(TypeError, match=match):
        _gather_err(xshape, ishape, dn, sizes)


def test_gather_errors_misc():
    dn = GDN((1,), (0,), (0,))
    with pytest.raises(ValueError, match="indices must have an integer type"):
        _gather_err((5, 3), (4, 1), dn, (1, 3), idtype=np.float32)
    with pytest.raises(TypeError, match="rank >= 1"):
        _gather_err((5, 3), (), dn, (1, 3))
    with pytest.raises(TypeError, match="must be a GatherDimensionNumbers"):
        _gather_err((5, 3), (4, 1), ((1,), (0,), (0,)), (1, 3))
    # errors surface through eager bind too
    with pytest.raises(TypeError, match="collapse slice dims"):
        gather_p.bind(Array(np.zeros((5, 3), np.float32)), Array(np.zeros((4, 1), np.int32)),
                      **gparams(dn, (2, 3)))


def _scatter_err(xshape, ishape, ushape, dn, udtype=np.float32, idtype=np.int32):
    return scatter_add_p.abstract_eval(
        ShapedArray(xshape, np.float32), ShapedArray(ishape, idtype),
        ShapedArray(ushape, udtype), **sparams(dn))


@pytest.mark.parametrize("xshape,ishape,ushape,dn,match", [
    ((5, 3), (4, 1), (4, 3, 1), SDN((1,), (0,), (0,)), "updates tensor must be of rank 2"),
    ((5, 3), (4, 1), (4, 3), SDN((1,), (), (0,)),
     "window of size 1 .*doesn't match operand of rank 2"),
    ((5, 3), (4, 1), (4, 3), SDN((1,), (0,), (0, 1)), "2 elements in scatter_dims_to_operand"),
    ((5, 3), (4, 1), (4, 3), SDN((1,), (0,), (2,)), "Invalid scatter_dims_to_operand_dims"),
    ((5, 3), (4, 1), (4, 4), SDN((1,), (0,), (0,)), "updates bound is 4, operand bound is 3"),
    ((5, 3), (4, 1), (2, 3), SDN((1,), (0,), (0,)), "For scatter dimension 0, updates bound"),
    ((5, 3), (4, 2), (4, 3), SDN((1,), (0,), (0, 0)), "must not repeat"),
    ((5, 3), (4, 1), (4, 3), SDN((1,), (3,), (0,)), "Invalid inserted_window_dims"),
    ((3, 5), (4, 1), (4,), SDN((), (1,), (1,), (0,), (0,)),
     "batching dimensions to have the same shape"),
    ((3, 5), (3, 1), (3,), SDN((), (1,), (0,), (0,), (0,)),
     "scatter_dims_to_operand_dims and operand_batching_dims .* must be disjoint"),
])
def test_scatter_errors(xshape, ishape, ushape, dn, match):
    with pytest.raises(TypeError, match=match):
        _scatter_err(xshape, ishape, ushape, dn)


def test_scatter_errors_misc():
    dn = SDN((1,), (0,), (0,))
    with pytest.raises(TypeError, match="same dtypes"):
        _scatter_err((5, 3), (4, 1), (4, 3), dn, udtype=np.int32)
    with pytest.raises(ValueError, match="indices must have an integer type"):
        _scatter_err((5, 3), (4, 1), (4, 3), dn, idtype=np.float32)
    with pytest.raises(TypeError, match="must be a ScatterDimensionNumbers"):
        _scatter_err((5, 3), (4, 1), (4, 3), GDN((1,), (0,), (0,)))
    with pytest.raises(TypeError, match="scatter-mul requires arguments to have the same"):
        scatter_mul_p.abstract_eval(ShapedArray((5,), np.float32), ShapedArray((2, 1), np.int32),
                                    ShapedArray((2,), np.int32), **sparams(SDN((), (0,), (0,))))
