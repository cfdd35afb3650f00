"""JVP, transpose and vmap rules of the windowed reductions and of ``reduce``, as JAX has them.

- ``reduce_window_sum`` is linear; its transpose pads the cotangent (interior padding of
  ``stride - 1``, edges from the convolution-VJP padding) and sums it over windows again with
  the base dilation as strides (JAX's ``_reduce_window_sum_transpose_rule``).
- ``reduce_window_max`` / ``_min``: the tangent is ``select_and_gather_add(t, x)`` (the
  tangent at each window's first max / min). ``select_and_gather_add`` is linear in its
  tangents (constant in the operand almost everywhere); its transpose is
  ``select_and_scatter_add`` (no window dilation, as JAX: NotImplementedError), whose
  transpose is ``select_and_gather_add`` again -- so max pooling is differentiable to any
  order in both modes.
- the general ``reduce_window``: its JVP is a ``reduce_window`` over (primals, tangents) with
  the JVP of the computation as the computation (JAX's ``reduce_window_jvp``); it is not
  transposable (reverse mode raises JAX's NotImplementedError).
- ``reduce``: the JVP of a pairwise tree of the (vmapped) computation over the reduced
  elements (JAX's ``_reduce_jvp``), transposable like any composition of primitives.
- vmap: the batch dimension becomes a window dimension of size 1 (stride 1, no padding); init
  values must not be batched (JAX's NotImplementedError).
"""
from __future__ import annotations

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.transforms.ad import jvp_flat
from functrax.transforms.batching import bdim_at_front, vmap_rules
from functrax.transforms.jvp import Zero, defjvp, deflinear, instantiate, jvp_rules
from functrax.transforms.transpose import deflinear_transpose, is_undefined, transpose_rules
from functrax.transforms.vmap import vmap

_WINDOW = ("window_strides", "padding", "base_dilation", "window_dilation")


def _shape(x):
    return (x.aval if is_undefined(x) else core.get_aval(x)).shape


# --- reduce_window_sum ---


def _dilate(shape, dilation):
    return tuple(0 if d == 0 else 1 + k * (d - 1) for d, k in zip(shape, dilation))


def _conv_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                          base_dilation, window_dilation):
    """The (low, high) padding that turns the dilated cotangent into the operand's windows
    (JAX's ``_conv_general_vjp_lhs_padding``)."""
    lhs = _dilate(in_shape, base_dilation)
    rhs = _dilate(window_dimensions, window_dilation)
    out = _dilate(out_shape, window_strides)
    before = [r - lo - 1 for r, (lo, _) in zip(rhs, padding)]
    after = [lh + r - 1 - o - b for lh, r, o, b in zip(lhs, rhs, out, before)]
    return list(zip(before, after))


def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    in_shape = x.aval.shape
    pads = _conv_vjp_lhs_padding(in_shape, window_dimensions, window_strides,
                                 core.get_aval(ct).shape, padding, base_dilation,
                                 window_dilation)
    cfg = [(lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides)]
    padded = P.pad(ct, np.zeros((), core.get_aval(ct).dtype)[()], cfg)
    ones = (1,) * len(in_shape)
    out = P.reduce_window_sum(padded, window_dimensions, base_dilation,
                              [(0, 0)] * len(in_shape), ones, window_dilation)
    assert core.get_aval(out).shape == tuple(in_shape), (core.get_aval(out).shape, in_shape)
    return [out]


deflinear(P.reduce_window_sum_p)
deflinear_transpose(P.reduce_window_sum_p, _reduce_window_sum_transpose)

# --- reduce_window_max / _min and max pooling's derivatives ---


def _chooser_jvp(select_prim):
    def tangent(g, x, *, window_dimensions, **params):
        return P.select_and_gather_add(g, x, select_prim, window_dimensions,
                                       *(params[k] for k in _WINDOW))
    return tangent


defjvp(P.reduce_window_max_p, _chooser_jvp(P.ge_p))
defjvp(P.reduce_window_min_p, _chooser_jvp(P.le_p))


def _gather_tangent(g, t, x, **params):
    return P.select_and_gather_add_p.bind(g, x, **params)


def _scatter_tangent(g, source, x, **params):
    return P.select_and_scatter_add_p.bind(g, x, **params)


defjvp(P.select_and_gather_add_p, _gather_tangent, None)
defjvp(P.select_and_scatter_add_p, _scatter_tangent, None)


def _identity_of(select_prim, dtype):
    dtype = np.dtype(dtype)
    big = np.inf if dtypes.is_inexact(dtype) else np.iinfo(dtype).max
    return np.asarray(-big if select_prim is P.ge_p else big, dtype)[()]


def _select_and_gather_add_transpose(ct, t, x, *, select_prim, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation):
    if is_undefined(x):
        raise ValueError("select_and_gather_add is not linear in its operand")
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError(f"VJP not implemented for select_and_gather (MaxPool) with "
                                  f"window dilation, got window_dilation={window_dilation}.")
    dilated = any(d != 1 for d in base_dilation)
    if dilated:  # holes hold the identity: never selected over a real element
        x = P.pad(x, _identity_of(select_prim, core.get_aval(x).dtype),
                  [(0, 0, d - 1) for d in base_dilation])
    out = P.select_and_scatter_add(ct, x, select_prim, window_dimensions, window_strides,
                                   padding)
    if dilated:
        shape = core.get_aval(out).shape
        out = P.slice(out, (0,) * len(shape), shape, base_dilation)
    return [out, None]


def _select_and_scatter_add_transpose(ct, source, x, *, select_prim, window_dimensions,
                                      window_strides, padding):
    if is_undefined(x):
        raise ValueError("select_and_scatter_add is not linear in its operand")
    ones = (1,) * len(window_dimensions)
    return [P.select_and_gather_add(ct, x, select_prim, window_dimensions, window_strides,
                                    padding, ones, ones), None]


deflinear_transpose(P.select_and_gather_add_p, _select_and_gather_add_transpose)
deflinear_transpose(P.select_and_scatter_add_p, _select_and_scatter_add_transpose)

# --- the general reduce_window ---


def _differentiable(x) -> bool:
    return dtypes.is_inexact(core.get_aval(x).dtype)


def _reduce_window_jvp(primals, tangents, *, jaxpr, consts, window_dimensions, **params):
    n = len(primals) // 2
    operands, inits = primals[:n], primals[n:]
    if not all(type(t) is Zero for t in tangents[n:]):
        raise TypeError("reduce_window jvp does not support non-zero init_value_tangent.")
    diff = [i for i, x in enumerate(operands) if _differentiable(x)]
    closed = core.ClosedJaxpr(jaxpr, list(consts))

    def computation(left, right):  # (primals, tangents) pairs through the computation's JVP
        pl, tl = left[:n], left[n:]
        pr, tr = right[:n], right[n:]
        ts = [_tangent_at(i, diff, tl) for i in range(n)] + [
            _tangent_at(i, diff, tr) for i in range(n)]
        outs, t_outs = jvp_flat(lambda *a: core.jaxpr_as_fun(closed)(*a), [*pl, *pr], ts)
        return [*outs, *[instantiate(t_outs[i]) for i in diff]]

    t_ops = [instantiate(tangents[i]) for i in diff]
    zeros = [np.zeros((), core.get_aval(operands[i]).dtype) for i in diff]
    outs = P.reduce_window(list(operands) + t_ops, list(inits) + zeros, computation,
                           window_dimensions, *(params[k] for k in _WINDOW))
    t_out = [Zero.from_value(o) for o in outs[:n]]
    for k, i in enumerate(diff):
        t_out[i] = outs[n + k]
    return outs[:n], t_out


def _tangent_at(i, diff, tangents):
    return tangents[diff.index(i)] if i in diff else Zero(core.ShapedArray((), dtypes.float0))


def _reduce_window_transpose(cts, *args, **params):
    raise NotImplementedError("Transpose rule (for reverse-mode differentiation) for "
                              "'reduce_window' not implemented")


jvp_rules[P.reduce_window_p] = _reduce_window_jvp
transpose_rules[P.reduce_window_p] = _reduce_window_transpose

# --- reduce ---


def _reduce_tree(reducer, inits, xs):
    """Combine the rows of each ``xs[k]`` (shape (n, m)) pairwise with the vmapped
    ``reducer`` until one row is left (an odd row out is paired with the init values)."""
    m = _shape(xs[0])[1]
    while _shape(xs[0])[0] > 1:
        k = _shape(xs[0])[0]
        n1 = (k + 1) // 2
        xs1 = [P.slice_in_dim(x, 0, n1) for x in xs]
        xs2 = [P.slice_in_dim(x, n1, k) for x in xs]
        if k - n1 != n1:
            xs2 = [P.pad(x, i, [(0, 1, 0), (0, 0, 0)]) for x, i in zip(xs2, inits)]
        flat = [P.reshape(x, (n1 * m,)) for x in xs1 + xs2]
        xs = [P.reshape(o, (n1, m)) for o in vmap(reducer)(*flat)]
    if _shape(xs[0])[0] == 0:
        return [P.full((m,), i) for i in inits]
    return [P.reshape(x, (m,)) for x in xs]


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
    n = len(primals) // 2
    xs, inits = primals[:n], primals[n:]
    if not all(type(t) is Zero for t in tangents[n:]):
        raise NotImplementedError("Gradient of general lax.reduce with non-zero tangents for "
                                  "initial values to reduction not implemented")
    shape = _shape(xs[0])
    kept = [i for i in range(len(shape)) if i not in dimensions]
    size = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
    rows = int(np.prod([shape[i] for i in kept], dtype=np.int64))
    perm = tuple(dimensions) + tuple(kept)

    def flat(x):
        return P.reshape(x, (size, rows), dimensions=perm)

    inits = [core.as_array(i) for i in inits]
    reducer = core.jaxpr_as_fun(jaxpr)
    ts = [t if type(t) is Zero else flat(t) for t in tangents[:n]]
    ts = [Zero(core.ShapedArray((size, rows), t.aval.dtype)) if type(t) is Zero else t
          for t in ts]
    outs, t_outs = jvp_flat(lambda *a: _reduce_tree(reducer, inits, list(a)),
                            [flat(x) for x in xs], ts)
    out_shape = tuple(shape[i] for i in kept)
    outs = [P.reshape(o, out_shape) for o in outs]
    t_outs = [Zero(core.ShapedArray(out_shape, t.aval.dtype)) if type(t) is Zero
              else P.reshape(t, out_shape) for t in t_outs]
    return outs, t_outs


jvp_rules[P.reduce_p] = _reduce_jvp

# --- vmap ---


def _insert(params, bdim, value, key):
    v = params[key]
    return v[:bdim] + (value,) + v[bdim:]


def _monoid_vmap(prim):
    def rule(axis, vals, dims, **params):
        x, d = vals[0], dims[0]
        params = dict(params)
        params["window_dimensions"] = _insert(params, d, 1, "window_dimensions")
        params["window_strides"] = _insert(params, d, 1, "window_strides")
        params["padding"] = _insert(params, d, (0, 0), "padding")
        params["base_dilation"] = _insert(params, d, 1, "base_dilation")
        params["window_dilation"] = _insert(params, d, 1, "window_dilation")
        return prim.bind(x, **params), d
    vmap_rules[prim] = rule


for _p in (P.reduce_window_sum_p, P.reduce_window_max_p, P.reduce_window_min_p):
    _monoid_vmap(_p)


def _front(params, keys):
    """``params`` with a leading window dimension of size 1 (the batch) in each of ``keys``."""
    params = dict(params)
    for k in keys:
        params[k] = ((0, 0),) + params[k] if k == "padding" else (1,) + params[k]
    return params


def _two_operand_vmap(prim, keys):
    def rule(axis, vals, dims, **params):
        a, b = (bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims))
        return prim.bind(a, b, **_front(params, keys)), 0
    vmap_rules[prim] = rule


_two_operand_vmap(P.select_and_gather_add_p, ("window_dimensions",) + _WINDOW)
_two_operand_vmap(P.select_and_scatter_add_p, ("window_dimensions", "window_strides",
                                               "padding"))


def _reduce_window_vmap(axis, vals, dims, **params):
    n = len(vals) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce_window batching is not implemented for initial "
                                  "values")
    ops = [bdim_at_front(v, d, axis.size) for v, d in zip(vals[:n], dims[:n])]
    outs = P.reduce_window_p.bind(*ops, *vals[n:], **_front(
        params, ("window_dimensions",) + _WINDOW))
    return outs, [0] * n


def _reduce_vmap(axis, vals, dims, *, computation, jaxpr, dimensions):
    n = len(vals) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce batching is not implemented for initial values "
                                  "(batch the operands only, or loop with lax.map)")
    ops = [bdim_at_front(v, d, axis.size) for v, d in zip(vals[:n], dims[:n])]
    outs = P.reduce_p.bind(*ops, *vals[n:], computation=computation, jaxpr=jaxpr,
                           dimensions=tuple(d + 1 for d in dimensions))
    return outs, [0] * n


vmap_rules.update({P.reduce_window_p: _reduce_window_vmap, P.reduce_p: _reduce_vmap})
