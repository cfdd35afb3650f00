"""Drivers over the op-spec table: eager vs numpy, traced (check_jaxpr) vs eager, and
hypothesis-driven broadcasting and random reduction axes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import functrax
import functrax.numpy as fnp
from functrax import dtypes
from tests.opspec import all_specs

SPECS = all_specs()
CASES = [(s, shapes, dts, kw) for s in SPECS for shapes, dts, kw in s.cases()]


def _id(case):
    s, shapes, dts, kw = case
    dt = "-".join(np.dtype(d).name for d in (dts if isinstance(dts, tuple) else (dts,)))
    kws = ",".join(f"{k}={v}" for k, v in kw.items())
    return f"{s.name}[{shapes}|{dt}|{kws}]"


def _tolerances(spec, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return 0, 0
    if dtype == np.float16 or dtype.name == "bfloat16":
        return max(spec.atol, 1e-2), max(spec.rtol, 1e-2)
    return spec.atol, spec.rtol


def assert_matches(spec, got, want, in_dts):
    got_l = got if isinstance(got, (tuple, list)) else [got]
    want_l = want if isinstance(want, (tuple, list)) else [want]
    assert len(got_l) == len(want_l), (
        f"{spec.name}: {len(got_l)} outputs, numpy gives {len(want_l)}")
    for g, w in zip(got_l, want_l):
        w = np.asarray(w)
        assert isinstance(g, functrax.Array), f"{spec.name} returned {type(g).__name__}"
        g_np = np.asarray(g)
        assert g_np.shape == w.shape, f"{spec.name}: shape {g_np.shape} != numpy's {w.shape}"
        if spec.out_dtype is not None:
            assert g.dtype == np.dtype(spec.out_dtype(*in_dts)), (spec.name, g.dtype)
        elif spec.check_dtype:
            assert g.dtype == dtypes.canonicalize_dtype(w.dtype), (
                f"{spec.name}: dtype {g.dtype} != numpy's {w.dtype} (canonicalized)")
        atol, rtol = _tolerances(spec, g.dtype)
        if g_np.dtype.kind in "biu" and w.dtype.kind in "biu":
            np.testing.assert_array_equal(g_np, w, err_msg=spec.name)
        else:
            np.testing.assert_allclose(g_np.astype(np.float64) if g_np.dtype.kind != "c" else g_np,
                                       w, atol=atol, rtol=rtol, equal_nan=True, err_msg=spec.name)


def _run(spec, shapes, dts, kw, seed=0):
    rng = np.random.RandomState(seed)
    args = spec.make_args(rng, shapes, dts)
    in_dts = spec.arg_dtypes(dts, len(shapes))
    with np.errstate(all="ignore"):
        want = spec.ref(*args, **kw)
    got = spec.fn(*[fnp.asarray(a) for a in args], **kw)
    assert_matches(spec, got, want, in_dts)
    return args, got


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_eager_matches_numpy(case):
    _run(*case)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_traced_jaxpr_typechecks_and_matches_eager(case):
    spec, shapes, dts, kw = case
    args, eager = _run(spec, shapes, dts, kw)
    arrays = [fnp.asarray(a) for a in args]
    closed = functrax.make_jaxpr(lambda *xs: spec.fn(*xs, **kw))(*arrays)
    functrax.check_jaxpr(closed)
    outs = functrax.eval_jaxpr(closed.jaxpr, closed.consts, *arrays)
    eager_l = eager if isinstance(eager, (tuple, list)) else [eager]
    assert len(outs) == len(eager_l)
    for o, e in zip(outs, eager_l):
        np.testing.assert_array_equal(np.asarray(o), np.asarray(e), err_msg=spec.name)
        assert np.asarray(o).dtype == np.asarray(e).dtype


BROADCAST_SPECS = [s for s in SPECS if s.broadcasting]
REDUCE_SPECS = [s for s in SPECS if s.reduces]


@pytest.mark.parametrize("spec", BROADCAST_SPECS, ids=lambda s: s.name)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_broadcasting_property(spec, data):
    nargs = len(spec.shapes[0])
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=nargs, max_dims=3,
                                                         max_side=4)).input_shapes
    dts = data.draw(st.sampled_from(spec.dtypes))
    seed = data.draw(st.integers(0, 2**16))
    _run(spec, tuple(shapes), dts, spec.kwargs[0], seed)


@pytest.mark.parametrize("spec", REDUCE_SPECS, ids=lambda s: s.name)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_reduction_axes_property(spec, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4))
    nd = len(shape)
    if nd:
        axes = data.draw(st.lists(st.integers(-nd, nd - 1), unique_by=lambda a: a % nd,
                                  max_size=nd))
        axis = data.draw(st.sampled_from([None, tuple(axes)] + ([axes[0]] if axes else [])))
    else:
        axis = None
    keepdims = data.draw(st.booleans())
    dts = data.draw(st.sampled_from(spec.dtypes))
    nargs = len(spec.shapes[0])
    kw = dict(spec.kwargs[0], axis=axis, keepdims=keepdims)
    _run(spec, (shape,) * nargs, dts, kw, data.draw(st.integers(0, 2**16)))
