"""``functrax.numpy.linalg`` functions of general (non-symmetric) matrices and tensors:
``eig``, ``eigvals``, ``cond``, ``tensorinv``, ``tensorsolve`` (as JAX's)."""
from __future__ import annotations

import math
import operator

import numpy as np

from functrax import core
from functrax.lax import linalg as lax_linalg
from functrax.numpy import reductions, shape_ops, ufuncs
from functrax.numpy.linalg_decompositions import inv, solve, svdvals
from functrax.numpy.selection import where
from functrax.numpy.promotion import asarray_operand, check_arraylike, promote_dtypes_inexact

__all__ = ["cond", "eig", "eigvals", "tensorinv", "tensorsolve"]


def _square(fun_name, a):
    check_arraylike(f"functrax.numpy.linalg.{fun_name}", a)
    a, = promote_dtypes_inexact(asarray_operand(a))
    a = asarray_operand(a)
    shape = core.get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"functrax.numpy.linalg.{fun_name}: the input must be a (batch of) "
                         f"square matrices [..., n, n]; got shape {shape}")
    return a


def eig(a):
    """The eigenvalues and right eigenvectors of general square matrices ``[..., n, n]``.

    Returns:
      ``(w, v)``: complex eigenvalues ``[..., n]`` and eigenvectors ``[..., n, n]`` (columns,
      unit 2-norm), so that ``a @ v = v * w[..., None, :]``. Only the eigenvalues are
      differentiable (as JAX).

    >>> import functrax.numpy as fnp
    >>> w, v = fnp.linalg.eig(fnp.array([[2.0, 0.0], [0.0, 3.0]]))
    >>> w
    Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    w, v = lax_linalg.eig(_square("eig", a), compute_left_eigenvectors=False)
    return w, v


def eigvals(a):
    """The (complex) eigenvalues of general square matrices ``[..., n, n]``.

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.eigvals(fnp.array([[0.0, 1.0], [-1.0, 0.0]]))
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    return lax_linalg.eig(_square("eigvals", a), compute_left_eigenvectors=False,
                          compute_right_eigenvectors=False)[0]


def cond(x, p=None):
    """The condition number of square matrices in the norm ``p`` (None/2/-2: from the singular
    values; 1, -1, inf, -inf, 'fro', 'nuc': ``norm(x, p) * norm(inv(x), p)``). A NaN that
    comes from a singular matrix (not from a NaN input) becomes inf, as JAX.

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.cond(fnp.array([[1.0, 0.0], [0.0, 4.0]]))
    Array(4., dtype=float32)
    """
    from functrax.numpy.linalg import norm  # noqa: PLC0415 - linalg imports this module
    x = _square("cond", x)
    if p is None or p == 2:
        s = svdvals(x)
        r = s[..., 0] / s[..., -1]
    elif p == -2:
        s = svdvals(x)
        r = s[..., -1] / s[..., 0]
    else:
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    nan_input = reductions.any(ufuncs.isnan(x), axis=(-2, -1))
    return where(ufuncs.isnan(r) & ~nan_input, np.inf, r)


def tensorinv(a, ind=2):
    """The inverse of a tensor for ``tensordot`` over its first ``ind`` axes: the result
    ``b`` has shape ``a.shape[ind:] + a.shape[:ind]`` and ``tensordot(b, a, ind)`` is the
    identity.

    Raises:
      ValueError: when ``ind`` is not positive or ``prod(a.shape[:ind]) !=
        prod(a.shape[ind:])``.

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.tensorinv(fnp.eye(4).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    check_arraylike("functrax.numpy.linalg.tensorinv", a)
    a, = promote_dtypes_inexact(asarray_operand(a))
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"functrax.numpy.linalg.tensorinv: ind must be a positive integer; "
                         f"got ind={ind}")
    shape = core.get_aval(a).shape
    head, tail = shape[:ind], shape[ind:]
    if math.prod(head) != math.prod(tail):
        raise ValueError("functrax.numpy.linalg.tensorinv is only possible when the product of "
                         f"the first `ind` dimensions equals that of the remaining dimensions; "
                         f"got a.shape={shape}, ind={ind}")
    flat = shape_ops.reshape(a, (math.prod(head), math.prod(tail)))
    return shape_ops.reshape(inv(flat), (*tail, *head))


def tensorsolve(a, b, axes=None):
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x`` (of shape ``a.shape[b.ndim:]``).

    Args:
      a: the coefficient tensor; ``a.shape[:b.ndim]`` must equal ``b.shape``.
      b: the right-hand side.
      axes: axes of ``a`` to move to the end before solving (as numpy).

    >>> import functrax.numpy as fnp
    >>> fnp.linalg.tensorsolve(fnp.eye(6).reshape(2, 3, 6), fnp.ones((2, 3))).shape
    (6,)
    """
    check_arraylike("functrax.numpy.linalg.tensorsolve", a, b)
    a, b = promote_dtypes_inexact(asarray_operand(a), asarray_operand(b))
    if axes is not None:
        axes = tuple(axes)
        a = shape_ops.moveaxis(a, axes, tuple(range(np.ndim(a) - len(axes), np.ndim(a))))
    a_shape, b_shape = core.get_aval(a).shape, core.get_aval(b).shape
    out_shape = a_shape[len(b_shape):]
    if a_shape[:len(b_shape)] != b_shape:
        raise ValueError("functrax.numpy.linalg.tensorsolve: b.shape must match "
                         f"a.shape[:b.ndim]; got a.shape={a_shape}, b.shape={b_shape}")
    if math.prod(out_shape) != math.prod(b_shape):
        raise ValueError("functrax.numpy.linalg.tensorsolve requires prod(a.shape[b.ndim:]) == "
                         f"prod(a.shape[:b.ndim]); got a.shape={a_shape}, b.ndim={len(b_shape)}")
    n = math.prod(b_shape)
    x = solve(shape_ops.reshape(a, (n, n)), shape_ops.reshape(b, (n,)))
    return shape_ops.reshape(x, out_shape)
