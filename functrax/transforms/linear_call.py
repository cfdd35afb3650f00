"""``linear_call``: call a linear function with a custom transpose (JAX's
``jax.custom_derivatives.linear_call``).

``linear_call(callee, transpose, residual_args, linear_args)`` evaluates
``callee(residual_args, linear_args)``; the function is taken to be linear in
``linear_args``. Its JVP applies ``callee`` to the tangents of ``linear_args`` (the residuals
are not differentiated); transposing it applies ``transpose(residual_args, cotangents)``, as
another ``linear_call`` whose transpose is ``callee`` again (so it transposes twice). Both
functions are traced when ``linear_call`` is called and held by the primitive as jaxprs.
"""
from __future__ import annotations

from functrax import core
from functrax.core.tracing import fun_name
from functrax.primitives.calls import linear_call_p
from functrax.transforms.batching import AxisData, batch_jaxpr, matchaxis, moveaxis, vmap_rules
from functrax.transforms.call_util import closure_convert, trace_subjaxpr
from functrax.transforms.jvp import Zero, instantiate, jvp_rules
from functrax.transforms.transpose import is_undefined, transpose_rules
from functrax.tree_util import tree_flatten, tree_unflatten


def linear_call(callee, transpose, residual_args, linear_args):
    """Call ``callee(residual_args, linear_args)``, a function linear in ``linear_args``,
    with ``transpose(residual_args, cotangents) -> linear_args cotangents`` as its transpose.

    Args:
      callee: the linear function.
      transpose: its transpose; gets the residuals and a cotangent shaped like ``callee``'s
        output, returns a value shaped like ``linear_args``.
      residual_args: pytree of the values the functions use non-linearly.
      linear_args: pytree of the linear operands.

    Returns:
      ``callee(residual_args, linear_args)``.

    Raises:
      TypeError: when ``transpose``'s output does not match ``linear_args`` (structure or
        types).

    >>> import functrax, functrax.numpy as fnp
    >>> f = lambda x: linear_call(lambda r, x: r * x, lambda r, t: 2.0 * r * t, 3.0, x)
    >>> functrax.grad(f)(1.0)
    Array(6., dtype=float32, weak_type=True)
    """
    res_leaves, res_tree = tree_flatten(residual_args)
    lin_leaves, lin_tree = tree_flatten(linear_args)
    f_closed, f_consts, _, _, out_tree = trace_subjaxpr(
        lambda r, x: callee(r, x), (residual_args, linear_args))
    out_avals = f_closed.out_avals[:]
    ct_example = tree_unflatten(out_tree, [core.ShapedArray(a.shape, a.dtype)
                                           for a in out_avals])
    res_avals = [core.get_aval(r) for r in res_leaves]
    t_closed, t_consts, t_out_tree = _trace_transpose(transpose, res_tree, res_avals,
                                                      out_tree, out_avals)
    lin_avals = [core.get_aval(x).strip_weak_type() for x in lin_leaves]
    t_avals = [a.strip_weak_type() for a in t_closed.out_avals]
    if t_out_tree != lin_tree or [(a.shape, a.dtype) for a in t_avals] != [
            (a.shape, a.dtype) for a in lin_avals]:
        raise TypeError(f"transpose output pytree structure must match that of linear "
                        f"inputs, got output structure {t_out_tree} "
                        f"({[a.str_short() for a in t_avals]}) and linear inputs "
                        f"{lin_tree} ({[a.str_short() for a in lin_avals]}) "
                        f"(transpose function {fun_name(transpose)})")
    del ct_example
    outs = linear_call_p.bind(*f_consts, *t_consts, *res_leaves, *lin_leaves,
                              callee=f_closed, transpose=t_closed,
                              num_callee_consts=len(f_consts),
                              num_transpose_consts=len(t_consts), num_res=len(res_leaves))
    return tree_unflatten(out_tree, outs)


def _trace_transpose(transpose, res_tree, res_avals, out_tree, out_avals):
    from functrax.core.tracing import trace_to_jaxpr
    n_res = len(res_avals)
    box = []

    def flat(*leaves):
        r = tree_unflatten(res_tree, list(leaves[:n_res]))
        ct = tree_unflatten(out_tree, list(leaves[n_res:]))
        out_leaves, tree = tree_flatten(transpose(r, ct))
        box.append(tree)
        return out_leaves
    closed = trace_to_jaxpr(flat, list(res_avals) + [a.strip_weak_type() for a in out_avals])
    closed, consts = closure_convert(closed)
    return closed, consts, box[0]


def _split(args, num_callee_consts, num_transpose_consts, num_res):
    nf, nt = num_callee_consts, num_transpose_consts
    return (list(args[:nf]), list(args[nf:nf + nt]), list(args[nf + nt:nf + nt + num_res]),
            list(args[nf + nt + num_res:]))


def _linear_call_jvp(primals, tangents, *, callee, transpose, num_callee_consts,
                     num_transpose_consts, num_res):
    params = dict(callee=callee, transpose=transpose, num_callee_consts=num_callee_consts,
                  num_transpose_consts=num_transpose_consts, num_res=num_res)
    n_known = num_callee_consts + num_transpose_consts + num_res
    outs = linear_call_p.bind(*primals, **params)
    lin_t = tangents[n_known:]
    if all(type(t) is Zero for t in lin_t):
        return outs, [Zero.from_value(o) for o in outs]
    t_outs = linear_call_p.bind(*primals[:n_known], *[instantiate(t) for t in lin_t],
                                **params)
    return outs, t_outs


def _linear_call_transpose(cts, *args, callee, transpose, num_callee_consts,
                           num_transpose_consts, num_res):
    f_consts, t_consts, res, lin = _split(args, num_callee_consts, num_transpose_consts,
                                          num_res)
    if any(is_undefined(x) for x in f_consts + t_consts + res):
        raise ValueError("linear_call: the residual arguments of a linear_call must not be "
                         "linear (transposed) values")
    cts = [instantiate(c) for c in cts]
    cts_in = linear_call_p.bind(*t_consts, *f_consts, *res, *cts, callee=transpose,
                                transpose=callee, num_callee_consts=num_transpose_consts,
                                num_transpose_consts=num_callee_consts, num_res=num_res)
    return [None] * (len(args) - len(lin)) + list(cts_in)


def _linear_call_vmap(axis: AxisData, vals, dims, *, callee, transpose, num_callee_consts,
                      num_transpose_consts, num_res):
    # residuals and consts keep their batching (moved to axis 0); the linear operands and
    # the outputs (so the cotangents and the transpose's outputs) are all batched at 0
    n_known = num_callee_consts + num_transpose_consts + num_res
    vals = [v if d is None or d == 0 else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    dims = [None if d is None else 0 for d in dims]
    vals = vals[:n_known] + [matchaxis(axis.size, d, 0, v)
                             for v, d in zip(vals[n_known:], dims[n_known:])]
    dims = dims[:n_known] + [0] * (len(vals) - n_known)
    f_c, t_c, res, lin = _split(vals, num_callee_consts, num_transpose_consts, num_res)
    fd, td, rd, ld = _split(dims, num_callee_consts, num_transpose_consts, num_res)

    def place(i, v, d):
        return matchaxis(axis.size, d, 0, v)
    f_b, _ = batch_jaxpr(callee, axis, fd + rd + ld, place)
    t_b, _ = batch_jaxpr(transpose, axis, td + rd + [0] * len(callee.out_avals), place)
    f_b, f_extra = closure_convert(f_b)
    t_b, t_extra = closure_convert(t_b)
    outs = linear_call_p.bind(*f_extra, *f_c, *t_extra, *t_c, *res, *lin, callee=f_b,
                              transpose=t_b, num_callee_consts=len(f_extra) + len(f_c),
                              num_transpose_consts=len(t_extra) + len(t_c), num_res=len(res))
    return outs, [0] * len(outs)


jvp_rules[linear_call_p] = _linear_call_jvp
transpose_rules[linear_call_p] = _linear_call_transpose
vmap_rules[linear_call_p] = _linear_call_vmap

__all__ = ["linear_call"]
