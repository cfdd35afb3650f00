"""``axis_index_groups`` of the collectives under pmap on 4 virtual CPU devices: each
collective acts within each group (JAX's semantics), against numpy references applied group
by group; gradients, vmap of pmap, jit of pmap, the printed jaxpr, and JAX's errors."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
from functrax import grad, jit, lax, make_jaxpr, pmap, vmap
from tests.virtual_devices import cpu_devices

N = 4
RNG = np.random.default_rng(0)
GROUPS = ([[0, 1], [2, 3]], [[0, 2], [1, 3]], [[3, 0], [1, 2]], [[0, 1, 2, 3]],
          [[0], [1], [2], [3]])


@pytest.fixture(autouse=True, scope="module")
def four_devices():
    with cpu_devices(N):
        yield


def _per_group(x, groups, fn):
    """``fn(stack of the group's lanes)`` -> the group's per-lane results, placed back."""
    out = [None] * len(x)
    for g in groups:
        for i, r in zip(g, fn(np.stack([x[i] for i in g]))):
            out[i] = r
    return np.stack(out)


def _pm(fn):
    return pmap(fn, axis_name="i")


@pytest.mark.parametrize("groups", GROUPS)
@pytest.mark.parametrize("name,ref", [
    ("psum", lambda s: [s.sum(0)] * len(s)),
    ("pmean", lambda s: [s.mean(0)] * len(s)),
    ("pmax", lambda s: [s.max(0)] * len(s)),
    ("pmin", lambda s: [s.min(0)] * len(s)),
])
def test_allreduce_within_groups(name, ref, groups):
    x = RNG.standard_normal((N, 3)).astype(np.float32)
    op = getattr(lax, name)
    out = _pm(lambda v: op(v, "i", axis_index_groups=groups))(x)
    np.testing.assert_allclose(np.asarray(out), _per_group(x, groups, ref), rtol=1e-6)


def test_jax_docstring_examples():
    # the examples of jax.lax.psum's docstring
    x = np.arange(4)
    out = _pm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]))(x)
    assert np.asarray(out).tolist() == [1, 1, 5, 5]
    x = np.arange(16).reshape(4, 4)
    out = _pm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]))(x)
    assert np.asarray(out).tolist() == [[4, 6, 8, 10]] * 2 + [[20, 22, 24, 26]] * 2


def test_pmean_of_uneven_groups_divides_by_each_group_size():
    x = np.arange(4.0, dtype=np.float32)
    out = _pm(lambda v: lax.pmean(v, "i", axis_index_groups=[[0, 1, 2], [3]]))(x)
    np.testing.assert_allclose(np.asarray(out), [1.0, 1.0, 1.0, 3.0])


def test_psum_of_a_constant_counts_the_group():
    out = _pm(lambda v: lax.psum(1, "i", axis_index_groups=[[0, 1], [2, 3]]))(np.zeros(4))
    assert np.asarray(out).tolist() == [2, 2, 2, 2]


@pytest.mark.parametrize("groups", [[[0, 1], [2, 3]], [[3, 0], [1, 2]], [[0, 1, 2, 3]]])
@pytest.mark.parametrize("tiled", [False, True])
def test_all_gather_within_groups(groups, tiled):
    x = RNG.standard_normal((N, 3)).astype(np.float32)
    out = _pm(lambda v: lax.all_gather(v, "i", axis_index_groups=groups, tiled=tiled))(x)
    join = np.concatenate if tiled else np.stack
    ref = _per_group(x, groups, lambda s: [join(list(s))] * len(s))
    np.testing.assert_array_equal(np.asarray(out), ref)


@pytest.mark.parametrize("groups", [[[0, 1], [2, 3]], [[3, 0], [1, 2]]])
def test_psum_scatter_within_groups(groups):
    x = RNG.standard_normal((N, 2, 3)).astype(np.float32)
    out = _pm(lambda v: lax.psum_scatter(v, "i", axis_index_groups=groups))(x)
    ref = _per_group(x, groups, lambda s: list(s.sum(0)))
    np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6)
    out = _pm(lambda v: lax.psum_scatter(v, "i", axis_index_groups=groups, tiled=True))(x)
    np.testing.assert_allclose(np.asarray(out), ref[:, None], rtol=1e-6)


@pytest.mark.parametrize("groups", [[[0, 1], [2, 3]], [[3, 0], [1, 2]]])
def test_all_to_all_within_groups(groups):
    x = RNG.standard_normal((N, 2, 3)).astype(np.float32)
    out = _pm(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=groups))(x)
    # lane k of a group gets block k of every member, in the group's order
    ref = _per_group(x, groups, lambda s: [s[:, k] for k in range(len(s))])
    np.testing.assert_array_equal(np.asarray(out), ref)
    out = _pm(lambda v: lax.pswapaxes(v, "i", 0, axis_index_groups=groups))(x)
    np.testing.assert_array_equal(np.asarray(out), ref)


def test_grad_through_grouped_collectives():
    x = RNG.standard_normal(N).astype(np.float64)
    groups = [[0, 2], [1, 3]]

    def loss(x):
        y = _pm(lambda v: lax.psum(v * v, "i", axis_index_groups=groups) *
                lax.all_gather(v, "i", axis_index_groups=groups)[0])(x)
        return y.sum()

    with _x64():
        g = np.asarray(grad(loss)(x))
    eps, num = 1e-6, np.zeros(N)
    for k in range(N):
        d = np.zeros(N)
        d[k] = eps
        with _x64():
            num[k] = (float(loss(x + d)) - float(loss(x - d))) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


class _x64:
    def __enter__(self):
        self.prev = functrax.config.read("enable_x64")
        functrax.config.update("enable_x64", True)

    def __exit__(self, *exc):
        functrax.config.update("enable_x64", self.prev)


def test_jit_and_vmap_of_pmap_keep_the_groups():
    groups = [[0, 1], [2, 3]]
    f = _pm(lambda v: lax.psum(v, "i", axis_index_groups=groups))
    x = RNG.standard_normal((N, 3)).astype(np.float32)
    ref = _per_group(x, groups, lambda s: [s.sum(0)] * len(s))
    np.testing.assert_allclose(np.asarray(jit(f)(x)), ref, rtol=1e-6)
    xs = RNG.standard_normal((2, N, 3)).astype(np.float32)
    out = vmap(f)(xs)
    for b in range(2):
        np.testing.assert_allclose(np.asarray(out[b]),
                                   _per_group(xs[b], groups, lambda s: [s.sum(0)] * len(s)),
                                   rtol=1e-6)


def test_printed_param():
    text = str(make_jaxpr(_pm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]])))(
        np.zeros(4, np.float32)))
    assert "psum[axes=('i',) axis_index_groups=((0, 1), (2, 3))] c" in text


@pytest.mark.parametrize("groups,msg", [
    ([[0, 1], [1, 2]], "axis_index_groups must cover all indices exactly once"),
    ([[0, 1], [3, 2, 3]], "axis_index_groups must cover all indices exactly once"),
    ([[0, 1]], r"axis_index_groups total size \(2\) must match axis size \(4\)"),
])
def test_bad_groups(groups, msg):
    with pytest.raises(ValueError, match=msg):
        _pm(lambda v: lax.psum(v, "i", axis_index_groups=groups))(np.zeros(4))


@pytest.mark.parametrize("op", [
    lambda v, g: lax.all_gather(v, "i", axis_index_groups=g),
    lambda v, g: lax.psum_scatter(v, "i", axis_index_groups=g, tiled=True),
    lambda v, g: lax.all_to_all(v, "i", 0, 0, axis_index_groups=g, tiled=True),
])
def test_gathers_need_groups_of_one_size(op):
    with pytest.raises(ValueError, match="axis_index_groups must all be the same size"):
        _pm(lambda v: op(v, [[0, 1, 2], [3]]))(np.zeros((4, 6)))


def test_positional_axes_with_groups():
    with pytest.raises(ValueError, match="only supported for sums over just named axes"):
        _pm(lambda v: lax.psum(v, ("i", 0), axis_index_groups=[[0, 1], [2, 3]]))(
            np.zeros((4, 2)))


def test_vmap_over_the_grouped_axis_raises_as_jax():
    with pytest.raises(NotImplementedError,
                       match="axis_index_groups not supported in vmap collectives"):
        vmap(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]),
             axis_name="i")(np.zeros(4))
