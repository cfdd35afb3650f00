"""Per-example gradients with ``vmap(grad(loss))`` and one DP-SGD step.

Run with ``python examples/per_example_gradients.py`` (numpy backend, a few seconds). It

1. builds a small MLP classifier (deterministic init from ``numpy.random.RandomState``) and a
   batch of 64 examples with one-hot labels,
2. computes every example's gradient at once with
   ``functrax.vmap(functrax.grad(loss), in_axes=(None, 0, 0))``,
3. checks them against a Python loop of ``functrax.grad`` over the examples (printing the
   maximum absolute difference; the script exits non-zero if it exceeds 1e-5),
4. takes DP-SGD steps: clip each example's gradient to a global L2 norm of at most
   ``CLIP_NORM`` (over all parameters together), sum, add Gaussian noise of standard
   deviation ``NOISE_MULTIPLIER * CLIP_NORM``, average, and update the parameters.
"""
import sys
import time

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax.tree_util import tree_leaves, tree_map

BATCH = 64
SIZES = (8, 32, 32, 4)  # inputs, two hidden layers, classes
CLIP_NORM = 1.0
NOISE_MULTIPLIER = 1.1
LEARNING_RATE = 0.5
TOLERANCE = 1e-5


def init_params(sizes, seed=0):
    """Deterministic ``[(w, b), ...]`` float32 parameters (scaled Gaussian init)."""
    rng = np.random.RandomState(seed)
    return [(fnp.asarray(rng.randn(m, n).astype(np.float32) / np.sqrt(m)),
             fnp.asarray(np.zeros(n, np.float32)))
            for m, n in zip(sizes[:-1], sizes[1:])]


def make_batch(seed=1):
    """``BATCH`` inputs and one-hot labels from a fixed random linear teacher."""
    rng = np.random.RandomState(seed)
    x = rng.randn(BATCH, SIZES[0]).astype(np.float32)
    teacher = rng.randn(SIZES[0], SIZES[-1]).astype(np.float32)
    labels = np.argmax(x @ teacher, axis=1)
    y = np.eye(SIZES[-1], dtype=np.float32)[labels]
    return fnp.asarray(x), fnp.asarray(y)


def predict(params, x):
    """Logits of one example ``x`` (shape ``(SIZES[0],)``)."""
    for w, b in params[:-1]:
        x = fnp.tanh(fnp.dot(x, w) + b)
    w, b = params[-1]
    return fnp.dot(x, w) + b


def loss(params, x, y):
    """Softmax cross-entropy of one example against its one-hot label ``y``."""
    logits = predict(params, x)
    shifted = logits - functrax.lax.stop_gradient(fnp.max(logits))
    log_probs = shifted - fnp.log(fnp.sum(fnp.exp(shifted)))
    return -fnp.sum(y * log_probs)


def per_example_grads(params, x, y):
    """Every example's gradient in one vectorized pass: each leaf gets a leading batch axis."""
    return functrax.vmap(functrax.grad(loss), in_axes=(None, 0, 0))(params, x, y)


def per_example_grads_loop(params, x, y):
    """The reference: one ``grad`` call per example, stacked."""
    grads = [functrax.grad(loss)(params, x[i], y[i]) for i in range(x.shape[0])]
    return tree_map(lambda *gs: np.stack([np.asarray(g) for g in gs]), *grads)


def clip_per_example(grads, clip_norm):
    """Scale each example's gradient so its global L2 norm is at most ``clip_norm``."""
    leaves = tree_leaves(grads)
    sq = sum(fnp.sum(fnp.reshape(g * g, (g.shape[0], -1)), axis=1) for g in leaves)
    scale = 1.0 / fnp.maximum(1.0, fnp.sqrt(sq) / clip_norm)

    def apply(g):
        return g * fnp.reshape(scale, (-1,) + (1,) * (g.ndim - 1))
    return tree_map(apply, grads), np.asarray(fnp.sqrt(sq))


def dp_sgd_update(params, grads, rng):
    """One DP-SGD update from per-example gradients: clip, sum, add noise, average, step."""
    clipped, norms = clip_per_example(grads, CLIP_NORM)
    n = tree_leaves(grads)[0].shape[0]

    def noisy_mean(g):
        total = fnp.sum(g, axis=0)
        noise = rng.normal(0.0, NOISE_MULTIPLIER * CLIP_NORM, size=total.shape)
        return (total + fnp.asarray(noise.astype(np.float32))) / n
    update = tree_map(noisy_mean, clipped)
    new_params = tree_map(lambda p, u: p - LEARNING_RATE * u, params, update)
    return new_params, norms


def max_abs_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
               for x, y in zip(tree_leaves(a), tree_leaves(b)))


def mean_loss(params, x, y):
    return float(fnp.mean(functrax.vmap(loss, in_axes=(None, 0, 0))(params, x, y)))


def main():
    params = init_params(SIZES)
    x, y = make_batch()

    t0 = time.perf_counter()
    grads = per_example_grads(params, x, y)
    t1 = time.perf_counter()
    ref = per_example_grads_loop(params, x, y)
    t2 = time.perf_counter()
    shapes = [tuple(g.shape) for g in tree_leaves(grads)]
    print(f"per-example gradient shapes: {shapes}")
    print(f"vmap(grad): {1e3 * (t1 - t0):.1f} ms, loop of grad: {1e3 * (t2 - t1):.1f} ms")
    diff = max_abs_diff(grads, ref)
    print(f"max abs difference vmap(grad) vs loop of grad: {diff:.3g}")

    # the same DP-SGD step from both sets of per-example gradients (same noise draw)
    step_v, norms = dp_sgd_update(params, grads, np.random.RandomState(42))
    step_l, _ = dp_sgd_update(params, tree_map(fnp.asarray, ref), np.random.RandomState(42))
    step_diff = max_abs_diff(step_v, step_l)
    print(f"per-example gradient norms: min {norms.min():.3f}, max {norms.max():.3f} "
          f"(clipped to {CLIP_NORM})")
    print(f"max abs difference of the DP-SGD updates: {step_diff:.3g}")

    rng = np.random.RandomState(0)
    print(f"mean loss before DP-SGD: {mean_loss(params, x, y):.4f}")
    for _ in range(5):
        params, _ = dp_sgd_update(params, per_example_grads(params, x, y), rng)
    print(f"mean loss after 5 DP-SGD steps: {mean_loss(params, x, y):.4f}")

    ok = diff <= TOLERANCE and step_diff <= TOLERANCE
    print("agree: " + str(ok))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
