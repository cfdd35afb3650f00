"""Per-example gradients: ``vmap(grad(loss))`` against a Python loop of ``grad``.

Run with ``python benchmarks/vmap_per_example_grads.py [--batch B] [--number N]
[--repeat R]``.

On a small MLP (8 -> 32 -> 32 -> 4, tanh, softmax cross-entropy) and a batch of ``B``
examples (default 64) it first checks that both ways give the same per-example gradients,
then times ``N`` calls of each (best of ``R`` repeats) in the same run and prints the
milliseconds per call of each and the ratio (loop / vmap). This is a report, not a test: it
never fails on timings.
"""
import argparse
import timeit

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax.tree_util import tree_leaves

SIZES = (8, 32, 32, 4)


def init_params(seed=0):
    rng = np.random.RandomState(seed)
    return [(fnp.asarray(rng.randn(m, n).astype(np.float32) / np.sqrt(m)),
             fnp.asarray(np.zeros(n, np.float32))) for m, n in zip(SIZES[:-1], SIZES[1:])]


def make_batch(batch, seed=1):
    rng = np.random.RandomState(seed)
    x = rng.randn(batch, SIZES[0]).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.randint(0, SIZES[-1], batch)]
    return fnp.asarray(x), fnp.asarray(y)


def loss(params, x, y):
    """Softmax cross-entropy of one example."""
    for w, b in params[:-1]:
        x = fnp.tanh(fnp.dot(x, w) + b)
    w, b = params[-1]
    logits = fnp.dot(x, w) + b
    shifted = logits - functrax.lax.stop_gradient(fnp.max(logits))
    return -fnp.sum(y * (shifted - fnp.log(fnp.sum(fnp.exp(shifted)))))


def grads_vmap(params, x, y):
    return functrax.vmap(functrax.grad(loss), in_axes=(None, 0, 0))(params, x, y)


def grads_loop(params, x, y):
    g = functrax.grad(loss)
    return [g(params, x[i], y[i]) for i in range(x.shape[0])]


def check_agreement(params, x, y):
    """Fail loudly if the two ways disagree (max abs difference over every leaf)."""
    v = [np.asarray(a) for a in tree_leaves(grads_vmap(params, x, y))]
    per_ex = [[np.asarray(a) for a in tree_leaves(g)] for g in grads_loop(params, x, y)]
    loop = [np.stack(col) for col in zip(*per_ex)]
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(v, loop))
    if diff > 1e-5:
        raise AssertionError(f"vmap(grad) and the loop of grad differ by {diff}")
    return diff


def best_ms_per_call(fn, number, repeat):
    fn()  # warm up
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64, help="examples per batch")
    parser.add_argument("--number", type=int, default=5, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=5, help="timings; the best is kept")
    args = parser.parse_args(argv)

    params = init_params()
    x, y = make_batch(args.batch)
    diff = check_agreement(params, x, y)
    print(f"per-example gradients, MLP {SIZES}, batch {args.batch}: best of {args.repeat} x "
          f"{args.number} calls (max abs difference {diff:.2g})")
    t_vmap = best_ms_per_call(lambda: grads_vmap(params, x, y), args.number, args.repeat)
    t_loop = best_ms_per_call(lambda: grads_loop(params, x, y), args.number, args.repeat)
    print(f"vmap(grad):        {t_vmap:9.2f} ms/call")
    print(f"loop of grad:      {t_loop:9.2f} ms/call")
    print(f"ratio loop / vmap: {t_loop / t_vmap:9.1f}x "
          f"({'vmap faster' if t_vmap < t_loop else 'vmap NOT faster'})")


if __name__ == "__main__":
    main()
