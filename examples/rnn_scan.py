"""Train a recurrent network written with ``functrax.lax.scan``: jit + value_and_grad + Adam.

Run with ``python examples/rnn_scan.py [--epochs N] [--seed S]`` (numpy backend, a few
seconds on two cores). It

1. generates a synthetic sequence task with numpy: each input sequence holds ``T`` random
   numbers in [-1, 1], and the target at every step is the sign of the running sum so far
   (+1 / -1): the network must carry a memory of everything it has seen;
2. defines an Elman RNN with a tanh cell, ``h_t = tanh(x_t U + h_{t-1} W + b)``, and a
   linear read-out ``y_t = h_t v + c``, as one ``lax.scan`` over time (the loop is one
   primitive, however long the sequence: tracing and compiling do not grow with ``T``);
3. trains it on the mean squared error with a jitted step (``value_and_grad`` through the
   scan, i.e. backpropagation through time as a reversed scan, then a hand-written Adam
   update of the parameter pytree with ``tree_map``);
4. prints, for each epoch, the training loss and the accuracy of the predicted signs on a
   held-out set (from a jitted evaluation function).
"""
import argparse
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.tree_util import tree_map

T = 20           # sequence length
HIDDEN = 32
BATCH = 64
LEARNING_RATE = 1e-2
BETAS = (0.9, 0.999)


def make_data(n, seed):
    """``(xs, targets)`` of shapes [T, n, 1]: inputs and the sign of their running sum."""
    rng = np.random.RandomState(seed)
    xs = rng.uniform(-1.0, 1.0, size=(T, n, 1)).astype(np.float32)
    targets = np.where(np.cumsum(xs, axis=0) >= 0, 1.0, -1.0).astype(np.float32)
    return xs, targets


def init_params(seed):
    rng = np.random.RandomState(seed)
    return {"U": fnp.asarray(rng.randn(1, HIDDEN).astype(np.float32)),
            "W": fnp.asarray((rng.randn(HIDDEN, HIDDEN) / np.sqrt(HIDDEN)).astype(np.float32)),
            "b": fnp.zeros(HIDDEN),
            "v": fnp.asarray((rng.randn(HIDDEN, 1) / np.sqrt(HIDDEN)).astype(np.float32)),
            "c": fnp.zeros(1)}


def rnn(params, xs):
    """Per-step predictions [T, batch, 1] of the RNN on ``xs`` [T, batch, 1]."""
    def cell(h, x):
        h = fnp.tanh(x @ params["U"] + h @ params["W"] + params["b"])
        return h, h @ params["v"] + params["c"]

    h0 = fnp.zeros((xs.shape[1], HIDDEN))
    _, ys = lax.scan(cell, h0, xs)
    return ys


def loss_fn(params, xs, targets):
    return fnp.mean((rnn(params, xs) - targets) ** 2)


def adam_init(params):
    zeros = tree_map(fnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "t": fnp.zeros((), np.int32)}


@functrax.jit
def train_step(params, opt, xs, targets):
    """One Adam step: returns the updated parameters, optimizer state and the batch loss."""
    loss, grads = functrax.value_and_grad(loss_fn)(params, xs, targets)
    t = opt["t"] + 1
    b1, b2 = BETAS
    m = tree_map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
    v = tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], grads)
    scale = LEARNING_RATE * fnp.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    params = tree_map(lambda p, m, v: p - scale * m / (fnp.sqrt(v) + 1e-8), params, m, v)
    return params, {"m": m, "v": v, "t": t}, loss


@functrax.jit
def evaluate(params, xs, targets):
    """(mean squared error, accuracy of the predicted signs)."""
    ys = rnn(params, xs)
    return fnp.mean((ys - targets) ** 2), fnp.mean(fnp.sign(ys) == targets)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", type=int, default=2048, help="training sequences")
    args = parser.parse_args(argv)

    xs, targets = make_data(args.train, args.seed)
    test_xs, test_targets = make_data(512, args.seed + 1)
    params = init_params(args.seed)
    opt = adam_init(params)
    rng = np.random.RandomState(args.seed)
    print(f"RNN (tanh, hidden {HIDDEN}) over sequences of {T} steps, {args.train} training "
          f"sequences, batch {BATCH}")
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(args.train)
        losses = []
        for i in range(0, args.train - BATCH + 1, BATCH):
            idx = order[i:i + BATCH]
            params, opt, loss = train_step(params, opt, xs[:, idx], targets[:, idx])
            losses.append(float(loss))
        _, acc = evaluate(params, test_xs, test_targets)
        print(f"epoch {epoch:3d}/{args.epochs}  loss {np.mean(losses):.4f}  "
              f"test acc {100 * float(acc):5.1f}%")
        sys.stdout.flush()
    print(f"trained in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
