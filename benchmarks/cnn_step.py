"""A jitted CNN training step on the numpy backend against a hand-written numpy im2col CNN.

Run with ``python benchmarks/cnn_step.py [--batch B] [--size S] [--number N] [--repeat R]
[--blas-threads T] [--profile]``.

The network is the one of ``examples/cnn_digits.py`` at MNIST size: ``stax.serial(Conv(16,
(3, 3), padding='SAME'), Relu, MaxPool((2, 2), strides=(2, 2)), Conv(32, (3, 3),
padding='SAME'), Relu, MaxPool((2, 2), strides=(2, 2)), Flatten, Dense(10), LogSoftmax)``
on a batch of 128 ``28x28x1`` images (NHWC, HWIO kernels), softmax cross-entropy against
one-hot labels, ``functrax.value_and_grad`` and an SGD update of the parameter pytree, all
under ``functrax.jit``. The reference is the same step written by hand in numpy:

- each convolution is im2col: the zero-padded input's 3x3 windows as one ``as_strided``
  view ``(N, H, W, 3, 3, C)``, copied once into the ``(N*H*W, 9*C)`` column matrix, times
  the ``(9*C, O)`` kernel matrix (one BLAS product); its backward pass is ``cols.T @ d_out``
  for the kernel and col2im for the input: the columns' gradient ``d_out @ kernel.T``
  (computed kernel-position major, so each position's block is contiguous) added back into
  the padded input, one slice per kernel position;
- max pooling takes the argmax of every 2x2 window (first occurrence, as JAX's selection)
  from the window's four strided views and routes the gradient through the argmax masks;
  ReLU's backward pass is the mask ``z > 0``.

The script checks that both compute the same loss and the same gradients, then times
``N`` steps of each, interleaving the ``R`` repeats and keeping the best of each, and
prints milliseconds per step and the ratio functrax / numpy (target: within 1.3x).
``--profile`` adds the time the jitted step spends per primitive (each equation of the
optimized jaxpr timed alone on its recorded inputs through its numpy rule, so without the
executor's fast paths for elementwise ops). BLAS threads are pinned to one by
default (``--blas-threads 0`` keeps the library default): on a small shared machine
multi-threaded BLAS timings swing by 2x between runs. This is a report, not a test: it
never fails on timings.
"""
import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import best_ms_per_call, pin_blas_threads  # noqa: E402

if __name__ == "__main__":
    pin_blas_threads(sys.argv[1:])

import numpy as np  # noqa: E402
from numpy.lib.stride_tricks import as_strided  # noqa: E402

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import random  # noqa: E402
from functrax.example_libraries import stax  # noqa: E402
from functrax.example_libraries.stax import (  # noqa: E402
    Conv, Dense, Flatten, LogSoftmax, MaxPool, Relu,
)
from functrax.tree_util import tree_leaves, tree_map  # noqa: E402

CHANNELS = (16, 32)
CLASSES = 10
LR = 0.05
TARGET_RATIO = 1.3

# ----------------------------------------------------------------- the functrax step


def make_model():
    return stax.serial(
        Conv(CHANNELS[0], (3, 3), padding="SAME"), Relu, MaxPool((2, 2), strides=(2, 2)),
        Conv(CHANNELS[1], (3, 3), padding="SAME"), Relu, MaxPool((2, 2), strides=(2, 2)),
        Flatten, Dense(CLASSES), LogSoftmax)


INIT, PREDICT = make_model()


def loss_fn(params, x, y):
    """Mean softmax cross-entropy of the CNN's log-probabilities against one-hot ``y``."""
    return -fnp.mean(fnp.sum(PREDICT(params, x) * y, axis=1))


def train_step(params, x, y):
    loss, grads = functrax.value_and_grad(loss_fn)(params, x, y)
    return tree_map(lambda p, g: p - LR * g, params, grads), loss


# ----------------------------------------------------------- the hand-written numpy step


def conv_forward(x, w, b):
    """3x3 'SAME' convolution, NHWC x HWIO: (output, the im2col matrix)."""
    n, h, wd, c = x.shape
    xp = np.zeros((n, h + 2, wd + 2, c), x.dtype)
    xp[:, 1:-1, 1:-1] = x
    s = xp.strides
    view = as_strided(xp, (n, h, wd, 3, 3, c), (s[0], s[1], s[2], s[1], s[2], s[3]),
                      writeable=False)
    cols = view.reshape(n * h * wd, 9 * c)  # the one copy
    out = cols @ w.reshape(9 * c, -1)
    out += b.reshape(-1)
    return out.reshape(n, h, wd, -1), cols


def conv_backward(d_out, cols, w, x_shape, need_dx):
    """(d_x or None, d_w, d_b) of ``conv_forward``; d_x by col2im."""
    n, h, wd, c = x_shape
    d2 = d_out.reshape(n * h * wd, -1)
    dw = (cols.T @ d2).reshape(w.shape)
    db = d2.sum(axis=0).reshape(1, 1, 1, -1)
    if not need_dx:
        return None, dw, db
    # the columns' gradient, kernel position major: dcols[k] = d_out @ w[k].T, (9, N*H*W, C)
    dcols = np.matmul(d2, w.reshape(9, c, -1).transpose(0, 2, 1))
    dcols = dcols.reshape(3, 3, n, h, wd, c)
    dxp = np.zeros((n, h + 2, wd + 2, c), d_out.dtype)
    for i in range(3):
        for j in range(3):
            dxp[:, i:i + h, j:j + wd] += dcols[i, j]
    return dxp[:, 1:-1, 1:-1], dw, db


OFFSETS = ((0, 0), (0, 1), (1, 0), (1, 1))  # a 2x2 window's elements, in row-major order


def pool_forward(a):
    """2x2 max pooling with stride 2: (output, the argmax masks of the four window elements).

    The four strided views ``a[:, i::2, j::2]`` are the windows' elements; an element's mask
    says where it is the first one equal to its window's maximum (JAX's select-and-scatter
    keeps the first on ties)."""
    views = [a[:, i::2, j::2] for i, j in OFFSETS]
    m = np.maximum(views[0], views[1])
    np.maximum(m, views[2], out=m)
    np.maximum(m, views[3], out=m)
    masks, free = [], None  # free: windows whose maximum is not taken yet
    for v in views[:3]:
        hit = v == m
        if free is None:
            free = ~hit
        else:
            hit &= free
            free ^= hit
        masks.append(hit)
    return m, masks + [free]


def pool_backward(d_out, masks, a_shape):
    """The gradient of ``pool_forward``: ``d_out`` routed through the argmax masks."""
    d = np.empty(a_shape, d_out.dtype)
    for (i, j), mask in zip(OFFSETS, masks):
        np.multiply(d_out, mask, out=d[:, i::2, j::2])
    return d


def numpy_loss_and_grads(params, x, y):
    """(loss, grads) of the CNN, by hand; ``params`` as ``INIT`` returns them."""
    (w1, b1), _, _, (w2, b2), _, _, _, (wd, bd), _ = params
    n = x.shape[0]
    z1, cols1 = conv_forward(x, w1, b1)
    a1 = np.maximum(z1, 0)
    p1, k1 = pool_forward(a1)
    z2, cols2 = conv_forward(p1, w2, b2)
    a2 = np.maximum(z2, 0)
    p2, k2 = pool_forward(a2)
    flat = p2.reshape(n, -1)
    logits = flat @ wd
    logits += bd
    logits -= logits.max(axis=1, keepdims=True)
    e = np.exp(logits)
    s = e.sum(axis=1, keepdims=True)
    loss = -np.sum((logits - np.log(s)) * y) / np.float32(n)
    dlogits = e
    dlogits /= s
    dlogits -= y
    dlogits *= np.float32(1.0 / n)
    dwd, dbd = flat.T @ dlogits, dlogits.sum(axis=0)
    dp2 = (dlogits @ wd.T).reshape(p2.shape)
    da2 = pool_backward(dp2, k2, a2.shape)
    da2 *= z2 > 0
    dp1, dw2, db2 = conv_backward(da2, cols2, w2, p1.shape, True)
    da1 = pool_backward(dp1, k1, a1.shape)
    da1 *= z1 > 0
    _, dw1, db1 = conv_backward(da1, cols1, w1, x.shape, False)
    return loss, [(dw1, db1), (), (), (dw2, db2), (), (), (), (dwd, dbd), ()]


def numpy_step(params, x, y):
    """The hand-written step: (new params, loss), SGD updates in place of the gradients."""
    loss, grads = numpy_loss_and_grads(params, x, y)
    lr = np.float32(LR)
    new = []
    for p, g in zip(params, grads):
        new.append(tuple(np.subtract(pi, np.multiply(gi, lr, out=gi), out=gi)
                         for pi, gi in zip(p, g)))
    return new, loss


# ------------------------------------------------------------------------- the report


def make_inputs(batch, size, seed=0):
    _, params = INIT(random.PRNGKey(seed), (-1, size, size, 1))
    rng = np.random.RandomState(seed + 1)
    x = rng.rand(batch, size, size, 1).astype(np.float32)
    y = np.eye(CLASSES, dtype=np.float32)[rng.randint(0, CLASSES, batch)]
    return params, fnp.asarray(x), fnp.asarray(y)


def check_agreement(params, x, y, params_np, x_np, y_np):
    """Assert that functrax and numpy give the same loss, gradients and updated params."""
    loss, grads = functrax.jit(functrax.value_and_grad(loss_fn))(params, x, y)
    loss_np, grads_np = numpy_loss_and_grads(params_np, x_np, y_np)
    pairs = [(loss, loss_np)] + list(zip(tree_leaves(grads), tree_leaves(grads_np)))
    pairs += list(zip(tree_leaves(functrax.jit(train_step)(params, x, y)),
                      tree_leaves(numpy_step(params_np, x_np, y_np))))
    worst = 0.0
    for got, want in pairs:
        got = np.asarray(got)
        assert got.shape == np.shape(want), (got.shape, np.shape(want))
        scale = max(float(np.max(np.abs(want))), 1e-6)
        worst = max(worst, float(np.max(np.abs(got - want))) / scale)
        if not np.allclose(got, want, rtol=1e-4, atol=1e-5 * scale):
            raise AssertionError("functrax and the hand-written numpy step disagree: max abs "
                                 f"diff {np.max(np.abs(got - want))} (max |value| {scale})")
    return float(loss), worst


def profile_equations(params, x, y, repeat=5):
    """{primitive name: ms per step}: every equation of the optimized step timed alone."""
    from functrax.core import Literal
    from functrax.lowering.numpy.rules import numpy_rules
    from functrax.passes.pipeline import optimize

    closed = optimize(functrax.make_jaxpr(train_step)(params, x, y))
    env = {v: np.asarray(c) for v, c in zip(closed.jaxpr.constvars, closed.consts)}
    env.update(zip(closed.jaxpr.invars, [np.asarray(a) for a in tree_leaves((params, x, y))]))
    totals = collections.Counter()
    for eqn in closed.jaxpr.eqns:
        args = [np.asarray(v.val) if type(v) is Literal else env[v] for v in eqn.invars]
        rule = numpy_rules[eqn.primitive]
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            outs = rule(*args, **eqn.params)
            best = min(best, time.perf_counter() - t0)
        totals[eqn.primitive.name] += best * 1e3
        outs = outs if eqn.primitive.multiple_results else [outs]
        env.update(zip(eqn.outvars, [np.asarray(o) for o in outs]))
    return totals


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=128, help="images per step")
    parser.add_argument("--size", type=int, default=28, help="image height and width "
                        "(a multiple of 4)")
    parser.add_argument("--number", type=int, default=10, help="steps per timing")
    parser.add_argument("--repeat", type=int, default=7, help="timings; the best is kept")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    parser.add_argument("--profile", action="store_true", help="time each primitive")
    args = parser.parse_args(argv)
    if args.size % 4 or args.size < 4 or args.batch < 1:
        parser.error("--size must be a positive multiple of 4 and --batch >= 1")

    params, x, y = make_inputs(args.batch, args.size)
    params_np = tree_map(np.asarray, params)
    x_np, y_np = np.asarray(x), np.asarray(y)
    print(f"CNN train step: batch {args.batch} of {args.size}x{args.size}x1, conv3x3-"
          f"{CHANNELS[0]} relu maxpool2 conv3x3-{CHANNELS[1]} relu maxpool2 dense{CLASSES}, "
          "softmax cross-entropy, value_and_grad, SGD\n")
    loss, worst = check_agreement(params, x, y, params_np, x_np, y_np)
    print(f"agreement: loss {loss:.6f}; worst relative difference of the loss, gradients and "
          f"updated params {worst:.2e}\n")

    jitted = functrax.jit(train_step)
    calls = [lambda: jitted(params, x, y), lambda: numpy_step(params_np, x_np, y_np)]
    for fn in calls:
        fn()
    t_jit, t_np = best_ms_per_call(calls, args.number, args.repeat)
    threads = "library default" if args.blas_threads == 0 else args.blas_threads
    print(f"steady-state step time (best of {args.repeat} x {args.number} steps, BLAS "
          f"threads: {threads}):")
    print(f"  jitted functrax    {t_jit:8.3f} ms")
    print(f"  hand-written numpy {t_np:8.3f} ms")
    ratio = t_jit / t_np
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(f"  ratio functrax / numpy {ratio:.3f}x: {verdict} the {TARGET_RATIO}x target")
    if args.profile:
        totals = profile_equations(params, x, y)
        print(f"\nper primitive (each equation alone, best of 5; sum "
              f"{sum(totals.values()):.3f} ms):")
        for name, ms in totals.most_common():
            print(f"  {name:28s} {ms:8.3f} ms")


if __name__ == "__main__":
    main()
