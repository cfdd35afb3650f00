"""pmap on CUDA GPUs, over a FAKE GPU and a FAKE NCCL (no CUDA on this machine).

The fake GPU (as in test_devices_gpu.py): ``GpuBuffer`` is a numpy-backed stand-in, kernels
are the real generated Triton kernels run by Triton's interpreter on those buffers, and the
driver reports 4 GPUs. The fake NCCL implements the nccl4py calls that
``nccl_communicator`` makes (``Communicator.init_all``, ``allreduce``, ``allgather``,
``reduce_scatter``, ``send``, ``recv``, ``group_start`` / ``group_end``) on those buffers:
calls are queued per rank and executed at ``group_end`` (so a call issued outside a group, on
the wrong device, or by only some of the ranks fails, as it would deadlock NCCL).

Tested here: placement (GPU devices, GPU-resident inputs, ``backend="gpu"``), every
collective against numpy through NCCL and host-staged, grad of a GPU pmap, a GPU-sharded
output feeding a second pmap without host copies, the missing-nccl4py error and fallback.
What only a real GPU can check (CUDA buffers, streams, libnccl) is in
``benchmarks/gpu_check.py`` (section "pmap").
"""
from __future__ import annotations

import logging
import os

os.environ["TRITON_INTERPRET"] = "1"  # noqa: E402 - before anything imports triton

import sys  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import triton  # noqa: E402, F401 - a required dependency, after TRITON_INTERPRET=1

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax.runtime import gpu_devices as gpu  # noqa: E402
from functrax import lax
from functrax.config import config  # noqa: E402
from functrax.runtime.devices import ShardedArray  # noqa: E402
from functrax.lowering.triton import autotune, cache as tcache  # noqa: E402
from functrax.runtime import nccl_communicator as nc, pmap_gpu  # noqa: E402
from tests import fake_gpu as fake_gpu_lib  # noqa: E402
from tests.fake_gpu import FakeGpuBuffer  # noqa: E402

N = 4


# --- the fake NCCL ---


def _view(chunk):
    """The numpy elements a ``_Chunk`` (or a whole buffer) designates (writable view)."""
    if isinstance(chunk, nc._Chunk):
        flat = chunk.base.array.reshape(-1).view(chunk.dtype)
        return flat[chunk.offset:chunk.offset + chunk.count]
    return chunk.array.reshape(-1)


class FakeComm:
    def __init__(self, nccl, rank, device, cid=0):
        self.nccl, self.rank, self.device, self.cid = nccl, rank, device, cid

    def _queue(self, op, bufs, args, stream):
        assert self.nccl.depth > 0, f"{op} issued outside group_start/group_end"
        assert all(b.device_id == self.device for b in bufs), (op, self.device)
        assert "stream" in stream
        self.nccl.pending.append((op, self.rank, bufs, args, self.cid))

    def allreduce(self, send, recv, op, **kw):
        self._queue("allreduce", [send, recv], op, kw)

    def allgather(self, send, recv, **kw):
        self._queue("allgather", [send, recv], None, kw)

    def reduce_scatter(self, send, recv, op, **kw):
        self._queue("reduce_scatter", [send, recv], op, kw)

    def send(self, buf, peer, **kw):
        self._queue("send", [buf], peer, kw)

    def recv(self, buf, peer, **kw):
        self._queue("recv", [buf], peer, kw)


class FakeNccl:
    SUM, MAX, MIN = "sum", "max", "min"
    __version__ = "fake"

    def __init__(self):
        self.depth, self.pending, self.log, self.inits = 0, [], [], []
        nccl = self

        class Communicator:
            @staticmethod
            def init_all(devices):
                nccl.inits.append(list(devices))  # communicator cid = its index here
                return [FakeComm(nccl, r, d, len(nccl.inits) - 1)
                        for r, d in enumerate(devices)]
        self.Communicator = Communicator

    def group_start(self):
        self.depth += 1

    def group_end(self):
        self.depth -= 1
        if self.depth == 0:
            pending, self.pending = self.pending, []
            by_comm: dict = {}  # the calls on each communicator (shard_map: sub-groups)
            for call in pending:
                by_comm.setdefault(call[-1], []).append(call[:-1])
            for cid, calls in by_comm.items():
                self._execute(calls, len(self.inits[cid]))

    def _execute(self, pending, n):
        ops = {"sum": np.add, "max": np.maximum, "min": np.minimum}
        by_op: dict = {}
        for op, rank, bufs, args in pending:
            by_op.setdefault(op, []).append((rank, bufs, args))
            self.log.append(op)
        for op in ("allreduce", "allgather", "reduce_scatter"):
            calls = by_op.get(op, [])
            assert len(calls) % n == 0, f"{op}: only some ranks called it"
            for k in range(0, len(calls), n):
                group = sorted(calls[k:k + n], key=lambda c: c[0])
                assert [c[0] for c in group] == list(range(n)), f"{op}: ranks {group}"
                sends = [_view(c[1][0]).copy() for c in group]
                if op == "allreduce":
                    total = sends[0]
                    for s in sends[1:]:
                        total = ops[group[0][2]](total, s)
                    for c in group:
                        _view(c[1][1])[...] = total
                elif op == "allgather":
                    for c in group:
                        _view(c[1][1])[...] = np.concatenate(sends)
                else:
                    blocks = np.split(sum(sends[1:], sends[0]), n)
                    for c in group:
                        _view(c[1][1])[...] = blocks[c[0]]
        sends = {}
        for rank, bufs, peer in by_op.get("send", []):
            sends.setdefault((rank, peer), []).append(_view(bufs[0]).copy())
        for rank, bufs, peer in by_op.get("recv", []):
            queue = sends.get((peer, rank))
            assert queue, f"recv on rank {rank} from {peer} without a matching send"
            _view(bufs[0])[...] = queue.pop(0)
        assert not any(sends.values()), "a send without a matching recv"


# --- fixtures ---


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("kernels"))


@pytest.fixture
def fake_gpus(monkeypatch, cache_dir):
    monkeypatch.setenv("FUNCTRAX_CACHE_DIR", cache_dir)
    monkeypatch.setattr(tcache, "_DEFAULT", None)
    monkeypatch.setattr(autotune, "_STORE", None)
    launches = fake_gpu_lib.install(monkeypatch, N)
    monkeypatch.setattr(nc, "_COMMS", {})
    monkeypatch.setattr(nc, "_WARNED", set())
    return launches


@pytest.fixture
def fake_nccl(fake_gpus, monkeypatch):
    fake = FakeNccl()
    monkeypatch.setattr(nc, "_MODULE", {"core": fake})
    return fake


@pytest.fixture
def no_nccl4py(fake_gpus, monkeypatch):
    monkeypatch.setattr(nc, "_MODULE", {})
    monkeypatch.setitem(sys.modules, "nccl.core", None)
    monkeypatch.setitem(sys.modules, "nccl", None)


def _gpus(n=N):
    return functrax.devices("gpu")[:n]


def _rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


# --- collectives vs numpy (x: [devices, ...]) ---


def _a2a(x, split, concat):
    n = x.shape[0]
    chunks = [np.split(x[j], n, axis=split) for j in range(n)]
    return np.stack([np.concatenate([chunks[j][i] for j in range(n)], axis=concat)
                     for i in range(n)])


def _scatter(x, dim, tiled):
    n, total = x.shape[0], x.sum(0)
    if tiled:
        return np.stack(np.split(total, n, axis=dim))
    return np.stack([np.take(total, i, axis=dim) for i in range(n)])


CASES = {
    "psum": (lambda x: lax.psum(x, "i") * 2.0, lambda x: np.broadcast_to(x.sum(0) * 2, x.shape)),
    "pmean": (lambda x: lax.pmean(x, "i"), lambda x: np.broadcast_to(x.mean(0), x.shape)),
    "pmax": (lambda x: lax.pmax(x, "i"), lambda x: np.broadcast_to(x.max(0), x.shape)),
    "pmin": (lambda x: lax.pmin(x, "i"), lambda x: np.broadcast_to(x.min(0), x.shape)),
    "all_gather0": (lambda x: lax.all_gather(x, "i"),
                    lambda x: np.broadcast_to(x, (len(x),) + x.shape)),
    "all_gather1": (lambda x: lax.all_gather(x, "i", axis=1),
                    lambda x: np.broadcast_to(np.moveaxis(x, 0, 1), (len(x),) + x.shape[1:2]
                                              + (len(x),) + x.shape[2:])),
    "all_gather1_tiled": (lambda x: lax.all_gather(x, "i", axis=1, tiled=True),
                          lambda x: np.broadcast_to(np.concatenate(list(x), axis=1),
                                                    (len(x), x.shape[1], x.shape[2] * len(x)))),
    "psum_scatter0": (lambda x: lax.psum_scatter(x, "i", tiled=True),
                      lambda x: _scatter(x, 0, True)),
    "psum_scatter1": (lambda x: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
                      lambda x: _scatter(x, 1, True)),
    "ppermute": (lambda x: lax.ppermute(x, "i", [(i, (i + 1) % N) for i in range(N)]),
                 lambda x: np.roll(x, 1, axis=0)),
    "ppermute_partial": (lambda x: lax.ppermute(x + 1.0, "i", [(0, 2), (1, 3)]),
                         lambda x: np.stack([np.zeros_like(x[0]), np.zeros_like(x[0]),
                                             x[0] + 1, x[1] + 1])),
    "all_to_all00": (lambda x: lax.all_to_all(x, "i", 0, 0, tiled=True),
                     lambda x: _a2a(x, 0, 0)),
    "all_to_all01": (lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True),
                     lambda x: _a2a(x, 0, 1)),
    "all_to_all10": (lambda x: lax.all_to_all(x, "i", 1, 0, tiled=True),
                     lambda x: _a2a(x, 1, 0)),
    "axis_index": (lambda x: x * lax.axis_index("i").astype(np.float32),
                   lambda x: x * np.arange(N, dtype=np.float32).reshape(-1, 1, 1)),
}

NCCL_OPS = {"psum": "allreduce", "pmean": "allreduce", "pmax": "allreduce",
            "pmin": "allreduce", "all_gather0": "allgather", "all_gather1": "allgather",
            "all_gather1_tiled": "allgather", "psum_scatter0": "reduce_scatter",
            "psum_scatter1": "reduce_scatter", "ppermute": "send", "ppermute_partial": "send",
            "all_to_all00": "send", "all_to_all01": "send", "all_to_all10": "send"}


@pytest.mark.parametrize("name", list(CASES))
def test_collectives_through_nccl_match_numpy(fake_nccl, name):
    f, ref = CASES[name]
    x = _rand(N, 4, 4)
    out = functrax.pmap(f, "i", devices=_gpus())(x)
    assert type(out) is pmap_gpu.GpuShardedArray
    assert [type(b) for b in out.gpu_buffers()] == [FakeGpuBuffer] * N
    assert [b.device_id for b in out.gpu_buffers()] == list(range(N))
    np.testing.assert_allclose(np.asarray(out), ref(x), rtol=1e-5, atol=1e-5)
    if name in NCCL_OPS:
        assert NCCL_OPS[name] in fake_nccl.log  # on the device buffers, not host-staged
    assert fake_nccl.inits == [list(range(N))]


@pytest.mark.parametrize("name", ["psum", "all_gather1", "psum_scatter1", "ppermute",
                                  "all_to_all01"])
def test_collectives_host_staged_match_numpy(fake_gpus, name, monkeypatch):
    monkeypatch.setattr(nc, "_MODULE", {"core": FakeNccl()})  # present but not used
    config.update("pmap_gpu_collectives", "host")
    try:
        f, ref = CASES[name]
        x = _rand(N, 4, 4, seed=1)
        pf = functrax.pmap(f, "i", devices=_gpus())
        out = pf(x)
        assert type(out) is pmap_gpu.GpuShardedArray
        np.testing.assert_allclose(np.asarray(out), ref(x), rtol=1e-5, atol=1e-5)
        assert "host-staged (config.pmap_gpu_collectives='host')" in pmap_gpu.program_text(pf)
    finally:
        config.update("pmap_gpu_collectives", "auto")


def test_nccl_calls_are_grouped_per_collective_and_comms_reused(fake_nccl):
    f = functrax.pmap(lambda x: lax.psum(fnp.sin(x), "i") + lax.pmax(x, "i"), "i",
                      devices=_gpus(2))
    x = _rand(2, 8)
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(f(x)),
                                   np.broadcast_to(np.sin(x).sum(0) + x.max(0), x.shape),
                                   rtol=1e-5)
    assert fake_nccl.inits == [[0, 1]]  # one NCCL communicator per device set
    assert fake_nccl.log == ["allreduce"] * 8
    text = functrax.runtime.pmap_gpu.program_text(f)
    assert "collectives: NCCL (nccl4py fake)" in text and "GPUs [0, 1]" in text
    assert "fused_sin" in text or "sin" in text


def test_unreducible_dtype_is_host_staged(fake_nccl):
    f = functrax.pmap(lambda x: lax.psum(x, "i"), "i", devices=_gpus(2))
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(f(x)), np.broadcast_to(x.sum(0), x.shape))
    assert "allreduce" not in fake_nccl.log
    assert "NCCL cannot reduce int16" in pmap_gpu.program_text(f)


def test_multiple_operands_and_scalars(fake_nccl):
    def f(x, y):
        s, t = lax.psum((x, y), "i")
        return s, t * 2.0, lax.psum(1.0, "i")
    x, y = _rand(N, 3), _rand(N, seed=2)
    s, t, n = functrax.pmap(f, "i", devices=_gpus())(x, y)
    np.testing.assert_allclose(np.asarray(s), np.broadcast_to(x.sum(0), x.shape), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(t), np.broadcast_to(2 * y.sum(), (N,)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(n), np.full(N, float(N)))


# --- placement ---


def test_placement_by_resident_inputs_and_backend(fake_nccl):
    x = _rand(N, 3)
    cpu = functrax.pmap(lambda x: x * 2.0, devices=functrax.devices("cpu")[:1])(x[:1])
    assert type(cpu) is ShardedArray  # CPU devices stay the default on a GPU machine
    on_gpu = functrax.device_put(x, _gpus()[0])
    out = functrax.pmap(lambda x: x * 2.0)(on_gpu)  # a GPU-resident input selects the GPUs
    assert type(out) is pmap_gpu.GpuShardedArray and out.devices() == set(_gpus())
    np.testing.assert_allclose(np.asarray(out), x * 2, rtol=1e-6)
    out = functrax.pmap(lambda x: x - 1.0, backend="gpu")(x)
    assert type(out) is pmap_gpu.GpuShardedArray
    np.testing.assert_allclose(np.asarray(out), x - 1, rtol=1e-6)
    shards = out.addressable_shards
    assert [type(s.data) for s in shards] == [gpu.GpuArray] * N
    assert [s.device for s in shards] == _gpus()
    np.testing.assert_allclose(np.asarray(shards[2].data), x[2] - 1, rtol=1e-6)
    # out_axes=None: one GPU-resident array
    r = functrax.pmap(lambda x: lax.psum(x, "i"), "i", out_axes=None, backend="gpu")(x)
    assert type(r) is gpu.GpuArray
    np.testing.assert_allclose(np.asarray(r), x.sum(0), rtol=1e-5)


def test_more_replicas_than_gpus_raises_jax_error(fake_nccl):
    with pytest.raises(ValueError, match=r"requires 5 logical devices, but only 4"):
        functrax.pmap(lambda x: x, backend="gpu")(np.ones((5, 2), np.float32))


def test_device_errors(fake_nccl):
    with pytest.raises(ValueError, match="mixes CPU and GPU devices"):
        functrax.pmap(lambda x: x, devices=[functrax.devices("cpu")[0], _gpus()[0]])


def test_backend_gpu_without_gpu_raises_jax_error():
    with pytest.raises(RuntimeError, match="Unknown backend: 'gpu' requested"):
        functrax.pmap(lambda x: x, backend="gpu")


# --- sharded outputs into a second pmap, donation ---


def test_sharded_output_feeds_second_pmap_without_host_copies(fake_nccl, monkeypatch):
    gpus = _gpus()
    f = functrax.pmap(lambda x: fnp.exp(x) - lax.pmean(x, "i"), "i", devices=gpus)
    g = functrax.pmap(lambda y, w: lax.psum(y * w, "i"), "i", in_axes=(0, None),
                      devices=gpus)
    x, w = _rand(N, 5), _rand(5, seed=3)
    y = f(x)
    bufs = y.gpu_buffers()
    seen = []
    run = pmap_gpu.ReplicaProgram.run
    monkeypatch.setattr(pmap_gpu.ReplicaProgram, "run",
                        lambda self, dev, args, comm: seen.append((dev, args[0]))
                        or run(self, dev, args, comm))

    def no_host_copy(self):
        raise AssertionError("a GPU shard was copied to the host")
    monkeypatch.setattr(FakeGpuBuffer, "to_numpy", no_host_copy)
    z = g(y, w)
    monkeypatch.undo()
    assert sorted((d, id(a)) for d, a in seen) == sorted(
        (i, id(b)) for i, b in enumerate(bufs))  # each device got its own shard
    ref_y = np.exp(x) - x.mean(0)
    np.testing.assert_allclose(np.asarray(y), ref_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(z), np.broadcast_to((ref_y * w).sum(0), x.shape),
                               rtol=1e-5, atol=1e-5)


def test_donated_gpu_input_is_deleted(fake_nccl):
    f = functrax.pmap(lambda x: x + 1.0, devices=_gpus(2))
    y = f(_rand(2, 3))
    z = functrax.pmap(lambda x: x * 2.0, devices=_gpus(2), donate_argnums=0)(y)
    assert y.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(y)
    assert np.asarray(z).shape == (2, 3)


# --- transformations ---


def test_grad_of_gpu_pmap(fake_nccl):
    gpus = _gpus()
    x = _rand(N, 3)
    w = _rand(3, seed=4)

    def loss(x, w):
        y = functrax.pmap(lambda x, w: fnp.sin(x * w) - lax.pmean(x, "i"), "i",
                          in_axes=(0, None), devices=gpus)(x, w)
        return fnp.sum(y ** 2)
    gx, gw = functrax.grad(loss, argnums=(0, 1))(x, w)
    y = np.sin(x * w) - x.mean(0)
    dy = 2 * y
    cos = np.cos(x * w)
    want_x = dy * cos * w - dy.sum(0) / N  # d pmean / dx_j = 1/N on every device
    want_w = (dy * cos * x).sum(0)
    np.testing.assert_allclose(np.asarray(gx), want_x, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), want_w, rtol=1e-4, atol=1e-5)
    assert "allreduce" in fake_nccl.log  # the transposed pmean ran through NCCL too


def test_pmap_of_grad_and_jit_inside_on_gpus(fake_nccl):
    gpus = _gpus(2)
    x = _rand(2, 4)
    step = functrax.pmap(lambda x: lax.pmean(functrax.grad(
        functrax.jit(lambda v: fnp.sum(fnp.tanh(v) ** 2)))(x), "i"), "i", devices=gpus)
    got = step(x)
    g = 2 * np.tanh(x) * (1 - np.tanh(x) ** 2)
    np.testing.assert_allclose(np.asarray(got), np.broadcast_to(g.mean(0), x.shape),
                               rtol=1e-5, atol=1e-6)


# --- nccl4py missing ---


def test_missing_nccl4py_falls_back_to_host_staged(no_nccl4py, caplog):
    f = functrax.pmap(lambda x: lax.psum(x, "i"), "i", devices=_gpus(2))
    x = _rand(2, 3)
    with caplog.at_level(logging.WARNING, logger="functrax.pmap"):
        out = f(x)
    assert type(out) is pmap_gpu.GpuShardedArray
    np.testing.assert_allclose(np.asarray(out), np.broadcast_to(x.sum(0), x.shape), rtol=1e-6)
    text = pmap_gpu.program_text(f)
    assert "collectives: host-staged" in text and "pip install 'functrax[nccl]'" in text
    assert "functrax[nccl]" in caplog.text


def test_missing_nccl4py_error_names_the_extra(no_nccl4py):
    with pytest.raises(ImportError, match=r"pip install 'functrax\[nccl\]'"):
        nc.nccl_module()
    config.update("pmap_gpu_collectives", "nccl")
    try:
        with pytest.raises(ImportError, match=r"functrax\[nccl\]"):
            functrax.pmap(lambda x: lax.psum(x, "i"), "i", devices=_gpus(2))(_rand(2, 3))
    finally:
        config.update("pmap_gpu_collectives", "auto")


def test_nccl_init_failure_falls_back(fake_gpus, monkeypatch):
    fake = FakeNccl()

    def broken(devices):
        raise RuntimeError("libnccl.so.2: cannot open shared object file")
    fake.Communicator.init_all = staticmethod(broken)
    monkeypatch.setattr(nc, "_MODULE", {"core": fake})
    f = functrax.pmap(lambda x: lax.pmax(x, "i"), "i", devices=_gpus(2))
    x = _rand(2, 3)
    np.testing.assert_allclose(np.asarray(f(x)), np.broadcast_to(x.max(0), x.shape))
    assert "NCCL failed to initialize: RuntimeError: libnccl.so.2" in pmap_gpu.program_text(f)


# --- the GPU check script's pmap section ---


def test_gpu_check_pmap_section_on_fake_gpus(fake_nccl, monkeypatch):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    monkeypatch.setattr(gpu_check, "SUMMARY", [])
    gpu_check.run_section("pmap", gpu_check.section_pmap, gpu_check.parse_args([]))
    statuses = {s[0]: s[1] for s in gpu_check.SUMMARY}
    assert statuses == {"pmap collectives (auto)": "OK", "pmap collectives (host)": "OK",
                        "pmap chained": "OK", "pmap grad": "OK"}, gpu_check.SUMMARY
    assert "NCCL" in gpu_check.SUMMARY[0][2] and "host-staged" in gpu_check.SUMMARY[1][2]
    assert {"allreduce", "allgather", "reduce_scatter", "send"} <= set(fake_nccl.log)
