"""Custom differentiation rules: ``custom_jvp`` and ``custom_vjp`` under grad, vmap and jit.

Run with ``python examples/custom_rules.py`` (numpy backend, about a second). It shows

1. ``custom_jvp``: a numerically safe softplus ``log(1 + exp(x))``. The naive formula
   overflows (``inf`` at ``x = 100`` and a ``nan`` gradient there, as ``exp(x) / (1 +
   exp(x)) = inf / inf``); the usual overflow-free rewrite ``max(x, 0) + log1p(exp(-|x|))``
   has the right values, but its gradient at ``x = 0`` is ``0`` instead of ``0.5`` (the
   derivatives of its two kinks cancel). Giving the stable formula the JVP rule
   ``t * sigmoid(x)`` fixes both; the rule is itself differentiable, so second derivatives
   work too.
2. ``custom_vjp``: gradient clipping, an identity on the forward pass whose backward pass
   clips the incoming cotangent to ``[lo, hi]``.
3. ``custom_vjp``: a straight-through estimator for rounding (forward ``round(x)``, backward
   the identity). The true gradient of ``round`` is zero almost everywhere, so plain gradient
   descent on a quantized model never moves; with the estimator it learns.

Each function is run under ``grad``, ``vmap(grad)``, ``jit(vmap(grad))`` and compared with
values computed in plain numpy; the script exits non-zero if any of them differs.
"""
import sys

import numpy as np

import functrax
import functrax.numpy as fnp

XS = np.array([-100.0, -3.0, 0.0, 0.5, 3.0, 100.0], np.float32)
RTOL, ATOL = 1e-6, 1e-7
FAILURES = []


def check(label, got, want):
    """Print ``got`` next to ``want`` and record a failure when they differ."""
    got = np.asarray(got)
    ok = got.shape == np.shape(want) and np.allclose(got, want, rtol=RTOL, atol=ATOL,
                                                     equal_nan=True)
    print(f"  {label:<34} {np.array2string(got, precision=4, floatmode='maxprec')}"
          f"{'' if ok else '   MISMATCH, expected ' + np.array2string(np.asarray(want))}")
    if not ok:
        FAILURES.append(label)


def under_transforms(name, f, xs, want_value, want_grad):
    """Check ``f``'s value and gradient under grad, vmap(grad) and jit(vmap(grad))."""
    print(f"{name}:")
    check("vmap(f)(xs)", functrax.vmap(f)(fnp.asarray(xs)), want_value)
    check("[grad(f)(x) for x in xs]", [functrax.grad(f)(float(x)) for x in xs], want_grad)
    check("vmap(grad(f))(xs)", functrax.vmap(functrax.grad(f))(fnp.asarray(xs)), want_grad)
    check("jit(vmap(grad(f)))(xs)",
          functrax.jit(functrax.vmap(functrax.grad(f)))(fnp.asarray(xs)), want_grad)


# ------------------------------------------------------------------ custom_jvp: softplus


def softplus_naive(x):
    """``log(1 + exp(x))`` as written: overflows to inf for x > 88 (float32)."""
    return fnp.log1p(fnp.exp(x))


def softplus_stable(x):
    """The overflow-free rewrite; its gradient at 0 is wrong (0 instead of 0.5)."""
    return fnp.maximum(x, 0.0) + fnp.log1p(fnp.exp(-fnp.abs(x)))


@functrax.custom_jvp
def softplus(x):
    """Softplus with the stable formula for values and ``sigmoid(x)`` as its derivative."""
    return softplus_stable(x)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # lax.logistic is 1 / (1 + exp(-x)): finite everywhere, and so is its own derivative
    # s (1 - s), which grad(grad(softplus)) uses (t / (1 + exp(-x)) would work for the first
    # derivative, but differentiating it again gives exp(-x) / (1 + exp(-x))**2 = inf / inf)
    return softplus(x), t * functrax.lax.logistic(x)


def numpy_softplus_reference(xs):
    """Value, first and second derivative of softplus in float64 numpy."""
    x = xs.astype(np.float64)
    sigmoid = 0.5 * (1.0 + np.tanh(0.5 * x))
    return np.logaddexp(x, 0.0), sigmoid, sigmoid * (1.0 - sigmoid)


def demo_softplus():
    print("== custom_jvp: softplus(x) = log(1 + exp(x)) ==")
    print(f"  {'xs':<34} {np.array2string(XS, precision=4, floatmode='maxprec')}")
    value, first, second = numpy_softplus_reference(XS)
    overflow = XS > np.log(np.finfo(np.float32).max)  # exp(x) = inf in float32
    naive_value = np.where(overflow, np.inf, value)
    naive_grad = np.where(overflow, np.nan, first)  # exp(x) / (1 + exp(x)) = inf / inf
    under_transforms("naive log1p(exp(x)): inf value and nan gradient at x = 100",
                     softplus_naive, XS, naive_value, naive_grad)
    stable_grad = first.copy()
    stable_grad[XS == 0] = 0.0  # max(x, 0) gives 0.5, -|x| gives -0.5 (JAX's conventions)
    under_transforms("stable max(x,0) + log1p(exp(-|x|)): gradient 0 at x = 0",
                     softplus_stable, XS, value, stable_grad)
    under_transforms("custom_jvp softplus: right everywhere", softplus, XS, value, first)
    second_grad = functrax.jit(functrax.vmap(functrax.grad(functrax.grad(softplus))))
    check("jit(vmap(grad(grad(f))))(xs)", second_grad(fnp.asarray(XS)), second)


# --------------------------------------------------------- custom_vjp: gradient clipping


@functrax.custom_vjp
def clip_gradient(lo, hi, x):
    """The identity on ``x``, whose cotangent is clipped to ``[lo, hi]`` on the way back."""
    return x


def _clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def _clip_gradient_bwd(residuals, ct):
    lo, hi = residuals
    return None, None, fnp.clip(ct, lo, hi)  # None: zero cotangents for lo and hi


clip_gradient.defvjp(_clip_gradient_fwd, _clip_gradient_bwd)


def demo_clip_gradient():
    print("\n== custom_vjp: gradient clipping ==")
    ts = np.linspace(0.0, 6.0, 7).astype(np.float32)
    print(f"  {'ts':<34} {np.array2string(ts, precision=4, floatmode='maxprec')}")
    t64 = ts.astype(np.float64)
    under_transforms("3 * sin(t): gradient 3 cos(t)", lambda t: 3.0 * fnp.sin(t), ts,
                     3.0 * np.sin(t64), 3.0 * np.cos(t64))
    under_transforms("3 * sin(clip_gradient(-1, 1, t)): gradient clip(3 cos(t), -1, 1)",
                     lambda t: 3.0 * fnp.sin(clip_gradient(-1.0, 1.0, t)), ts,
                     3.0 * np.sin(t64), np.clip(3.0 * np.cos(t64), -1.0, 1.0))


# ------------------------------------------------- custom_vjp: straight-through rounding


@functrax.custom_vjp
def round_ste(x):
    """``round(x)`` forward; the identity backward (a straight-through estimator)."""
    return fnp.round(x)


round_ste.defvjp(lambda x: (fnp.round(x), None), lambda _, ct: (ct,))


def quantized_loss(rounding):
    """Squared error of a linear model whose weights are rounded to a grid of 1/4."""
    def loss(w, x, y):
        return fnp.mean((x @ (rounding(4.0 * w) / 4.0) - y) ** 2)
    return loss


def fit(loss, w, x, y, steps=100, lr=0.05):
    """Plain gradient descent with a jitted step; returns the final weights and losses."""
    step = functrax.jit(lambda w: w - lr * functrax.grad(loss)(w, x, y))
    losses = [float(loss(w, x, y))]
    for _ in range(steps):
        w = step(w)
    losses.append(float(loss(w, x, y)))
    return w, losses


def demo_straight_through():
    print("\n== custom_vjp: straight-through estimator for rounding ==")
    xs = np.array([-1.6, -0.5, 0.2, 0.5, 1.4, 2.5], np.float32)
    print(f"  {'xs':<34} {np.array2string(xs, precision=4, floatmode='maxprec')}")
    rounded = np.round(xs.astype(np.float64))  # half to even, as fnp.round
    under_transforms("round(x): gradient 0", fnp.round, xs, rounded, np.zeros_like(xs))
    under_transforms("round_ste(x): gradient 1", round_ste, xs, rounded, np.ones_like(xs))
    under_transforms("round_ste(x) ** 2: gradient 2 round(x)", lambda x: round_ste(x) ** 2,
                     xs, rounded ** 2, 2.0 * rounded)

    rng = np.random.RandomState(0)
    x = rng.randn(64, 3).astype(np.float32)
    w_true = np.array([0.75, -1.25, 0.5], np.float32)  # on the 1/4 grid: loss 0 reachable
    y = fnp.asarray(x @ w_true)
    x = fnp.asarray(x)
    w0 = fnp.zeros(3)
    _, plain = fit(quantized_loss(fnp.round), w0, x, y)
    w_ste, ste = fit(quantized_loss(round_ste), w0, x, y)
    print(f"  fit with round:     loss {plain[0]:.4f} -> {plain[1]:.4f} (zero gradient: stuck)")
    print(f"  fit with round_ste: loss {ste[0]:.4f} -> {ste[1]:.4f}, quantized weights "
          f"{np.round(4 * np.asarray(w_ste)) / 4} (true {w_true})")
    if plain[1] != plain[0] or ste[1] > 0.01 * ste[0]:
        FAILURES.append("straight-through fit")


def main():
    demo_softplus()
    demo_clip_gradient()
    demo_straight_through()
    if FAILURES:
        print(f"\nFAILED: {', '.join(FAILURES)}")
        return 1
    print("\nall values as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
