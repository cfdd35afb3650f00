"""shard_map on 8 virtual CPU devices: a 1-D mesh ("i": 8) and a 2-D mesh ("data": 2,
"model": 4). Every collective over one axis and over two axes against numpy computations
on the global arrays; gradients equal to those of the unsharded computation; jit, vmap,
scan inside the body, printing, and the errors (specs, divisibility, replication check).

The module runs with 8 devices (the autouse module fixture sets ``num_cpu_devices`` and
restores it, as tests/test_pmap.py does).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import P, core, grad, jit, lax, make_jaxpr, shard_map, vmap
from functrax.runtime.mesh_array import MeshShardedArray
from tests.virtual_devices import cpu_devices

N = 8
RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="module")
def eight_devices():
    with cpu_devices(N):
        yield


@pytest.fixture(scope="module")
def mesh1(eight_devices):
    return functrax.make_mesh((8,), ("i",))


@pytest.fixture(scope="module")
def mesh2(eight_devices):
    return functrax.make_mesh((2, 4), ("data", "model"))


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _close(a, b, tol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _blocks2(x):
    """The (4, 2) blocks of an (8, 8) array split P('data', 'model'): [d][m]."""
    return [[x[4 * d:4 * d + 4, 2 * m:2 * m + 2] for m in range(4)] for d in range(2)]


def _smap(mesh, in_specs, out_specs, **kw):
    return functools.partial(shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                             **kw)


# --- collectives on the 1-D mesh ---


def test_psum_pmean_pmax_pmin_1d(mesh1):
    x = _rand(16, 3)
    blocks = x.reshape(8, 2, 3)
    for op, ref in ((lax.psum, blocks.sum(0)), (lax.pmean, blocks.mean(0)),
                    (lax.pmax, blocks.max(0)), (lax.pmin, blocks.min(0))):
        f = shard_map(lambda b, op=op: op(b, "i"), mesh=mesh1, in_specs=P("i"),
                      out_specs=P())
        _close(f(x), ref)


def test_all_gather_1d(mesh1):
    x = _rand(16, 3)
    tiled = shard_map(lambda b: lax.all_gather(b, "i", tiled=True), mesh=mesh1,
                      in_specs=P("i"), out_specs=P())
    _close(tiled(x), x)
    stacked = shard_map(lambda b: lax.all_gather(b, "i", axis=1), mesh=mesh1,
                        in_specs=P("i"), out_specs=P())
    _close(stacked(x), np.moveaxis(x.reshape(8, 2, 3), 0, 1))


def test_psum_scatter_1d(mesh1):
    x = _rand(8, 16)  # each device holds a row; sums them and keeps its 2 columns
    f = shard_map(lambda b: lax.psum_scatter(b, "i", scatter_dimension=1, tiled=True),
                  mesh=mesh1, in_specs=P("i"), out_specs=P(None, "i"))
    _close(f(x), x.sum(0, keepdims=True))
    untiled = shard_map(lambda b: lax.psum_scatter(b[0], "i")[None], mesh=mesh1,
                        in_specs=P("i"), out_specs=P("i"))
    _close(untiled(x[:, :8]), x[:, :8].sum(0))


def test_ppermute_and_axis_index_1d(mesh1):
    x = _rand(8, 2)
    perm = [(i, (i + 1) % 8) for i in range(8)]
    f = shard_map(lambda b: lax.ppermute(b, "i", perm), mesh=mesh1, in_specs=P("i"),
                  out_specs=P("i"))
    _close(f(x), np.roll(x, 1, axis=0))
    idx = shard_map(lambda b: b * 0 + lax.axis_index("i"), mesh=mesh1, in_specs=P("i"),
                    out_specs=P("i"))
    _close(idx(np.zeros(8, np.float32)), np.arange(8.0))
    size = shard_map(lambda b: b * 0 + lax.axis_size("i"), mesh=mesh1, in_specs=P("i"),
                     out_specs=P("i"))
    _close(size(np.zeros(8, np.float32)), np.full(8, 8.0))


def test_all_to_all_1d(mesh1):
    x = _rand(8, 8, 3)  # device j holds row block j (1, 8, 3)
    f = shard_map(lambda b: lax.all_to_all(b, "i", 1, 0, tiled=True), mesh=mesh1,
                  in_specs=P("i"), out_specs=P(None, "i"))
    # device i gets chunk i (along axis 1) of every device, stacked along axis 0
    _close(f(x), x)
    g = shard_map(lambda b: lax.all_to_all(b, "i", 1, 1, tiled=True), mesh=mesh1,
                  in_specs=P("i"), out_specs=P("i"))
    ref = np.concatenate([np.concatenate([x[j:j + 1, i:i + 1] for j in range(8)], axis=1)
                          for i in range(8)], axis=0)
    _close(g(x), ref)


# --- collectives on the 2-D mesh, over one axis and over both ---


def test_psum_over_each_axis_and_both(mesh2):
    x = _rand(8, 8)
    spec = P("data", "model")
    over_model = shard_map(lambda b: lax.psum(b, "model"), mesh=mesh2, in_specs=spec,
                           out_specs=P("data"))
    _close(over_model(x), x.reshape(8, 4, 2).sum(1))
    over_data = shard_map(lambda b: lax.psum(b, "data"), mesh=mesh2, in_specs=spec,
                          out_specs=P(None, "model"))
    _close(over_data(x), x.reshape(2, 4, 8).sum(0))
    both = shard_map(lambda b: lax.psum(b, ("data", "model")), mesh=mesh2, in_specs=spec,
                     out_specs=P())
    _close(both(x), x.reshape(2, 4, 4, 2).sum((0, 2)))
    mean = shard_map(lambda b: lax.pmean(b, ("data", "model")), mesh=mesh2, in_specs=spec,
                     out_specs=P())
    _close(mean(x), x.reshape(2, 4, 4, 2).mean((0, 2)))


def test_pmax_pmin_two_axes(mesh2):
    x = _rand(8, 8)
    spec = P("data", "model")
    mx = shard_map(lambda b: lax.pmax(b, "model"), mesh=mesh2, in_specs=spec,
                   out_specs=P("data"))
    _close(mx(x), x.reshape(8, 4, 2).max(1))
    mn = shard_map(lambda b: lax.pmin(b, ("data", "model")), mesh=mesh2, in_specs=spec,
                   out_specs=P())
    _close(mn(x), x.reshape(2, 4, 4, 2).min((0, 2)))


def test_all_gather_two_axes(mesh2):
    x = _rand(8, 8)
    B = _blocks2(x)
    spec = P("data", "model")
    rows = shard_map(lambda b: lax.all_gather(b, "model", axis=1, tiled=True), mesh=mesh2,
                     in_specs=spec, out_specs=P("data"))
    _close(rows(x), x)
    stacked = shard_map(lambda b: lax.all_gather(b, "model"), mesh=mesh2, in_specs=spec,
                        out_specs=P("data"))
    _close(stacked(x), np.concatenate([np.stack(B[d]) for d in range(2)]))
    both = shard_map(lambda b: lax.all_gather(b, ("data", "model"), tiled=True), mesh=mesh2,
                     in_specs=spec, out_specs=P())
    _close(both(x), np.concatenate([B[d][m] for d in range(2) for m in range(4)]))


def test_psum_scatter_two_axes(mesh2):
    x = _rand(8, 8)
    body = lambda b: lax.psum_scatter(b * (lax.axis_index("model") + 1.0), "model",
                                      scatter_dimension=1, tiled=True)
    f = shard_map(body, mesh=mesh2, in_specs=P("data"), out_specs=P("data", "model"))
    _close(f(x), 10.0 * x)  # sum over m of (m + 1) * x, columns scattered back
    y = _rand(16, 2)
    both = shard_map(lambda b: lax.psum_scatter(b, ("data", "model"), tiled=True),
                     mesh=mesh2, in_specs=P(), out_specs=P(("data", "model")))
    _close(both(y), 8.0 * y)


def test_ppermute_two_axes(mesh2):
    x = _rand(8, 8)
    spec = P("data", "model")
    perm = [(i, (i + 1) % 4) for i in range(4)]
    f = shard_map(lambda b: lax.ppermute(b, "model", perm), mesh=mesh2, in_specs=spec,
                  out_specs=spec)
    _close(f(x), np.roll(x.reshape(8, 4, 2), 1, axis=1).reshape(8, 8))
    perm8 = [(i, (i + 3) % 8) for i in range(8)]
    g = shard_map(lambda b: lax.ppermute(b, ("data", "model"), perm8), mesh=mesh2,
                  in_specs=spec, out_specs=spec)
    B = _blocks2(x)
    flat = [B[d][m] for d in range(2) for m in range(4)]
    got = [flat[(k - 3) % 8] for k in range(8)]
    ref = np.block([[got[4 * d + m] for m in range(4)] for d in range(2)])
    _close(g(x), ref)


def test_all_to_all_two_axes(mesh2):
    x = _rand(8, 8)
    spec = P("data", "model")
    B = _blocks2(x)
    f = shard_map(lambda b: lax.all_to_all(b, "model", 0, 1, tiled=True), mesh=mesh2,
                  in_specs=spec, out_specs=spec)
    ref = np.block([[np.concatenate([B[d][j][m:m + 1] for j in range(4)], axis=1)
                     for m in range(4)] for d in range(2)])
    _close(f(x), ref)
    y = _rand(16, 8)  # P('data','model'): blocks (8, 2); 8 devices exchange row chunks of 1
    g = shard_map(lambda b: lax.all_to_all(b, ("data", "model"), 0, 1, tiled=True),
                  mesh=mesh2, in_specs=spec, out_specs=spec)
    C = [[y[8 * d:8 * d + 8, 2 * m:2 * m + 2] for m in range(4)] for d in range(2)]
    flat = [C[d][m] for d in range(2) for m in range(4)]
    out = [np.concatenate([flat[j][k:k + 1] for j in range(8)], axis=1) for k in range(8)]
    _close(g(y), np.block([[out[4 * d + m] for m in range(4)] for d in range(2)]))


def test_axis_index_two_axes(mesh2):
    one = np.zeros((2, 4), np.float32)
    f = shard_map(lambda b: b + lax.axis_index("model"), mesh=mesh2,
                  in_specs=P("data", "model"), out_specs=P("data", "model"))
    _close(f(one), np.tile(np.arange(4.0), (2, 1)))
    g = shard_map(lambda b: b + lax.axis_index(("data", "model")), mesh=mesh2,
                  in_specs=P("data", "model"), out_specs=P("data", "model"))
    _close(g(one), np.arange(8.0).reshape(2, 4))
    h = shard_map(lambda b: b + lax.axis_size(("data", "model")) * 1.0, mesh=mesh2,
                  in_specs=P("data", "model"), out_specs=P("data", "model"))
    _close(h(one), np.full((2, 4), 8.0))


def test_replicated_inputs_and_pytrees(mesh2):
    x, w = _rand(8, 4), _rand(4, 8)

    @_smap(mesh2, ({"x": P("data"), "w": P(None, "model")},), P("data", "model"))
    def f(params):
        return params["x"] @ params["w"]

    _close(f({"x": x, "w": w}), x @ w)
    out = f({"x": x, "w": w})
    assert isinstance(out, MeshShardedArray)
    assert out.sharding.spec == P("data", "model")
    assert len(out.addressable_shards) == 8


# --- gradients equal to those of the unsharded computation ---


def test_grad_data_parallel(mesh2):
    x, y, w = _rand(8, 3), _rand(8, 2), _rand(3, 2)

    def local_loss(xb, yb, w):
        return lax.psum(fnp.sum((fnp.tanh(xb @ w) - yb) ** 2), "data")

    sharded = shard_map(local_loss, mesh=mesh2, in_specs=(P("data"), P("data"), P()),
                        out_specs=P())
    glob = lambda x, y, w: fnp.sum((fnp.tanh(x @ w) - y) ** 2)
    _close(sharded(x, y, w), glob(x, y, w), 1e-4)
    for argnum in range(3):
        _close(grad(sharded, argnum)(x, y, w), grad(glob, argnum)(x, y, w), 1e-4)


def test_grad_tensor_parallel_mlp(mesh2):
    x, w1, w2 = _rand(8, 4), _rand(4, 8), _rand(8, 3)

    def mlp(xb, w1b, w2b):
        h = fnp.tanh(xb @ w1b)
        return lax.psum(h @ w2b, "model")

    sharded = shard_map(mlp, mesh=mesh2, in_specs=(P("data"), P(None, "model"),
                                                   P("model")), out_specs=P("data"))
    glob = lambda x, w1, w2: fnp.tanh(x @ w1) @ w2
    _close(sharded(x, w1, w2), glob(x, w1, w2), 1e-4)
    loss = lambda f: (lambda *a: fnp.sum(fnp.sin(f(*a))))
    for argnum in range(3):
        _close(grad(loss(sharded), argnum)(x, w1, w2), grad(loss(glob), argnum)(x, w1, w2),
               1e-4)


@pytest.mark.parametrize("case", ["all_gather", "psum_scatter", "ppermute", "all_to_all",
                                  "pmax", "pmean", "two_axes"])
def test_grad_of_collectives(mesh1, mesh2, case):
    x = _rand(8, 8)
    if case == "all_gather":
        f = shard_map(lambda b: fnp.sin(lax.all_gather(b, "i", tiled=True)), mesh=mesh1,
                      in_specs=P("i"), out_specs=P())
        g = fnp.sin
    elif case == "psum_scatter":
        f = shard_map(lambda b: lax.psum_scatter(b * b, "i", scatter_dimension=1,
                                                 tiled=True), mesh=mesh1, in_specs=P("i"),
                      out_specs=P(None, "i"))
        g = lambda x: fnp.sum(x * x, axis=0, keepdims=True)
    elif case == "ppermute":
        perm = [(i, (i + 1) % 8) for i in range(8)]
        f = shard_map(lambda b: lax.ppermute(b * b, "i", perm), mesh=mesh1,
                      in_specs=P("i"), out_specs=P("i"))
        g = lambda x: fnp.roll(x * x, 1, axis=0)
    elif case == "all_to_all":
        f = shard_map(lambda b: lax.all_to_all(fnp.sin(b), "i", 1, 0, tiled=True),
                      mesh=mesh1, in_specs=P("i"), out_specs=P(None, "i"))
        g = fnp.sin
    elif case == "pmax":
        f = shard_map(lambda b: lax.pmax(b, "i"), mesh=mesh1, in_specs=P("i"),
                      out_specs=P())
        g = lambda x: fnp.max(x, axis=0, keepdims=True)
    elif case == "pmean":
        f = shard_map(lambda b: lax.pmean(fnp.exp(b), "i"), mesh=mesh1, in_specs=P("i"),
                      out_specs=P())
        g = lambda x: fnp.mean(fnp.exp(x), axis=0, keepdims=True)
    else:  # a sum over both axes of a 2-D mesh, then an elementwise function
        f = shard_map(lambda b: fnp.cos(lax.psum(b * b, ("data", "model"))), mesh=mesh2,
                      in_specs=P("data", "model"), out_specs=P())
        g = lambda x: fnp.cos(fnp.sum((x * x).reshape(2, 4, 4, 2), axis=(0, 2)))
    weights = _rand(*np.shape(g(x)))
    _close(f(x), g(x), 1e-4)
    loss = lambda h: (lambda x: fnp.sum(h(x) * weights))
    _close(grad(loss(f))(x), grad(loss(g))(x), 1e-4)


def test_grad_against_finite_differences(mesh2):
    x = RNG.standard_normal((8, 8))
    with functrax.enable_x64():
        f = shard_map(lambda b: lax.pmean(fnp.sum(fnp.sin(b) ** 2), ("data", "model")),
                      mesh=mesh2, in_specs=P("data", "model"), out_specs=P())
        g = np.asarray(grad(f)(x))
        eps = 1e-6
        for idx in [(0, 0), (3, 5), (7, 7)]:
            e = np.zeros_like(x)
            e[idx] = eps
            fd = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
            assert abs(g[idx] - fd) < 1e-6, (idx, g[idx], fd)


# --- composition: jit, vmap, scan, nested jaxprs ---


def test_inside_jit(mesh2):
    x, w = _rand(8, 4), _rand(4, 8)
    f = shard_map(lambda xb, wb: lax.psum(xb @ wb, "data"), mesh=mesh2,
                  in_specs=(P("data"), P(None, "model")), out_specs=P(None, "model"))
    _close(jit(f)(x, w), sum(x[4 * d:4 * d + 4] @ w for d in range(2)), 1e-4)
    _close(jit(lambda x, w: f(x, w) * 2.0)(x, w), 2 * np.asarray(f(x, w)), 1e-5)
    # a jit inside the body, and grad of jit of shard_map
    g = shard_map(lambda b: lax.psum(jit(fnp.sin)(b).sum(), "data"), mesh=mesh2,
                  in_specs=P("data"), out_specs=P())
    _close(jit(grad(g))(x), np.cos(x), 1e-5)


def test_under_vmap(mesh2):
    xs = _rand(3, 8, 8)
    f = shard_map(lambda b: lax.psum(b, "model") * lax.axis_index("data"), mesh=mesh2,
                  in_specs=P("data", "model"), out_specs=P("data"))
    _close(vmap(f)(xs), np.stack([np.asarray(f(x)) for x in xs]))
    g = shard_map(lambda b, w: b @ w, mesh=mesh2, in_specs=(P("data"), P()),
                  out_specs=P("data"))
    ws = _rand(3, 8, 2)
    _close(vmap(g, in_axes=(None, 0))(xs[0], ws), np.stack([xs[0] @ w for w in ws]), 1e-5)
    _close(vmap(g, in_axes=(0, None), out_axes=1)(xs, ws[0]),
           np.stack([x @ ws[0] for x in xs], axis=1), 1e-5)


def test_scan_inside_body(mesh1):
    x = _rand(16, 3)

    def body(b):  # running total of the global row sums, over the local rows
        def step(c, row):
            c = c + lax.psum(row, "i")
            return c, c
        return lax.scan(step, fnp.zeros(3), b)

    f = shard_map(body, mesh=mesh1, in_specs=P("i"), out_specs=(P(), P()))
    final, ys = f(x)
    blocks = x.reshape(8, 2, 3).sum(0)
    _close(ys, np.cumsum(blocks, axis=0), 1e-5)
    _close(final, blocks.sum(0), 1e-5)
    # grad through the scan
    loss = lambda x: fnp.sum(fnp.sin(f(x)[1]))
    loss_ref = lambda x: fnp.sum(fnp.sin(fnp.cumsum(fnp.sum(x.reshape(8, 2, 3), 0), 0)))
    _close(grad(loss)(x), grad(loss_ref)(x), 1e-4)


def test_cond_and_while_inside_body(mesh1):
    x = _rand(8, 2)

    def body(b):
        i = lax.axis_index("i")
        y = lax.cond(i % 2 == 0, lambda v: v * 2.0, lambda v: v - 1.0, b)
        n = lax.while_loop(lambda c: c[0] < i, lambda c: (c[0] + 1, c[1] + 1.0),
                           (0, fnp.zeros(())))[1]
        return y + n

    f = shard_map(body, mesh=mesh1, in_specs=P("i"), out_specs=P("i"))
    ref = np.where((np.arange(8) % 2 == 0)[:, None], x * 2, x - 1) + np.arange(8)[:, None]
    _close(f(x), ref)


def test_decorator_and_mesh_in_scope(mesh2):
    x = _rand(8, 8)

    @functools.partial(shard_map, in_specs=P("data", "model"), out_specs=P())
    def total(b):
        return lax.psum(fnp.sum(b), ("data", "model"))

    with functrax.set_mesh(mesh2):
        _close(total(x), x.sum(), 1e-4)
    with pytest.raises(ValueError, match="no mesh"):
        total(x)


def test_experimental_shard_map_check_rep(mesh1):
    from functrax.experimental.shard_map import shard_map as old_shard_map
    x = _rand(8, 2)
    # replicated out_spec for a varying value: allowed when the check is off (device 0's)
    f = old_shard_map(lambda b: b * 2.0, mesh=mesh1, in_specs=P("i"), out_specs=P(),
                      check_rep=False)
    _close(f(x), 2 * x[:1])
    with pytest.raises(ValueError, match="replicated over the mesh axis 'i'"):
        old_shard_map(lambda b: b * 2.0, mesh=mesh1, in_specs=P("i"), out_specs=P())(x)


def test_jaxpr_printing_and_check(mesh2):
    f = shard_map(lambda b: lax.psum(b, "model"), mesh=mesh2, in_specs=P("data", "model"),
                  out_specs=P("data"))
    closed = make_jaxpr(f)(np.zeros((8, 8), np.float32))
    text = str(closed)
    assert "shard_map[" in text
    assert "mesh=Mesh('data': 2, 'model': 4" in text
    assert "in_specs=(P('data', 'model'),)" in text
    assert "out_specs=(P('data',),)" in text
    assert "jaxpr={ lambda ; c:f32[4,2]. let" in text
    assert "b:f32[8,2] = shard_map[" in text
    functrax.check_jaxpr(closed)
    functrax.check_jaxpr(make_jaxpr(grad(lambda x: fnp.sum(f(x) ** 2)))(
        np.zeros((8, 8), np.float32)))


# --- errors ---


def test_error_in_specs_structure(mesh1):
    f = shard_map(lambda a: a, mesh=mesh1, in_specs=(P("i"), P()), out_specs=P("i"))
    with pytest.raises(ValueError, match=r"in_specs must be a tree prefix") as e:
        f(np.zeros(8, np.float32))
    assert "1 arguments" in str(e.value)


def test_error_axis_not_in_mesh(mesh2):
    f = shard_map(lambda a, b: a, mesh=mesh2, in_specs=(P("data"), P("batch")),
                  out_specs=P("data"))
    with pytest.raises(ValueError) as e:
        f(np.zeros(8, np.float32), np.zeros(8, np.float32))
    msg = str(e.value)
    assert "args[1]" in msg and "'batch'" in msg and "('data', 'model')" in msg


def test_error_non_dividing_axis(mesh2):
    f = shard_map(lambda a: a, mesh=mesh2, in_specs=({"w": P(None, "model")},),
                  out_specs={"w": P(None, "model")})
    with pytest.raises(ValueError) as e:
        f({"w": np.zeros((2, 6), np.float32)})
    msg = str(e.value)
    for part in ("shard_map", "args[0]['w']", "(2, 6)", "dimension 1", "'model'",
                 "size 4"):
        assert part in msg, (part, msg)


def test_error_spec_longer_than_rank(mesh2):
    f = shard_map(lambda a: a, mesh=mesh2, in_specs=P("data", None, "model"),
                  out_specs=P("data"))
    with pytest.raises(ValueError, match=r"args\[0\] of shape \(8, 4\) \(rank 2\)"):
        f(np.zeros((8, 4), np.float32))
    g = shard_map(lambda a: a, mesh=mesh2, in_specs=P("data"), out_specs=P("data", None, None))
    with pytest.raises(ValueError, match="out_specs is P\\('data', None, None\\)"):
        g(np.zeros((8, 4), np.float32))


def test_error_replication_check(mesh2):
    x = np.zeros((8, 8), np.float32)
    f = shard_map(lambda b: (lax.psum(b, "model"), b), mesh=mesh2,
                  in_specs=P("data", "model"), out_specs=(P("data"), P("data")))
    with pytest.raises(ValueError) as e:
        f(x)
    msg = str(e.value)
    for part in ("out_specs[1]", "P('data',)", "'model'", "size 4", "lax.psum",
                 "mention 'model'"):
        assert part in msg, (part, msg)
    # psum over one axis leaves the other: still varying over 'data'
    g = shard_map(lambda b: lax.psum(b, "model"), mesh=mesh2, in_specs=P("data", "model"),
                  out_specs=P())
    with pytest.raises(ValueError, match="replicated over the mesh axis 'data'"):
        g(x)
    # axis_index makes a value vary
    h = shard_map(lambda b: lax.axis_index("model") + 0.0, mesh=mesh2, in_specs=P(),
                  out_specs=P())
    with pytest.raises(ValueError, match="mesh axis 'model'"):
        h(x)
    # with check_vma=False the first copy is returned
    k = shard_map(lambda b: b[0, 0] + lax.axis_index("model"), mesh=mesh2, in_specs=P(),
                  out_specs=P(), check_vma=False)
    _close(k(x), 0.0)


def test_error_no_axis_unbound(mesh1):
    f = shard_map(lambda b: lax.psum(b, "j"), mesh=mesh1, in_specs=P("i"), out_specs=P())
    with pytest.raises(NameError, match="unbound axis name: j"):
        f(np.zeros(8, np.float32))


def test_trace_cache(mesh1):
    calls = []

    def body(b):
        calls.append(1)
        return b + 1.0

    f = shard_map(body, mesh=mesh1, in_specs=P("i"), out_specs=P("i"))
    x = np.zeros(8, np.float32)
    f(x)
    f(x + 1)
    assert len(calls) == 1
    assert core.axis_env() == []


def test_grad_through_replicated_inputs_and_outputs(mesh2):
    x, w = _rand(8, 3), _rand(3)
    # w replicated over both axes, the output replicated over 'model': the cotangents of
    # the copies are shared out and summed back
    f = shard_map(lambda xb, w: fnp.sin(xb * w), mesh=mesh2, in_specs=(P("data"), P()),
                  out_specs=P("data"))
    g = lambda x, w: fnp.sin(x * w)
    weights = _rand(8, 3)
    loss = lambda h: (lambda x, w: fnp.sum(h(x, w) * weights))
    for argnum in range(2):
        _close(grad(loss(f), argnum)(x, w), grad(loss(g), argnum)(x, w), 1e-4)
    only_w = shard_map(lambda w: w * 3.0, mesh=mesh2, in_specs=P(), out_specs=P())
    _close(grad(lambda w: fnp.sum(only_w(w) ** 2))(w), 18.0 * w, 1e-5)


def test_partial_manual_axes(mesh2):
    x = _rand(8, 8)
    # only 'model' is manual: the body sees whole rows (8, 2) and collectives over 'model'
    f = shard_map(lambda b: lax.psum(b, "model"), mesh=mesh2, in_specs=P(None, "model"),
                  out_specs=P(), axis_names={"model"})
    _close(f(x), x.reshape(8, 4, 2).sum(1))
    _close(jit(f)(x), x.reshape(8, 4, 2).sum(1))
    with pytest.raises(ValueError, match="not one of the manual axes"):
        shard_map(lambda b: b, mesh=mesh2, in_specs=P("data"), out_specs=P("data"),
                  axis_names={"model"})(x)


def test_jit_of_a_shard_map_keeps_its_blocks(mesh2):
    # a jitted program that is one shard_map runs it on the arrays themselves: sharded
    # inputs go to their devices as blocks, outputs stay sharded (no gather on one host)
    from functrax.sharding import NamedSharding
    f = jit(shard_map(lambda b: lax.psum(b, "model") * 2.0, mesh=mesh2,
                      in_specs=P("data", "model"), out_specs=P("data")))
    x = _rand(4, 8)
    xs = functrax.device_put(x, NamedSharding(mesh2, P("data", "model")))
    want = np.concatenate([2 * sum(np.split(x[2 * d:2 * d + 2], 4, axis=1))
                           for d in range(2)], axis=0)
    for _ in range(2):  # the second call too (no fast path around the rule)
        y = f(xs)
        assert isinstance(y, MeshShardedArray) and y.sharding.spec == P("data"), type(y)
        _close(y, want)
    _close(f(x), want)  # a host array is split as the in_spec says
