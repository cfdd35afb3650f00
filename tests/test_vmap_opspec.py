"""vmap of every op-spec entry against a Python loop over the examples.

For each spec of ``tests.opspec.all_specs()`` (its first shapes/dtypes/kwargs case),
hypothesis draws a batch size (1-3), for each argument either a batch axis (any valid
position, negative ones included) or None (one value shared by every example), and an
out_axes entry per output. The batched inputs stack per-example inputs drawn from the
spec's domain; ``vmap(fn, in_axes, out_axes)`` must equal ``stack([fn(*example) for ...],
out_axis)`` in values and dtypes, and the traced vmapped function must type-check.

A spec that cannot be vmapped meaningfully is listed in ``NOT_VMAPPABLE`` with the reason;
every other spec, including ones added later, is checked.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import functrax
import functrax.numpy as fnp
from functrax.tree_util import tree_flatten, tree_unflatten
from tests.opspec import all_specs

_PY = "returns Python values (shapes, sizes), not arrays: nothing to batch"

# spec name -> why vmap does not apply. Keep reasons specific.
NOT_VMAPPABLE = {
    "shape_queries": _PY,
    "shape_queries_axis": _PY,
}


def _first_case(spec):
    shapes, dts, kw = next(iter(spec.cases()))
    return shapes, spec.arg_dtypes(dts, len(shapes)), kw


SPECS = all_specs()
CHECKED = [s for s in SPECS if s.name not in NOT_VMAPPABLE]


def _tolerances(spec, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return 0, 0
    if dtype == np.float16 or dtype.name == "bfloat16":
        return max(spec.atol, 1e-2), max(spec.rtol, 1e-2)
    return spec.atol, spec.rtol


def _out_axes_like(out, axes):
    """``axes`` (one per output leaf) in the structure of ``out``."""
    _, tree = tree_flatten(out)
    return tree_unflatten(tree, axes)


def _examples(spec, data, shapes, dts, size, in_axes):
    """Per-example inputs (numpy) and the batched inputs."""
    rng = np.random.RandomState(data.draw(st.integers(0, 2**16), label="seed"))
    per = [spec.make_args(rng, shapes, dts) for _ in range(size)]
    batched = []
    for i, ax in enumerate(in_axes):
        if ax is None:  # one value shared by every example
            for ex in per:
                ex[i] = per[0][i]
            batched.append(per[0][i])
        else:
            batched.append(np.stack([ex[i] for ex in per], axis=ax))
    return per, batched


@pytest.mark.parametrize("spec", CHECKED, ids=[s.name for s in CHECKED])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_vmap_matches_loop(spec, data):
    shapes, dts, kw = _first_case(spec)
    size = data.draw(st.integers(1, 3), label="batch size")
    in_axes = tuple(data.draw(st.one_of(st.none(), st.integers(-len(s) - 1, len(s))),
                              label=f"in_axes[{i}]") for i, s in enumerate(shapes))
    per, batched = _examples(spec, data, shapes, dts, size, in_axes)

    with np.errstate(all="ignore"):
        loop = [spec.fn(*[fnp.asarray(a) for a in ex], **kw) for ex in per]
    leaves = [tree_flatten(out)[0] for out in loop]
    ranks = [np.ndim(x) for x in leaves[0]]
    out_axes = [data.draw(st.integers(-r - 1, r), label=f"out_axes[{j}]")
                for j, r in enumerate(ranks)]
    out_spec = _out_axes_like(loop[0], out_axes)
    axis_size = size if all(ax is None for ax in in_axes) else None

    def f(*xs):
        return spec.fn(*xs, **kw)
    vf = functrax.vmap(f, in_axes=in_axes, out_axes=out_spec, axis_size=axis_size)
    args = [fnp.asarray(a) for a in batched]
    with np.errstate(all="ignore"):
        got = vf(*args)
    got_leaves, got_tree = tree_flatten(got)
    assert got_tree == tree_flatten(loop[0])[1], f"{spec.name}: output structure differs"
    for j, (g, ax) in enumerate(zip(got_leaves, out_axes)):
        want = np.stack([np.asarray(ex[j]) for ex in leaves], axis=ax)
        assert isinstance(g, functrax.Array), f"{spec.name} output {j}: {type(g).__name__}"
        assert g.dtype == np.asarray(leaves[0][j]).dtype, (
            f"{spec.name} output {j}: vmap gives dtype {g.dtype}, the loop "
            f"{np.asarray(leaves[0][j]).dtype}")
        g_np = np.asarray(g)
        assert g_np.shape == want.shape, (
            f"{spec.name} output {j}: vmap gives shape {g_np.shape}, the loop {want.shape}")
        atol, rtol = _tolerances(spec, g.dtype)
        if g_np.dtype.kind in "biu":
            np.testing.assert_array_equal(g_np, want, err_msg=spec.name)
        else:
            np.testing.assert_allclose(g_np, want, atol=atol, rtol=rtol, equal_nan=True,
                                       err_msg=spec.name)

    closed = functrax.make_jaxpr(vf)(*args)
    functrax.check_jaxpr(closed)
    outs = closed.out_avals
    assert [o.shape for o in outs] == [np.shape(g) for g in got_leaves], spec.name


def test_not_vmappable_names_are_current():
    names = {s.name for s in SPECS}
    stale = sorted(set(NOT_VMAPPABLE) - names)
    assert not stale, f"NOT_VMAPPABLE lists specs that no longer exist: {stale}"
