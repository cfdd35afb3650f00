"""JAX's classic stax MNIST MLP, with functrax: ``stax`` layers + ``optimizers.adam``.

Run with ``python examples/stax_mnist_mlp.py`` (numpy backend, no GPU, no downloads; a few
seconds on two cores). It

1. generates MNIST-shaped synthetic data with ``functrax.random``: 784-pixel images near a
   32-dimensional random subspace, labelled by a fixed random linear teacher
   (``argmax(x @ T)`` over 10 classes), so the task is learnable from a few thousand
   examples;
2. builds the 784 -> 1024 -> 1024 -> 10 classifier of JAX's ``mnist_classifier.py`` with
   ``stax.serial(Dense(1024), Relu, Dense(1024), Relu, Dense(10), LogSoftmax)`` and draws
   its parameters with ``init_fun(key, (-1, 784))``;
3. trains it with ``optimizers.adam``: one jitted step computes the loss and gradients with
   ``functrax.value_and_grad`` and applies ``opt_update(i, grads, opt_state)``; the
   minibatches are reshuffled every epoch;
4. prints one progress line per epoch (training loss, train and test accuracy).

Flags: ``--epochs``, ``--hidden`` (the width of both hidden layers), ``--train-size``,
``--test-size``, ``--batch-size``, ``--lr``, ``--seed``.
"""
import argparse
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import random
from functrax.example_libraries import optimizers, stax
from functrax.example_libraries.stax import Dense, LogSoftmax, Relu

PIXELS, CLASSES, LATENT = 28 * 28, 10, 32


def make_data(key, n, latent=LATENT, noise=0.1):
    """``(images, one_hot_labels)``: ``n`` 784-pixel images ``z @ A + noise`` on a
    ``latent``-dimensional subspace (like MNIST's digits, they fill few of the 784
    directions), labelled by the fixed linear teacher ``argmax(image @ T)``. ``A`` and
    ``T`` come from ``PRNGKey(1234)``, the same for every seed."""
    k_basis, k_teacher = random.split(random.PRNGKey(1234))
    basis = random.normal(k_basis, (latent, PIXELS)) / np.sqrt(latent)
    teacher = random.normal(k_teacher, (PIXELS, CLASSES))
    k_z, k_noise = random.split(key)
    x = (random.normal(k_z, (n, latent)) @ basis
         + noise * random.normal(k_noise, (n, PIXELS)))
    labels = fnp.argmax(x @ teacher, axis=1)
    return x, functrax.nn.one_hot(labels, CLASSES)


def make_model(hidden):
    """The stax MLP ``784 -> hidden -> hidden -> 10`` (log-probabilities out)."""
    return stax.serial(Dense(hidden), Relu, Dense(hidden), Relu, Dense(CLASSES), LogSoftmax)


def make_functions(predict, opt_update, get_params):
    """The jitted training step and the accuracy of the model ``predict``."""
    def loss(params, batch):
        inputs, targets = batch
        return -fnp.mean(fnp.sum(predict(params, inputs) * targets, axis=1))

    @functrax.jit
    def update(i, opt_state, batch):
        value, grads = functrax.value_and_grad(loss)(get_params(opt_state), batch)
        return opt_update(i, grads, opt_state), value

    @functrax.jit
    def accuracy(params, batch):
        inputs, targets = batch
        predicted = fnp.argmax(predict(params, inputs), axis=1)
        return fnp.mean(predicted == fnp.argmax(targets, axis=1))

    return update, accuracy


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3, help="passes over the train set")
    parser.add_argument("--hidden", type=int, default=1024, help="hidden layer width")
    parser.add_argument("--train-size", type=int, default=2048, help="training examples")
    parser.add_argument("--test-size", type=int, default=1024, help="test examples")
    parser.add_argument("--batch-size", type=int, default=128, help="minibatch size")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam step size")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data, init, shuffles")
    args = parser.parse_args(argv)
    if min(args.epochs, args.hidden, args.train_size, args.test_size, args.batch_size) < 1:
        parser.error("--epochs, --hidden, --train-size, --test-size and --batch-size must "
                     "be >= 1")
    if args.lr <= 0:
        parser.error(f"--lr must be > 0, got {args.lr}")
    return args


def main(argv=None):
    args = parse_args(argv)
    k_train, k_test, k_init, k_shuffle = random.split(random.PRNGKey(args.seed), 4)
    train, test = make_data(k_train, args.train_size), make_data(k_test, args.test_size)
    batch_size = min(args.batch_size, args.train_size)
    n_batches = args.train_size // batch_size  # whole batches: one shape, one compilation

    init_random_params, predict = make_model(args.hidden)
    opt_init, opt_update, get_params = optimizers.adam(args.lr)
    update, accuracy = make_functions(predict, opt_update, get_params)
    _, init_params = init_random_params(k_init, (-1, PIXELS))
    opt_state = opt_init(init_params)
    print(f"MLP {PIXELS}-{args.hidden}-{args.hidden}-{CLASSES}, {args.train_size} train / "
          f"{args.test_size} test examples, batch {batch_size}, Adam {args.lr}")

    step, start = 0, time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        k_shuffle, k_epoch = random.split(k_shuffle)
        order = random.permutation(k_epoch, args.train_size)
        losses = []
        for b in range(n_batches):
            idx = order[b * batch_size:(b + 1) * batch_size]
            opt_state, loss = update(step, opt_state, (train[0][idx], train[1][idx]))
            losses.append(float(loss))
            step += 1
        params = get_params(opt_state)
        print(f"epoch {epoch}/{args.epochs}  loss {np.mean(losses):.4f}  "
              f"train acc {float(accuracy(params, train)):6.1%}  "
              f"test acc {float(accuracy(params, test)):6.1%}  "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
