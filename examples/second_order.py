"""Second-order autodiff: Hessian-vector products four ways, then Newton's method.

Run with ``python examples/second_order.py`` (numpy backend, about a second). It

1. computes Hessian-vector products ``H(x) @ v`` of two functions (the n-dimensional
   Rosenbrock function and an L2-regularized logistic-regression loss) four ways:

   - forward-over-reverse: ``jvp(grad(f), (x,), (v,))`` (the cheap one: one forward pass
     through the gradient program),
   - reverse-over-reverse: ``grad(lambda x: vdot(grad(f)(x), v))``,
   - reverse-over-forward: ``grad(lambda x: jvp(f, (x,), (v,))[1])``,
   - the full Hessian ``hessian(f)(x) @ v`` (``jacfwd(jacrev(f))``),

   plus the jitted forward-over-reverse HVP ``vmap``-ed over the identity matrix (which
   rebuilds the whole Hessian), and checks that they all agree;
2. runs Newton's method ``x <- x - H(x)^-1 grad f(x)`` on the logistic-regression problem
   (the Hessian from ``functrax.hessian``, solved with ``numpy.linalg.solve``), printing the
   loss and the gradient norm per step: the number of correct digits roughly doubles each
   step (quadratic convergence), until float64 round-off;
3. takes the first Newton step once more without ever forming the Hessian, by conjugate
   gradients on HVPs ("Hessian-free" Newton), and compares it with the direct solve.

The script computes in float64 (``functrax.config.update("enable_x64", True)``) so the
quadratic convergence is visible over many digits. It exits non-zero if the HVP variants
disagree, or if Newton's method does not converge quadratically.
"""
import sys

import numpy as np

import functrax

functrax.config.update("enable_x64", True)  # before any array is created

import functrax.numpy as fnp  # noqa: E402

HVP_RTOL = 1e-10
N_POINTS, N_FEATURES = 400, 6
L2 = 1e-2


# ----------------------------------------------------------------------------- HVPs


def hvp_fwd_over_rev(f, x, v):
    """``H(x) @ v`` as the directional derivative of the gradient (forward-over-reverse)."""
    return functrax.jvp(functrax.grad(f), (x,), (v,))[1]


def hvp_rev_over_rev(f, x, v):
    """``H(x) @ v`` as the gradient of ``<grad f(x), v>`` (reverse-over-reverse)."""
    return functrax.grad(lambda y: fnp.vdot(functrax.grad(f)(y), v))(x)


def hvp_rev_over_fwd(f, x, v):
    """``H(x) @ v`` as the gradient of the directional derivative (reverse-over-forward)."""
    return functrax.grad(lambda y: functrax.jvp(f, (y,), (v,))[1])(x)


def hvp_full_hessian(f, x, v):
    """``H(x) @ v`` by forming the whole Hessian first (``jacfwd(jacrev(f))``)."""
    return functrax.hessian(f)(x) @ v


HVPS = {
    "forward-over-reverse  jvp(grad(f))": hvp_fwd_over_rev,
    "reverse-over-reverse  grad(vdot(grad(f), v))": hvp_rev_over_rev,
    "reverse-over-forward  grad(jvp(f))": hvp_rev_over_fwd,
    "full Hessian          hessian(f)(x) @ v": hvp_full_hessian,
}


def rosenbrock(x):
    """The n-dimensional Rosenbrock function (minimum 0 at all ones)."""
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def make_logistic_problem(seed=0):
    """Features (with a bias column) and 0/1 labels drawn from a noisy linear teacher."""
    rng = np.random.RandomState(seed)
    feats = rng.randn(N_POINTS, N_FEATURES - 1)
    a = np.concatenate([feats, np.ones((N_POINTS, 1))], axis=1)
    teacher = rng.randn(N_FEATURES) / np.sqrt(N_FEATURES)
    labels = (a @ teacher + 1.0 * rng.randn(N_POINTS) > 0).astype(np.float64)
    return fnp.asarray(a), fnp.asarray(labels)


def logistic_loss(a, labels):
    """``w -> mean log-loss + L2/2 |w|^2`` (strictly convex: Newton converges quadratically)."""
    def loss(w):
        z = a @ w
        # softplus(z) = log(1 + exp(z)) = m + log(1 + exp(z - 2m)) with m = max(z, 0): finite
        # for large |z|, and its derivative is sigmoid(z) everywhere, z = 0 included (written
        # with maximum(z, 0) + log1p(exp(-abs(z))) the two kinks' one-sided derivatives would
        # give 0.5 - 0.5 = 0 at z = 0, which is exactly where Newton's method starts)
        m = fnp.where(z > 0, z, 0.0)
        softplus = m + fnp.log1p(fnp.exp(z - 2.0 * m))
        return fnp.mean(softplus - labels * z) + 0.5 * L2 * fnp.sum(w * w)
    return loss


def logistic_closed_form(a, labels, w):
    """The logistic loss's gradient and Hessian in closed form, in plain numpy (a reference)."""
    a, labels, w = np.asarray(a), np.asarray(labels), np.asarray(w)
    p = 1.0 / (1.0 + np.exp(-(a @ w)))
    grad = a.T @ (p - labels) / len(labels) + L2 * w
    hess = (a.T * (p * (1.0 - p))) @ a / len(labels) + L2 * np.eye(len(w))
    return grad, hess


def compare_hvps(name, f, x, v, reference_hessian=None):
    """Print every HVP variant's distance to forward-over-reverse; True if all agree."""
    ref = np.asarray(hvp_fwd_over_rev(f, x, v))
    scale = max(np.max(np.abs(ref)), 1.0)
    print(f"{name}: |H v| = {np.linalg.norm(ref):.6g}")
    ok = True
    for label, hvp in HVPS.items():
        err = np.max(np.abs(np.asarray(hvp(f, x, v)) - ref)) / scale
        ok &= bool(err <= HVP_RTOL)
        print(f"  {label:<46} max rel. difference {err:.2e}")
    # vmap the jitted HVP over the basis vectors: the columns of the Hessian
    n = x.shape[0]
    batched = functrax.jit(functrax.vmap(lambda u: hvp_fwd_over_rev(f, x, u)))
    err = np.max(np.abs(np.asarray(batched(fnp.eye(n))) - np.asarray(functrax.hessian(f)(x))))
    err /= scale
    ok &= bool(err <= HVP_RTOL)
    print(f"  {'jit(vmap(hvp))(eye(n)) vs hessian(f)(x)':<46} max rel. difference {err:.2e}")
    if reference_hessian is not None:
        err = np.max(np.abs(reference_hessian @ np.asarray(v) - ref)) / scale
        ok &= bool(err <= HVP_RTOL)
        print(f"  {'closed-form numpy Hessian @ v':<46} max rel. difference {err:.2e}")
    return ok


# --------------------------------------------------------------------------- Newton


def newton(f, w, steps):
    """Newton's method with the concrete Hessian; returns the per-step (loss, |grad|)."""
    value_and_grad = functrax.jit(functrax.value_and_grad(f))
    hess = functrax.jit(functrax.hessian(f))
    history = []
    for step in range(steps + 1):
        loss, g = value_and_grad(w)
        g = np.asarray(g)
        history.append((float(loss), float(np.linalg.norm(g))))
        print(f"  step {step}: loss {float(loss):.15f}  |grad| {history[-1][1]:.3e}")
        if step < steps:
            w = w - np.linalg.solve(np.asarray(hess(w)), g)
    return w, history


def conjugate_gradient(matvec, b, iters, tol=1e-14):
    """Solve ``A x = b`` for symmetric positive-definite ``A`` given only ``x -> A x``."""
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    for _ in range(iters):
        ap = matvec(p)
        alpha = (r @ r) / (p @ ap)
        x = x + alpha * p
        r_new = r - alpha * ap
        if np.linalg.norm(r_new) < tol * np.linalg.norm(b):
            break
        p = r_new + (r_new @ r_new) / (r @ r) * p
        r = r_new
    return x


def converged_quadratically(history):
    """True if the gradient norm shrinks at least quadratically until round-off."""
    norms = [g for _, g in history]
    for prev, cur in zip(norms, norms[1:]):
        if prev < 1e-9:  # round-off territory
            break
        if cur > 10.0 * prev ** 2 and cur > 1e-12:
            return False
    return norms[-1] < 1e-10


def main():
    ok = True
    rng = np.random.RandomState(1)
    print("== Hessian-vector products ==")
    x = fnp.asarray(rng.uniform(-1.5, 1.5, size=8))
    ok &= compare_hvps("rosenbrock (n=8)", rosenbrock, x, fnp.asarray(rng.randn(8)))
    a, labels = make_logistic_problem()
    loss = logistic_loss(a, labels)
    w0 = fnp.zeros(N_FEATURES)
    w = fnp.asarray(0.3 * rng.randn(N_FEATURES))
    ok &= compare_hvps(f"logistic loss ({N_POINTS} points, {N_FEATURES} weights)", loss,
                       w, fnp.asarray(rng.randn(N_FEATURES)),
                       reference_hessian=logistic_closed_form(a, labels, w)[1])
    print(f"all HVP variants agree: {ok}")

    print("\n== Newton's method on the logistic loss ==")
    w_final, history = newton(loss, w0, steps=6)
    closed_form_grad = np.linalg.norm(logistic_closed_form(a, labels, w_final)[0])
    print(f"  closed-form numpy |grad| at the final weights: {closed_form_grad:.3e}")
    quadratic = converged_quadratically(history) and closed_form_grad < 1e-10
    print(f"quadratic convergence: {quadratic}")

    print("\n== Hessian-free Newton step (conjugate gradients on HVPs) ==")
    hvp = functrax.jit(lambda u: hvp_fwd_over_rev(loss, w0, u))
    g0 = np.asarray(functrax.grad(loss)(w0))
    step_cg = conjugate_gradient(lambda u: np.asarray(hvp(fnp.asarray(u))), g0, N_FEATURES * 2)
    step_direct = np.linalg.solve(np.asarray(functrax.hessian(loss)(w0)), g0)
    cg_err = np.max(np.abs(step_cg - step_direct)) / np.max(np.abs(step_direct))
    print(f"  {'CG step vs solve(hessian(f)(w), grad(f)(w))':<46} max rel. difference {cg_err:.2e}")
    cg_ok = cg_err < 1e-8

    if not (ok and quadratic and cg_ok):
        print("FAILED: " + ", ".join(msg for msg, good in (
            ("HVP variants disagree", ok), ("no quadratic convergence", quadratic),
            ("CG step differs from the direct solve", cg_ok)) if not good))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
