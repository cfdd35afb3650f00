"""vmap rules: every primitive has one, and the indexing rules batch the JAX way.

- Every primitive of ``primitive_registry`` has a vmap rule unless ``EXEMPT`` says why not.
- gather and each scatter variant, with random dimension numbers (operand batching dims and
  every mode included), random batch axes and unbatched operands: ``vmap`` equals a Python
  loop of the primitive over the examples.
- dynamic_slice / dynamic_update_slice: unbatched start indices stay a dynamic_slice /
  dynamic_update_slice; batched ones become a single gather / scatter; an unbatched operand
  of a gather is not broadcast along the batch.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.primitives import primitive_registry
from functrax.primitives.gather_scatter import gather_p
from functrax.transforms.batching import vmap_rules
from tests.test_gather_scatter import SCATTERS, gather_cases, gparams, scatter_cases, sparams

# primitive name -> why it has no vmap rule
EXEMPT = {
    "iota": "takes no array operands, so it is never batched: BatchTrace binds it unchanged",
    "fused_attention": ("lowering-internal: made by the attention pass "
                        "(functrax/passes/attention.py) after every transformation ran, so "
                        "never batched"),
}


def test_every_primitive_has_a_vmap_rule():
    missing = sorted(name for name, p in primitive_registry.items()
                     if p not in vmap_rules and name not in EXEMPT)
    assert not missing, f"primitives without a vmap rule (add one or list in EXEMPT): {missing}"


def test_exempt_names_are_current():
    stale = sorted(n for n in EXEMPT if n not in primitive_registry)
    assert not stale, f"EXEMPT lists primitives that no longer exist: {stale}"
    ruled = sorted(n for n in EXEMPT if primitive_registry[n] in vmap_rules)
    assert not ruled, f"EXEMPT lists primitives that have a vmap rule: {ruled}"


# --- gather / scatter against a loop ---


def _like(rng, a, lo, hi):
    """A fresh random array of ``a``'s shape and dtype with values in [lo, hi)."""
    return rng.integers(lo, hi, a.shape).astype(a.dtype)


def _batch(data, rng, arrays, ranges):
    """Per-example arrays (example 0 is the given one) and their in_axes."""
    size = data.draw(st.integers(1, 3), label="batch size")
    axes = [data.draw(st.one_of(st.none(), st.integers(-a.ndim - 1, a.ndim)),
                      label=f"in_axes[{i}]") for i, a in enumerate(arrays)]
    if all(ax is None for ax in axes):
        axes[0] = 0
    per = [[a if b == 0 or ax is None else _like(rng, a, *r) for b in range(size)]
           for a, ax, r in zip(arrays, axes, ranges)]
    batched = [p[0] if ax is None else np.stack(p, axis=ax) for p, ax in zip(per, axes)]
    return size, axes, per, batched


def _check_vmap_vs_loop(fn, size, axes, per, batched):
    out_ax = 0
    got = functrax.vmap(fn, in_axes=tuple(axes), out_axes=out_ax)(
        *[fnp.asarray(b) for b in batched])
    want = np.stack([np.asarray(fn(*[fnp.asarray(p[b]) for p in per])) for b in range(size)])
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, equal_nan=True)
    closed = functrax.make_jaxpr(functrax.vmap(fn, in_axes=tuple(axes)))(
        *[fnp.asarray(b) for b in batched])
    functrax.check_jaxpr(closed)
    return closed


@settings(max_examples=40, deadline=None)
@given(case=gather_cases(), data=st.data())
def test_gather_vmap_matches_loop(case, data):
    x, idx, dn, slice_sizes, mode = case
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    hi = max(x.shape, default=1) + 2
    size, axes, per, batched = _batch(data, rng, [x, idx], [(0, 100), (-2, hi)])
    params = gparams(dn, slice_sizes, mode)
    closed = _check_vmap_vs_loop(lambda a, i: gather_p.bind(a, i, **params), size, axes, per,
                                 batched)
    assert [e.primitive.name for e in closed.eqns].count("gather") == 1


@settings(max_examples=40, deadline=None)
@given(case=scatter_cases(), data=st.data())
def test_scatter_vmap_matches_loop(case, data):
    kind, x, idx, upd, dn, mode = case
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    hi = max(x.shape, default=1) + 1
    size, axes, per, batched = _batch(data, rng, [x, idx, upd], [(-3, 4), (-1, hi), (-3, 4)])
    # duplicate indices of "set": the numpy backend's last write wins, and batching keeps
    # the order of each example's writes, so vmap and the loop agree exactly
    prim, params = SCATTERS[kind], sparams(dn, mode)
    closed = _check_vmap_vs_loop(lambda a, i, u: prim.bind(a, i, u, **params), size, axes,
                                 per, batched)
    assert [e.primitive.name for e in closed.eqns].count(prim.name) == 1


# --- dynamic_slice / dynamic_update_slice ---

X = np.arange(3 * 5 * 6, dtype=np.float32).reshape(3, 5, 6)
STARTS = np.array([[0, 4], [3, -1], [9, 2]], np.int32)  # clamped where out of range


def _prims(closed):
    return [e.primitive.name for e in closed.eqns]


@pytest.mark.parametrize("x_ax", [None, 0, 2, -1])
@pytest.mark.parametrize("i_ax", [None, 0])
@pytest.mark.parametrize("j_ax", [None, 0])
def test_dynamic_slice(x_ax, i_ax, j_ax):
    xs = X if x_ax is None else np.moveaxis(X, 0, x_ax)
    args = [xs if x_ax is not None else X[1], STARTS[:, 0] if i_ax is not None else STARTS[1, 0],
            STARTS[:, 1] if j_ax is not None else STARTS[2, 1]]
    axes = (x_ax, i_ax, j_ax)
    if all(a is None for a in axes):
        return
    f = lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3))  # noqa: E731
    got = functrax.vmap(f, in_axes=axes)(*[fnp.asarray(a) for a in args])
    want = [f(*[fnp.asarray(np.take(a, b, ax) if ax is not None else a)
                for a, ax in zip(args, axes)]) for b in range(3)]
    np.testing.assert_array_equal(np.asarray(got), np.stack([np.asarray(w) for w in want]))
    closed = functrax.make_jaxpr(functrax.vmap(f, in_axes=axes))(*[fnp.asarray(a) for a in args])
    functrax.check_jaxpr(closed)
    prims = _prims(closed)
    if i_ax is None and j_ax is None:
        assert "dynamic_slice" in prims and "gather" not in prims, prims
    else:
        assert prims.count("gather") == 1 and "dynamic_slice" not in prims, prims
    if x_ax is None:  # the shared operand is gathered from as it is, not broadcast
        assert all(closed.jaxpr.invars[0] not in e.invars for e in closed.eqns
                   if e.primitive.name != "gather" and e.primitive.name != "dynamic_slice")


@pytest.mark.parametrize("x_ax", [None, 0, -1])
@pytest.mark.parametrize("u_ax", [None, 1])
@pytest.mark.parametrize("i_ax", [None, 0])
def test_dynamic_update_slice(x_ax, u_ax, i_ax):
    rng = np.random.default_rng(0)
    u = rng.standard_normal((3, 2, 4)).astype(np.float32)
    args = [X if x_ax is None else np.moveaxis(X, 0, x_ax),
            u[1] if u_ax is None else np.moveaxis(u, 0, u_ax),
            STARTS[:, 0] if i_ax is not None else STARTS[1, 0]]
    if x_ax is None:
        args[0] = X[2]
    axes = (x_ax, u_ax, i_ax)
    if all(a is None for a in axes):
        return
    f = lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 1))  # noqa: E731
    got = functrax.vmap(f, in_axes=axes)(*[fnp.asarray(a) for a in args])
    want = [f(*[fnp.asarray(np.take(a, b, ax) if ax is not None else a)
                for a, ax in zip(args, axes)]) for b in range(3)]
    np.testing.assert_array_equal(np.asarray(got), np.stack([np.asarray(w) for w in want]))
    closed = functrax.make_jaxpr(functrax.vmap(f, in_axes=axes))(*[fnp.asarray(a) for a in args])
    functrax.check_jaxpr(closed)
    prims = _prims(closed)
    if i_ax is None:
        assert "dynamic_update_slice" in prims and "scatter" not in prims, prims
    else:
        assert prims.count("scatter") == 1 and "dynamic_update_slice" not in prims, prims


def test_gather_unbatched_operand_is_not_broadcast():
    x = fnp.asarray(np.arange(20.0, dtype=np.float32).reshape(4, 5))
    idx = fnp.asarray(np.array([[0, 3], [2, 1], [3, 3]], np.int32))
    closed = functrax.make_jaxpr(functrax.vmap(lambda i: x[i], in_axes=0))(idx)
    functrax.check_jaxpr(closed)
    # nothing of the batched operand's size (3, 4, 5) is materialized
    assert all(v.aval.shape != (3, 4, 5) for e in closed.eqns for v in e.outvars)
    assert _prims(closed).count("gather") == 1
    got = functrax.vmap(lambda i: x[i])(idx)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(x)[np.asarray(idx)])
