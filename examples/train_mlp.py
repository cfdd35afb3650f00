"""Train an MLP classifier with functrax: ``jit`` + ``value_and_grad`` + ``optim.adam``.

Run with ``python examples/train_mlp.py`` (numpy backend, no GPU, no downloads; a few
seconds on two cores). Flags: ``--epochs``, ``--seed``, ``--batch-size``, ``--lr``,
``--target`` (the test accuracy to reach) and ``--plot loss.png`` (a loss curve, when
matplotlib is installed). It

1. generates a learnable synthetic dataset with ``functrax.random``: three interleaved
   noisy spiral arms in the plane (radii from ``random.uniform``, angle noise from
   ``random.normal``; no linear model separates them), split into train and test sets;
2. initializes a 2-64-64-3 MLP, a pytree of ``{"w", "b"}`` dicts, with
   ``functrax.nn.initializers.he_normal`` (weights) and ``zeros`` (biases);
3. trains it with ``functrax.optim.adam`` on the softmax cross-entropy (from
   ``functrax.nn.log_softmax`` and ``functrax.nn.one_hot``): one jitted step computes the
   loss and gradients with ``functrax.value_and_grad`` and applies the Adam update; the
   minibatches are reshuffled every epoch with ``functrax.random.permutation``;
4. shows a progress bar per epoch (tqdm when installed, a plain one-line bar otherwise),
   then prints the training loss and the train and test accuracies, and finally whether the
   target test accuracy was reached (the exit status is 1 when it was not).
"""
import argparse
import importlib.util
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import nn, optim, random

SIZES = (2, 64, 64, 3)
N_PER_CLASS = 1000
TEST_FRACTION = 0.2


# ------------------------------------------------------------------------------ data


def make_spirals(key, n_per_class, classes=SIZES[-1], turns=1.5, noise=0.15):
    """``(x, labels)``: ``n_per_class`` noisy points on each of ``classes`` spiral arms,
    shuffled; ``x`` is float32 of shape ``(n, 2)``, ``labels`` int32 of shape ``(n,)``."""
    k_radius, k_noise, k_perm = random.split(key, 3)
    r = random.uniform(k_radius, (classes, n_per_class), minval=0.05, maxval=1.0)
    offsets = fnp.arange(classes)[:, None] * (2 * np.pi / classes)
    theta = (r * (2 * np.pi * turns) + offsets
             + noise * random.normal(k_noise, (classes, n_per_class)))
    x = 2.0 * fnp.stack([r * fnp.sin(theta), r * fnp.cos(theta)], axis=-1).reshape(-1, 2)
    labels = fnp.repeat(fnp.arange(classes, dtype=fnp.int32), n_per_class)
    order = random.permutation(k_perm, labels.shape[0])
    return x[order], labels[order]


# ----------------------------------------------------------------------------- model


def init_params(key, sizes=SIZES):
    """A list of ``{"w", "b"}`` dicts: He-normal weights, zero biases."""
    keys = random.split(key, len(sizes) - 1)
    return [{"w": nn.initializers.he_normal()(k, (m, n)),
             "b": nn.initializers.zeros(k, (n,))}
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]


def predict(params, x):
    """Logits of the MLP (ReLU hidden layers)."""
    for layer in params[:-1]:
        x = nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, labels):
    """Mean softmax cross-entropy of the logits against integer ``labels``."""
    log_probs = nn.log_softmax(predict(params, x))
    return -fnp.mean(fnp.sum(log_probs * nn.one_hot(labels, SIZES[-1]), axis=-1))


def make_train_step(optimizer):
    """A jitted Adam step on the minibatch ``x[idx], labels[idx]``."""
    @functrax.jit
    def train_step(params, opt_state, x, labels, idx):
        loss, grads = functrax.value_and_grad(loss_fn)(params, x[idx], labels[idx])
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optim.apply_updates(params, updates), opt_state, loss
    return train_step


@functrax.jit
def evaluate(params, x, labels):
    """(mean loss, accuracy) on a whole dataset."""
    logits = predict(params, x)
    accuracy = fnp.mean(fnp.argmax(logits, axis=-1) == labels)
    return loss_fn(params, x, labels), accuracy


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
            sys.stderr.write("\r\033[K")  # clear the line for the epoch summary
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


# ----------------------------------------------------------------------------- plots


def save_loss_plot(path, batch_losses, epoch_test_losses, batches_per_epoch):
    """Write the per-batch training loss and per-epoch test loss to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    steps = np.arange(1, len(batch_losses) + 1)
    ax.plot(steps, batch_losses, lw=0.8, alpha=0.6, label="train loss (per batch)")
    epoch_ends = batches_per_epoch * np.arange(1, len(epoch_test_losses) + 1)
    ax.plot(epoch_ends, epoch_test_losses, "o-", label="test loss (per epoch)")
    ax.set(xlabel="step", ylabel="cross-entropy", yscale="log", title="MLP on spirals")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"loss curve written to {path}")


def have_matplotlib(path):
    """True if matplotlib can be imported; else say why ``--plot path`` will do nothing."""
    if importlib.util.find_spec("matplotlib") is not None:
        return True
    print(f"--plot {path}: matplotlib is not installed, so no loss curve will be written "
          "(pip install matplotlib to get one).")
    return False


# ------------------------------------------------------------------------------ main


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20, help="passes over the train set")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, init, shuffling")
    parser.add_argument("--batch-size", type=int, default=128, help="minibatch size")
    parser.add_argument("--lr", type=float, default=1e-2, help="Adam learning rate")
    parser.add_argument("--target", type=float, default=0.95,
                        help="test accuracy to reach, as a fraction (default 0.95)")
    parser.add_argument("--plot", metavar="PATH", help="save a loss curve (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0:
        parser.error("--epochs and --batch-size must be >= 1 and --lr > 0")
    if not 0 < args.target <= 1:
        parser.error(f"--target is a fraction in (0, 1], e.g. 0.95 for 95%; got {args.target}")
    return args


def main(argv=None):
    args = parse_args(argv)
    k_data, k_init, k_shuffle = random.split(random.PRNGKey(args.seed), 3)
    x, labels = make_spirals(k_data, N_PER_CLASS)
    n_train = int(x.shape[0] * (1 - TEST_FRACTION))
    x_train, y_train = x[:n_train], labels[:n_train]
    x_test, y_test = x[n_train:], labels[n_train:]
    batch = min(args.batch_size, n_train)
    n_batches = n_train // batch  # whole batches only: one shape, one compilation

    params = init_params(k_init)
    optimizer = optim.adam(args.lr)
    opt_state = optimizer.init(params)
    train_step = make_train_step(optimizer)
    print(f"{n_train} train / {x.shape[0] - n_train} test points, {SIZES[-1]} spiral classes; "
          f"MLP {'-'.join(map(str, SIZES))}, batch {batch}, Adam lr {args.lr}")
    target = f"{100 * args.target:g}%"
    print(f"target: {target} test accuracy")
    plot = args.plot and have_matplotlib(args.plot)

    start = time.perf_counter()
    batch_losses, test_losses = [], []
    for epoch in range(1, args.epochs + 1):
        k_shuffle, k_epoch = random.split(k_shuffle)
        order = random.permutation(k_epoch, n_train)
        bar = progress_bar(n_batches, f"epoch {epoch}/{args.epochs}")
        epoch_losses = []
        for i in range(n_batches):
            params, opt_state, loss = train_step(params, opt_state, x_train, y_train,
                                                 order[i * batch:(i + 1) * batch])
            epoch_losses.append(float(loss))
            bar.update(1)
            bar.set_postfix_str(f"loss {epoch_losses[-1]:.4f}")
        bar.close()
        batch_losses += epoch_losses
        _, train_acc = evaluate(params, x_train, y_train)
        test_loss, test_acc = evaluate(params, x_test, y_test)
        test_losses.append(float(test_loss))
        print(f"epoch {epoch:>3}/{args.epochs}  loss {np.mean(epoch_losses):.4f}  "
              f"train acc {float(train_acc):6.1%}  test loss {float(test_loss):.4f}  "
              f"test acc {float(test_acc):6.1%}  ({time.perf_counter() - start:.1f} s)",
              flush=True)

    reached = float(test_acc) >= args.target
    print(f"final test accuracy: {float(test_acc):.1%} (target {target}: "
          f"{'reached' if reached else 'NOT reached'})")
    if plot:
        save_loss_plot(args.plot, batch_losses, test_losses, n_batches)
    return 0 if reached else 1


if __name__ == "__main__":
    sys.exit(main())
