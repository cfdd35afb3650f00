"""Gradient checking against finite differences (as ``jax.test_util``).

:func:`check_grads` checks forward mode (JVPs against central differences along random
directions) and reverse mode (``<u, VJP(v)> == <JVP(u), v>`` for random ``u``, ``v``), and
recurses to check the derivatives of the JVP/VJP functions themselves for ``order > 1``.
Checks run with ``enable_x64`` turned on (the flag is restored afterwards), so float64
arguments are checked in float64, which finite differences need.

>>> import numpy as np
>>> import functrax.numpy as fnp
>>> check_grads(fnp.sin, (np.array([0.5, 1.0]),), order=2)
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np

from functrax import core, dtypes
from functrax.config import config
from functrax.transforms.grad import jvp as _jvp
from functrax.transforms.grad import vjp as _vjp
from functrax.tree_util import tree_flatten, tree_map

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp", "enable_x64", "EPS"]

EPS = 1e-4

_BF16 = [np.dtype(dtypes.bfloat16)] if getattr(dtypes, "bfloat16", None) is not None else []
default_gradient_tolerance = {
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 2e-3,
    np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3,
    np.dtype(np.complex128): 1e-5,
    **{d: 1e-1 for d in _BF16},
}


@contextlib.contextmanager
def enable_x64(enabled: bool = True):
    """Temporarily set the ``enable_x64`` flag (restored on exit).

    >>> with enable_x64():
    ...     import functrax.numpy as fnp
    ...     fnp.zeros(2, "float64").dtype
    dtype('float64')
    """
    old = config.enable_x64
    config.update("enable_x64", enabled)
    try:
        yield
    finally:
        config.update("enable_x64", old)


# --- pytrees of values ---


def _np(x):
    return np.asarray(x)


def _is_inexact(x) -> bool:
    return dtypes.is_inexact(core.get_aval(x).dtype)


def _is_float0(x) -> bool:
    return core.get_aval(x).dtype == dtypes.float0


def _to_arg(x):
    """numpy values become functrax Arrays (keeping their dtype); others pass through."""
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype != dtypes.float0:
        from functrax import numpy as fnp
        return fnp.asarray(x)
    return x


def _rand_like(rng, x):
    """A random tangent for ``x``: normal for floats, complex normal for complex values,
    a float0 zero for integer and boolean values (which have no tangent space)."""
    aval = core.get_aval(x)
    if not _is_inexact(x):
        return np.zeros(aval.shape, dtypes.float0)
    dt = np.dtype(aval.dtype)
    val = np.asarray(rng.randn(*aval.shape), dt)
    if dtypes.issubdtype(dt, np.complexfloating):
        val = val + dt.type(1j) * np.asarray(rng.randn(*aval.shape), dt)
    return val


def _perturb(x, t, scale):
    if _is_float0(t) or not _is_inexact(x):
        return x
    xv = _np(x)
    return _to_arg(np.asarray(xv + scale * _np(t), xv.dtype))


def numerical_jvp(f, primals, tangents, eps=EPS):
    """Central differences ``(f(x + eps t) - f(x - eps t)) / (2 eps)`` (float64 numpy)."""
    f_pos = f(*tree_map(lambda x, t: _perturb(x, t, eps), primals, tangents))
    f_neg = f(*tree_map(lambda x, t: _perturb(x, t, -eps), primals, tangents))

    def diff(a, b):
        if not _is_inexact(a):
            return np.zeros(core.get_aval(a).shape, dtypes.float0)
        a, b = _np(a), _np(b)
        wide = np.complex128 if a.dtype.kind == "c" else np.float64
        return (a.astype(wide) - b.astype(wide)) * (0.5 / eps)
    return tree_map(diff, f_pos, f_neg)


def _tolerance(dtype, tol, default):
    dtype = np.dtype(dtype)
    if tol is None:
        return default.get(dtype, 0)
    if isinstance(tol, dict):
        merged = {np.dtype(k): v for k, v in tol.items()}
        return merged.get(dtype, default.get(dtype, 0))
    return tol


def check_close(xs, ys, atol=None, rtol=None, err_msg=""):
    """Assert that two pytrees of arrays are close (float0 leaves are skipped).

    As JAX, the per-dtype tolerance is scaled by the number of elements.
    """
    x_leaves, x_tree = tree_flatten(xs)
    y_leaves, y_tree = tree_flatten(ys)
    if x_tree != y_tree:
        raise AssertionError(f"{err_msg}: tree structures differ: {x_tree} vs {y_tree}")
    for a, b in zip(x_leaves, y_leaves):
        if _is_float0(a) or _is_float0(b):
            continue
        a, b = _np(a), _np(b)
        if a.shape != b.shape:
            raise AssertionError(f"{err_msg}: shapes differ: {a.shape} vs {b.shape}")
        at = max(_tolerance(a.dtype, atol, default_gradient_tolerance),
                 _tolerance(b.dtype, atol, default_gradient_tolerance))
        rt = max(_tolerance(a.dtype, rtol, default_gradient_tolerance),
                 _tolerance(b.dtype, rtol, default_gradient_tolerance))
        wide = np.complex128 if "c" in (a.dtype.kind, b.dtype.kind) else np.float64
        np.testing.assert_allclose(a.astype(wide), b.astype(wide), atol=at * max(a.size, 1),
                                   rtol=rt * max(b.size, 1), err_msg=err_msg)


def _inner_prod(xs, ys):
    """The real inner product, summed in float64 and typed as the leaves are (as JAX's
    ``vdot`` of float32 values is float32, so float32 tolerances apply to it)."""
    total, dts = 0.0, []
    for x, y in zip(tree_flatten(xs)[0], tree_flatten(ys)[0]):
        if _is_float0(x) or _is_float0(y):
            continue
        x, y = _np(x), _np(y)
        dts += [x.dtype, y.dtype]
        x, y = x.astype(np.complex128), y.astype(np.complex128)
        total += float(np.real(np.dot(np.conj(x).reshape(-1), y.reshape(-1))))
    dt = np.result_type(*dts) if dts else np.dtype(np.float64)
    return np.asarray(total, np.float64 if dt.kind not in "fc" else
                      np.finfo(dt).dtype if dt.kind == "c" else dt)


def _conj(tree):
    return tree_map(lambda x: np.conj(_np(x)) if core.get_aval(x).dtype.kind == "c" else x,
                    tree)


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check ``f_jvp(args, tangents) -> (f(*args), J @ tangents)`` against finite
    differences along one random direction.

    Args:
      f: the function, called as ``f(*args)``.
      f_jvp: typically ``functools.partial(functrax.jvp, f)``.
      args: tuple of arguments.
      atol, rtol: tolerances (a number, or a dict from dtype to number); defaults depend
        on the dtype (1e-5 for float64, 2e-3 for float32), scaled by the array size.
      eps: the finite-difference step.

    Raises:
      AssertionError: when the JVP and the finite differences disagree.

    >>> import functools, numpy as np
    >>> import functrax, functrax.numpy as fnp
    >>> with enable_x64():
    ...     check_jvp(fnp.exp, functools.partial(functrax.jvp, fnp.exp), (np.array(0.3),))
    """
    rng = np.random.RandomState(0)
    tangent = tree_map(functools.partial(_rand_like, rng), args)
    v_out, t_out = f_jvp(args, tangent)
    v_expected = f(*args)
    t_expected = numerical_jvp(f, args, tangent, eps=eps)
    check_close(v_out, v_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} primal" if err_msg else "primal")
    check_close(t_out, t_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} tangent" if err_msg else "tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    """Check a VJP against finite differences: ``<u, VJP(v)> == <JVP(u), v>`` for random
    ``u`` (an input direction) and ``v`` (an output cotangent).

    Args:
      f: the function, called as ``f(*args)``.
      f_vjp: typically ``functools.partial(functrax.vjp, f)``.
      args, atol, rtol, eps: as :func:`check_jvp`.

    Raises:
      AssertionError: when the two inner products disagree.

    >>> import functools, numpy as np
    >>> import functrax, functrax.numpy as fnp
    >>> with enable_x64():
    ...     check_vjp(fnp.tanh, functools.partial(functrax.vjp, fnp.tanh), (np.ones(3),))
    """
    rng = np.random.RandomState(0)
    v_out, vjp_fn = f_vjp(*args)
    check_close(v_out, f(*args), atol=atol, rtol=rtol,
                err_msg=f"{err_msg} primal" if err_msg else "primal")
    tangent = tree_map(functools.partial(_rand_like, rng), args)
    tangent_out = numerical_jvp(f, args, tangent, eps=eps)
    cotangent = tree_map(functools.partial(_rand_like, rng), v_out)
    cotangent_out = _conj(vjp_fn(_conj(cotangent)))
    ip = _inner_prod(tangent, cotangent_out)
    ip_expected = _inner_prod(tangent_out, cotangent)
    check_close(ip, ip_expected, atol=atol, rtol=rtol,
                err_msg=f"{err_msg} cotangent projection" if err_msg
                else "cotangent projection")


def _cotangent_for(out):
    """``out`` itself as a cotangent: float0 zeros for its integer/boolean leaves."""
    return tree_map(lambda o: o if _is_inexact(o) else np.zeros(core.get_aval(o).shape,
                                                                 dtypes.float0), out)


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check derivatives of ``f`` up to ``order`` against finite differences.

    Directions are random (seeded), so the cost is a few evaluations per order whatever the
    input and output sizes. ``"fwd"`` checks :func:`functrax.jvp`; ``"rev"`` checks
    :func:`functrax.vjp`; for ``order >= 2`` the JVP/VJP functions are checked in turn.
    Runs with ``enable_x64`` on; pass float64 arguments (``np.float64`` arrays) for
    meaningful finite differences. Integer/boolean arguments are held fixed.

    Args:
      f: function of ``*args`` returning a pytree of arrays.
      args: tuple of arguments (pytrees of numpy/functrax arrays or Python scalars).
      order: 1 checks first derivatives, 2 also second derivatives, ...
      modes: any of ``"fwd"``, ``"rev"``.
      atol, rtol: tolerances (a number or a dict dtype -> number); dtype defaults.
      eps: finite-difference step (default 1e-4).

    Raises:
      AssertionError: naming the failing check ("JVP tangent", "VJP of JVP ...", ...).

    >>> import numpy as np
    >>> import functrax.numpy as fnp
    >>> check_grads(lambda x, y: fnp.sum(x * fnp.sin(y)), (np.ones(3), np.arange(3.0)),
    ...             order=2)
    """
    if isinstance(modes, str):
        modes = (modes,)
    bad = [m for m in modes if m not in ("fwd", "rev")]
    if bad:
        raise ValueError(f"check_grads: unknown modes {bad}; use 'fwd' and/or 'rev'")
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be an int >= 1, got {order!r}")
    eps = eps or EPS

    with enable_x64():
        args = tuple(tree_map(_to_arg, tuple(args)))
        _check_jvp = functools.partial(check_jvp, atol=atol, rtol=rtol, eps=eps)
        _check_vjp = functools.partial(check_vjp, atol=atol, rtol=rtol, eps=eps)

        def _check(f, args, order, err_msg=""):
            if "fwd" in modes:
                fwd_msg = f"JVP of {err_msg}" if err_msg else "JVP"
                _check_jvp(f, functools.partial(_jvp, f), args, err_msg=fwd_msg)
                if order > 1:
                    # the primals double as tangents (float0 for integer arguments)
                    tangents = tree_map(lambda a: a if _is_inexact(a) else np.zeros(
                        core.get_aval(a).shape, dtypes.float0), args)
                    _check(functools.partial(_jvp, f), (args, tangents), order - 1, fwd_msg)
            if "rev" in modes:
                rev_msg = f"VJP of {err_msg}" if err_msg else "VJP"
                _check_vjp(f, functools.partial(_vjp, f), args, err_msg=rev_msg)
                if order > 1:
                    def f_vjp(*a):
                        out, vjp_fn = _vjp(f, *a)
                        return vjp_fn(_cotangent_for(out))
                    _check(f_vjp, args, order - 1, rev_msg)

        _check(f, args, order)

