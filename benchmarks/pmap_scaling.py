"""Data-parallel training step time with ``functrax.pmap`` on 1 vs 2 virtual CPU devices,
and on 2 MPI processes.

Run with ``python benchmarks/pmap_scaling.py [--batch B] [--hidden H] [--number N]
[--repeat R] [--blas-threads T]``.

The step: an MLP ``256-H-H-10`` (tanh, softmax cross-entropy, SGD) on a global batch of
``B`` examples (defaults 1024 and 1024), gradients averaged over the devices with
``lax.pmean``. The script makes 2 virtual CPU devices and

1. runs the same global batch as one shard on 1 device (``pmap(..., devices=ds[:1])``) and
   as two half-batch shards on 2 devices, plus the plain ``jit`` step on the whole batch,
   and checks that all three give the same loss and parameters;
2. times ``N`` steps of each (parameters stay on the devices between steps; the batch is
   sharded once), interleaving the ``R`` repeats and keeping the best, and prints
   milliseconds per step and the speedup of 2 devices over 1 (ideal: 2.0x on 2 free cores;
   numpy releases the GIL in the matmuls, so the replica threads run in parallel);
3. launches ``mpiexec -n 2`` on this script (``--mpi-worker``): 2 processes of 1 device each,
   each with half of the same global batch, the gradients averaged over the processes by
   MPI; process 0 checks one step against ``jit`` and reports its best time, printed with
   its speedup over pmap on 1 device (the row is skipped, with a message, when mpi4py or
   ``mpiexec`` is missing: ``pip install 'functrax[mpi]'``).

``--blas-threads T`` (default 1; 0 keeps the BLAS library's default) sets the BLAS thread
count before numpy loads: with a multi-threaded BLAS one device already uses every core and
the comparison measures BLAS, not pmap. This is a report: it never fails on timings.

We measured (2-core CPU, defaults): jit 56.8 ms, pmap on 1 device 57.9 ms, pmap on 2
devices 32.8 ms: a 1.76x speedup (1.67x with another process busy on one core). Smaller
steps scale less: at batch 512 / hidden 512 (about 10 ms a step) it was 1.2x, since two
plain threads running the jitted half-batch step concurrently already take 7.1 ms instead
of 5.0 ms (the executor's Python between numpy calls holds the GIL).

The 2-MPI-process row runs after the others (its own processes, so not interleaved with
them). Measured once on the idle 2-core machine before the polling fix: 63.1 ms/step
(0.97x): MPICH moves data only inside MPI calls, and sleeping between ``Testall`` polls
stalled the ~5 MB gradient ``Iallreduce`` (18-22 ms instead of 3 ms). The runtime now
spins for the first 50 ms of a wait; with other jobs loading both cores we then measured
54-74 ms/step for MPI against 34-98 ms for 2 threads (no clean number yet).
"""
import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import pin_blas_threads  # noqa: E402

if __name__ == "__main__":
    pin_blas_threads(sys.argv[1:])

import numpy as np  # noqa: E402

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import lax, nn  # noqa: E402
from functrax.tree_util import tree_leaves, tree_map  # noqa: E402

IN, OUT, LR = 256, 10, 0.1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=1024, help="global batch (even)")
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--number", type=int, default=5, help="steps per timing")
    p.add_argument("--repeat", type=int, default=5, help="timings; the best is kept")
    p.add_argument("--blas-threads", default="1", help="BLAS threads (0: library default)")
    p.add_argument("--no-mpi", action="store_true", help="skip the 2-MPI-process row")
    p.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def init(hidden, rng):
    sizes = (IN, hidden, hidden, OUT)
    return [{"w": (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
             "b": np.zeros(n, np.float32)} for m, n in zip(sizes[:-1], sizes[1:])]


def loss_fn(params, x, labels):
    for layer in params[:-1]:
        x = fnp.tanh(x @ layer["w"] + layer["b"])
    logits = x @ params[-1]["w"] + params[-1]["b"]
    return -fnp.mean(fnp.sum(nn.log_softmax(logits) * labels, axis=-1))


def sgd(params, grads):
    return tree_map(lambda p, g: p - LR * g, params, grads)


def single_step(params, x, labels):
    loss, grads = functrax.value_and_grad(loss_fn)(params, x, labels)
    return sgd(params, grads), loss


def parallel_step(params, x, labels):
    loss, grads = functrax.value_and_grad(loss_fn)(params, x, labels)
    loss, grads = lax.pmean((loss, grads), "d")
    return sgd(params, grads), loss


def shard(a, devs):
    return functrax.device_put_sharded(list(a.reshape((len(devs), -1) + a.shape[1:])), devs)


def best_ms(run, number, state):
    t0 = time.perf_counter()
    for _ in range(number):
        state = run(state)
    tree_leaves(state)[0].block_until_ready()
    return (time.perf_counter() - t0) / number * 1e3, state


def _mpiexec():
    """(path of mpiexec, None) or (None, why the MPI row is skipped)."""
    if importlib.util.find_spec("mpi4py") is None:
        return None, "mpi4py is not installed (pip install 'functrax[mpi]')"
    path = os.path.join(sys.prefix, "bin", "mpiexec")
    path = path if os.path.exists(path) else shutil.which("mpiexec")
    return (path, None) if path else (None, "no mpiexec found (pip install 'functrax[mpi]')")


def run_mpi(args):
    """Time the step on 2 MPI processes (this script with --mpi-worker): ms/step or None."""
    exe, why = _mpiexec()
    if exe is None:
        print(f"  {'pmap on 2 MPI processes':<26} skipped: {why}")
        return None
    env = dict(os.environ, FUNCTRAX_NUM_CPU_DEVICES="1")
    env.setdefault("HYDRA_LAUNCHER", "fork")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    cmd = [exe, "-n", "2", sys.executable, os.path.abspath(__file__), "--mpi-worker",
           "--batch", str(args.batch), "--hidden", str(args.hidden), "--number",
           str(args.number), "--repeat", str(args.repeat), "--blas-threads", args.blas_threads]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    m = re.search(r"MPI_MS_PER_STEP ([0-9.]+)", proc.stdout)
    if proc.returncode != 0 or m is None:
        print(f"  {'pmap on 2 MPI processes':<26} FAILED (exit {proc.returncode}):\n"
              f"{proc.stdout}{proc.stderr}")
        return None
    for line in proc.stdout.splitlines():
        if line.startswith("pmap on 2 MPI processes:"):
            print(line)
    return float(m.group(1))


def mpi_worker(args):
    """One of 2 MPI processes: half of the global batch on its one device."""
    functrax.distributed.initialize()
    rank = functrax.process_index()
    rng = np.random.default_rng(0)
    params = init(args.hidden, rng)
    x = rng.standard_normal((args.batch, IN)).astype(np.float32)
    labels = np.eye(OUT, dtype=np.float32)[rng.integers(0, OUT, args.batch)]
    half = slice(rank * args.batch // 2, (rank + 1) * args.batch // 2)
    devs = functrax.local_devices()
    xs, ls = shard(x[half], devs), shard(labels[half], devs)
    step = functrax.pmap(parallel_step, axis_name="d")
    state = functrax.device_put_replicated(params, devs)
    p, loss = step(state, xs, ls)
    if rank == 0:
        ref_params, ref_loss = functrax.jit(single_step)(params, x, labels)
        diff = max(float(np.max(np.abs(np.asarray(a)[0] - np.asarray(b))))
                   for a, b in zip(tree_leaves(p), tree_leaves(ref_params)))
        ok = abs(float(np.asarray(loss)[0]) - float(ref_loss)) < 1e-5 and diff < 1e-5
        print(f"pmap on 2 MPI processes: loss {float(np.asarray(loss)[0]):.6f} vs jit "
              f"{float(ref_loss):.6f}, max param difference {diff:.2g} "
              f"({'ok' if ok else 'MISMATCH'})", flush=True)
    run = lambda p: step(p, xs, ls)[0]  # noqa: E731
    _, state = best_ms(run, 1, state)
    best = float("inf")
    for _ in range(args.repeat):
        t, state = best_ms(run, args.number, state)
        best = min(best, t)
    if rank == 0:
        print(f"MPI_MS_PER_STEP {best:.4f}", flush=True)


def main():
    args = parse_args()
    if args.mpi_worker:
        return mpi_worker(args)
    functrax.config.update("num_cpu_devices", 2)
    devs = functrax.devices()
    rng = np.random.default_rng(0)
    params = init(args.hidden, rng)
    x = rng.standard_normal((args.batch, IN)).astype(np.float32)
    labels = np.eye(OUT, dtype=np.float32)[rng.integers(0, OUT, args.batch)]

    jit_step = functrax.jit(single_step)
    runs, states = {}, {}
    runs["jit (1 device, no pmap)"] = lambda p: jit_step(p, x, labels)[0]
    states["jit (1 device, no pmap)"] = params
    for k in (1, 2):
        step = functrax.pmap(parallel_step, axis_name="d", devices=devs[:k])
        xs, ls = shard(x, devs[:k]), shard(labels, devs[:k])
        name = f"pmap on {k} device{'s' if k > 1 else ''}"
        runs[name] = (lambda step, xs, ls: lambda p: step(p, xs, ls)[0])(step, xs, ls)
        states[name] = functrax.device_put_replicated(params, devs[:k])

    # correctness: one step of each from the same parameters
    ref_params, ref_loss = jit_step(params, x, labels)
    for name in list(runs)[1:]:
        k = len(tree_leaves(states[name])[0].addressable_shards)
        step = functrax.pmap(parallel_step, axis_name="d", devices=devs[:k])
        p, loss = step(states[name], shard(x, devs[:k]), shard(labels, devs[:k]))
        diff = max(float(np.max(np.abs(np.asarray(a)[0] - np.asarray(b))))
                   for a, b in zip(tree_leaves(p), tree_leaves(ref_params)))
        ok = abs(float(np.asarray(loss)[0]) - float(ref_loss)) < 1e-5 and diff < 1e-5
        print(f"{name}: loss {float(np.asarray(loss)[0]):.6f} vs jit {float(ref_loss):.6f}, "
              f"max param difference {diff:.2g} ({'ok' if ok else 'MISMATCH'})")

    times = {name: float("inf") for name in runs}
    for name in runs:  # warm up (tracing, compilation, thread start-up)
        _, states[name] = best_ms(runs[name], 1, states[name])
    for _ in range(args.repeat):
        for name in runs:
            t, states[name] = best_ms(runs[name], args.number, states[name])
            times[name] = min(times[name], t)
    print(f"MLP {IN}-{args.hidden}-{args.hidden}-{OUT}, global batch {args.batch}, "
          f"BLAS threads: {args.blas_threads}, {os.cpu_count()} CPUs")
    for name, t in times.items():
        print(f"  {name:<26} {t:8.2f} ms/step")
    t1, t2 = times["pmap on 1 device"], times["pmap on 2 devices"]
    t_mpi = None if args.no_mpi else run_mpi(args)
    if t_mpi is not None:
        print(f"  {'pmap on 2 MPI processes':<26} {t_mpi:8.2f} ms/step (1 device each)")
    print(f"speedup of 2 devices over 1: {t1 / t2:.2f}x (ideal 2.0x); pmap overhead on 1 "
          f"device over jit: {t1 - times['jit (1 device, no pmap)']:.2f} ms/step")
    if t_mpi is not None:
        print(f"speedup of 2 MPI processes over 1 device: {t1 / t_mpi:.2f}x (ideal 2.0x)")


if __name__ == "__main__":
    main()
