"""Backpropagation through time: a jitted ``value_and_grad`` of a scan RNN against numpy BPTT.

Run with ``python benchmarks/rnn_bptt.py [--seq T] [--hidden H] [--batch B] [--number N]
[--repeat R] [--blas-threads K]``.

The network is an Elman RNN with a tanh cell over ``T`` steps (default 100), hidden size
``H`` (128), batch ``B`` (32) and 16 input features: ``h_t = tanh(x_t U + h_{t-1} W + b)``,
``y_t = h_t v``, loss ``mean((y - target)^2)`` over all steps. The functrax side is
``jit(value_and_grad(loss))`` with the recurrence written as one ``lax.scan`` (so the
backward pass is a reversed scan); the numpy side is the same network differentiated by
hand: a Python loop for the forward recurrence (storing the hidden states), a reversed
Python loop for the backward recurrence (storing the pre-activation gradients), then the
weight gradients as three large matmuls over all steps at once. The script

1. checks that both give the same loss and gradients;
2. times ``N`` calls of each, interleaving the ``R`` repeats and keeping the best, and prints
   milliseconds per call of both and the ratio functrax / numpy; for comparison it also times
   the same program optimized without the ``hoist_accumulators`` pass (which turns the
   backward scan's step-by-step weight-gradient accumulation into one product after the
   loop), compiled directly with ``lowering.executor.compile_jaxpr``.

``--blas-threads K`` (default 1; 0 keeps the BLAS library's default) is set before numpy
loads (multi-threaded BLAS timings swing on a small shared machine). A report, not a test:
it never fails on timings.
"""
import argparse
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_util import best_ms_per_call, pin_blas_threads  # noqa: E402

if __name__ == "__main__":
    pin_blas_threads(sys.argv[1:])

import numpy as np  # noqa: E402

import functrax  # noqa: E402
import functrax.numpy as fnp  # noqa: E402
from functrax import lax  # noqa: E402
from functrax.lowering.numpy.executor import compile_jaxpr  # noqa: E402
from functrax.passes import pipeline  # noqa: E402
from functrax.tree_util import tree_leaves  # noqa: E402

N_IN = 16


def init_params(hidden, seed=0):
    rng = np.random.RandomState(seed)
    return {"U": (rng.randn(N_IN, hidden) / np.sqrt(N_IN)).astype(np.float32),
            "W": (rng.randn(hidden, hidden) / np.sqrt(hidden)).astype(np.float32),
            "b": np.zeros(hidden, np.float32),
            "v": (rng.randn(hidden, 1) / np.sqrt(hidden)).astype(np.float32)}


def make_data(seq, batch, seed=1):
    rng = np.random.RandomState(seed)
    xs = rng.randn(seq, batch, N_IN).astype(np.float32)
    targets = rng.randn(seq, batch, 1).astype(np.float32)
    return xs, targets


def loss_fn(params, xs, targets):
    """Mean squared error of the RNN's per-step read-out (one ``lax.scan`` over time)."""
    def cell(h, x):
        h = fnp.tanh(x @ params["U"] + h @ params["W"] + params["b"])
        return h, h @ params["v"]

    h0 = fnp.zeros((xs.shape[1], params["W"].shape[0]))
    _, ys = lax.scan(cell, h0, xs)
    return fnp.mean((ys - targets) ** 2)


def numpy_value_and_grad(params, xs, targets):
    """The same loss and its gradients by hand: forward loop, backward loop (BPTT)."""
    U, W, b, v = params["U"], params["W"], params["b"], params["v"]
    seq, batch, _ = xs.shape
    hidden = W.shape[0]
    hs = np.empty((seq + 1, batch, hidden), np.float32)  # hs[t + 1] is h_t; hs[0] = h0
    hs[0] = 0
    xu = (xs.reshape(seq * batch, N_IN) @ U).reshape(seq, batch, hidden)
    for t in range(seq):
        z = hs[t] @ W
        z += xu[t]
        z += b
        np.tanh(z, out=hs[t + 1])
    ys = hs[1:] @ v
    diff = ys - targets
    loss = np.mean(diff * diff)
    dys = diff * np.float32(2.0 / diff.size)
    dh_out = dys @ v.T                     # d loss / d h_t through the read-out
    dzs = np.empty_like(hs[1:])
    dh = np.zeros((batch, hidden), np.float32)
    for t in range(seq - 1, -1, -1):
        dh += dh_out[t]
        h = hs[t + 1]
        dz = dzs[t]
        np.multiply(h, h, out=dz)
        np.subtract(1, dz, out=dz)
        dz *= dh
        dh = dz @ W.T
    flat_dz = dzs.reshape(seq * batch, hidden)
    grads = {"U": xs.reshape(seq * batch, N_IN).T @ flat_dz,
             "W": hs[:-1].reshape(seq * batch, hidden).T @ flat_dz,
             "b": flat_dz.sum(axis=0),
             "v": hs[1:].reshape(seq * batch, hidden).T @ dys.reshape(seq * batch, 1)}
    return loss, grads


def check_agreement(jitted, params, xs, targets):
    """Both sides on the same numpy inputs give the same loss and gradients."""
    loss, grads = jitted(params, xs, targets)
    loss_np, grads_np = numpy_value_and_grad(params, xs, targets)
    if not np.allclose(float(loss), loss_np, rtol=1e-5):
        raise AssertionError(f"losses disagree: {float(loss)} vs {loss_np}")
    for k in grads_np:
        g, w = np.asarray(grads[k]), grads_np[k]
        if not np.allclose(g, w, rtol=1e-3, atol=1e-6):
            raise AssertionError(f"gradients of {k} disagree: max abs diff "
                                 f"{np.max(np.abs(g - w))}")


def compile_without_hoisting(params, xs, targets):
    """``value_and_grad(loss_fn)`` optimized without ``hoist_accumulators``, compiled."""
    closed = functrax.make_jaxpr(functrax.value_and_grad(loss_fn))(params, xs, targets)
    passes = [p for p in pipeline.PASSES if p[0] != "hoist_accumulators"]
    exe = compile_jaxpr(pipeline.optimize(closed, passes))
    args = tree_leaves((params, xs, targets))
    return lambda: exe.run(*args)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=100, help="sequence length")
    parser.add_argument("--hidden", type=int, default=128, help="hidden size")
    parser.add_argument("--batch", type=int, default=32, help="batch size")
    parser.add_argument("--number", type=int, default=10, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=7, help="timings; the best is kept")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS threads (0: the library default)")
    args = parser.parse_args(argv)

    params = init_params(args.hidden)
    xs, targets = make_data(args.seq, args.batch)
    fparams = {k: fnp.asarray(v) for k, v in params.items()}
    fxs, ftargets = fnp.asarray(xs), fnp.asarray(targets)
    jitted = functrax.jit(functrax.value_and_grad(loss_fn))
    check_agreement(jitted, params, xs, targets)

    def run_functrax():
        for leaf in tree_leaves(jitted(fparams, fxs, ftargets)):
            leaf.block_until_ready()

    run_unhoisted = compile_without_hoisting(params, xs, targets)
    ms_ft, ms_np, ms_nh = best_ms_per_call(
        [run_functrax, lambda: numpy_value_and_grad(params, xs, targets), run_unhoisted],
        args.number, args.repeat)
    print(f"RNN BPTT: tanh cell, seq {args.seq}, hidden {args.hidden}, batch {args.batch}, "
          f"{N_IN} inputs; value_and_grad of the mean squared error\n")
    print(f"  jit(value_and_grad) with lax.scan  {ms_ft:8.2f} ms/call")
    print(f"  hand-written numpy BPTT            {ms_np:8.2f} ms/call")
    print(f"  ratio functrax / numpy             {ms_ft / ms_np:8.2f}x")
    print(f"  without hoist_accumulators         {ms_nh:8.2f} ms/call "
          f"({ms_nh / ms_np:.2f}x numpy)")


if __name__ == "__main__":
    main()
