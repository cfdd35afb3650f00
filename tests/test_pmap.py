"""pmap on 4 virtual CPU devices: collectives against numpy references (values and
gradients), composition with grad / vmap / jit / nested pmap, sharded outputs feeding a
second pmap, the device model, and errors (too many devices, unbound axes, timeouts).

The module runs with 4 devices: the autouse module fixture ``four_devices`` sets
``config.num_cpu_devices`` to 4 and calls ``clear_backends()`` so the device list is made
again, and restores both afterwards, so the other test modules keep their device count.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import core, grad, jit, lax, make_jaxpr, pmap, vmap
from functrax.runtime.devices import Device, ShardedArray, clear_backends
from functrax.test_util import check_grads
from functrax.runtime.pmap_runtime import CollectiveTimeoutError
from tests.virtual_devices import cpu_devices
from tests.collective_refs import ref_all_gather, ref_all_to_all, ref_ppermute, ref_psum_scatter

N = 4
RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="module")
def four_devices():
    with cpu_devices(N):
        yield


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _close(a, b, tol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _check(closed, name="i", size=N):
    """check_jaxpr binds no axis names for the sub-jaxprs of xla_pmap: bind them here."""
    with core.extend_axis_env(name, size):
        functrax.check_jaxpr(closed)


# --- devices ---


def test_devices():
    ds = functrax.devices()
    assert [d.id for d in ds] == list(range(N))
    assert repr(ds[0]) == "CpuDevice(id=0)" and str(ds[3]) == "CpuDevice(id=3)"
    assert all(d.platform == "cpu" and d.process_index == 0 for d in ds)
    assert functrax.local_devices() == ds
    assert functrax.device_count() == functrax.local_device_count() == N
    assert functrax.process_index() == 0 and functrax.process_count() == 1
    assert len({d for d in ds}) == N and ds[1] == Device(1)


def test_device_count_from_environment(monkeypatch):
    monkeypatch.setenv("FUNCTRAX_NUM_CPU_DEVICES", "3")
    functrax.config.update("num_cpu_devices", None)
    clear_backends()
    try:
        assert functrax.device_count() == 3
    finally:
        clear_backends()
        functrax.config.update("num_cpu_devices", N)
    assert functrax.device_count() == N


def test_bad_device_count():
    clear_backends()
    functrax.config.update("num_cpu_devices", 0)
    try:
        with pytest.raises(ValueError, match="positive integer"):
            functrax.devices()
    finally:
        functrax.config.update("num_cpu_devices", N)
        clear_backends()


def test_device_put_sharded_and_replicated():
    ds = functrax.devices()
    shards = [np.full((2,), i, np.float32) for i in range(N)]
    x = functrax.device_put_sharded(shards, ds)
    assert isinstance(x, ShardedArray) and x.shape == (N, 2) and x.dtype == np.float32
    _close(x, np.stack(shards))
    assert [s.device for s in x.addressable_shards] == ds
    _close(x.addressable_shards[2].data, shards[2])
    tree = functrax.device_put_sharded([{"a": s, "b": s * 2} for s in shards], ds)
    _close(tree["b"], np.stack(shards) * 2)
    r = functrax.device_put_replicated({"w": np.ones((2, 3), np.float32)}, ds[:2])
    assert r["w"].shape == (2, 2, 3) and r["w"].devices() == set(ds[:2])
    with pytest.raises(ValueError, match=r"len\(shards\) = 3 must equal len\(devices\) = 4"):
        functrax.device_put_sharded(shards[:3], ds)
    with pytest.raises(ValueError, match="same shape and dtype"):
        functrax.device_put_sharded([np.zeros(2)] * 3 + [np.zeros(3)], ds)
    with pytest.raises(ValueError, match="non-empty sequence"):
        functrax.device_put_replicated(1.0, [])


# --- numpy references (tests/collective_refs.py): X holds the per-device values ---

PERM = ((0, 1), (1, 2), (2, 3), (3, 0))
PARTIAL_PERM = ((0, 2), (3, 1))

# name, per-device function, numpy reference on X, per-device shape of X
COLLECTIVES = [
    ("psum", lambda x: lax.psum(x, "i"), lambda X: np.broadcast_to(X.sum(0), X.shape), (3,)),
    ("pmean", lambda x: lax.pmean(x, "i"), lambda X: np.broadcast_to(X.mean(0), X.shape),
     (2, 3)),
    ("pmax", lambda x: lax.pmax(x, "i"), lambda X: np.broadcast_to(X.max(0), X.shape), (3,)),
    ("pmin", lambda x: lax.pmin(x, "i"), lambda X: np.broadcast_to(X.min(0), X.shape), (3,)),
    ("all_gather", lambda x: lax.all_gather(x, "i"), ref_all_gather, (3,)),
    ("all_gather_axis1", lambda x: lax.all_gather(x, "i", axis=1),
     lambda X: ref_all_gather(X, axis=1), (2, 3)),
    ("all_gather_tiled", lambda x: lax.all_gather(x, "i", axis=1, tiled=True),
     lambda X: ref_all_gather(X, axis=1, tiled=True), (2, 3)),
    ("psum_scatter", lambda x: lax.psum_scatter(x, "i"), ref_psum_scatter, (N, 2)),
    ("psum_scatter_tiled", lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
     lambda X: ref_psum_scatter(X, 1, tiled=True), (2, 2 * N)),
    ("ppermute", lambda x: lax.ppermute(x, "i", PERM), lambda X: ref_ppermute(X, PERM), (3,)),
    ("ppermute_partial", lambda x: lax.ppermute(x, "i", PARTIAL_PERM),
     lambda X: ref_ppermute(X, PARTIAL_PERM), (3,)),
    ("pshuffle", lambda x: lax.pshuffle(x, "i", [3, 2, 0, 1]), lambda X: X[[3, 2, 0, 1]], (2,)),
    ("all_to_all", lambda x: lax.all_to_all(x, "i", 0, 1),
     lambda X: ref_all_to_all(X, 0, 1, False), (N, 3)),
    ("all_to_all_tiled", lambda x: lax.all_to_all(x, "i", 1, 0, tiled=True),
     lambda X: ref_all_to_all(X, 1, 0, True), (2, 2 * N)),
    ("axis_index", lambda x: x * lax.axis_index("i"),
     lambda X: X * np.arange(N, dtype=np.float32).reshape((N,) + (1,) * (X.ndim - 1)), (2,)),
]
IDS = [c[0] for c in COLLECTIVES]


@pytest.mark.parametrize("name,f,ref,shape", COLLECTIVES, ids=IDS)
def test_collective_values(name, f, ref, shape):
    X = _rand(N, *shape)
    out = pmap(f, axis_name="i")(X)
    assert isinstance(out, ShardedArray)
    _close(out, ref(X))
    _check(make_jaxpr(pmap(f, axis_name="i"))(X))


@pytest.mark.parametrize("name,f,ref,shape", COLLECTIVES, ids=IDS)
def test_collective_gradients(name, f, ref, shape):
    X = RNG.standard_normal((N,) + shape)  # float64: meaningful finite differences
    W = RNG.standard_normal(np.shape(ref(X)))
    pf = pmap(f, axis_name="i")
    check_grads(lambda x: fnp.sum(pf(x) * W), (X,), order=1, modes=("rev",), atol=1e-4,
                rtol=1e-4)
    check_grads(pf, (X,), order=1, modes=("fwd",), atol=1e-4, rtol=1e-4)


def test_psum_gradient_matches_closed_form():
    # d/dX sum(W * psum(X)) = broadcast(sum_j W[j]) (psum transposes to psum)
    X, W = _rand(N, 3), _rand(N, 3)
    g = grad(lambda x: fnp.sum(pmap(lambda v: lax.psum(v, "i"), axis_name="i")(x) * W))(X)
    _close(g, np.broadcast_to(W.sum(0), X.shape))


def test_pmax_gradient_goes_to_the_maximum():
    X = np.array([[1.0, 5.0], [3.0, 2.0], [0.0, 4.0], [2.0, 1.0]], np.float32)
    g = grad(lambda x: fnp.sum(pmap(lambda v: lax.pmax(v, "i"), axis_name="i")(x)))(X)
    expect = np.zeros_like(X)
    expect[1, 0] = expect[0, 1] = N  # each of the N outputs reads the maximum
    _close(g, expect)


def test_integer_and_bool_collectives():
    X = np.arange(N * 2, dtype=np.int32).reshape(N, 2)
    out = pmap(lambda v: (lax.psum(v, "i"), lax.pmax(v > 3, "i")), axis_name="i")(X)
    _close(out[0], np.broadcast_to(X.sum(0), X.shape))
    assert out[0].dtype == np.int32 and out[1].dtype == np.bool_
    _close(out[1], np.broadcast_to((X > 3).any(0), X.shape))


def test_psum_of_constant_is_axis_size():
    out = pmap(lambda x: x + lax.psum(1, "i"), axis_name="i")(np.zeros(N, np.float32))
    _close(out, np.full(N, N, np.float32))


def test_multiple_psum_operands_and_pytrees():
    X, Y = _rand(N, 2), _rand(N, 3, 2)
    out = pmap(lambda t: lax.psum(t, "i"), axis_name="i")({"a": X, "b": Y})
    _close(out["a"], np.broadcast_to(X.sum(0), X.shape))
    _close(out["b"], np.broadcast_to(Y.sum(0), Y.shape))


# --- composition ---


def _loss(w, x, y):
    return fnp.mean((fnp.tanh(x @ w) - y) ** 2)


def _np_loss_grad(w, x, y):
    h = np.tanh(x @ w)
    d = 2 * (h - y) / h.size
    return x.T @ (d * (1 - h ** 2))


def test_pmap_of_grad_with_pmean():
    W = _rand(3, 2)
    X, Y = _rand(N, 5, 3), _rand(N, 5, 2)
    step = pmap(lambda w, x, y: lax.pmean(grad(_loss)(w, x, y), "i"), axis_name="i",
                in_axes=(None, 0, 0))
    g = step(W, X, Y)
    expect = np.mean([_np_loss_grad(W, X[i], Y[i]) for i in range(N)], axis=0)
    _close(g, np.broadcast_to(expect, (N, 3, 2)), 1e-4)


def test_grad_of_pmap():
    X, W = _rand(N, 3), _rand(N, 3)

    def f(x):
        return fnp.sin(x) * lax.psum(x * x, "i")

    def loss(x):
        return fnp.sum(pmap(f, axis_name="i")(x) * W)

    g = grad(loss)(X)
    S = (X * X).sum(0)
    expect = W * np.cos(X) * S + 2 * X * (W * np.sin(X)).sum(0)
    _close(g, expect, 1e-4)
    _close(jit(grad(loss))(X), expect, 1e-4)


def test_grad_of_pmap_with_broadcast_input():
    # an unmapped (in_axes=None) input's cotangent is the sum over the devices
    w, X = _rand(3), _rand(N, 3)
    g = grad(lambda w: fnp.sum(pmap(lambda w, x: w * x, in_axes=(None, 0))(w, X)))(w)
    _close(g, X.sum(0))


def test_grad_of_pmap_with_out_axes_none_is_not_supported():
    f = pmap(lambda x: lax.psum(x, "i"), axis_name="i", out_axes=None)
    _close(f(np.ones((N, 2), np.float32)), np.full(2, N, np.float32))
    with pytest.raises(NotImplementedError, match="out_axes=None is not supported"):
        grad(lambda x: fnp.sum(f(x)))(np.ones((N, 2), np.float32))


def test_jvp_of_pmap():
    X, T = _rand(N, 3), _rand(N, 3)
    out, t_out = functrax.jvp(pmap(lambda x: fnp.sin(x) * lax.psum(x, "i"), axis_name="i"),
                              (X,), (T,))
    S, TS = X.sum(0), T.sum(0)
    _close(out, np.sin(X) * S)
    _close(t_out, np.cos(X) * T * S + np.sin(X) * TS, 1e-4)


def test_vmap_inside_pmap():
    X = _rand(N, 3, 2)
    f = pmap(vmap(lambda x: x - lax.pmean(x, "i")), axis_name="i")
    _close(f(X), X - X.mean(0, keepdims=True))
    g = pmap(vmap(lambda x: lax.psum(x, ("i", "b")), axis_name="b"), axis_name="i")
    _close(g(X), np.broadcast_to(X.sum((0, 1)), X.shape))


def test_vmap_of_pmap():
    X = _rand(3, N, 2)
    f = pmap(lambda x: x * lax.psum(x, "i"), axis_name="i")
    _close(vmap(f)(X), X * X.sum(1, keepdims=True))
    # batch axis last, and a collective over the vmapped axis inside the pmap
    Xt = np.moveaxis(X, 0, -1)
    _close(vmap(f, in_axes=2, out_axes=0)(Xt), X * X.sum(1, keepdims=True))
    h = vmap(pmap(lambda x: lax.psum(x, "b"), axis_name="i"), axis_name="b")
    _close(h(X), np.broadcast_to(X.sum(0), X.shape))


def test_jit_inside_and_outside_pmap():
    X = _rand(N, 3)
    inner = jit(lambda x: fnp.exp(x) / lax.psum(fnp.exp(x), "i"))
    f = pmap(inner, axis_name="i")
    expect = np.exp(X) / np.exp(X).sum(0)
    _close(f(X), expect)
    _close(jit(f)(X), expect)
    _close(jit(pmap(lambda x: x * 2))(X), X * 2)


def test_nested_pmap_2x2():
    X = _rand(2, 2, 3)

    def body(x):
        return (lax.psum(x, "inner"), lax.psum(x, "outer"), lax.psum(x, ("outer", "inner")),
                lax.axis_index("outer") * 10 + lax.axis_index("inner"),
                lax.all_gather(x, ("outer", "inner")))

    f = pmap(pmap(body, axis_name="inner"), axis_name="outer")
    a, b, c, idx, gathered = f(X)
    _close(a, np.broadcast_to(X.sum(1, keepdims=True), X.shape))
    _close(b, np.broadcast_to(X.sum(0, keepdims=True), X.shape))
    _close(c, np.broadcast_to(X.sum((0, 1)), X.shape))
    _close(idx, np.array([[0, 1], [10, 11]], np.int32))
    _close(gathered, np.broadcast_to(X.reshape(4, 3), (2, 2, 4, 3)))
    # 2 x 3 needs 6 devices
    with pytest.raises(ValueError, match="requires 6 logical devices, but only 4"):
        f(_rand(2, 3, 3))


def test_sharded_output_feeds_next_pmap_without_gathering():
    X = _rand(N, 3)
    f = pmap(lambda x: x * 2, axis_name="i")
    y = f(X)
    z = pmap(lambda v: lax.psum(v, "i"), axis_name="i")(y)
    assert y._gathered is None  # its shards went straight to the devices
    _close(z, np.broadcast_to((2 * X).sum(0), X.shape))
    assert y.devices() == set(functrax.devices())
    assert [s.device.id for s in y.addressable_shards] == list(range(N))
    _close(np.asarray(y), 2 * X)  # gathering on demand
    assert "Array(" in repr(y) and y.sharded_axis == 0


def test_sharded_arrays_in_eager_ops_and_replicated_params():
    ds = functrax.devices()
    w = functrax.device_put_replicated(np.ones(3, np.float32), ds)
    X = functrax.device_put_sharded([np.full(3, i, np.float32) for i in range(N)], ds)
    out = pmap(lambda w, x: w + x)(w, X)
    _close(out, 1 + np.arange(N, dtype=np.float32)[:, None] * np.ones(3))
    _close(out + 1, np.asarray(out) + 1)
    _close(fnp.sum(out, axis=0), np.asarray(out).sum(0))


def test_in_axes_out_axes_and_statics():
    X, b = _rand(3, N), _rand(3)
    f = pmap(lambda x, b: x + b, in_axes=(1, None), out_axes=1)
    out = f(X, b)
    assert out.shape == (3, N) and out.sharded_axis == 1
    _close(out, X + b[:, None])
    g = pmap(lambda x, k: x * k, static_broadcasted_argnums=1)
    _close(g(X.T, 3), X.T * 3)
    t = pmap(lambda d: {"s": d["a"] + d["b"]}, in_axes=({"a": 0, "b": None},))(
        {"a": X.T, "b": b})
    _close(t["s"], X.T + b)
    r = pmap(lambda x: (x, lax.psum(x, "i")), axis_name="i", out_axes=(0, None))(X.T)
    _close(r[1], X.T.sum(0))
    assert type(r[1]) is functrax.Array
    kw = pmap(lambda x, *, y: x - y)(X.T, y=X.T)
    _close(kw, np.zeros_like(X.T))


def test_axis_size_without_mapped_arguments():
    out = pmap(lambda c: c + lax.axis_index("i"), axis_name="i", in_axes=None, axis_size=3)(
        np.float32(1.0))
    _close(out, np.arange(1, 4, dtype=np.float32))


def test_traced_once_per_signature():
    calls = []

    def f(x):
        calls.append(1)
        return x + 1

    pf = pmap(f)
    for _ in range(3):
        pf(np.zeros((N, 2), np.float32))
    assert len(calls) == 1 and pf._cache_size() == 1
    pf(np.zeros((N, 3), np.float32))
    assert len(calls) == 2


def test_replicas_run_concurrently():
    # every replica in a thread of its own, all running at the same time: a barrier of N
    # parties only opens if they do
    from functrax.runtime import pmap_runtime as rt
    barrier = threading.Barrier(N, timeout=10)

    def body(i):
        barrier.wait()
        return threading.get_ident()

    groups = rt.plan_devices(N, 1)
    assert [g[0].id for g in groups] == list(range(N))
    idents = rt.run_replicas(body, "i", groups)
    assert len(set(idents)) == N and idents[0] == threading.get_ident()
    # worker threads are reused by the next call
    assert set(rt.run_replicas(body, "i", groups)) == set(idents)


def test_error_in_one_replica_is_raised():
    from functrax.runtime import pmap_runtime as rt

    def body(i):
        if i == 2:
            raise ZeroDivisionError("replica 2 failed")
        return i

    with pytest.raises(ZeroDivisionError, match="replica 2 failed"):
        rt.run_replicas(body, "i", rt.plan_devices(N, 1))
    assert rt.run_replicas(lambda i: i, "i", rt.plan_devices(N, 1)) == list(range(N))


def test_donate_argnums_deletes_input():
    x = functrax.device_put_sharded([np.ones(2, np.float32)] * N, functrax.devices())
    y = pmap(lambda v: v * 2 + 1, donate_argnums=0)(x)
    _close(y, np.full((N, 2), 3.0))
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(x)


def test_jaxpr_of_pmap():
    closed = make_jaxpr(pmap(lambda x: lax.psum(x, "i") * 2, axis_name="i"))(_rand(N, 3))
    (eqn,) = closed.eqns
    assert eqn.primitive.name == "xla_pmap"
    p = eqn.params
    assert (p["axis_name"], p["axis_size"], p["in_axes"], p["out_axes"]) == ("i", N, (0,), (0,))
    assert [e.primitive.name for e in p["call_jaxpr"].eqns] == ["psum", "mul"]
    text = str(closed)
    assert "xla_pmap[" in text and "call_jaxpr={ lambda" in text
    _check(closed)


# --- errors ---


def test_too_many_devices():
    with pytest.raises(ValueError, match=r"compiling computation that requires 5 logical "
                       r"devices, but only 4 XLA devices are available \(num_replicas=5\)"):
        pmap(lambda x: x)(np.zeros((5, 2), np.float32))


def test_explicit_devices():
    ds = functrax.devices()
    out = pmap(lambda x: x + lax.axis_index("i"), axis_name="i", devices=ds[2:])(
        np.zeros(2, np.float32))
    _close(out, np.arange(2, dtype=np.float32))
    assert out.devices() == set(ds[2:])
    with pytest.raises(ValueError, match="Got axis_size=3, num_local_devices=2"):
        pmap(lambda x: x, devices=ds[2:])(np.zeros(3, np.float32))


def test_unbound_axis_name():
    with pytest.raises(NameError, match="unbound axis name: j"):
        pmap(lambda x: lax.psum(x, "j"), axis_name="i")(np.zeros((N, 2), np.float32))


def test_inconsistent_sizes_and_bad_specs():
    with pytest.raises(ValueError, match="pmap got inconsistent sizes"):
        pmap(lambda x, y: x + y)(np.zeros((N, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="rank should be at least 1"):
        pmap(lambda x: x)(np.float32(1.0))
    with pytest.raises(TypeError, match="pmap in_axes must be"):
        pmap(lambda x: x, in_axes="a")
    with pytest.raises(ValueError, match="at least one argument with a mapped axis"):
        pmap(lambda x: x, in_axes=None)(np.zeros(2))


def test_out_axes_none_requires_unmapped_output():
    with pytest.raises(ValueError, match="pmap has mapped output but out_axes is None"):
        pmap(lambda x: x * 2, axis_name="i", out_axes=None)(np.zeros((N, 2), np.float32))
    with pytest.raises(ValueError, match="out_axes is None"):
        pmap(lambda x: lax.axis_index("i") + 0 * lax.psum(x, "i"), axis_name="i",
             out_axes=None)(np.zeros(N, np.float32))


@pytest.fixture
def short_timeout():
    prev = functrax.config.read("collective_timeout_s")
    functrax.config.update("collective_timeout_s", 0.3)
    yield
    functrax.config.update("collective_timeout_s", prev)


def test_collective_reached_by_one_device_times_out(short_timeout):
    def f(x):
        return lax.cond(lax.axis_index("i") == 0, lambda v: lax.psum(v, "i"), lambda v: v, x)

    t0 = time.perf_counter()
    with pytest.raises(CollectiveTimeoutError, match=r"psum over axis \('i',\) timed out "
                       r"after 0.3 s on CpuDevice\(id=0\): only 1 of its 4 participants"):
        pmap(f, axis_name="i")(np.ones((N, 2), np.float32))
    assert time.perf_counter() - t0 < 30  # it ended instead of hanging
    # the runtime is usable afterwards (with a normal timeout: this part must not be timed)
    functrax.config.update("collective_timeout_s", 60)
    _close(pmap(lambda v: lax.psum(v, "i"), axis_name="i")(np.ones((N, 2), np.float32)),
           np.full((N, 2), N))


def test_timeout_in_nested_pmap(short_timeout):
    def inner(x):
        return lax.cond(lax.axis_index("o") == 1, lambda v: lax.psum(v, "o"), lambda v: v, x)

    with pytest.raises(CollectiveTimeoutError, match="timed out"):
        pmap(pmap(inner, axis_name="n"), axis_name="o")(np.ones((2, 2, 3), np.float32))


def test_doctests():
    import doctest
    import sys
    for name in ("functrax.runtime.devices", "functrax.transforms.pmap"):
        result = doctest.testmod(sys.modules[name])
        assert result.failed == 0 and result.attempted > 0, name
    assert functrax.device_count() == N
