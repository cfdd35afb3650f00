"""Run under ``mpiexec -n P`` (tests/test_mpi.py): every pmap collective across P processes
of L virtual CPU devices each against numpy references on the global values, plus
gradients through pmap, jit of pmap, the global device list and initialize's errors.

Every rank builds the same global input ``X`` (one row per global device), passes its local
rows to pmap and checks its local rows of the result. Prints ``PASS <name>`` per check and
``ALL OK rank r`` at the end (also into ``<argv[1]>/rank<r>.txt`` when a directory is
given: the ranks' printed lines may interleave); any failure raises (functrax.distributed
aborts the job).
"""
import os
import sys

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax

functrax.distributed.initialize()
try:
    functrax.distributed.initialize()
    raise AssertionError("a second initialize() did not raise")
except RuntimeError as e:
    assert "only be called once" in str(e), e

P, r = functrax.process_count(), functrax.process_index()
L, N = functrax.local_device_count(), functrax.device_count()
assert N == P * L and P > 1, (N, P, L)
assert [d.id for d in functrax.devices()] == list(range(N))
assert [d.process_index for d in functrax.devices()] == [i // L for i in range(N)]
assert [d.id for d in functrax.local_devices()] == list(range(r * L, (r + 1) * L))
LOCAL = slice(r * L, (r + 1) * L)
LOG = open(os.path.join(sys.argv[1], f"rank{r}.txt"), "w") if len(sys.argv) > 1 else None


def report(line):
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()

rng = np.random.default_rng(0)  # the same global values in every process
X = rng.standard_normal((N, N, 6)).astype(np.float32)


def check(name, got, want, tol=1e-5):
    """``got``: this process's rows (local devices); ``want``: the rows of every device."""
    got = np.asarray(got)
    want = np.asarray(want)[LOCAL]
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)
    report(f"PASS {name}")


def run(f, *args, **kw):
    return functrax.pmap(f, axis_name="i", **kw)(*args)


def bcast(v):
    return np.broadcast_to(v, (N,) + np.shape(v))


def ref_all_to_all(X, split, concat):
    n = len(X)
    return np.stack([np.concatenate([np.split(X[j], n, axis=split)[i] for j in range(n)],
                                    axis=concat) for i in range(n)])


Xl = X[LOCAL]
check("psum", run(lambda x: lax.psum(x, "i"), Xl), bcast(X.sum(0)))
check("pmean", run(lambda x: lax.pmean(x, "i"), Xl), bcast(X.mean(0)))
check("pmax", run(lambda x: lax.pmax(x, "i"), Xl), bcast(X.max(0)))
check("pmin", run(lambda x: lax.pmin(x, "i"), Xl), bcast(X.min(0)))
Xi = (X * 10).astype(np.int32)
check("psum_int32", run(lambda x: lax.psum(x, "i"), Xi[LOCAL]), bcast(Xi.sum(0, dtype=np.int32)))
Xh = X.astype(np.float16)  # MPI has no float16 reduction: the gather path
check("psum_float16", run(lambda x: lax.psum(x, "i"), Xh[LOCAL]),
      bcast(Xh.astype(np.float32).sum(0).astype(np.float16)), tol=1e-2)
check("psum_tree", run(lambda x: lax.psum((x, 2 * x[0]), "i")[1], Xl), bcast(2 * X[:, 0].sum(0)))
check("psum_const", run(lambda x: x[0, 0] * 0 + lax.psum(1, "i"), Xl), np.full(N, N, np.float32))
check("axis_index", run(lambda x: lax.axis_index("i"), Xl), np.arange(N, dtype=np.int32))
check("all_gather", run(lambda x: lax.all_gather(x, "i"), Xl), bcast(X))
check("all_gather_tiled_axis1", run(lambda x: lax.all_gather(x, "i", axis=1, tiled=True), Xl),
      bcast(np.concatenate(list(X), axis=1)))
ring = [(i, (i + 1) % N) for i in range(N)]
check("ppermute_ring", run(lambda x: lax.ppermute(x, "i", ring), Xl), np.roll(X, 1, axis=0))
part = [(0, N - 1), (N - 1, 0)] + ([(1, 2)] if N > 3 else [])
want = np.zeros_like(X)
for s, d in part:
    want[d] = X[s]
check("ppermute_partial", run(lambda x: lax.ppermute(x, "i", part), Xl), want)
check("all_to_all_tiled", run(lambda x: lax.all_to_all(x, "i", 0, 1, tiled=True), Xl),
      ref_all_to_all(X, 0, 1))
check("all_to_all", run(lambda x: lax.all_to_all(x, "i", 0, 0), Xl),
      np.stack([np.stack([X[j][i] for j in range(N)]) for i in range(N)]))
check("psum_scatter", run(lambda x: lax.psum_scatter(x, "i"), Xl), X.sum(0))
check("psum_scatter_tiled", run(lambda x: lax.psum_scatter(x, "i", tiled=True), Xl),
      np.stack(np.split(X.sum(0), N)))
# jit of pmap (the xla_pmap primitive's numpy rule) and pmap of jit
check("jit_of_pmap", functrax.jit(lambda x: run(lambda y: y - lax.pmean(y, "i"), x))(Xl),
      X - X.mean(0))
check("pmap_of_jit", run(functrax.jit(lambda y: lax.psum(y * y, "i")), Xl),
      bcast((X * X).sum(0)))
# vmap inside pmap: the vmapped axis is batched, the pmap axis goes through MPI
check("vmap_in_pmap", run(functrax.vmap(lambda y: lax.psum(y, "i")), Xl), bcast(X.sum(0)))

# grad through pmap: every device seeds its output's cotangent (SPMD), so the gradient is
# that of the sum over every device of every process
w = np.float32(0.7)
Xs = X[:, 0, :3]


def loss_w(w, xs):
    out = functrax.pmap(lambda w, x: lax.psum(fnp.sin(w * x), "i"), axis_name="i",
                        in_axes=(None, 0))(w, xs)
    return fnp.sum(out)


g = functrax.grad(loss_w)(w, Xs[LOCAL])
want_g = N * np.sum(Xs * np.cos(w * Xs))
assert abs(float(g) - want_g) < 1e-3 * max(1.0, abs(want_g)), (float(g), want_g)
report("PASS grad_unmapped_input")
gx = functrax.grad(lambda xs: fnp.sum(run(lambda x: x * lax.psum(x, "i"), xs)))(Xs[LOCAL])
check("grad_mapped_input", gx, bcast(2 * Xs.sum(0)), tol=1e-4)
# pmap of grad with pmean: data-parallel gradients
gp = run(lambda x: lax.pmean(functrax.grad(lambda v: fnp.sum(fnp.sin(v) * w))(x), "i"), Xs[LOCAL])
check("pmap_of_grad_pmean", gp, bcast((w * np.cos(Xs)).mean(0)), tol=1e-5)
# a sharded output feeds a second pmap without gathering
y = run(lambda x: x + lax.axis_index("i").astype(np.float32), Xl)
check("sharded_feeds_pmap", run(lambda x: lax.psum(x, "i"), y),
      bcast((X + np.arange(N, dtype=np.float32)[:, None, None]).sum(0)))
# nested pmap: an outer axis over the processes (1 replica each) of an inner local axis
X3 = X[:P * L, 0, :3].reshape(P, L, 3)
nested = functrax.pmap(functrax.pmap(
    lambda x: (lax.psum(x, ("i", "j")), lax.psum(x, "j"), lax.axis_index(("i", "j"))),
    axis_name="j"), axis_name="i")
both, inner, idx = (np.asarray(a) for a in nested(X3[r:r + 1]))
np.testing.assert_allclose(both, np.broadcast_to(X3.sum((0, 1)), (1, L, 3)), rtol=1e-5)
np.testing.assert_allclose(inner, np.broadcast_to(X3[r].sum(0), (1, L, 3)), rtol=1e-5)
np.testing.assert_array_equal(idx, (r * L + np.arange(L, dtype=np.int32))[None])
report("PASS nested_pmap")
try:
    functrax.pmap(functrax.pmap(lambda x: lax.psum(x, "i"), axis_name="j"),
                  axis_name="i")(X3[r:r + 1])
    raise AssertionError("an outer-axis-only collective in a nested pmap did not raise")
except NotImplementedError as e:
    assert "several concurrent collectives over the multi-process axis" in str(e), e
report("PASS nested_outer_only_raises")
report(f"ALL OK rank {r}")
