"""shard_map on a mesh spanning MPI processes: ``mpiexec -n 2`` (the mpich wheel of the test
extra; the same launcher and skip logic as tests/test_mpi.py) with 4 virtual devices per
process on examples/shard_map_tensor_parallel.py (the 2x4 ("data", "model") mesh: both
ranks end with identical parameters, equal to single-device training) and on
tests/mpi_scripts/shard_map_mesh.py (arrays over processes, every collective over single
axes and tuples of axes on four mesh shapes, jit and grad); plus, in this process, the
single-process side of the same code: a MeshShardedArray input laid out as its in_spec is
fed its blocks (never gathered), outputs keep their blocks, process_allgather.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import functrax
from functrax import lax
from functrax.experimental.multihost_utils import process_allgather
from functrax.runtime.devices import clear_backends
from functrax.sharding import NamedSharding, PartitionSpec as P
from tests.test_mpi import ROOT, ROW, SCRIPTS, _launch, mpiexec  # noqa: F401 (a fixture)

EXAMPLE = os.path.join(ROOT, "examples", "shard_map_tensor_parallel.py")
PARAM_DIFF = re.compile(r"\[rank (\d)\] max \|shard_map params - single-device params\| = "
                        r"(\S+) \(allclose .*: (yes|NO)\)")


# --- on two processes ---


def test_tensor_parallel_example_on_two_processes(mpiexec, tmp_path):  # noqa: F811
    rc, outs, log, _ = _launch(mpiexec, [EXAMPLE, "--steps", "6", "--seed", "1"], devices=4,
                               outdir=tmp_path, timeout=300)
    assert rc == 0, f"mpiexec -n 2 shard_map_tensor_parallel.py exited {rc}:\n{log}"
    assert "{'data': 2, 'model': 4} of 8 devices in 2 processes (MPI)" in outs[0], log
    table = np.array([[float(g) for g in m.groups()]
                      for m in map(ROW.match, outs[0].splitlines()) if m])
    assert table.shape == (6, 3), log
    np.testing.assert_allclose(table[:, 1], table[:, 2], rtol=1e-5, atol=1e-6)
    assert table[-1, 2] < table[0, 2], log
    sums = []
    for r in (0, 1):
        m = PARAM_DIFF.search(outs[r])
        assert m and int(m.group(1)) == r and m.group(3) == "yes", log
        assert float(m.group(2)) <= 1e-6, log
        assert f"[rank {r}] parameters identical on every process: yes" in outs[r], log
        assert (f"[rank {r}] OK: tensor-parallel training matches single-device training"
                in outs[r]), log
        sums.append(re.search(rf"\[rank {r}\] params checksum: ([0-9a-f]+)", outs[r]).group(1))
    assert sums[0] == sums[1], log


def test_shard_map_across_two_processes(mpiexec, tmp_path):  # noqa: F811
    rc, _, log, _ = _launch(mpiexec, [os.path.join(SCRIPTS, "shard_map_mesh.py"),
                                      str(tmp_path)], devices=4, timeout=600)
    assert rc == 0, f"shard_map_mesh.py exited {rc}:\n{log}"
    want = ["make_mesh", "arrays_over_processes", "eager_shard_map_blocks",
            "collectives_mesh_2x4", "collectives_mesh_4x2", "collectives_mesh_1x8",
            "collectives_mesh_2x2x2", "jit_of_shard_map", "grad_of_shard_map"]
    for r in (0, 1):
        lines = (tmp_path / f"rank{r}.txt").read_text().splitlines()
        assert lines == [f"PASS {n}" for n in want] + [f"ALL OK rank {r}"], log


# --- the same code in one process ---


@pytest.fixture(scope="module")
def mesh():
    prev = functrax.config.read("num_cpu_devices")
    clear_backends()
    functrax.config.update("num_cpu_devices", 8)
    yield functrax.make_mesh((2, 4), ("data", "model"))
    clear_backends()
    functrax.config.update("num_cpu_devices", prev)


def test_sharded_input_feeds_its_blocks(mesh):
    x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    s = NamedSharding(mesh, P("data", "model"))
    a = functrax.device_put(x, s)
    blocks = a.shard_values()
    f = functrax.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("data", "model"),
                           out_specs=P("data", "model"))
    out = f(a)
    assert a._gathered is None  # never gathered, never re-split
    assert out.sharding == s and out.is_fully_addressable
    for b, o in zip(blocks, out.shard_values()):
        np.testing.assert_array_equal(o, 2 * b)
    np.testing.assert_array_equal(np.asarray(out), 2 * x)
    # an input laid out otherwise is sliced from its global value
    g = functrax.shard_map(lambda b: lax.psum(b, "model"), mesh=mesh, in_specs=P(None, "model"),
                           out_specs=P())
    np.testing.assert_allclose(np.asarray(g(a)), x.reshape(8, 4, 2).sum(1))


def test_grad_of_shard_map_with_sharded_params(mesh):
    w = functrax.device_put(np.linspace(0, 1, 8, dtype=np.float32), NamedSharding(mesh, P("model")))
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    loss = functrax.shard_map(
        lambda w, x: lax.psum(functrax.numpy.sum(functrax.numpy.sin(x * w)), ("data", "model")),
        mesh=mesh, in_specs=(P("model"), P("data", "model")), out_specs=P())
    want = (x * np.cos(x * np.asarray(w))).sum(0)
    np.testing.assert_allclose(np.asarray(functrax.grad(loss)(w, x)), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(functrax.jit(functrax.grad(loss))(w, x)), want,
                               rtol=1e-5)


def test_process_allgather_single_process(mesh):
    a = functrax.device_put(np.arange(8.0), NamedSharding(mesh, P("model")))
    assert process_allgather(a).shape == (1, 8)
    assert process_allgather({"x": np.ones(3)}, tiled=True)["x"].shape == (3,)
    assert process_allgather(2.0).shape == (1,)


def test_process_local_data_single_process(mesh):
    s = NamedSharding(mesh, P("data"))
    a = functrax.make_array_from_process_local_data(s, np.ones((4, 2)))
    assert a.shape == (4, 2) and a.is_fully_addressable
    with pytest.raises(ValueError, match="global_shape"):
        functrax.make_array_from_process_local_data(s, np.ones((4, 2)), (8, 2))
