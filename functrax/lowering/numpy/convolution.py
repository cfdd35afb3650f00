"""The numpy rule of ``conv_general_dilated``: im2col and one batched matrix product.

The steps (no Python loop over output or kernel positions; loops only run over the ``n``
spatial dimensions):

1. transpose the operands to the canonical layouts ``N C spatial`` / ``O I spatial``;
2. insert the lhs dilation's zeros and apply the padding in one zero-filled buffer (negative
   padding crops);
3. take every window as one strided view of that buffer (``as_strided``: shape
   ``N C out_spatial kernel_spatial``, the rhs dilation and the window strides folded into
   its strides);
4. split batch / features into groups (a view), gather the view into the im2col matrix
   ``(groups, N/B * out_positions, C/G * kernel_positions)`` (the one copy) and multiply it
   by the kernel matrix ``(groups, C/G * kernel_positions, O/groups)`` with one
   ``np.matmul`` (one BLAS product per group);
5. put the output features back in order and transpose to the output spec.

float16 / bfloat16 (and booleans, as int32) are computed in float32, or in
``preferred_element_type`` when given, and rounded once to the result type, as XLA does.
"""
from __future__ import annotations

import math

import numpy as np

from functrax import primitives as P
from functrax.lowering.numpy.rules import numpy_rules

__all__ = ["conv_general_dilated", "compute_dtype"]


def compute_dtype(dtype, preferred):
    """The dtype a convolution of ``dtype`` operands (result ``preferred`` when given) is
    computed in: float16 / bfloat16 / fp8 in float32, booleans in int32 (every backend)."""
    dt = np.dtype(preferred) if preferred is not None else np.dtype(dtype)
    if dt == np.bool_:
        return np.dtype(np.int32)
    if dt.itemsize < 4 and (dt.kind == "f" or dt.kind == "V"):  # float16, bfloat16, fp8
        return np.dtype(np.float32)
    return dt


def _dilate_and_pad(x, dilation, padding):
    """``x`` (``N C spatial``) with ``d - 1`` zeros between neighbours and ``(lo, hi)`` zeros
    around each spatial dimension (negative amounts crop)."""
    if all(d == 1 for d in dilation) and all(lo == 0 and hi == 0 for lo, hi in padding):
        return x
    dilated = [0 if s == 0 else (s - 1) * d + 1 for s, d in zip(x.shape[2:], dilation)]
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in padding]
    buf = np.zeros(x.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(dilated, grow)),
                   x.dtype)
    place = tuple(slice(lo, lo + n, d) for n, (lo, _), d in zip(dilated, grow, dilation))
    buf[(slice(None), slice(None)) + place] = x
    crop = tuple(slice(max(-lo, 0), size - max(-hi, 0))
                 for (lo, hi), size in zip(padding, buf.shape[2:]))
    return buf[(slice(None), slice(None)) + crop]


def _windows(x, kernel, strides, rhs_dilation):
    """The view ``N C out_spatial kernel_spatial`` of every (dilated) window of ``x``."""
    eff = [0 if k == 0 else (k - 1) * r + 1 for k, r in zip(kernel, rhs_dilation)]
    out = [max(0, (s - e) // st + 1) for s, e, st in zip(x.shape[2:], eff, strides)]
    sp = x.strides[2:]
    return np.lib.stride_tricks.as_strided(
        x, shape=x.shape[:2] + tuple(out) + tuple(kernel),
        strides=x.strides[:2] + tuple(s * st for s, st in zip(sp, strides))
        + tuple(s * r for s, r in zip(sp, rhs_dilation)), writeable=False)


def _grouped_matmul(win, w, feature_groups, batch_groups):
    """``win`` (``N C out kernel``) contracted with ``w`` (``O I kernel``) per group:
    the canonical output ``N/B O out``."""
    n, c = win.shape[:2]
    nsp = (win.ndim - 2) // 2
    out_sp, k_sp = win.shape[2:2 + nsp], win.shape[2 + nsp:]
    groups = feature_groups * batch_groups
    nb, cg, og = n // batch_groups, c // feature_groups, w.shape[0] // groups
    v = win.reshape((batch_groups, nb, feature_groups, cg) + out_sp + k_sp)
    out_axes, k_axes = tuple(range(4, 4 + nsp)), tuple(range(4 + nsp, 4 + 2 * nsp))
    # the im2col matrix: (groups, rows = nb * out positions, cols = cg * kernel positions)
    a = v.transpose((0, 2, 1) + out_axes + (3,) + k_axes).reshape(
        groups, nb * math.prod(out_sp), cg * math.prod(k_sp))
    wm = w.reshape(groups, og, w.shape[1] * math.prod(k_sp)).transpose(0, 2, 1)
    res = np.matmul(a, wm).reshape((groups, nb) + out_sp + (og,))
    res = res.transpose((1, 0, 2 + nsp) + tuple(range(2, 2 + nsp)))
    return res.reshape((nb, groups * og) + out_sp)


def conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                         dimension_numbers, feature_group_count, batch_group_count,
                         precision=None, preferred_element_type=None):
    """``conv_general_dilated_p`` on numpy arrays (params as the primitive documents)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    compute = compute_dtype(lhs.dtype, preferred_element_type)
    x = np.transpose(lhs, lhs_spec).astype(compute, copy=False)
    w = np.transpose(rhs, rhs_spec).astype(compute, copy=False)
    x = _dilate_and_pad(x, lhs_dilation, padding)
    win = _windows(x, w.shape[2:], window_strides, rhs_dilation)
    out = _grouped_matmul(win, w, feature_group_count, batch_group_count)
    return np.ascontiguousarray(np.transpose(out, np.argsort(out_spec)), dtype=out_dtype)


numpy_rules[P.conv_general_dilated_p] = conv_general_dilated
