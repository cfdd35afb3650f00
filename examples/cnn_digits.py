"""Train a small CNN on 8x8 handwritten digits with functrax: ``stax`` + ``optimizers.adam``.

Run with ``python examples/cnn_digits.py`` (numpy backend, no GPU, no downloads; about ten
seconds on two cores). Flags: ``--steps``, ``--batch-size``, ``--lr``, ``--seed``,
``--log-every`` and ``--data {auto,sklearn,synthetic}``. On a small machine shared with
other jobs, run it with ``OPENBLAS_NUM_THREADS=1``: multi-threaded BLAS makes these small
products many times slower when its threads have to wait for cores. It

1. loads scikit-learn's bundled digits dataset (``sklearn.datasets.load_digits``: 1797
   grey-level 8x8 images of the digits 0-9, an optional dependency of this example) and
   splits it 80/20 into train and test sets; without scikit-learn it says so and generates
   a synthetic stand-in: the ten digits drawn as 5x7 glyphs, shifted by a pixel or two
   inside the 8x8 frame, with random stroke intensities and pixel noise;
2. builds the classifier with ``stax.serial``: two blocks of ``Conv`` (3x3, 'SAME', 16
   then 32 channels), ``Relu`` and ``MaxPool`` (2x2, stride 2), then ``Flatten``,
   ``Dense(10)`` and ``LogSoftmax`` (8x8x1 -> 4x4x16 -> 2x2x32 -> 10), and draws its
   parameters with ``init_fun(key, (-1, 8, 8, 1))``;
3. trains it with ``optimizers.adam``: one jitted step computes the cross-entropy and its
   gradients with ``functrax.value_and_grad`` and applies ``opt_update``; the minibatches
   are drawn from a fresh permutation of the train set every epoch;
4. shows a progress bar (tqdm when installed, a plain one-line bar otherwise), prints a
   log line every ``--log-every`` steps (the mean training loss since the last line) and
   finally the test accuracy.
"""
import argparse
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import random
from functrax.example_libraries import optimizers, stax
from functrax.example_libraries.stax import (
    Conv, Dense, Flatten, LogSoftmax, MaxPool, Relu,
)

CLASSES = 10
TEST_FRACTION = 0.2

# ------------------------------------------------------------------------------ data

# 5x7 glyphs of the digits 0-9 (one string per row, '#' is ink)
GLYPHS = (
    (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."),
    ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."),
    (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    ("####.", "....#", "....#", ".###.", "....#", "....#", "####."),
    ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."),
    ("#####", "#....", "####.", "....#", "....#", "#...#", ".###."),
    ("..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."),
    ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."),
    (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."),
    (".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."),
)


def synthetic_digits(n, seed):
    """``(images, labels)``: ``n`` noisy 8x8 renderings of ``GLYPHS`` with grey levels in
    ``[0, 16]`` like scikit-learn's digits (images float64 ``(n, 8, 8)``, labels int)."""
    rng = np.random.default_rng(seed)
    glyphs = np.array([[[c == "#" for c in row] for row in g] for g in GLYPHS], float)
    labels = rng.integers(0, CLASSES, n)
    images = np.zeros((n, 8, 8))
    dy, dx = rng.integers(0, 2, n), rng.integers(0, 4, n)  # the glyph's top-left corner
    for i in range(n):
        images[i, dy[i]:dy[i] + 7, dx[i]:dx[i] + 5] = glyphs[labels[i]]
    images *= rng.uniform(8, 16, (n, 1, 1))  # stroke intensity
    images += rng.normal(0, 3, images.shape)  # pixel noise
    return np.clip(images, 0, 16), labels


def load_digits(source, seed):
    """``(images, labels, description)``: scikit-learn's digits, or the synthetic stand-in
    when ``source`` is 'synthetic' or ('auto' and) scikit-learn is not installed."""
    if source != "synthetic":
        try:
            from sklearn.datasets import load_digits as sklearn_digits
        except ImportError:
            if source == "sklearn":
                raise SystemExit("--data sklearn: scikit-learn is not installed "
                                 "(pip install scikit-learn, or use --data synthetic)")
            print("scikit-learn is not installed: using synthetic 8x8 digits instead "
                  "(pip install scikit-learn for the real dataset)")
        else:
            digits = sklearn_digits()
            return digits.images, digits.target, "scikit-learn digits"
    images, labels = synthetic_digits(1797, seed)
    return images, labels, "synthetic digits"


def split(images, labels, seed):
    """Shuffled train/test arrays: images float32 ``(n, 8, 8, 1)`` in [0, 1], int32 labels."""
    order = np.random.default_rng(seed).permutation(len(labels))
    x = (images[order] / 16.0).astype(np.float32)[..., None]
    y = labels[order].astype(np.int32)
    n_test = int(len(y) * TEST_FRACTION)
    return (fnp.asarray(x[n_test:]), fnp.asarray(y[n_test:]),
            fnp.asarray(x[:n_test]), fnp.asarray(y[:n_test]))


# ----------------------------------------------------------------------------- model


def make_model():
    """The stax CNN: (conv 3x3 -> relu -> max-pool 2x2) x 2 -> dense -> log-softmax."""
    return stax.serial(
        Conv(16, (3, 3), padding="SAME"), Relu, MaxPool((2, 2), strides=(2, 2)),
        Conv(32, (3, 3), padding="SAME"), Relu, MaxPool((2, 2), strides=(2, 2)),
        Flatten, Dense(CLASSES), LogSoftmax)


def make_functions(predict, opt_update, get_params):
    """The jitted training step and the jitted accuracy of the model ``predict``."""
    def loss(params, x, labels):
        log_probs = predict(params, x)
        return -fnp.mean(fnp.sum(log_probs * functrax.nn.one_hot(labels, CLASSES), axis=1))

    @functrax.jit
    def update(i, opt_state, x, labels, idx):
        value, grads = functrax.value_and_grad(loss)(get_params(opt_state), x[idx],
                                                     labels[idx])
        return opt_update(i, grads, opt_state), value

    @functrax.jit
    def accuracy(params, x, labels):
        return fnp.mean(fnp.argmax(predict(params, x), axis=1) == labels)

    return update, accuracy


# -------------------------------------------------------------------------- progress


class PlainBar:
    """A one-line progress bar redrawn in place on stderr (only on a terminal)."""

    def __init__(self, total, desc):
        self.total, self.desc, self.done = total, desc, 0
        self.enabled = sys.stderr.isatty()

    def update(self, n=1):
        self.done += n

    def set_postfix_str(self, text):
        if self.enabled:
            filled = 20 * self.done // self.total
            sys.stderr.write(f"\r{self.desc} [{'#' * filled}{'.' * (20 - filled)}] "
                             f"{self.done}/{self.total} {text}")
            sys.stderr.flush()

    def close(self):
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def progress_bar(total, desc):
    """tqdm's bar when tqdm is installed, else a ``PlainBar``."""
    try:
        from tqdm import tqdm
    except ImportError:
        return PlainBar(total, desc)
    # disable=None: no bar when stderr is not a terminal (logs, pipes, CI), as PlainBar
    return tqdm(total=total, desc=desc, leave=False, file=sys.stderr, dynamic_ncols=True,
                disable=None)


def write_line(bar, text):
    """Print ``text`` above the progress bar (tqdm.write keeps the bar intact)."""
    if hasattr(bar, "write"):
        bar.write(text, file=sys.stdout)
    else:
        print(text, flush=True)


# ------------------------------------------------------------------------------ main


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600, help="training steps")
    parser.add_argument("--batch-size", type=int, default=64, help="minibatch size")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam step size")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split, init, shuffles")
    parser.add_argument("--log-every", type=int, default=100, help="steps per log line")
    parser.add_argument("--data", choices=("auto", "sklearn", "synthetic"), default="auto",
                        help="the dataset (auto: scikit-learn's digits when installed)")
    args = parser.parse_args(argv)
    if min(args.steps, args.batch_size, args.log_every) < 1:
        parser.error("--steps, --batch-size and --log-every must be >= 1")
    if args.lr <= 0:
        parser.error(f"--lr must be > 0, got {args.lr}")
    return args


def train(args, update, opt_state, x_train, y_train):
    """Run ``args.steps`` jitted steps; returns the final optimizer state."""
    n_train = y_train.shape[0]
    batch = min(args.batch_size, n_train)
    per_epoch = n_train // batch  # whole batches only: one shape, one compilation
    k_shuffle = random.PRNGKey(args.seed + 1)
    bar, losses, start = progress_bar(args.steps, "training"), [], time.perf_counter()
    for step in range(args.steps):
        if step % per_epoch == 0:
            k_shuffle, k_epoch = random.split(k_shuffle)
            order = random.permutation(k_epoch, n_train)
        b = step % per_epoch
        opt_state, loss = update(step, opt_state, x_train, y_train,
                                 order[b * batch:(b + 1) * batch])
        losses.append(float(loss))
        bar.update(1)
        bar.set_postfix_str(f"loss {losses[-1]:.4f}")
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            write_line(bar, f"step {step + 1:>5}/{args.steps}  loss {np.mean(losses):.4f}  "
                            f"({time.perf_counter() - start:.1f} s)")
            losses = []
    bar.close()
    return opt_state


def main(argv=None):
    args = parse_args(argv)
    images, labels, what = load_digits(args.data, args.seed)
    x_train, y_train, x_test, y_test = split(images, labels, args.seed)

    init_random_params, predict = make_model()
    opt_init, opt_update, get_params = optimizers.adam(args.lr)
    update, accuracy = make_functions(predict, opt_update, get_params)
    _, init_params = init_random_params(random.PRNGKey(args.seed), (-1, 8, 8, 1))
    print(f"{what}: {y_train.shape[0]} train / {y_test.shape[0]} test images; CNN "
          f"conv16-pool-conv32-pool-dense{CLASSES}, batch {min(args.batch_size, y_train.shape[0])}"
          f", Adam {args.lr}")
    print(f"test accuracy before training: {float(accuracy(init_params, x_test, y_test)):.1%}")
    opt_state = train(args, update, opt_init(init_params), x_train, y_train)
    params = get_params(opt_state)
    print(f"train accuracy: {float(accuracy(params, x_train, y_train)):.1%}")
    print(f"test accuracy: {float(accuracy(params, x_test, y_test)):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
