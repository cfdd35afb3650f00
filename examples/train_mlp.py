"""Train an MLP classifier with functrax: ``jit`` + ``value_and_grad`` + SGD on a pytree.

Run with ``python examples/train_mlp.py [--epochs N] [--seed S]`` (numpy backend, no GPU
needed; a few seconds on two cores). It

1. generates a synthetic, learnable dataset with numpy: three interleaved spirals in the
   plane (a classic that no linear model separates), split into train and test sets;
2. initializes a 2-64-64-3 MLP whose parameters are a pytree (a list of dicts);
3. trains it with a jitted step (forward pass, ``functrax.value_and_grad`` of the softmax
   cross-entropy, SGD update of every leaf with ``tree_map``), compiled once and reused
   for every batch;
4. prints, for each epoch, a progress line, then the training loss and the train and test
   accuracies (from a jitted evaluation function).
"""
import argparse
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax.tree_util import tree_map

SIZES = (2, 64, 64, 3)
BATCH = 128
LEARNING_RATE = 0.3


def make_spirals(n_per_class, seed, noise=0.15):
    """``(x, labels)``: ``n_per_class`` noisy points on each of three spiral arms."""
    rng = np.random.RandomState(seed)
    xs, labels = [], []
    for k in range(SIZES[-1]):
        r = np.linspace(0.05, 1.0, n_per_class)
        theta = r * 7.0 + k * 2 * np.pi / SIZES[-1] + rng.randn(n_per_class) * noise
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        labels.append(np.full(n_per_class, k))
    x = np.concatenate(xs).astype(np.float32) * 2.0
    labels = np.concatenate(labels)
    order = rng.permutation(len(labels))
    return x[order], labels[order]


def init_params(seed):
    """A list of ``{"w", "b"}`` dicts (He-initialized weights, zero biases)."""
    rng = np.random.RandomState(seed)
    return [{"w": fnp.asarray((rng.randn(m, n) * np.sqrt(2.0 / m)).astype(np.float32)),
             "b": fnp.zeros(n)} for m, n in zip(SIZES[:-1], SIZES[1:])]


def predict(params, x):
    """Logits of the MLP (ReLU hidden layers)."""
    for layer in params[:-1]:
        x = fnp.maximum(x @ layer["w"] + layer["b"], 0.0)
    return x @ params[-1]["w"] + params[-1]["b"]


def log_softmax(logits):
    shifted = logits - functrax.lax.stop_gradient(fnp.max(logits, axis=1, keepdims=True))
    return shifted - fnp.log(fnp.sum(fnp.exp(shifted), axis=1, keepdims=True))


def loss_fn(params, x, y):
    """Mean softmax cross-entropy against one-hot labels ``y``."""
    return -fnp.mean(fnp.sum(log_softmax(predict(params, x)) * y, axis=1))


@functrax.jit
def train_step(params, x, y):
    """One SGD step: returns the updated parameters and the batch loss."""
    loss, grads = functrax.value_and_grad(loss_fn)(params, x, y)
    return tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads), loss


@functrax.jit
def evaluate(params, x, y):
    """(mean loss, accuracy) on a whole dataset."""
    logits = predict(params, x)
    loss = -fnp.mean(fnp.sum(log_softmax(logits) * y, axis=1))
    accuracy = fnp.mean(fnp.argmax(logits, axis=1) == fnp.argmax(y, axis=1))
    return loss, accuracy


def progress(epoch, epochs, done, total, loss):
    """One line redrawn in place on a terminal: ``epoch 3/20 [#####.....] loss 0.41``."""
    if sys.stdout.isatty():
        bar = "#" * (20 * done // total) + "." * (20 - 20 * done // total)
        print(f"\repoch {epoch:>3}/{epochs} [{bar}] {done}/{total} loss {loss:.4f}", end="",
              flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30, help="passes over the train set")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the init")
    args = parser.parse_args(argv)

    x, labels = make_spirals(1000, args.seed)
    y = np.eye(SIZES[-1], dtype=np.float32)[labels]
    n_train = len(x) * 4 // 5
    x_train, y_train = x[:n_train], y[:n_train]
    x_test, y_test = fnp.asarray(x[n_train:]), fnp.asarray(y[n_train:])
    params = init_params(args.seed)
    rng = np.random.RandomState(args.seed + 1)
    n_batches = n_train // BATCH  # whole batches only: one shape, one compilation
    print(f"{n_train} train / {len(x) - n_train} test points, 3 spiral classes; MLP "
          f"{'-'.join(map(str, SIZES))}, batch {BATCH}, SGD lr {LEARNING_RATE}")

    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(n_train)
        losses = []
        for i in range(n_batches):
            idx = order[i * BATCH:(i + 1) * BATCH]
            params, loss = train_step(params, fnp.asarray(x_train[idx]),
                                      fnp.asarray(y_train[idx]))
            losses.append(float(loss))
            progress(epoch, args.epochs, i + 1, n_batches, losses[-1])
        _, train_acc = evaluate(params, fnp.asarray(x_train), fnp.asarray(y_train))
        test_loss, test_acc = evaluate(params, x_test, y_test)
        print(f"\repoch {epoch:>3}/{args.epochs}  loss {np.mean(losses):.4f}  "
              f"train acc {float(train_acc):6.1%}  test loss {float(test_loss):.4f}  "
              f"test acc {float(test_acc):6.1%}  ({time.perf_counter() - start:.1f} s)",
              flush=True)
    print(f"final test accuracy: {float(test_acc):.1%}")


if __name__ == "__main__":
    main()
