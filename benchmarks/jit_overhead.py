"""Steady-state call overhead of a jitted tiny function, measured against numpy.

Run with ``python benchmarks/jit_overhead.py [--number N] [--repeat R]``.

``functrax.jit(lambda x: x * 2 + 1)`` on an ``f32[8]`` does two numpy ufunc calls of real
work; the rest of a call is overhead (flattening the arguments, the cache lookup, running
the compiled program, wrapping the outputs). In the same run the script times ``N`` calls
of the jitted function, of the compiled program alone (``compile_jaxpr`` on numpy arrays)
and of the same numpy ops called directly, interleaving the repeats and keeping the best
of ``R`` for each. It prints microseconds per call, the overhead of each over numpy (µs)
and whether the jitted call's overhead meets the target of under 8 µs. This is a report,
not a test: it never fails on timings.
"""
import argparse
import timeit

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax.lowering.numpy.executor import compile_jaxpr
from functrax.passes.pipeline import optimize

TARGET_OVERHEAD_US = 8.0


def tiny(x):
    return x * 2 + 1


def make_calls():
    """``[(name, call), ...]``: the jitted call, the program alone and numpy, same data."""
    x_np = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    x = fnp.asarray(x_np)
    jitted = functrax.jit(tiny)
    exe = compile_jaxpr(optimize(functrax.make_jaxpr(tiny)(x)))
    two, one = np.float32(2), np.float32(1)

    def numpy_call():
        return np.add(np.multiply(x_np, two), one)

    got = [np.asarray(jitted(x)), exe(x_np)[0], numpy_call()]
    for g in got[:2]:
        if g.dtype != got[2].dtype or not np.array_equal(g, got[2]):
            raise AssertionError(f"functrax gave {g!r}, numpy gave {got[2]!r}")
    return [("jit(lambda x: x * 2 + 1)", lambda: jitted(x)),
            ("compiled program alone", lambda: exe(x_np)),
            ("numpy: add(multiply(x, 2), 1)", numpy_call)]


def best_us_per_call(calls, number, repeat):
    """Best-of-``repeat`` µs per call of each call, the repeats interleaved."""
    for _, fn in calls:
        fn()
    best = [float("inf")] * len(calls)
    for _ in range(repeat):
        for i, (_, fn) in enumerate(calls):
            best[i] = min(best[i], timeit.timeit(fn, number=number) / number * 1e6)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=7, help="timings; the best is kept")
    args = parser.parse_args(argv)

    calls = make_calls()
    times = best_us_per_call(calls, args.number, args.repeat)
    t_np = times[-1]
    print(f"jit call overhead on f32[8]: best of {args.repeat} x {args.number} calls")
    print(f"target: jitted call overhead under {TARGET_OVERHEAD_US:.0f} us over numpy\n")
    header = f"{'call':<32}{'us/call':>9}{'overhead us':>13}"
    print(header)
    print("-" * len(header))
    for (name, _), t in zip(calls, times):
        print(f"{name:<32}{t:>9.2f}{t - t_np:>13.2f}")
    overhead = times[0] - t_np
    verdict = "meets" if overhead < TARGET_OVERHEAD_US else "misses"
    print(f"\njitted call overhead {overhead:.2f} us: {verdict} the "
          f"{TARGET_OVERHEAD_US:.0f} us target")


if __name__ == "__main__":
    main()
