"""shard_map on a mesh of CUDA GPUs, over the FAKE GPU and FAKE NCCL of test_pmap_gpu.py
(numpy-backed GPU buffers, the real generated Triton kernels run by Triton's interpreter, 4
GPUs; a fake nccl4py enforcing NCCL's calling discipline, one fake communicator per
``init_all``).

Tested here: every collective (psum, pmean, all_gather, psum_scatter, ppermute, all_to_all,
axis_index) over one axis and over both axes of a 2x2 GPU mesh, and over a 1-D mesh of 4
GPUs, against numpy, through NCCL (one sub-communicator per axis group) and host-staged;
GPU-resident outputs feeding a second shard_map without host copies; jit of a shard_map;
grad of a shard_mapped loss equal to the CPU result; the error for a mesh mixing CPU and
GPU devices. What only a real GPU can check is in ``benchmarks/gpu_check.py`` (section
"shard_map").
"""
from __future__ import annotations

import os
import sys

os.environ["TRITON_INTERPRET"] = "1"  # noqa: E402 - before anything imports triton

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import P, lax  # noqa: E402
from functrax.config import config  # noqa: E402
from functrax.runtime import nccl_communicator as nc  # noqa: E402
from functrax.runtime.mesh_array import MeshShardedArray  # noqa: E402
from functrax.runtime import shard_map_gpu  # noqa: E402
from functrax.runtime.shard_map_gpu import GpuMeshShardedArray  # noqa: E402
from tests.virtual_devices import cpu_devices  # noqa: E402
from tests.fake_gpu import FakeGpuBuffer  # noqa: E402
from tests import test_pmap_gpu as _pmap_gpu_tests  # noqa: E402
from tests.test_pmap_gpu import FakeNccl  # noqa: E402

# the fake GPU / fake NCCL fixtures of test_pmap_gpu.py, reused
cache_dir = _pmap_gpu_tests.cache_dir
fake_gpus = _pmap_gpu_tests.fake_gpus
fake_nccl = _pmap_gpu_tests.fake_nccl
no_nccl4py = _pmap_gpu_tests.no_nccl4py

AXES = ("data", "model")


@pytest.fixture(autouse=True, scope="module")
def four_cpu_devices():
    with cpu_devices(4):
        yield


def _gpu_mesh():
    return functrax.make_mesh((2, 2), AXES, devices=functrax.devices("gpu"))


def _cpu_mesh():
    return functrax.make_mesh((2, 2), AXES, devices=functrax.devices("cpu")[:4])


def _x(shape=(8, 4), seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


# --- numpy references: blocks X[(d, m)] of x split P("data", "model") ---


def _blocks(x):
    r, c = x.shape[0] // 2, x.shape[1] // 2
    return {(d, m): x[r * d:r * d + r, c * m:c * m + c] for d in range(2) for m in range(2)}


def _assemble(outs, spec):
    """The global value of the per-device blocks ``outs[(d, m)]`` laid out by ``spec``."""
    b0 = outs[(0, 0)]
    dims = [(e,) if isinstance(e, str) else (e or ()) for e in tuple(spec)]
    dims += [()] * (b0.ndim - len(dims))
    g = np.zeros([s * 2 ** len(n) for s, n in zip(b0.shape, dims)], b0.dtype)
    for (d, m), b in outs.items():
        idx = []
        for s, names in zip(b0.shape, dims):
            p = 0
            for nm in names:
                p = p * 2 + (d if nm == "data" else m)
            idx.append(slice(p * s, p * s + s))
        g[tuple(idx)] = b
    return g


def _all(X):
    return [X[(0, 0)], X[(0, 1)], X[(1, 0)], X[(1, 1)]]


def _a2a_model(X, d, m):
    chunks = [np.split(X[(d, j)], 2, axis=0) for j in range(2)]
    return np.concatenate([chunks[j][m] for j in range(2)], axis=1)


# name: (body on the block, reference (X, d, m) -> block, out_spec, NCCL op or None)
CASES = {
    "psum_model": (lambda b: lax.psum(b, "model"),
                   lambda X, d, m: X[(d, 0)] + X[(d, 1)], P("data"), "allreduce"),
    "psum_both": (lambda b: lax.psum(b, AXES), lambda X, d, m: sum(_all(X)), P(), "allreduce"),
    "pmean_data": (lambda b: lax.pmean(b, "data"),
                   lambda X, d, m: (X[(0, m)] + X[(1, m)]) / 2, P(None, "model"), "allreduce"),
    "pmean_both": (lambda b: lax.pmean(b, AXES), lambda X, d, m: sum(_all(X)) / 4, P(),
                   "allreduce"),
    "all_gather_model": (lambda b: lax.all_gather(b, "model", axis=1, tiled=True),
                         lambda X, d, m: np.concatenate([X[(d, 0)], X[(d, 1)]], 1), P("data"),
                         "allgather"),
    "all_gather_data": (lambda b: lax.all_gather(b, "data"),
                        lambda X, d, m: np.stack([X[(0, m)], X[(1, m)]]),
                        P(None, None, "model"), "allgather"),
    "all_gather_both": (lambda b: lax.all_gather(b, AXES, tiled=True),
                        lambda X, d, m: np.concatenate(_all(X)), P(), "allgather"),
    "psum_scatter_model": (lambda b: lax.psum_scatter(b, "model", tiled=True),
                           lambda X, d, m: (X[(d, 0)] + X[(d, 1)])[2 * m:2 * m + 2],
                           P("data", "model"), "reduce_scatter"),
    "psum_scatter_model_dim1": (
        lambda b: lax.psum_scatter(b, "model", scatter_dimension=1, tiled=True),
        lambda X, d, m: (X[(d, 0)] + X[(d, 1)])[:, m:m + 1], P("data", "model"),
        "reduce_scatter"),
    "psum_scatter_both": (lambda b: lax.psum_scatter(b, AXES, tiled=True),
                          lambda X, d, m: sum(_all(X))[2 * d + m:2 * d + m + 1],
                          P(AXES), "reduce_scatter"),
    "ppermute_model": (lambda b: lax.ppermute(b, "model", [(0, 1), (1, 0)]),
                       lambda X, d, m: X[(d, 1 - m)], P("data", "model"), "send"),
    "ppermute_both": (lambda b: lax.ppermute(b, AXES, [(i, (i + 1) % 4) for i in range(4)]),
                      lambda X, d, m: X[divmod((2 * d + m - 1) % 4, 2)], P("data", "model"),
                      "send"),
    "all_to_all_model": (lambda b: lax.all_to_all(b, "model", 0, 1, tiled=True), _a2a_model,
                         P("data", "model"), "send"),
    "axis_index": (lambda b: b + 10.0 * lax.axis_index("data").astype(np.float32)
                   + lax.axis_index("model").astype(np.float32),
                   lambda X, d, m: X[(d, m)] + 10.0 * d + m, P("data", "model"), None),
}


def _run_case(name, mesh):
    body, ref, out_spec, _ = CASES[name]
    x = _x()
    f = functrax.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=out_spec,
                           check_vma=False)
    X = _blocks(x)
    want = _assemble({(d, m): ref(X, d, m) for d in range(2) for m in range(2)}, out_spec)
    return f(x), want


@pytest.mark.parametrize("name", list(CASES))
def test_collectives_2d_mesh_through_nccl_match_numpy(fake_nccl, name):
    out, want = _run_case(name, _gpu_mesh())
    assert type(out) is GpuMeshShardedArray
    blocks = out.gpu_blocks()
    assert [type(b) for b in blocks] == [FakeGpuBuffer] * 4
    assert [b.device_id for b in blocks] == [0, 1, 2, 3]
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
    op = CASES[name][3]
    if op is not None:
        assert op in fake_nccl.log  # on the device buffers, not host-staged
    assert fake_nccl.inits[0] == [0, 1, 2, 3]  # the whole mesh, then one per axis group
    assert shard_map_gpu.last_collectives().startswith("NCCL")
    if name.endswith("_model"):
        assert [0, 1] in fake_nccl.inits and [2, 3] in fake_nccl.inits
    if name.endswith("_data"):
        assert [0, 2] in fake_nccl.inits and [1, 3] in fake_nccl.inits


@pytest.mark.parametrize("name", ["psum_model", "pmean_both", "all_gather_both",
                                  "psum_scatter_model_dim1", "ppermute_both",
                                  "all_to_all_model", "axis_index"])
def test_collectives_2d_mesh_host_staged_match_numpy(fake_gpus, name, monkeypatch):
    fake = FakeNccl()
    monkeypatch.setattr(nc, "_MODULE", {"core": fake})  # present but not used
    config.update("pmap_gpu_collectives", "host")
    try:
        out, want = _run_case(name, _gpu_mesh())
    finally:
        config.update("pmap_gpu_collectives", "auto")
    assert type(out) is GpuMeshShardedArray
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
    assert fake.log == [] and fake.inits == []
    assert shard_map_gpu.last_collectives().startswith("host-staged")


def test_missing_nccl4py_is_host_staged(no_nccl4py):
    out, want = _run_case("psum_both", _gpu_mesh())
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


def test_cpu_mesh_unchanged():
    out, want = _run_case("psum_model", _cpu_mesh())
    assert type(out) is MeshShardedArray
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)


# --- a 1-D mesh of 4 GPUs ---


def test_collectives_1d_mesh(fake_nccl):
    mesh = functrax.make_mesh((4,), ("i",), devices=functrax.devices("gpu"))
    x = _x((16, 3))

    def body(b):
        s = lax.psum(b, "i")
        g = lax.all_gather(b, "i", tiled=True)
        r = lax.psum_scatter(b, "i", tiled=True)
        p = lax.ppermute(b, "i", [(i, (i + 1) % 4) for i in range(4)])
        k = b * lax.axis_index("i").astype(np.float32)
        return s, g, r, p, k

    f = functrax.shard_map(body, mesh=mesh, in_specs=P("i"),
                           out_specs=(P(), P(), P("i"), P("i"), P("i")), check_vma=False)
    s, g, r, p, k = f(x)
    xb = np.split(x, 4)
    np.testing.assert_allclose(np.asarray(s), sum(xb), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(g), x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(r), sum(xb), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(p), np.concatenate(xb[-1:] + xb[:-1]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(k), np.concatenate([b * i for i, b in
                                                              enumerate(xb)]), rtol=1e-6)
    for op in ("allreduce", "allgather", "reduce_scatter", "send"):
        assert op in fake_nccl.log
    assert fake_nccl.inits == [[0, 1, 2, 3]]  # one communicator for every collective


# --- GPU-resident outputs, jit ---


def test_output_feeds_second_shard_map_without_host_copies(fake_nccl, fake_gpus):
    mesh = _gpu_mesh()
    x = _x()
    spec = P("data", "model")
    f = functrax.shard_map(lambda b: fnp.sin(b) * 2.0, mesh=mesh, in_specs=spec,
                           out_specs=spec)
    g = functrax.shard_map(lambda b: lax.psum(b + 1.0, "model"), mesh=mesh, in_specs=spec,
                           out_specs=P("data"))
    y = f(x)
    FakeGpuBuffer.reads.clear()
    z = g(y)
    assert FakeGpuBuffer.reads == []  # y's blocks consumed on their GPUs
    assert {d for _, d in fake_gpus} == {0, 1, 2, 3}  # kernels launched on every GPU
    Y = _blocks(np.sin(x) * 2 + 1)
    np.testing.assert_allclose(np.asarray(z), np.concatenate(
        [Y[(0, 0)] + Y[(0, 1)], Y[(1, 0)] + Y[(1, 1)]]), rtol=1e-5, atol=1e-5)
    shards = y.addressable_shards
    assert [s.device for s in shards] == list(mesh.devices.flat)
    np.testing.assert_allclose(np.asarray(shards[3].data), np.sin(_blocks(x)[(1, 1)]) * 2,
                               rtol=1e-5)


def test_jit_of_gpu_shard_map(fake_nccl):
    mesh = _gpu_mesh()
    x = _x()
    f = functrax.jit(lambda v: functrax.shard_map(
        lambda b: lax.psum(b, AXES), mesh=mesh, in_specs=P("data", "model"),
        out_specs=P())(v * 2.0) + 1.0)
    np.testing.assert_allclose(np.asarray(f(x)), 2 * sum(_all(_blocks(x))) + 1, rtol=1e-5)
    assert "allreduce" in fake_nccl.log


# --- grad ---


def _loss(mesh):
    def body(x, w):
        h = fnp.tanh(x * w) - lax.pmean(x, "model")
        return lax.psum(fnp.sum(h ** 2), AXES)

    f = functrax.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P("model")),
                           out_specs=P())
    return lambda x, w: f(x, w) * 0.5


def test_grad_of_shard_map_matches_cpu(fake_nccl, monkeypatch):
    x, w = _x(), _x((4,), seed=3)
    runs, run = [], shard_map_gpu.run
    monkeypatch.setattr(shard_map_gpu, "run", lambda *a: runs.append(a[0]) or run(*a))
    g_gpu = functrax.grad(_loss(_gpu_mesh()), argnums=(0, 1))(x, w)
    assert len(runs) >= 2  # the forward and the transposed shard_map, both on the GPUs
    log = list(fake_nccl.log)
    g_cpu = functrax.grad(_loss(_cpu_mesh()), argnums=(0, 1))(x, w)
    for a, b in zip(g_gpu, g_cpu):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
    assert log.count("allreduce") >= 2  # forward and transposed collectives on the GPUs


# --- errors ---


def test_mesh_mixing_cpu_and_gpu_devices_raises(fake_nccl):
    devs = functrax.devices("cpu")[:2] + functrax.devices("gpu")[:2]
    mesh = functrax.make_mesh((2, 2), AXES, devices=devs)
    f = functrax.shard_map(lambda b: b * 2.0, mesh=mesh, in_specs=P("data", "model"),
                           out_specs=P("data", "model"))
    with pytest.raises(ValueError, match="mixes CPU and GPU devices"):
        f(_x())


# --- the GPU check's section ---


def test_gpu_check_shard_map_section_on_fake_gpus(fake_nccl, monkeypatch):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(gpu_check, "SUMMARY", [])
    monkeypatch.setattr(gpu_check, "_sync", lambda: None)  # no CUDA stream to synchronize
    gpu_check.run_section("shard_map", gpu_check.section_shard_map, gpu_check.parse_args([]))
    statuses = {s[0]: s[1] for s in gpu_check.SUMMARY}
    assert statuses == {"shard_map step": "OK", "shard_map step time": "OK"}, \
        gpu_check.SUMMARY
    assert "NCCL" in gpu_check.SUMMARY[0][2]
    assert "allreduce" in fake_nccl.log


def test_gpu_check_shard_map_section_skips_with_one_gpu(monkeypatch):
    from tests import fake_gpu as fake_gpu_lib
    fake_gpu_lib.install(monkeypatch, 1)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(gpu_check, "SUMMARY", [])
    gpu_check.section_shard_map(gpu_check.parse_args([]))
    assert gpu_check.SUMMARY == [("shard_map", "SKIP",
                                  "needs at least 2 GPUs for a 2-D mesh; 1 visible")]


def test_gpu_shard_map_inside_pmap_replicas_raises(fake_nccl):
    inner = functrax.shard_map(lambda b: b * 2.0, mesh=_gpu_mesh(),
                               in_specs=P("data", "model"), out_specs=P("data", "model"))
    f = functrax.pmap(inner, devices=functrax.devices("cpu")[:2])
    with pytest.raises(NotImplementedError, match="nested inside pmap"):
        f(np.stack([_x(), _x(seed=1)]))
