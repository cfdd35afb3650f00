"""Gather (a view with data-dependent indices) and scatter (its own kernels) on the Triton
backend, in Triton's interpreter, against the numpy backend; the generated kernels also
compile for sm_90."""
from __future__ import annotations

from tests import triton_harness as th  # first: sets TRITON_INTERPRET=1 for triton

import numpy as np
import pytest

import functrax.numpy as fnp
from functrax import grad, jit, lax
from functrax.lowering.fusion.planner import classify, plan_fusion
from functrax.lowering.fusion.types import GroupKind
from functrax.lowering.triton import compile as tcompile
from functrax.lowering.triton.gather_scatter import ScatterKernel
from functrax.primitives.gather_scatter import GatherDimensionNumbers
from tests.triton_harness import BF16

RNG = np.random.default_rng(0)
PROGRAMS = []  # every program built here, for the sm_90 compile test


def arr(shape, dtype=np.float32, lo=-4, hi=5):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return fnp.asarray(RNG.random(shape) > 0.5)
    if dt.kind in "iu":
        return fnp.asarray(RNG.integers(max(lo, 0) if dt.kind == "u" else lo, hi,
                                        size=shape).astype(dt))
    return fnp.asarray(RNG.normal(size=shape).astype(dt))


def idx(values):
    return fnp.asarray(np.asarray(values, np.int32))


def run_both(f, *args, fallbacks=0):
    """f under jit on the Triton backend matches the numpy backend; returns the program."""
    want = jit(f)(*args)
    got = jit(f, backend="triton")(*args)
    for w, g in zip(want if isinstance(want, (list, tuple)) else [want],
                    got if isinstance(got, (list, tuple)) else [got]):
        w, g = np.asarray(w), np.asarray(g)
        assert w.dtype == g.dtype and w.shape == g.shape
        if w.dtype.kind == "f" or w.dtype == BF16:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-6,
                                       atol=1e-6, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
    prog = th.triton_program(f, *args)
    PROGRAMS.append(prog)
    if fallbacks is not None:
        assert len(prog.fallbacks) == fallbacks, [fb.reason for fb in prog.fallbacks]
    return prog


# --- gather forms ---

X = arr((5, 3))
I_OOB = idx([0, 2, -1, 7, -9])  # negative (wrapped by functrax.numpy) and out of bounds
J_OOB = idx([1, -3, 2, 3])

GATHERS = {
    "x[i]": (lambda x, i: x[i], (X, I_OOB)),
    "x[i]_2d_index": (lambda x, i: x[i], (X, idx([[0, 4], [-2, 9]]))),
    "x[i,j]": (lambda x, i, j: x[i, j], (X, idx([0, 4, -1]), idx([2, -1, 0]))),
    "x[:,j]": (lambda x, j: x[:, j], (X, J_OOB)),
    "x[1,:,i]": (lambda x, i: x[1, :, i], (arr((3, 4, 3)), idx([[0, 2], [-1, 5]]))),
    "take_clip": (lambda x, i: fnp.take(x, i, axis=1, mode="clip"), (X, J_OOB)),
    "take_fill": (lambda x, i: fnp.take(x, i, axis=1, fill_value=-3.0), (X, J_OOB)),
    "get_fill_nan": (lambda x, i: x.at[i].get(mode="fill"), (X, I_OOB)),
    "take_along_axis": (lambda x, i: fnp.take_along_axis(x, i, axis=1),
                        (X, idx(RNG.integers(-3, 3, size=(5, 2))))),
    "take_along_axis_fill": (lambda x, i: fnp.take_along_axis(x, i, 1, fill_value=5.0),
                             (X, idx(RNG.integers(-4, 5, size=(5, 4))))),
    "gather_then_reduce": (lambda x, i: fnp.sum(x[i] * 2.0, axis=1), (X, I_OOB)),
    "gather_of_view": (lambda x, i: x.T[i] + 1.0, (X, idx([0, 2, -1]))),
    "dynamic_slice_traced": (lambda x, i: x[i[2]] + x[i[0]], (X, I_OOB)),
    "dynamic_slice_clamped": (lambda x, s: lax.dynamic_slice(x, (s, s), (3, 2)),
                              (X, fnp.asarray(np.int32(7)))),
    "scalar_index_in_reduction": (lambda x, i: fnp.max(x[i[1]]), (X, I_OOB)),
}


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gather_matches_numpy_backend_without_fallback(name):
    f, args = GATHERS[name]
    run_both(f, *args)


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16, np.uint8, np.int64, BF16])
def test_gather_dtypes(dtype):
    x = arr((5, 3), dtype)
    run_both(lambda x, i: x[i], x, I_OOB)
    run_both(lambda x, i: x.at[i].get(mode="fill"), x, I_OOB)  # default fill per dtype


@pytest.mark.parametrize("index_dtype", [np.int8, np.uint32, np.int64])
def test_gather_index_dtypes(index_dtype):
    i = fnp.asarray(np.array([0, 4, 2], index_dtype))
    run_both(lambda x, i: lax.gather(x, i[:, None], GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 3),
        mode="fill"), X, i)


def test_general_gather_window_and_batching_dims():
    x = arr((2, 6, 5))
    dn = GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                start_index_map=(1, 2), operand_batching_dims=(0,),
                                start_indices_batching_dims=(0,))
    starts = idx([[[0, 1], [5, 4]], [[3, -1], [2, 2]]])  # (batch 2, 2 windows, 2 coords)
    for mode in ("clip", "fill"):
        run_both(lambda x, s: lax.gather(x, s, dn, (1, 2, 3), mode=mode), x, starts)


def test_gather_index_normalisation_fuses_into_the_gather():
    """x[i] (with functrax.numpy's negative-index wrap) and its consumers are one kernel."""
    f = lambda x, i: fnp.exp(x[i]) * 2.0  # noqa: E731
    closed = jit(f).lower(X, I_OOB).jaxpr
    plan = plan_fusion(closed)
    assert [g.kind for g in plan.groups] == [GroupKind.ELEMENTWISE]
    assert "gather" in [e.primitive.name for e in plan.groups[0].eqns]
    assert classify(next(e for e in closed.jaxpr.eqns if e.primitive.name == "gather"))[0] \
        == "view"


# --- scatter ---

I_DUP = idx([0, 2, 2, 7, -1, 0])


def _upd(dtype, shape=(6, 3)):
    return arr(shape, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16, np.int64, np.uint32])
def test_scatter_add_duplicates(dtype):
    x = arr((5, 3), dtype)
    run_both(lambda x, i, y: x.at[i].add(y), x, I_DUP, _upd(dtype))
    run_both(lambda x, i, y: x.at[i].add(y, mode="clip"), x, I_DUP, _upd(dtype))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_scatter_max_min(op, dtype):
    x = arr((5, 3), dtype)
    run_both(lambda x, i, y: getattr(x.at[i], op)(y), x, I_DUP, _upd(dtype))


@pytest.mark.parametrize("op", ["max", "min"])
def test_scatter_max_min_propagate_nan(op):
    x = X.at[1, 1].set(np.nan).at[3, 0].set(-np.nan)
    y = _upd(np.float32).at[0, 0].set(np.nan).at[2, 2].set(-np.nan)
    run_both(lambda x, i, y: getattr(x.at[i], op)(y), x, I_DUP, y)


def test_scatter_set_and_multiply_with_unique_indices():
    i = idx([4, 0, -2])
    y = _upd(np.float32, (3, 3))
    run_both(lambda x, i, y: x.at[i].set(y, unique_indices=True), X, i, y)
    run_both(lambda x, i, y: x.at[i].multiply(y, unique_indices=True), X, i, y)
    run_both(lambda x, i, y: x.at[i].set(y, unique_indices=True), arr((5, 3), np.bool_), i,
             arr((3, 3), np.bool_))


@pytest.mark.parametrize("case", ["mul_f16", "add_int8", "add_bool", "max_f16"])
def test_unsupported_scatters_fall_back_with_reason(case):
    f, args, why = {
        "mul_f16": (lambda x, i, y: x.at[i].multiply(y), (arr((5, 3), np.float16), I_DUP,
                                                           _upd(np.float16)), "float32"),
        "add_int8": (lambda x, i, y: x.at[i].add(y), (arr((5, 3), np.int8), I_DUP,
                                                       _upd(np.int8)), "no atomic add"),
        "add_bool": (lambda x, i, y: x.at[i].add(y), (arr((5, 3), np.bool_), I_DUP,
                                                       _upd(np.bool_)), "no atomic add"),
        "max_f16": (lambda x, i, y: x.at[i].max(y), (arr((5, 3), np.float16), I_DUP,
                                                      _upd(np.float16)), "no atomic max"),
    }[case]
    prog = run_both(f, *args, fallbacks=1)
    (fb,) = prog.fallbacks
    assert fb.primitives[0].startswith("scatter") and why in fb.reason, fb.reason


def run_exact(f, *args):
    """f on the Triton backend equals the numpy backend bit for bit, with no fallback."""
    th.bits_equal(jit(f, backend="triton")(*args), jit(f)(*args))
    prog = run_both(f, *args)
    return prog


def _loop_scatter(x, i, y, combine):
    """``out[j] = combine(out[j], y[k])`` for each 1-d index ``j = i[k]`` into axis 0, in
    update order, as a Python loop (negative indices wrapped, out of bounds dropped)."""
    out = np.array(x, copy=True)
    for k, j in enumerate(np.asarray(i)):
        j = j + out.shape[0] if j < 0 else j
        if 0 <= j < out.shape[0]:
            out[j] = combine(out[j], np.asarray(y)[k])
    return out


def _loop_set(x, i, y):
    """x.at[i].set(y) for a 1-d index into axis 0, as a Python loop (last write wins)."""
    return _loop_scatter(x, i, y, lambda old, new: new)


def _loop_mul(x, i, y):
    """x.at[i].multiply(y) (mode drop) as a Python loop: products in update order."""
    return _loop_scatter(x, i, y, lambda old, new: old * new)


SET_DTYPES = [np.float32, np.int32, np.bool_, np.float16, np.uint8, np.int64, np.int8, BF16]


@pytest.mark.parametrize("dtype", SET_DTYPES, ids=lambda d: np.dtype(d).name)
def test_scatter_set_duplicates_last_write_wins(dtype):
    """Duplicate indices (and 7 / -1, which clip onto one row): the update at the highest
    position wins, as on the numpy backend (and a Python loop)."""
    x, y = arr((5, 3), dtype), _upd(dtype)
    prog = run_exact(lambda x, i, y: x.at[i].set(y), x, I_DUP, y)
    assert [k.source.name.split("_")[-1] for k in prog.kernels[-1].kernels[1:]] == \
        ["bid", "write"]
    th.bits_equal(jit(lambda x, i, y: x.at[i].set(y), backend="triton")(x, I_DUP, y),
                _loop_set(x, I_DUP, y))
    for mode in ("clip", "fill", "promise_in_bounds"):
        run_exact(lambda x, i, y: x.at[i].set(y, mode=mode), x, I_DUP, y)


def test_scatter_set_many_collisions_and_index_shapes():
    rng = np.random.default_rng(3)
    i = idx(rng.integers(-6, 8, size=40))  # 40 updates onto 6 rows (and out of bounds)
    x, y = arr((6, 2)), arr((40, 2))
    run_exact(lambda x, i, y: x.at[i].set(y), x, i, y)
    th.bits_equal(jit(lambda x, i, y: x.at[i].set(y), backend="triton")(x, i, y),
                _loop_set(x, i, y))
    i2 = idx(rng.integers(0, 4, size=(3, 5)))  # a 2-d batch of indices: row-major order
    run_exact(lambda x, i, y: x.at[i].set(y), arr((4,)), i2, arr((3, 5)))
    run_exact(lambda x, i, j, y: x.at[i, j].set(y), arr((3, 4)), idx([0, 2, 0, 2, 1]),
              idx([1, 3, 1, 3, 9]), arr((5,)))
    run_exact(lambda x, i, y: x.at[:, i].set(y), arr((2, 4)), idx([3, 1, 3, 3]), arr((2, 4)))
    run_exact(lambda x, i, y: x.at[i].set(y), X, i, fnp.asarray(np.float32(2.5)))


def test_scatter_set_overlapping_windows():
    """Windows starting at different rows overlap (clip mode): positions order the writes."""
    from functrax.primitives.gather_scatter import ScatterDimensionNumbers
    dn = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=(0,))
    starts = idx([[0], [1], [5], [2], [0]])  # windows of 3 rows: 5 clips to 3
    for mode in ("clip", "fill"):
        run_exact(lambda x, s, u: lax.scatter(x, s, u, dn, mode=mode), arr((6,)), starts,
                  arr((5, 3)))


def test_scatter_set_into_a_scalar_operand():
    from functrax.primitives.gather_scatter import ScatterDimensionNumbers
    dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=())
    s = fnp.asarray(np.zeros((4, 0), np.int32))
    run_exact(lambda x, s, u: lax.scatter(x, s, u, dn), fnp.asarray(np.float32(1.0)), s,
              arr((4,)))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.uint8, np.int64,
                                   np.float64], ids=lambda d: np.dtype(d).name)
def test_scatter_multiply_duplicates_in_update_order(dtype):
    """Every duplicate is multiplied in, in position order (float products round as the
    numpy backend's np.multiply.at does); integers wrap."""
    from functrax.test_util import enable_x64
    with enable_x64(np.dtype(dtype).itemsize == 8):
        x = arr((5, 3), dtype, lo=-3, hi=4)
        y = _upd(dtype) if np.dtype(dtype).kind not in "iu" else arr((6, 3), dtype, -40, 40)
        if np.dtype(dtype).kind == "f":
            y = y * 1.7
        prog = run_exact(lambda x, i, y: x.at[i].multiply(y), x, I_DUP, y)
        assert prog.kernels[-1].kernels[-1].source.name.endswith("_round")
        run_exact(lambda x, i, y: x.at[i].multiply(y, mode="clip"), x, I_DUP, y)
        if np.dtype(dtype) != np.bool_:
            th.bits_equal(jit(lambda x, i, y: x.at[i].multiply(y), backend="triton")(x, I_DUP, y),
                        _loop_mul(x, I_DUP, y))


def test_scatter_multiply_many_rounds():
    """30 updates of one element (31 rounds) and a spread of others."""
    rng = np.random.default_rng(4)
    i = np.concatenate([np.full(30, 2), rng.integers(0, 6, size=20)]).astype(np.int32)
    rng.shuffle(i)
    y = (1.0 + 0.3 * rng.normal(size=(50, 2))).astype(np.float32)
    x = arr((6, 2))
    run_exact(lambda x, i, y: x.at[i].multiply(y), x, idx(i), fnp.asarray(y))
    th.bits_equal(jit(lambda x, i, y: x.at[i].multiply(y), backend="triton")(x, idx(i),
                                                                           fnp.asarray(y)),
                _loop_mul(x, i, y))


def test_scatter_scalar_index_and_scalar_operand():
    i = fnp.asarray(np.int32(-2))
    run_both(lambda x, i, y: x.at[i].add(y), X, i, _upd(np.float32, (3,)))
    run_both(lambda x, i, y: x.at[i].max(y), X, i, fnp.asarray(np.float32(9.0)))
    run_both(lambda x, i, y: x.at[i].add(y), arr((4,)), idx([1, 1, 5]), arr((3,)))


def test_general_scatter_add_with_batching_dims():
    from functrax.primitives.gather_scatter import ScatterDimensionNumbers
    x = arr((2, 6, 5))
    dn = ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=(1, 2), operand_batching_dims=(0,),
                                 scatter_indices_batching_dims=(0,))
    starts = idx([[[0, 1], [5, 4]], [[3, -1], [3, 2]]])
    upd = arr((2, 2, 3, 2))  # (batch, window 2x3, windows): scatter dims 0, 3
    for mode in ("clip", "fill"):
        run_both(lambda x, s, u: lax.scatter_add(x, s, u, dn, mode=mode), x, starts, upd)


def test_grad_of_gather_is_a_scatter_kernel():
    f = grad(lambda x, i: fnp.sum(fnp.sin(x[i]) * 3.0))
    prog = run_both(f, X, I_DUP)
    assert len(prog.kernels) == 2
    assert any(isinstance(k, ScatterKernel) for k in prog.kernels)


def test_mlp_minibatch_step_has_no_fallbacks():
    """examples/train_mlp.py's step: x[idx], labels[idx], then value_and_grad."""
    from functrax import nn, value_and_grad

    def loss(p, x, labels):
        h = nn.relu(x @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        return -fnp.mean(fnp.sum(nn.log_softmax(logits) * nn.one_hot(labels, 3), axis=-1))

    def step(p, x, labels, i):
        val, g = value_and_grad(loss)(p, x[i], labels[i])
        return val, {k: p[k] - 0.1 * g[k] for k in p}

    p = {"w1": arr((2, 8)), "b1": arr((8,)), "w2": arr((8, 3)), "b2": arr((3,))}
    x, labels = arr((20, 2)), fnp.asarray(RNG.integers(0, 3, size=20).astype(np.int32))
    prog = th.triton_program(step, p, x, labels, idx([3, 0, 19, 7]))
    PROGRAMS.append(prog)
    assert not prog.fallbacks, [fb.reason for fb in prog.fallbacks]
    want, got = jit(step)(p, x, labels, idx([3, 0, 19, 7])), \
        jit(step, backend="triton")(p, x, labels, idx([3, 0, 19, 7]))
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-5)


# --- sm_90 ---


def test_generated_gather_scatter_kernels_compile_for_sm90():
    """Every kernel of the programs above (scatter copy kernels included) compiles."""
    if not PROGRAMS:
        for name in sorted(GATHERS)[:3]:
            run_both(*(lambda f, a: (f, *a))(*GATHERS[name]))
        run_both(lambda x, i, y: x.at[i].add(y), X, I_DUP, _upd(np.float32))
    calls = {}
    for prog in PROGRAMS:
        for k in prog.kernels:
            for kk in getattr(k, "kernels", (k,)):
                src = getattr(kk, "source", None)
                if src is None or not hasattr(src, "signature"):
                    continue
                key = (src.text, tuple(src.signature.items()))
                calls.setdefault(key, (kk.fn, src.signature, src.constexprs, src.num_warps))
    assert any("atomic_add" in key[0] for key in calls)
    assert any("gather" in key[0] for key in calls)
    compiled = tcompile.compile_many(list(calls.values()))
    assert len(compiled) == len(calls)
    for c in compiled:
        assert ".target sm_90" in c.ptx and len(c.cubin) > 0


# --- the planner (pure, backend-independent) ---


def _kinds(f, *args):
    plan = plan_fusion(jit(f).lower(*args).jaxpr)
    return [(g.kind, [e.primitive.name for e in g.eqns]) for g in plan.groups]


def test_planner_gather_of_computed_operand_is_a_separate_kernel():
    """The operand of a gather is loaded at data-dependent positions: a value computed in the
    group would be recomputed there, so its producer stays its own kernel."""
    groups = _kinds(lambda x, i: fnp.exp(x)[i], X, I_OOB)
    assert len(groups) == 2
    assert "gather" in groups[1][1] and "exp" not in groups[1][1]


def test_planner_multi_entry_computed_indices_are_written_out():
    groups = _kinds(lambda x, i, j: x[i, j], X, idx([0, 1]), idx([2, -1]))
    (gather,) = [g for g in groups if "gather" in g[1]]
    assert gather[0] is GroupKind.ELEMENTWISE and "select_n" not in gather[1]


def test_planner_traced_dynamic_slice_joins_its_start_computation():
    groups = _kinds(lambda x, i: fnp.sin(x[i[1]]), X, I_OOB)
    assert len(groups) == 1 and "dynamic_slice" in groups[0][1]


def test_planner_scatter_is_opaque_with_reason():
    closed = jit(lambda x, i, y: x.at[i].add(y)).lower(X, I_DUP, _upd(np.float32)).jaxpr
    (g,) = [g for g in plan_fusion(closed).groups if g.kind is GroupKind.OPAQUE]
    assert classify(g.eqns[0]) == ("opaque", "scatter: data-dependent writes with a combiner "
                                             "(its own kernel)")
