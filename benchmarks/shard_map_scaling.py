"""Tensor + data parallel training step time with ``functrax.shard_map`` on 2-D meshes of
1, 2, 4 and 8 virtual CPU devices, and on 2 MPI processes.

Run with ``python benchmarks/shard_map_scaling.py [--batch B] [--hidden H] [--dim D]
[--number N] [--repeat R] [--blas-threads T] [--no-mpi]``.

The step is the one of examples/shard_map_tensor_parallel.py, sized to take milliseconds:
an MLP ``D -> H -> D`` (tanh, mean squared error, SGD; defaults D 256, H 1024, global batch
512) whose first weight is split by columns over the mesh axis "model", the second by rows
(one ``lax.psum`` over "model"), the batch over "data" (``lax.pmean`` of the loss over
"data"); the whole step (``value_and_grad`` inside the body, then the update) is one
shard_map under ``jit``, so parameters stay in per-device blocks between steps. The
script makes 8 virtual CPU devices and

1. checks one step on each mesh (``("data", "model")`` = 1x1, 1x2, 2x2, 2x4) against the
   same step on the global arrays without shard_map (loss and parameters);
2. times ``N`` steps on each mesh, interleaving the ``R`` repeats and keeping the best, and
   prints milliseconds per step and the ratio of the 1-device time to each (a speedup:
   ideal = number of devices, bounded by the machine's cores);
3. launches ``mpiexec -n 2`` on this script (``--mpi-worker``): the 2x4 mesh over 2
   processes of 4 devices each (process r owns "data" = r), each process running its
   devices' blocks, the collectives over "data" through MPI; process 0 checks one step and
   reports its best time, printed with its ratio to 1 device (skipped, with a message, when
   mpi4py or ``mpiexec`` is missing: ``pip install 'functrax[mpi]'``).

``--blas-threads T`` (default 1; 0 keeps the BLAS library's default) sets the BLAS thread
count before numpy loads, as in pmap_scaling.py. jit runs on the numpy backend
(``FUNCTRAX_CPU_BACKEND=numpy`` unless set). This is a report: it never fails on timings.

Measured in one run (2-core machine, the test suite running beside it; defaults), the whole
step as one shard_map: 1x1 17.00 ms/step, 1x2 9.32 ms (1.82x), 2x2 11.30 ms (1.50x), 2x4
13.66 ms (1.24x), 2x4 on 2 MPI processes 23.16 ms (0.73x). Beyond 2 devices the 2 cores are
oversubscribed. (With the gradient taken outside the shard_map, the step's residuals were
all-gathered over the processes: 1x2 1.68x, 2x4 0.97x, MPI 21.7-48 ms.)
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
    os.environ.setdefault("FUNCTRAX_CPU_BACKEND", "numpy")

import numpy as np  # noqa: E402

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax.experimental.multihost_utils import process_allgather  # noqa: E402
from functrax import lax  # noqa: E402
from functrax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402
from functrax.tree_util import tree_leaves, tree_map  # noqa: E402

LR = 0.05
SPECS = {"w1": P(None, "model"), "b1": P("model"), "w2": P("model", None), "b2": P()}
MESHES = [(1, 1), (1, 2), (2, 2), (2, 4)]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=512, help="global batch (divisible by 2)")
    p.add_argument("--hidden", type=int, default=1024, help="hidden units (divisible by 4)")
    p.add_argument("--dim", type=int, default=256, help="input and output size")
    p.add_argument("--number", type=int, default=5, help="steps per timing")
    p.add_argument("--repeat", type=int, default=5, help="timings; the best is kept")
    p.add_argument("--blas-threads", default="1", help="BLAS threads (0: library default)")
    p.add_argument("--no-mpi", action="store_true", help="skip the 2-MPI-process row")
    p.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def problem(args):
    rng = np.random.default_rng(0)
    d, h = args.dim, args.hidden
    params = {"w1": (rng.standard_normal((d, h)) / np.sqrt(d)).astype(np.float32),
              "b1": np.zeros(h, np.float32),
              "w2": (rng.standard_normal((h, d)) / np.sqrt(h)).astype(np.float32),
              "b2": np.zeros(d, np.float32)}
    x = rng.standard_normal((args.batch, d)).astype(np.float32)
    y = np.sin(x)
    return params, x, y


def loss_global(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    return fnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def local_loss(params, x, y):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    out = lax.psum(h @ params["w2"], "model") + params["b2"]
    return lax.pmean(fnp.mean((out - y) ** 2), "data")


def make_step(loss):
    def step(params, x, y):
        value, grads = functrax.value_and_grad(loss)(params, x, y)
        return tree_map(lambda p, g: p - LR * g, params, grads), value
    return functrax.jit(step)


def mesh_step(mesh):
    """The whole step as one shard_map under jit (the gradient taken inside the body, as JAX
    0.10's check_vma types it): the blocks stay on their devices from step to step, also
    across MPI processes."""
    def local_step(params, x, y):
        value, grads = functrax.value_and_grad(local_loss)(params, x, y)
        return tree_map(lambda p, g: p - LR * g, params, grads), value
    return functrax.jit(functrax.shard_map(local_step, mesh=mesh,
                                           in_specs=(SPECS, P("data"), P("data")),
                                           out_specs=(SPECS, P())))


def global_value(x):
    """The global value of an array (gathered over the processes when it spans several)."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    return np.asarray(process_allgather(x))


def placed(params, mesh):
    return {k: functrax.device_put(v, NamedSharding(mesh, SPECS[k])) for k, v in params.items()}


def check(name, step, params, x, y, ref):
    """One step against the reference step on the global arrays: a report line."""
    p, loss = step(params, x, y)
    diff = max(float(np.max(np.abs(global_value(a) - np.asarray(b))))
               for a, b in zip(tree_leaves(p), tree_leaves(ref[0])))
    loss = global_value(loss)
    ok = abs(float(loss) - float(ref[1])) < 1e-5 and diff < 1e-5
    return (f"{name}: loss {float(loss):.6f} vs global {float(ref[1]):.6f}, max param "
            f"difference {diff:.2g} ({'ok' if ok else 'MISMATCH'})")


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


ROW = "mesh 2x4 on 2 MPI processes"


def run_mpi(args):
    """Time the step on 2 MPI processes (this script with --mpi-worker): ms/step or None."""
    exe, why = _mpiexec()
    if exe is None:
        print(f"  {ROW:<30} skipped: {why}")
        return None
    env = dict(os.environ, FUNCTRAX_NUM_CPU_DEVICES="4")
    env.setdefault("HYDRA_LAUNCHER", "fork")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    cmd = [exe, "-n", "2", sys.executable, os.path.abspath(__file__), "--mpi-worker",
           "--batch", str(args.batch), "--hidden", str(args.hidden), "--dim", str(args.dim),
           "--number", str(args.number), "--repeat", str(args.repeat), "--blas-threads",
           args.blas_threads]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    m = re.search(r"MPI_MS_PER_STEP ([0-9.]+)", proc.stdout)
    if proc.returncode != 0 or m is None:
        print(f"  {ROW:<30} FAILED (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return None
    for line in proc.stdout.splitlines():
        if line.startswith(ROW):
            print(line)
    return float(m.group(1))


def mpi_worker(args):
    """One of 2 MPI processes of 4 devices: the 2x4 mesh over both."""
    functrax.distributed.initialize()
    rank = functrax.process_index()
    params, x, y = problem(args)
    mesh = functrax.make_mesh((2, 4), ("data", "model"))
    step = mesh_step(mesh)
    state = placed(params, mesh)
    line = check(ROW, step, state, x, y, make_step(loss_global)(params, x, y))
    if rank == 0:
        print(line, flush=True)
    run = lambda p: step(p, x, y)[0]  # noqa: E731
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
    functrax.config.update("num_cpu_devices", 8)
    devs = functrax.devices()
    params, x, y = problem(args)
    ref = make_step(loss_global)(params, x, y)
    runs, states = {}, {}
    for shape in MESHES:
        n = shape[0] * shape[1]
        mesh = functrax.make_mesh(shape, ("data", "model"), devices=devs[:n])
        name = f"mesh {shape[0]}x{shape[1]} ({n} device{'s' if n > 1 else ''})"
        step = mesh_step(mesh)
        states[name] = placed(params, mesh)
        print(check(name, step, states[name], x, y, ref))
        runs[name] = (lambda step: lambda p: step(p, x, y)[0])(step)

    times = {name: float("inf") for name in runs}
    for name in runs:  # warm up (tracing, compilation, thread start-up)
        _, states[name] = best_ms(runs[name], 1, states[name])
    for _ in range(args.repeat):
        for name in runs:
            t, states[name] = best_ms(runs[name], args.number, states[name])
            times[name] = min(times[name], t)
    print(f"MLP {args.dim}-{args.hidden}-{args.dim}, global batch {args.batch}, BLAS threads: "
          f"{args.blas_threads}, {os.cpu_count()} CPUs")
    t1 = next(iter(times.values()))
    for name, t in times.items():
        print(f"  {name:<30} {t:8.2f} ms/step  ratio to 1 device {t1 / t:5.2f}x")
    t_mpi = None if args.no_mpi else run_mpi(args)
    if t_mpi is not None:
        print(f"  {ROW:<30} {t_mpi:8.2f} ms/step  ratio to 1 device {t1 / t_mpi:5.2f}x "
              "(4 devices each)")


if __name__ == "__main__":
    main()
