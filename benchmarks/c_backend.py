"""The C backend against the numpy backend and hand-written numpy on memory-bound programs.

Run with ``python benchmarks/c_backend.py [--number N] [--repeat R] [--rows M]``.

Three workloads (issue 16): fused elementwise ``gelu(x) * y + z`` on 4M float32 values,
softmax over 4096x1024 rows, layernorm rows (4096x1024, scale and bias). For each the script
checks that the C backend (``jit(f, backend="c")``), the numpy backend (``jit(f)``) and a
hand-written numpy version agree, then times them twice:

1. one pinned thread: the process bound to one core (``os.sched_setaffinity``), the C
   kernels on one OpenMP thread (``config.c_num_threads = 1``), BLAS on one thread;
   process CPU time per call;
2. all cores: the C kernels on every core (``c_num_threads = None``); wall time per call.

It prints milliseconds per call and the ratios C / numpy backend and C / hand-written numpy,
repeats interleaved, best kept; and the first-call time of the C program (trace, plan,
generate, compile or load from the disk cache). A report, never a test: it does not fail on
timings.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import best_ms_per_call, pin_blas_threads  # noqa: E402

if __name__ == "__main__":
    pin_blas_threads(["--blas-threads", "1"])

import numpy as np  # noqa: E402

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import jit, nn  # noqa: E402


def gelu_mul_add(x, y, z):
    return nn.gelu(x) * y + z


def softmax(x):
    return nn.softmax(x, axis=-1)


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / fnp.sqrt(v + 1e-5) * g + b


def gelu_ref(x, y, z):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * (x * x * x)))) * y + z


def softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def layernorm_ref(x, g, b):
    m = x.mean(-1, keepdims=True)
    d = x - m
    v = (d * d).mean(-1, keepdims=True)
    return d / np.sqrt(v + np.float32(1e-5)) * g + b


def best_cpu_ms_per_call(calls, number, repeat):
    """As ``best_ms_per_call`` with process CPU time (all threads of the process)."""
    best = [float("inf")] * len(calls)
    for _ in range(repeat):
        for i, fn in enumerate(calls):
            t0 = time.process_time()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.process_time() - t0) / number * 1e3)
    return best


def workloads(rows):
    rng = np.random.default_rng(0)
    n = 4096 * 1024
    x = rng.standard_normal(n, dtype=np.float32)
    y, z = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    m = rng.standard_normal((rows, 1024), dtype=np.float32)
    g, b = rng.standard_normal(1024, dtype=np.float32), rng.standard_normal(1024,
                                                                           dtype=np.float32)
    return [("gelu(x)*y+z [4M]", gelu_mul_add, gelu_ref, (x, y, z)),
            (f"softmax rows [{rows}x1024]", softmax, softmax_ref, (m,)),
            (f"layernorm rows [{rows}x1024]", layernorm, layernorm_ref, (m, g, b))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--number", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rows", type=int, default=4096)
    opts = ap.parse_args()
    all_cpus = os.sched_getaffinity(0)
    results = []
    for name, f, ref, args in workloads(opts.rows):
        fargs = [fnp.asarray(a) for a in args]
        c_fn, np_fn = jit(f, backend="c"), jit(f)
        t0 = time.perf_counter()
        got = np.asarray(c_fn(*fargs))
        first = time.perf_counter() - t0
        want, hand = np.asarray(np_fn(*fargs)), ref(*args)
        err = max(np.abs(got - want).max(), np.abs(got - hand).max())
        exe = c_fn.lower(*fargs).compile()._entry.exe
        calls = [lambda: c_fn(*fargs), lambda: np_fn(*fargs), lambda: ref(*args)]
        os.sched_setaffinity(0, {min(all_cpus)})
        functrax.config.update("c_num_threads", 1)
        pinned = best_cpu_ms_per_call(calls, opts.number, opts.repeat)
        os.sched_setaffinity(0, all_cpus)
        functrax.config.update("c_num_threads", None)
        wall = best_ms_per_call(calls, opts.number, opts.repeat)
        results.append((name, pinned, wall))
        print(f"{name}: {len(exe.kernels)} C kernels, {len(exe.fallbacks)} fallbacks, "
              f"first call {first * 1e3:.0f} ms, max |C - numpy| {err:.2e}")
    print(f"\n{'workload':28s} {'mode':22s} {'C ms':>8s} {'numpy-be':>9s} {'hand np':>8s} "
          f"{'C/np-be':>8s} {'C/hand':>7s}")
    for name, pinned, wall in results:
        for mode, (c, nb, hand) in (("1 thread (CPU time)", pinned),
                                    (f"{len(all_cpus)} cores (wall)", wall)):
            print(f"{name:28s} {mode:22s} {c:8.2f} {nb:9.2f} {hand:8.2f} {c / nb:8.2f} "
                  f"{c / hand:7.2f}")


if __name__ == "__main__":
    main()
