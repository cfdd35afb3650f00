"""Per-iteration cost of control flow on the C backend, and the default CPU backend's first
call against its steady state.

Run with ``python benchmarks/c_loops_and_tiers.py [--length L] [--repeat R]``.

1. **Scan step overhead.** A scan of ``L`` steps (default 20,000) over a tiny body (carry
   ``f32[8]``: ``c = tanh(c * 0.5 + x)``, the step's output scanned) and a
   ``fori_loop`` of the same body, under ``jit(..., backend="c")`` (the loop runs in C:
   ``blocks.py``) and on the numpy backend (a Python loop over the compiled body). It checks
   that both agree, then prints microseconds per iteration (wall, one thread for the C
   kernels) and the ratio numpy / C. The body does almost nothing, so this is the cost of
   one iteration of each loop.
2. **The ``"auto"`` backend's tiers.** In a fresh process with an empty disk cache (and
   again with the cache filled), a jitted MLP step (784-512-512-10, batch 128) is called
   until its C program is in use: it prints the first call's time (trace, optimize and the
   numpy executor, which serves it), the time until the C program was ready (background
   compile), the steady-state time per call of the numpy executor and of the C program.

A report, never a test: it does not fail on timings.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import jit, lax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _body(c, x):
    c = fnp.tanh(c * 0.5 + x)
    return c, c


def scan_fn(xs):
    return lax.scan(_body, fnp.zeros(8, fnp.float32), xs)


def fori_fn(x, n):
    return lax.fori_loop(0, n, lambda i, c: _body(c, x)[0], fnp.zeros(8, fnp.float32))


def _best_us(fn, args, iters, repeat):
    fn(*args)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        functrax.block_until_ready(out)
        best = min(best, time.perf_counter() - t0)
    return best / iters * 1e6


def loops(length, repeat):
    functrax.config.update("c_num_threads", 1)
    xs = np.random.default_rng(0).normal(size=(length, 8)).astype(np.float32)
    x, n = xs[0], np.int32(length)
    print(f"loop step cost: {length} iterations of c = tanh(c * 0.5 + x) on f32[8]")
    print(f"{'loop':<10}{'C us/iter':>12}{'numpy us/iter':>15}{'numpy / C':>11}")
    for name, f, args in (("scan", scan_fn, (xs,)), ("fori_loop", fori_fn, (x, n))):
        fc, fn = jit(f, backend="c"), jit(f, backend="numpy")
        for a, b in zip(functrax.tree_util.tree_leaves(fc(*args)),
                        functrax.tree_util.tree_leaves(fn(*args))):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
        exe = fc.lower(*args).compile()._entry.exe
        assert not exe.fallbacks, exe.fallbacks
        c_us = _best_us(fc, args, length, repeat)
        np_us = _best_us(fn, args, length, max(1, repeat // 2))
        print(f"{name:<10}{c_us:>12.3f}{np_us:>15.2f}{np_us / c_us:>11.0f}")


_TIER_CHILD = r"""
import json, sys, time
t_start = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import numpy as np
import functrax
import vs_jax
fn, args = vs_jax.build("mlp_step", functrax, functrax.jit, np)
t0 = time.perf_counter()
functrax.block_until_ready(fn(*args))
first = time.perf_counter() - t0
exe = fn.lower(*args).compile()._entry.exe
np_times, calls = [], 1
while not exe.on_c and calls < 100000:
    t1 = time.perf_counter()
    functrax.block_until_ready(fn(*args))
    np_times.append(time.perf_counter() - t1)
    calls += 1
    if exe._done.is_set() and not exe.on_c and exe._c is None:
        break
ready = exe.ready_s
c_times = []
for _ in range(20):
    t1 = time.perf_counter()
    functrax.block_until_ready(fn(*args))
    c_times.append(time.perf_counter() - t1)
print(json.dumps({"first": first, "ready": ready, "calls_on_numpy": calls,
                  "numpy": min(np_times) if np_times else None, "c": min(c_times),
                  "on_c": exe.on_c}))
"""


def tiers():
    here = os.path.dirname(os.path.abspath(__file__))
    print("\nthe 'auto' backend (jit's CPU default) on the MLP step, fresh processes:")
    print(f"{'disk cache':<12}{'first call ms':>14}{'C ready after ms':>18}"
          f"{'calls on numpy':>16}{'numpy ms/call':>15}{'C ms/call':>11}")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, FUNCTRAX_CPU_BACKEND="auto", FUNCTRAX_CACHE_DIR=cache)
        for label in ("empty", "filled"):
            out = subprocess.run([sys.executable, "-c", _TIER_CHILD, here], env=env,
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            npc = f"{r['numpy'] * 1e3:.2f}" if r["numpy"] else "-"
            print(f"{label:<12}{r['first'] * 1e3:>14.1f}{(r['ready'] or 0) * 1e3:>18.1f}"
                  f"{r['calls_on_numpy']:>16}{npc:>15}{r['c'] * 1e3:>11.2f}"
                  + ("" if r["on_c"] else "  (no C compiler: numpy throughout)"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    loops(a.length, a.repeat)
    tiers()


if __name__ == "__main__":
    main()
