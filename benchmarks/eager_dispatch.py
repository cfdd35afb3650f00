"""Per-op overhead of functrax's eager dispatch, measured against numpy on the same data.

Run with ``python benchmarks/eager_dispatch.py [--number N] [--repeat R]``.

For each op (on tiny float32 arrays, so the arithmetic itself costs next to nothing) it
times ``N`` calls of the ``functrax.numpy`` op and ``N`` calls of the same numpy op in the
same run, keeps the best of ``R`` repeats for each, and prints microseconds per call for
both, the overhead (functrax - numpy, in µs) and the ratio (functrax / numpy). The target
is an overhead under 5 µs/op. This is a report, not a test: it never fails on timings.
"""
import argparse
import timeit

import numpy as np

import functrax.numpy as fnp

TARGET_OVERHEAD_US = 5.0


def make_cases():
    """``[(name, functrax_call, numpy_call), ...]`` on the same float32 data."""
    x_np = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    y_np = np.linspace(2.0, 3.0, 8, dtype=np.float32)
    x, y = fnp.asarray(x_np), fnp.asarray(y_np)
    return [
        ("sin(f32[8])", lambda: fnp.sin(x), lambda: np.sin(x_np)),
        ("add(f32[8], f32[8])", lambda: fnp.add(x, y), lambda: np.add(x_np, y_np)),
        ("sum(f32[8])", lambda: fnp.sum(x), lambda: np.sum(x_np)),
        ("reshape(f32[8], (2, 4))", lambda: fnp.reshape(x, (2, 4)),
         lambda: np.reshape(x_np, (2, 4))),
    ]


def best_us_per_call(fn, number, repeat):
    """Best-of-``repeat`` time of one call of ``fn``, in microseconds."""
    fn()  # warm up caches (abstract-eval cache, lowering lookups)
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def check_agreement(cases):
    """Fail loudly if a functrax op does not compute what its numpy twin does."""
    for name, f_call, np_call in cases:
        got, want = np.asarray(f_call()), np.asarray(np_call())
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-6):
            raise AssertionError(f"{name}: functrax gave {got!r}, numpy gave {want!r}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=5, help="timings; the best is kept")
    args = parser.parse_args(argv)

    cases = make_cases()
    check_agreement(cases)
    print(f"eager dispatch overhead: best of {args.repeat} x {args.number} calls per op")
    print(f"target: overhead under {TARGET_OVERHEAD_US:.0f} us/op\n")
    header = f"{'op':<26}{'functrax us':>12}{'numpy us':>10}{'overhead us':>13}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, f_call, np_call in cases:
        t_f = best_us_per_call(f_call, args.number, args.repeat)
        t_np = best_us_per_call(np_call, args.number, args.repeat)
        overhead = t_f - t_np
        worst = max(worst, overhead)
        print(f"{name:<26}{t_f:>12.2f}{t_np:>10.2f}{overhead:>13.2f}{t_f / t_np:>7.1f}x")
    verdict = "meets" if worst < TARGET_OVERHEAD_US else "misses"
    print(f"\nworst overhead {worst:.2f} us/op: {verdict} the "
          f"{TARGET_OVERHEAD_US:.0f} us/op target")


if __name__ == "__main__":
    main()
