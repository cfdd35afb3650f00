"""The differentiation API over pytrees: jvp, linearize, vjp, grad, value_and_grad,
fwd_and_bwd, linear_transpose (the Jacobians are in ``jacobians.py``, the dtype rules of
``holomorphic`` / ``allow_int`` in ``holomorphic.py``, the returned pytree functions in
``vjp_function.py``)."""
from __future__ import annotations

import functools
import operator

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.transforms.ad import jvp_flat, linearize_flat
from functrax.transforms import holomorphic as H
from functrax.transforms.jvp import Zero, instantiate, tangent_aval
from functrax.transforms.vjp_function import make_linearized, make_vjp
from functrax.core.tracing import _leaf_aval, fun_name, fun_source
from functrax.tree_util import Partial, tree_flatten, tree_leaves, tree_unflatten


class _OutInfo:
    """Filled in while a flat function runs: output structure and aux structure/count."""
    out_tree = aux_tree = None
    n_out = 0

    def split(self, outs):
        """(outputs, aux pytree or None) from a flat list ending with the aux leaves."""
        aux = tree_unflatten(self.aux_tree, outs[self.n_out:]) if self.aux_tree else None
        return list(outs[:self.n_out]), aux


def _flat_fun(fun, in_tree, has_aux, info: _OutInfo):
    """``fun`` as a function of flat leaves returning flat outputs; aux leaves are appended
    as extra outputs (so they leave the transformation as plain values, never tracers)."""
    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        aux_leaves = []
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"{fun_name(fun)} was called with has_aux=True, so it must "
                                f"return a pair (output, aux), got {type(out).__name__}")
            out, aux = out
            aux_leaves, info.aux_tree = tree_flatten(aux)
        leaves_out, info.out_tree = tree_flatten(out)
        info.n_out = len(leaves_out)
        return leaves_out + aux_leaves
    return flat


def _zeros_for(t):
    return instantiate(t) if type(t) is Zero else t


def _check_jvp_args(primals, tangents):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to functrax.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError("primal and tangent arguments to functrax.jvp must have the same tree "
                        f"structure; primals have tree structure {p_tree} whereas tangents "
                        f"have tree structure {t_tree}.")
    for p, t in zip(p_leaves, t_leaves):
        pa, ta = core.get_aval(p), core.get_aval(t)
        want = tangent_aval(pa)
        if pa.shape != ta.shape:
            raise ValueError("functrax.jvp called with different primal and tangent shapes; "
                             f"Got primal shape {pa.shape} and tangent shape as {ta.shape}")
        if ta.dtype != want.dtype:
            raise TypeError("primal and tangent arguments to functrax.jvp do not match; dtypes "
                            "must be equal, or in case of int/bool primal dtype the tangent "
                            "dtype must be float0. Got primal dtype "
                            f"{pa.dtype.name} and so expected tangent dtype {want.dtype}, but "
                            f"got tangent dtype {ta.dtype.name} instead.")
    return p_leaves, t_leaves, p_tree


def jvp(fun, primals, tangents, has_aux=False):
    """Jacobian-vector product: ``(fun(*primals), J @ tangents)``.

    Args:
      fun: function of arrays (pytrees allowed).
      primals: tuple/list of arguments.
      tangents: tuple/list with the same structure, shapes and (tangent) dtypes.
      has_aux: ``fun`` returns ``(out, aux)``; aux is returned unchanged as a third value.

    Raises:
      TypeError / ValueError: when tangents do not match primals (structure, shape, dtype).

    >>> import functrax.numpy as fnp
    >>> jvp(fnp.sin, (0.0,), (1.0,))
    (Array(0., dtype=float32, weak_type=True), Array(1., dtype=float32, weak_type=True))
    """
    p_leaves, t_leaves, in_tree = _check_jvp_args(primals, tangents)
    t_leaves = [Zero(tangent_aval(core.get_aval(p))) if core.get_aval(t).dtype == dtypes.float0
                else t for p, t in zip(p_leaves, t_leaves)]
    info = _OutInfo()
    outs, t_outs = jvp_flat(_flat_fun(fun, in_tree, has_aux, info), p_leaves, t_leaves)
    outs, aux = info.split(outs)
    res = (tree_unflatten(info.out_tree, outs),
           tree_unflatten(info.out_tree, [_zeros_for(t) for t in t_outs[:info.n_out]]))
    return res + (aux,) if has_aux else res


def argnums_split(fun_label, args, argnums):
    """The positions ``argnums`` selects among ``args`` (normalized, in order).

    Raises:
      TypeError: JAX's message when ``argnums`` refers to a positional argument the caller
        did not pass.
    """
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums and not isinstance(argnums, int):
        raise ValueError(f"{fun_label}: argnums must not be empty")
    nums = tuple(operator.index(i) for i in nums)
    top = max(nums)
    if top >= len(args) or min(nums) < -len(args):
        need = top + 1 if top >= 0 else -min(nums)
        raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                        f"{need} positional arguments to be passed by the caller, but got only "
                        f"{len(args)} positional arguments.")
    return [i % len(args) for i in nums]


def partial_in(fun, args, nums):
    """``fun`` as a function of the arguments at positions ``nums`` only."""
    def f(*dyn):
        full = list(args)
        for i, d in zip(nums, dyn):
            full[i] = d
        return fun(*full)
    return f


def _fun_src(fun) -> str:
    src = fun_source(fun)
    return f"{fun_name(fun)} at {src}" if src else fun_name(fun)


def linearize(fun, *primals, has_aux=False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` applies the linearization.

    ``f_jvp`` is a :class:`~functrax.tree_util.Partial` whose leaves are the residuals (it can
    cross ``jit`` boundaries); integer inputs take float0 tangents. ``f_jvp.out_nzs`` says
    which outputs have a non-zero tangent.

    Raises:
      TypeError / ValueError: (from ``f_jvp``) tangents whose structure or types do not
        match the primals.

    >>> import functrax.numpy as fnp
    >>> y, f_jvp = linearize(fnp.sin, 0.0)
    >>> f_jvp(2.0)
    Array(2., dtype=float32)
    """
    leaves, in_tree = tree_flatten(primals)
    info = _OutInfo()
    outs, linear = linearize_flat(_flat_fun(fun, in_tree, has_aux, info), leaves)
    outs, aux = info.split(outs)
    f_jvp = make_linearized(linear, in_tree, info.out_tree, info.n_out,
                            [core.get_aval(x) for x in leaves])
    out = tree_unflatten(info.out_tree, outs)
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def vjp(fun, *primals, has_aux=False, reduce_axes=()):
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(cotangent) -> tuple of input cotangents``.

    ``vjp_fn`` is a :class:`~functrax.transforms.vjp_function.VJP`: a pytree whose leaves are
    the residuals, so it can be passed to and returned from jitted functions. Integer and
    boolean inputs get float0 cotangents.

    Raises:
      ValueError: (from ``vjp_fn``) a cotangent whose structure or types do not match the
        output (JAX's messages).

    >>> import functrax.numpy as fnp
    >>> y, f_vjp = vjp(fnp.sin, 0.0)
    >>> f_vjp(1.0)
    (Array(1., dtype=float32, weak_type=True),)
    """
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to vjp is deprecated")
    leaves, in_tree = tree_flatten(primals)
    info = _OutInfo()
    outs, linear = linearize_flat(_flat_fun(fun, in_tree, has_aux, info), leaves)
    outs, aux = info.split(outs)
    f_vjp = make_vjp(linear, in_tree, info.out_tree, info.n_out,
                     [core.get_aval(x) for x in leaves], [core.get_aval(o) for o in outs],
                     _fun_src(fun))
    out = tree_unflatten(info.out_tree, outs)
    return (out, f_vjp, aux) if has_aux else (out, f_vjp)


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    """``fun`` and its gradient w.r.t. the ``argnums`` arguments, in one pass.

    Args:
      fun: scalar-valued function (pytree inputs allowed).
      argnums: int or tuple of ints: the positional argument(s) to differentiate.
      has_aux: ``fun`` returns ``(out, aux)``.
      holomorphic: ``fun`` is holomorphic: inputs and output must be complex; the gradient
        is the complex derivative ``f'(z)``.
      allow_int: allow integer/boolean inputs (their gradient is a float0 zero).

    Returns:
      A function returning ``(value, grad)`` (``((value, aux), grad)`` with has_aux).

    Raises:
      TypeError: JAX's messages for non-scalar or non-float outputs, integer inputs without
        ``allow_int``, real values with ``holomorphic=True``, or missing arguments.

    >>> value_and_grad(lambda x: x ** 2)(3.0)
    (Array(9., dtype=float32, weak_type=True), Array(6., dtype=float32, weak_type=True))
    """
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to grad is deprecated")

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = argnums_split("grad", args, argnums)
        dyn = [args[i] for i in nums]
        for leaf in tree_leaves(dyn):
            H.check_input_revderiv("grad", holomorphic, allow_int, leaf)
        f = partial_in(lambda *a: fun(*a, **kwargs), args, nums)
        if has_aux:
            out, f_vjp, aux = vjp(f, *dyn, has_aux=True)
        else:
            out, f_vjp = vjp(f, *dyn)
        H.check_scalar(out)
        H.check_output_revderiv("grad", holomorphic, out)
        g = f_vjp(H.one_cotangent(out))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        return ((out, aux), g) if has_aux else (out, g)

    return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of scalar-valued ``fun`` w.r.t. argument(s) ``argnums``.

    Args: as :func:`value_and_grad`.

    Raises:
      TypeError: for non-scalar or non-float outputs ("grad requires real-valued outputs
        ...; for holomorphic differentiation, pass holomorphic=True"), and for integer
        inputs unless ``allow_int=True`` (then their gradient is a float0 zero).

    >>> import functrax.numpy as fnp
    >>> grad(lambda x: x ** 3)(2.0)
    Array(12., dtype=float32, weak_type=True)
    >>> grad(lambda z: z * z, holomorphic=True)(fnp.complex64(1 + 1j))
    Array(2.+2.j, dtype=complex64)
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
    """The forward and backward passes of ``fun`` as two functions (JAX 0.10's
    ``jax.fwd_and_bwd``): ``fwd(*args)`` returns ``(primals_out, residuals)`` (and ``aux``
    with has_aux) like ``vjp``; ``bwd(residuals, cotangent)`` returns the cotangents of the
    ``argnums`` arguments (one value for an int ``argnums``, else a tuple).

    With ``jitted=True`` (the default) both are jitted: the residuals (a :class:`VJP`
    pytree) returned by the jitted ``fwd`` have the same structure on every call, so the
    jitted ``bwd`` compiles once.

    >>> import functrax.numpy as fnp
    >>> fwd, bwd = fwd_and_bwd(lambda x, w: x @ w, argnums=(0, 1))
    >>> y, res = fwd(fnp.ones((2, 2)), fnp.ones((2, 2)))
    >>> [c.shape for c in bwd(res, fnp.ones((2, 2)))]
    [(2, 2), (2, 2)]
    """
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")

    def fwd(*args, **kwargs):
        nums = argnums_split("fwd_and_bwd", args, argnums)
        f = partial_in(lambda *a: fun(*a, **kwargs), args, nums)
        return vjp(f, *[args[i] for i in nums], has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        g = f_vjp(outgrad)
        return g[0] if isinstance(argnums, int) else g

    if jitted:
        from functrax.transforms.jit import jit
        return jit(fwd), jit(bwd)
    return fwd, bwd


def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of linear ``fun``; ``primals`` only give shapes and dtypes.

    The function is staged as it is (no JVP), every input unknown, then transposed. The
    result is a :class:`~functrax.tree_util.Partial` (its leaves are the constants of the
    linear function) whose outputs have exactly the dtypes of ``primals``.

    Raises:
      TypeError: for functions that are not float/complex -> float/complex or
        integer -> integer (JAX's message), and for cotangents not matching the output.

    >>> import functrax.numpy as fnp
    >>> f_t = linear_transpose(lambda x: 2.0 * x, fnp.ones(2))
    >>> f_t(fnp.ones(2))
    (Array([2., 2.], dtype=float32),)
    """
    from functrax.transforms.partial_eval import PartialEvalTrace
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    leaves, in_tree = tree_flatten(primals)
    avals = [_leaf_aval(x, f"primals[{i}]") for i, x in enumerate(leaves)]
    info = _OutInfo()
    pe = PartialEvalTrace(core.current_trace())
    try:
        ins = [pe.new_arg(a) for a in avals]
        with core.set_current_trace(pe):
            outs = [pe.make_unknown(o) if not pe.is_unknown(o) else o
                    for o in _flat_fun(fun, in_tree, False, info)(*ins)]
        closed = pe.to_jaxpr(outs)
    finally:
        pe.invalidate()
    _check_linear_dtypes([a.dtype for a in avals], [a.dtype for a in closed.out_avals])
    t = _Transposed(closed.jaxpr, in_tree, info.out_tree, avals)
    return Partial(t, list(closed.consts))


def _check_linear_dtypes(in_dtypes, out_dtypes):
    all_dt = list(in_dtypes) + list(out_dtypes)
    if not (all(dtypes.is_inexact(d) for d in all_dt)
            or all(dtypes.issubdtype(d, np.integer) for d in all_dt)):
        raise TypeError("linear_transpose only supports [float or complex] -> [float or "
                        "complex], and integer -> integer functions, but got "
                        f"{[np.dtype(d) for d in in_dtypes]} -> "
                        f"{[np.dtype(d) for d in out_dtypes]}.")


class _Transposed:
    """The static part of ``linear_transpose``'s function."""

    def __init__(self, jaxpr, in_tree, out_tree, in_avals):
        self.jaxpr, self.in_tree, self.out_tree = jaxpr, in_tree, out_tree
        self.in_avals, self.out_avals = in_avals, [v.aval for v in jaxpr.outvars]

    def __call__(self, consts, ct):
        from functrax.transforms.transpose import backward_pass
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != self.out_tree:
            raise TypeError("cotangent tree does not match function output, expected "
                            f"{self.out_tree} but got {ct_tree}")
        for c, a in zip(ct_leaves, self.out_avals):
            ca = core.get_aval(c)
            if ca.shape != a.shape or not (ca.dtype == a.dtype or ca.weak_type):
                raise TypeError("cotangent type does not match function output, expected "
                                f"{[x.str_short() for x in self.out_avals]} but got "
                                f"{[core.get_aval(x).str_short() for x in ct_leaves]}")
        cts = backward_pass(self.jaxpr, list(consts), ct_leaves)
        return tree_unflatten(self.in_tree, [_exact_dtype(_zeros_for(c), a)
                                             for c, a in zip(cts, self.in_avals)])


def _exact_dtype(x, aval):
    xa = core.get_aval(x)
    if xa.dtype == aval.dtype and xa.weak_type == aval.weak_type:
        return x
    if dtypes.issubdtype(xa.dtype, np.complexfloating) and not dtypes.issubdtype(
            aval.dtype, np.complexfloating):
        x = P.real(x)
    return P.convert_element_type(x, aval.dtype, aval.weak_type)


__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "fwd_and_bwd",
           "linear_transpose"]
