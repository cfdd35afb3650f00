"""JVP, transpose and vmap rules of ``conv_general_dilated``.

- JVP: the convolution is bilinear, so its tangent is ``conv(t_lhs, rhs) + conv(lhs, t_rhs)``.
- Transpose: each cotangent is again one ``conv_general_dilated`` (as JAX's
  ``_conv_general_dilated_transpose_lhs/rhs``). Ignoring spatial dimensions, with ``m`` the
  batch, ``j`` the input and ``k`` the output features, the forward convolution contracts
  ``[m, j] [j, k] -> [m, k]``; the lhs cotangent is ``[m, k] [k, j] -> [m, j]`` (the kernel
  reversed in space, in/out features swapped, strides and lhs dilation exchanged) and the
  rhs cotangent ``[j, m] [m, k] -> [j, k]`` (lhs and cotangent with batch and features
  swapped, strides and rhs dilation exchanged). Feature groups turn into batch groups in the
  rhs cotangent and the other way round; in the lhs cotangent both become feature groups,
  the group axis moved from the kernel's output to its input features.
- vmap: the mapped axis is folded into the batch dimension (lhs mapped), the output features
  (rhs mapped) or, both mapped, into the feature groups (or batch groups): one convolution,
  no loop.
"""
from __future__ import annotations

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.primitives.convolution import ConvDimensionNumbers, dilate_shape
from functrax.transforms.batching import moveaxis, vmap_rules
from functrax.transforms.jvp import defjvp
from functrax.transforms.transpose import deflinear_transpose, is_undefined

_conv = P.conv_general_dilated_p


def _shape(x):
    return core.get_aval(x).shape


def reshape_axis_into(src, dst, x):
    """Merge axis ``src`` of ``x`` into axis ``dst`` (numbered after ``src`` is removed), as
    its major part."""
    shape = _shape(x)
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    return P.reshape(P.transpose(x, perm), new_shape)


def reshape_axis_out_of(src, size1, x):
    """Split axis ``src`` of ``x`` into ``(size1, rest)``."""
    shape = list(_shape(x))
    size2, ragged = divmod(shape[src], size1)
    assert not ragged, (shape, src, size1)
    shape[src:src + 1] = [size1, size2]
    return P.reshape(x, shape)


# --- JVP ---


def _conv_jvp_lhs(t, lhs, rhs, **params):
    return _conv.bind(t, rhs, **params)


def _conv_jvp_rhs(t, lhs, rhs, **params):
    return _conv.bind(lhs, t, **params)


defjvp(_conv, _conv_jvp_lhs, _conv_jvp_rhs)


# --- transpose ---


def _spec_transpose(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _sdims(spec):
    return tuple(spec[2:])


def _take(shape, dims):
    return [int(shape[d]) for d in dims]


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    lhs_d = dilate_shape(in_shape, lhs_dil)
    rhs_d = dilate_shape(window, rhs_dil)
    out_d = dilate_shape(out_shape, strides)
    before = [k - lo - 1 for k, (lo, _) in zip(rhs_d, padding)]
    after = [i + k - 1 - o - b for i, k, o, b in zip(lhs_d, rhs_d, out_d, before)]
    return tuple(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    lhs_d = dilate_shape(in_shape, lhs_dil)
    rhs_d = dilate_shape(window, rhs_dil)
    out_d = dilate_shape(out_shape, strides)
    los = [lo for lo, _ in padding]
    his = [o - i + k - lo - 1 for o, i, k, lo in zip(out_d, lhs_d, rhs_d, los)]
    return tuple(zip(los, his))


def _cast(x, dtype):
    return x if core.get_aval(x).dtype == dtype else P.convert_element_type(x, dtype)


def _transpose_lhs(ct, lhs_aval, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = _shape(rhs)
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:  # the group axis moves from the kernel's output to its input features
        rhs = reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    trans_dn = ConvDimensionNumbers(tuple(out_spec), _spec_transpose(rhs_spec), tuple(lhs_spec))
    pads = _vjp_lhs_padding(_take(lhs_aval.shape, _sdims(lhs_spec)),
                            _take(rhs_shape, _sdims(rhs_spec)), window_strides,
                            _take(_shape(ct), _sdims(out_spec)), padding, lhs_dilation,
                            rhs_dilation)
    rhs = _cast(P.rev(rhs, _sdims(rhs_spec)), core.get_aval(ct).dtype)
    out = _conv.bind(ct, rhs, window_strides=lhs_dilation, padding=pads,
                     lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
                     dimension_numbers=trans_dn, feature_group_count=groups,
                     batch_group_count=1, precision=precision,
                     preferred_element_type=preferred_element_type)
    out = _cast(out, lhs_aval.dtype)
    if batch_group_count > 1:
        out = reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    if int(np.prod(_shape(ct))) == 0:
        return None  # a zero cotangent (no degenerate convolution with an empty kernel)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    trans_dn = ConvDimensionNumbers(_spec_transpose(lhs_spec), _spec_transpose(out_spec),
                                    _spec_transpose(rhs_spec))
    pads = _vjp_rhs_padding(_take(_shape(lhs), _sdims(lhs_spec)),
                            _take(rhs_aval.shape, _sdims(rhs_spec)), window_strides,
                            _take(_shape(ct), _sdims(out_spec)), padding, lhs_dilation,
                            rhs_dilation)
    out = _conv.bind(_cast(lhs, core.get_aval(ct).dtype), ct, window_strides=rhs_dilation,
                     padding=pads, lhs_dilation=lhs_dilation, rhs_dilation=window_strides,
                     dimension_numbers=trans_dn, feature_group_count=batch_group_count,
                     batch_group_count=feature_group_count, precision=precision,
                     preferred_element_type=preferred_element_type)
    return _cast(out, rhs_aval.dtype)


def _conv_general_dilated_transpose(ct, lhs, rhs, **params):
    if is_undefined(lhs) and is_undefined(rhs):
        raise NotImplementedError("conv_general_dilated with two linear operands is not "
                                  "linear")
    if is_undefined(lhs):
        return [_transpose_lhs(ct, lhs.aval, rhs, **params), None]
    return [None, _transpose_rhs(ct, lhs, rhs.aval, **params)]


deflinear_transpose(_conv, _conv_general_dilated_transpose)


# --- vmap ---


def _with_groups(params, feature_group_count, batch_group_count):
    return dict(params, feature_group_count=feature_group_count,
                batch_group_count=batch_group_count)


def _vmap_both(size, lhs, rhs, params):
    # the mapped axis becomes the outer part of the groups: example i, group g is group
    # i * groups + g, its kernels the output features of example i
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    if bgc > 1:
        lhs = reshape_axis_into(0, lhs_spec[0], lhs)
        bgc *= size
    else:
        lhs = reshape_axis_into(0, lhs_spec[1], lhs)
        fgc *= size
    rhs = reshape_axis_into(0, rhs_spec[0], rhs)
    out = _conv.bind(lhs, rhs, **_with_groups(params, fgc, bgc))
    return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]


def _vmap_lhs(size, lhs, rhs, params):
    lhs_spec, _, out_spec = params["dimension_numbers"]
    bgc = params["batch_group_count"]
    if bgc == 1:
        lhs = reshape_axis_into(0, lhs_spec[0], lhs)
    else:  # the batch groups stay outermost: batch = (groups, examples, batch per group)
        n = lhs_spec[0] + 1
        lhs = reshape_axis_out_of(n, bgc, lhs)
        lhs = reshape_axis_into(0, n, lhs)
        lhs = reshape_axis_into(lhs_spec[0], lhs_spec[0], lhs)
    out = _conv.bind(lhs, rhs, **params)
    return reshape_axis_out_of(out_spec[0], size, out), out_spec[0]


def _vmap_rhs(size, lhs, rhs, params):
    _, rhs_spec, out_spec = params["dimension_numbers"]
    groups = max(params["feature_group_count"], params["batch_group_count"])
    if groups == 1:
        rhs = reshape_axis_into(0, rhs_spec[0], rhs)
        out = _conv.bind(lhs, rhs, **params)
        return reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    # groups outermost: output features = (groups, examples, features per group)
    o = rhs_spec[0] + 1
    rhs = reshape_axis_out_of(o, groups, rhs)
    rhs = reshape_axis_into(0, o, rhs)
    rhs = reshape_axis_into(rhs_spec[0], rhs_spec[0], rhs)
    out = _conv.bind(lhs, rhs, **params)
    out = reshape_axis_out_of(out_spec[1], groups, out)
    out = reshape_axis_out_of(out_spec[1] + 1, size, out)
    return reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


def _vmap_empty(lhs, rhs, ld, rd, params):
    # a mapped axis of size 0 cannot be folded into batch or features: zeros of the type
    lhs_aval, rhs_aval = core.get_aval(lhs), core.get_aval(rhs)
    per = [a.update(shape=a.shape[:d] + a.shape[d + 1:]) if d is not None else a
           for a, d in ((lhs_aval, ld), (rhs_aval, rd))]
    out = _conv.abstract_eval(*per, **params)
    return P.full((0,) + out.shape, 0, out.dtype), 0


def _conv_general_dilated_vmap(axis, vals, dims, **params):
    (lhs, rhs), (ld, rd) = vals, dims
    if axis.size == 0:
        return _vmap_empty(lhs, rhs, ld, rd, params)
    lhs = lhs if ld is None else moveaxis(lhs, ld, 0)
    rhs = rhs if rd is None else moveaxis(rhs, rd, 0)
    if ld is not None and rd is not None:
        return _vmap_both(axis.size, lhs, rhs, params)
    if ld is not None:
        return _vmap_lhs(axis.size, lhs, rhs, params)
    return _vmap_rhs(axis.size, lhs, rhs, params)


vmap_rules[_conv] = _conv_general_dilated_vmap
