"""Run under ``mpiexec -n P`` (tests/test_mpi_shard_map.py): shard_map on meshes spanning P
processes of L virtual CPU devices each, against numpy references on the global values.

Every rank builds the same global values. Checks: the global device list and make_mesh
(process r owns contiguous devices along the leading axes); arrays from process-local data
and from a callback (local blocks only, np.asarray refuses, process_allgather gathers);
an eager shard_map fed its input's blocks as they are (no gather) returning local blocks;
every collective over single axes and tuples of axes on several mesh shapes (groups inside
one process and groups across processes); jit of shard_map; grad of a shard_mapped loss,
eager and under jit. Prints ``PASS <name>`` per check and ``ALL OK rank r`` at the end (also
into ``<argv[1]>/rank<r>.txt``); any failure raises (functrax.distributed aborts the job).
"""
import itertools
import os
import sys
import warnings

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.experimental.multihost_utils import process_allgather
from functrax.runtime.pmap_runtime import ProcessGatherWarning
from functrax.sharding import NamedSharding, PartitionSpec as P

functrax.distributed.initialize()
NP, r = functrax.process_count(), functrax.process_index()
L, N = functrax.local_device_count(), functrax.device_count()
assert N == NP * L and NP > 1, (N, NP, L)
LOG = open(os.path.join(sys.argv[1], f"rank{r}.txt"), "w") if len(sys.argv) > 1 else None
ROWS = 8  # rows of each device's block


def report(line):
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()


def close(name, got, want, tol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)


# --- devices and meshes ---

mesh = functrax.make_mesh((NP, L), ("data", "model"))
assert [d.process_index for d in mesh.devices[r]] == [r] * L
assert mesh.local_devices == functrax.local_devices() and mesh.is_multi_process
report("PASS make_mesh")

# --- arrays over processes ---

rng = np.random.default_rng(0)
G = rng.standard_normal((NP * 6, 4 * L)).astype(np.float32)  # the global value
s_rows = NamedSharding(mesh, P("data", "model"))
a = functrax.make_array_from_process_local_data(s_rows, G[r * 6:(r + 1) * 6])
assert a.shape == G.shape and not a.is_fully_addressable
assert len(a.addressable_shards) == L
for sh in a.addressable_shards:
    assert sh.device.process_index == r
    close("local_shard", sh.data, G[sh.index])
try:
    np.asarray(a)
    raise AssertionError("np.asarray of a non-fully-addressable array did not raise")
except RuntimeError as e:
    assert "process_allgather" in str(e) and str(G.shape) in str(e), e
assert "not fully addressable" in repr(a)
close("process_allgather", process_allgather(a), G)
b = functrax.make_array_from_callback(G.shape, s_rows, lambda idx: G[idx])
close("from_callback", process_allgather(b), G)
local = process_allgather(np.full((2,), r, np.int32))
assert local.tolist() == [[q, q] for q in range(NP)], local
assert process_allgather(np.full((2,), r), tiled=True).shape == (2 * NP,)
rep = functrax.device_put(G, NamedSharding(mesh, P()))
close("replicated_asarray", np.asarray(rep), G)  # fully replicated: fetchable
report("PASS arrays_over_processes")

# --- eager shard_map: blocks in, blocks out ---

f = functrax.shard_map(lambda x: 2 * x + lax.axis_index("model"), mesh=mesh,
                       in_specs=P("data", "model"), out_specs=P("data", "model"))
a2 = functrax.make_array_from_process_local_data(s_rows, G[r * 6:(r + 1) * 6])
out = f(a2)
assert a2._gathered is None  # fed its blocks as they are: never gathered
assert out.sharding == s_rows and not out.is_fully_addressable
want = 2 * G + np.repeat(np.arange(L), 4)[None, :]
for sh in out.addressable_shards:
    close("eager_out_block", sh.data, want[sh.index])
close("eager_shard_map", process_allgather(out), want)
report("PASS eager_shard_map_blocks")


# --- collectives on several meshes ---


def reference(kind, B, axes, S):
    """Per device (coords over the mesh), the result of collective ``kind`` over the mesh
    axes ``S`` (indices, in the collective's order); ``B``: blocks, shape mesh + block."""
    shape = B.shape[:len(axes)]
    out = {}
    for c in np.ndindex(*shape):
        def at(idx):
            m = list(c)
            for k, i in zip(S, idx):
                m[k] = i
            return B[tuple(m)]
        group = [at(idx) for idx in np.ndindex(*[shape[k] for k in S])]
        n = len(group)
        pos = int(np.ravel_multi_index([c[k] for k in S], [shape[k] for k in S]))
        k = ROWS // n
        if kind == "psum":
            out[c] = np.sum(group, 0)
        elif kind == "pmax":
            out[c] = np.max(group, 0)
        elif kind == "all_gather":
            out[c] = np.stack(group)
        elif kind == "ppermute":
            out[c] = group[(pos - 1) % n]
        elif kind == "psum_scatter":
            out[c] = np.sum(group, 0)[pos * k:(pos + 1) * k]
        elif kind == "all_to_all":
            out[c] = np.concatenate([g[pos * k:(pos + 1) * k] for g in group])
        elif kind == "axis_index":
            out[c] = np.full((1,), pos, np.int32)
    return out


def body(kind, names):
    n = int(np.prod([MESH.shape[a] for a in names]))
    return {
        "psum": lambda x: lax.psum(x, names),
        "pmax": lambda x: lax.pmax(x, names),
        "all_gather": lambda x: lax.all_gather(x, names),
        "ppermute": lambda x: lax.ppermute(x, names, [(i, (i + 1) % n) for i in range(n)]),
        "psum_scatter": lambda x: lax.psum_scatter(x, names, scatter_dimension=0, tiled=True),
        "all_to_all": lambda x: lax.all_to_all(x, names, 0, 0, tiled=True),
        "axis_index": lambda x: lax.axis_index(names).reshape(1),
    }[kind]


KINDS = ["psum", "pmax", "all_gather", "ppermute", "psum_scatter", "all_to_all",
         "axis_index"]
SHAPES = [((NP, L), ("a", "b")), ((NP * 2, L // 2), ("a", "b")), ((1, N), ("a", "b")),
          ((NP, 2, L // 2), ("a", "b", "c"))]
for shape, axes in SHAPES:
    MESH = functrax.make_mesh(shape, axes)
    X = rng.standard_normal((N * ROWS, 3)).astype(np.float32)
    B = X.reshape(shape + (ROWS, 3))
    spec = P(axes)
    sharding = NamedSharding(MESH, spec)
    xa = functrax.make_array_from_callback(X.shape, sharding, lambda idx: X[idx])
    subsets = [s for k in range(1, len(axes) + 1) for s in itertools.permutations(axes, k)]
    for kind, names in itertools.product(KINDS, subsets):
        if kind == "ppermute" and len(names) > 1:
            continue
        S = [axes.index(a) for a in names]
        ref = reference(kind, B, axes, S)
        fun = functrax.shard_map(body(kind, names), mesh=MESH, in_specs=spec,
                                 out_specs=P(axes), check_vma=False)
        got = process_allgather(fun(xa))
        per = got.shape[0] // N
        for flat, c in enumerate(np.ndindex(*shape)):
            close(f"{kind} over {names} on {dict(MESH.shape)} at {c}",
                  got[flat * per:(flat + 1) * per], ref[c].reshape((per,) + ref[c].shape[1:])
                  if kind == "all_gather" else ref[c])
    report(f"PASS collectives_mesh_{'x'.join(map(str, shape))}")

# --- jit of shard_map (global values in and out) ---

g = functrax.jit(functrax.shard_map(
    lambda x: lax.psum(x, "data") * lax.psum(fnp.sum(x), ("data", "model")), mesh=mesh,
    in_specs=P("data", "model"), out_specs=P(None, "model")))
with warnings.catch_warnings():
    warnings.simplefilter("error", ProcessGatherWarning)  # nothing is gathered here
    out = g(G)  # a jitted program that is one shard_map keeps its blocks: sharded
assert len(out.addressable_shards) == 4, out.addressable_shards
got = process_allgather(out)
want = G.reshape(NP, 6, 4 * L).sum(0) * G.sum()
close("jit_of_shard_map", got, want, tol=1e-4)
close("jit_of_eager_input", process_allgather(g(a)), want, tol=1e-4)  # a global array in
report("PASS jit_of_shard_map")

# --- grad of a shard_mapped loss, taken outside ---

W = rng.standard_normal((4 * L,)).astype(np.float32)
w = functrax.device_put(W, NamedSharding(mesh, P("model")))
loss = functrax.shard_map(lambda w, x: lax.psum(fnp.sum(fnp.sin(x * w)), ("data", "model")),
                          mesh=mesh, in_specs=(P("model"), P("data", "model")), out_specs=P())
want_g = (G * np.cos(G * W)).sum(0)
gw = functrax.grad(loss)(w, a)
close("grad_eager", process_allgather(gw), want_g, tol=1e-4)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ProcessGatherWarning)
    gj = functrax.jit(functrax.grad(loss))(w, G)  # residuals gathered: said, never silent
assert any(issubclass(c.category, ProcessGatherWarning) for c in caught), caught
close("grad_jit", np.asarray(gj), want_g, tol=1e-4)
v = float(loss(w, a))  # a replicated output is fetchable
close("loss_value", v, np.sin(G * W).sum(), tol=1e-3)
report("PASS grad_of_shard_map")
report(f"ALL OK rank {r}")
