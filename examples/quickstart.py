"""functrax quickstart: trace a 2-layer MLP to a jaxpr and run it two ways.

Run with ``python examples/quickstart.py`` (numpy backend, no GPU needed). It

1. builds deterministic inputs and parameters with numpy,
2. prints the jaxpr of the MLP's forward pass (``functrax.make_jaxpr``), as JAX prints it,
3. evaluates the MLP eagerly and by interpreting the jaxpr (``functrax.eval_jaxpr``),
4. checks that both results agree (and match a plain-numpy forward pass).
"""
import sys

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.tree_util import tree_leaves


def init_params(sizes, seed=0):
    """Deterministic ``[(w, b), ...]`` float32 parameters for an MLP with layer ``sizes``."""
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        w = rng.standard_normal((n_in, n_out)).astype(np.float32) / np.sqrt(n_in)
        b = rng.standard_normal((n_out,)).astype(np.float32) * 0.1
        params.append((w, b))
    return params


def mlp(params, x):
    """Forward pass: tanh hidden layers, linear output layer."""
    *hidden, (w_out, b_out) = params
    for w, b in hidden:
        x = fnp.tanh(lax.dot(x, w) + b)
    return lax.dot(x, w_out) + b_out


def mlp_numpy(params, x):
    """The same forward pass in plain numpy (the reference)."""
    *hidden, (w_out, b_out) = params
    for w, b in hidden:
        x = np.tanh(x @ w + b)
    return x @ w_out + b_out


def main():
    params = init_params([3, 8, 2])
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)

    closed = functrax.make_jaxpr(mlp)(params, x)
    print("jaxpr of mlp(params, x):")
    print(closed)

    eager = np.asarray(mlp(params, x))
    (interpreted,) = functrax.eval_jaxpr(closed.jaxpr, closed.consts, *tree_leaves((params, x)))
    interpreted = np.asarray(interpreted)
    reference = mlp_numpy(params, x)

    print("\neager:\n", eager, sep="")
    print("\nvia eval_jaxpr:\n", interpreted, sep="")
    agree = np.allclose(eager, interpreted, rtol=1e-6, atol=1e-6)
    matches_numpy = np.allclose(eager, reference, rtol=1e-5, atol=1e-5)
    print(f"\neager and eval_jaxpr agree: {agree}")
    print(f"matches plain numpy: {matches_numpy}")
    return 0 if agree and matches_numpy else 1


if __name__ == "__main__":
    sys.exit(main())
