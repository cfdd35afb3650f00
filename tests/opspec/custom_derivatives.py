"""Op specs: the implicitly differentiated solves and the custom-derivative helpers
(``lax.custom_linear_solve`` / ``lax.custom_root``, ``custom_derivatives.linear_call``,
``ad_checkpoint.checkpoint_name`` under a name policy), against numpy closed forms.

The solves take their operator from the arguments, so the gradient checks differentiate
through the implicit rules (JVP, transpose) in both the operator and the right-hand side.
"""
import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.ad_checkpoint import checkpoint_name, checkpoint_policies
from functrax.custom_derivatives import linear_call
from tests.opspec.spec import OpSpec, uniform


def _diag_solve(d, b):
    """``diag(d) x = b`` by custom_linear_solve (symmetric: reverse mode reuses solve)."""
    return lax.custom_linear_solve(lambda x: d * x, b, lambda mv, r: r / d, symmetric=True)


def _diag_solve_ref(d, b):
    return b / d


def _diag_solve_transposed(d, b):
    """A non-symmetric operator ``x -> d * x + x[::-1] * 0.5`` with an exact solve."""
    n = d.shape[-1]
    A = fnp.diag(d) + 0.5 * fnp.eye(n)[::-1]
    return lax.custom_linear_solve(lambda x: A @ x, b, lambda mv, r: fnp.linalg.solve(A, r),
                                   lambda vm, r: fnp.linalg.solve(A.T, r))


def _diag_solve_transposed_ref(d, b):
    n = d.shape[-1]
    A = np.diag(d) + 0.5 * np.eye(n, dtype=d.dtype)[::-1]
    return np.linalg.solve(A, b).astype(b.dtype)


def _newton(f, x):
    for _ in range(12):
        x = x - f(x) / functrax.grad(f)(x)
    return x


def _sqrt_root(a):
    """The square roots of ``a`` as roots of ``x^2 - a`` (Newton, elementwise)."""
    def one(ai):
        return lax.custom_root(lambda x: x * x - ai, fnp.ones_like(ai), _newton,
                               lambda g, y: y / g(1.0))
    return functrax.vmap(one)(a.reshape(-1)).reshape(a.shape)


def _linear_call_scale(x):
    return linear_call(lambda r, v: r * v, lambda r, t: r * t, 2.5, x) + fnp.sin(x)


def _named_remat(x):
    policy = checkpoint_policies.save_only_these_names("h")
    f = functrax.checkpoint(lambda v: fnp.sin(checkpoint_name(fnp.cos(v), "h")), policy=policy)
    return f(x)


_POS = uniform(1.0, 3.0)
_SQUARE = (((3,), (3,)), ((4,), (4,)))

SPECS = [
    OpSpec("custom_linear_solve_diag", _diag_solve, _diag_solve_ref, shapes=_SQUARE,
           domain=(_POS, uniform()), atol=1e-5, rtol=1e-5,
           primitives=("custom_linear_solve",)),
    OpSpec("custom_linear_solve_transpose_solve", _diag_solve_transposed,
           _diag_solve_transposed_ref, shapes=_SQUARE, domain=(_POS, uniform()), atol=1e-4,
           rtol=1e-4, primitives=("custom_linear_solve",)),
    OpSpec("custom_root_sqrt", _sqrt_root, lambda a: np.sqrt(a), shapes=(((3,),), ((2, 2),)),
           domain=uniform(0.5, 4.0), atol=1e-5, rtol=1e-5, primitives=("custom_jvp_call",)),
    OpSpec("linear_call_scale", _linear_call_scale, lambda x: 2.5 * x + np.sin(x),
           primitives=("linear_call",)),
    OpSpec("checkpoint_name_policy", _named_remat, lambda x: np.sin(np.cos(x)),
           primitives=("name", "remat2")),
]
