"""The numpy rule of ``conv_general_dilated``: im2col and one matrix product, or col2im.

No Python loop runs over output positions; loops only run over the ``n`` spatial dimensions
or the kernel positions. The operands are never copied into a canonical layout: every step
works on views of ``N C spatial`` / ``O I spatial`` axis orders, and the one copy reads the
operand in its own memory order.

im2col (the general case):

1. insert the lhs dilation's zeros and apply the padding in one zero-filled buffer in the
   operand's own layout (negative padding crops);
2. take every window as one strided view of that buffer (``as_strided``: axes ``N C
   out_spatial kernel_spatial``, the rhs dilation and the window strides folded into its
   strides);
3. split batch / features into groups (a view) and gather the view into the im2col matrix
   ``(groups, N/B * out_positions, C/G * kernel_positions)`` -- rows and columns each
   ordered by the operand's strides (NHWC data gives rows ``N H W`` and columns ``kh kw C``),
   so building it is a sequential read; a view when no copy is needed (1x1 kernels) --, and
   multiply it by the kernel matrix (its rows in the same order) with one ``matmul`` (one
   2-D BLAS product without groups);
4. present the result as ``N O out_spatial`` (a view) and lay it out as the output spec
   says (no copy when the layouts agree, e.g. NHWC in and out).

col2im (``_shift_add``, chosen when it moves less data: unit window strides, no groups,
fewer output than input features -- the input gradient of a convolution --, and not many
more input than output positions): one product per kernel position ``Z[k] = x @ w[k]`` over
the undilated, unpadded input (so the lhs dilation's zeros are never multiplied), then one
strided add of each ``Z[k]`` into the output.

float16 / bfloat16 (also as ``preferred_element_type``) are computed in float32, other types
in ``preferred_element_type`` when given (booleans as int32), and rounded once to the result
type, as XLA does (``rules.compute_dtype``, shared with ``dot_general``).
"""
from __future__ import annotations

import math

import numpy as np

from functrax import primitives as P
from functrax.lowering.numpy.rules import compute_dtype, numpy_rules

__all__ = ["conv_general_dilated", "compute_dtype"]


def _dilate_and_pad(x, spatial, dilation, padding):
    """``x`` with ``d - 1`` zeros between neighbours and ``(lo, hi)`` zeros around each of its
    ``spatial`` axes (negative amounts crop); the buffer keeps ``x``'s own axis order."""
    if all(d == 1 for d in dilation) and all(lo == 0 and hi == 0 for lo, hi in padding):
        return x
    shape, place, crop = list(x.shape), [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for ax, d, (lo, hi) in zip(spatial, dilation, padding):
        n = x.shape[ax]
        dilated = 0 if n == 0 else (n - 1) * d + 1
        grow_lo, grow_hi = max(lo, 0), max(hi, 0)
        shape[ax] = dilated + grow_lo + grow_hi
        place[ax] = slice(grow_lo, grow_lo + dilated, d)
        crop[ax] = slice(max(-lo, 0), shape[ax] - max(-hi, 0))
    buf = np.zeros(shape, x.dtype)
    buf[tuple(place)] = x
    return buf[tuple(crop)]


def _windows(x, kernel, strides, rhs_dilation):
    """The view ``N C out_spatial kernel_spatial`` of every (dilated) window of ``x``."""
    eff = [0 if k == 0 else (k - 1) * r + 1 for k, r in zip(kernel, rhs_dilation)]
    out = [max(0, (s - e) // st + 1) for s, e, st in zip(x.shape[2:], eff, strides)]
    sp = x.strides[2:]
    return np.lib.stride_tricks.as_strided(
        x, shape=x.shape[:2] + tuple(out) + tuple(kernel),
        strides=x.strides[:2] + tuple(s * st for s, st in zip(sp, strides))
        + tuple(s * r for s, r in zip(sp, rhs_dilation)), writeable=False)


def _by_stride(arr, axes):
    """``axes`` from the largest stride to the smallest (size-1 axes last)."""
    return sorted(axes, key=lambda a: -abs(arr.strides[a]) if arr.shape[a] > 1 else 1)


def _min_stride(arr, axes):
    return min((abs(arr.strides[a]) for a in axes if arr.shape[a] > 1), default=np.inf)


def _reshaped_view(t, shape):
    """``t`` reshaped to ``shape`` as a view, or None where that needs a copy."""
    try:
        return np.reshape(t, shape, copy=False)
    except ValueError:
        return None
    except TypeError:  # numpy < 2.1 has no copy=: only the certain case
        return t.reshape(shape) if t.flags.c_contiguous else None


def _matrix(arr, lead, rows, cols):
    """``arr`` as ``(prod(lead), prod(rows), prod(cols))`` matrices: a view when the layout
    allows one, else one copy that reads ``arr`` in its memory order (the block holding the
    smallest stride innermost; the result may then be a transposed view)."""
    lead_shape = (math.prod(arr.shape[a] for a in lead),)
    r, c = math.prod(arr.shape[a] for a in rows), math.prod(arr.shape[a] for a in cols)
    t = arr.transpose(tuple(lead) + tuple(rows) + tuple(cols))
    view = _reshaped_view(t, lead_shape + (r, c))
    if view is not None:
        return view
    t2 = arr.transpose(tuple(lead) + tuple(cols) + tuple(rows))
    view = _reshaped_view(t2, lead_shape + (c, r))
    if view is not None:
        return np.swapaxes(view, -1, -2)
    if _min_stride(arr, rows) < _min_stride(arr, cols):
        return np.swapaxes(t2.reshape(lead_shape + (c, r)), -1, -2)
    return t.reshape(lead_shape + (r, c))


def _grouped_matmul(win, w, feature_groups, batch_groups):
    """``win`` (``N C out kernel``) contracted with ``w`` (``O I kernel``) per group:
    the canonical output ``N/B O out`` (possibly a view with another memory order).

    The im2col matrix has rows ``(N/B, out positions)`` and columns ``(C/G, kernel
    positions)``, each ordered by the operand's strides so that building it reads the
    operand in memory order (NHWC data gives rows N H W and columns kh kw C); the kernel
    matrix's rows follow the same column order."""
    n, c = win.shape[:2]
    nsp = (win.ndim - 2) // 2
    out_sp, k_sp = win.shape[2:2 + nsp], win.shape[2 + nsp:]
    groups = feature_groups * batch_groups
    nb, cg, og = n // batch_groups, c // feature_groups, w.shape[0] // groups
    v = win.reshape((batch_groups, nb, feature_groups, cg) + out_sp + k_sp)
    out_axes, k_axes = tuple(range(4, 4 + nsp)), tuple(range(4 + nsp, 4 + 2 * nsp))
    rows = _by_stride(v, (1,) + out_axes)
    cols = _by_stride(v, (3,) + k_axes)
    a = _matrix(v, (0, 2), rows, cols)  # (groups, rows, cols), the im2col copy
    wg = w.reshape((groups, og, cg) + k_sp)
    w_cols = [2 if ax == 3 else 3 + ax - (4 + nsp) for ax in cols]
    wm = _matrix(wg, (0,), w_cols, (1,))  # (groups, cols, og)
    res = a[0] @ wm[0] if groups == 1 else np.matmul(a, wm)  # 2-D: always one BLAS call
    row_shape = tuple(v.shape[ax] for ax in rows)
    res = res.reshape((groups,) + row_shape + (og,))
    # axes of res: 0 group, 1.. rows (in `rows` order), last og -> (nb, groups, og, out...)
    pos = {ax: 1 + i for i, ax in enumerate(rows)}
    res = res.transpose((pos[1], 0, res.ndim - 1) + tuple(pos[ax] for ax in out_axes))
    return res.reshape((nb, groups * og) + out_sp)


def _out_spatial(in_sp, k_sp, strides, padding, lhs_dilation, rhs_dilation):
    dil = [0 if n == 0 else (n - 1) * d + 1 for n, d in zip(in_sp, lhs_dilation)]
    eff = [0 if k == 0 else (k - 1) * r + 1 for k, r in zip(k_sp, rhs_dilation)]
    return tuple(max(0, (n + lo + hi - e) // s + 1)
                 for n, e, s, (lo, hi) in zip(dil, eff, strides, padding))


def _shift_add_wins(x, w, out_sp, strides, groups):
    """Whether ``_shift_add`` moves less data than im2col: unit strides, one group, fewer
    output than input features, and not many more input than output positions (each
    input position is multiplied by the whole kernel)."""
    if groups != 1 or any(s != 1 for s in strides) or 0 in x.shape or 0 in w.shape:
        return False
    k = math.prod(w.shape[2:])
    return (k > 1 and w.shape[0] < x.shape[1] and 0 not in out_sp
            and math.prod(x.shape[2:]) <= 1.5 * math.prod(out_sp))


def _shift_add(x, w, out_sp, padding, lhs_dilation, rhs_dilation):
    """A unit-stride convolution of ``x`` (``N C spatial``, neither padded nor dilated) with
    ``w`` (``O I kernel``) as one product and one add per kernel position (col2im):
    ``Z[k] = x @ w[k]`` gives every input position times kernel position ``k``, and input
    position ``i`` with kernel offset ``k`` lands on output ``i * lhs_dil + lo - k * rhs_dil``.
    Returns the canonical output ``N O out_spatial`` (a view)."""
    nsp = x.ndim - 2
    rows = _by_stride(x, (0,) + tuple(range(2, 2 + nsp)))
    k_sp, o = w.shape[2:], w.shape[0]
    xm = _matrix(x, (), rows, (1,))
    wm = _matrix(w, tuple(range(2, 2 + nsp)), (1,), (0,))  # (kernel positions, I, O)
    # one product per kernel position, each result contiguous (fast adds below)
    z = np.matmul(xm, wm).reshape((-1,) + tuple(x.shape[a] for a in rows) + (o,))
    out = np.zeros(tuple(x.shape[0] if a == 0 else out_sp[a - 2] for a in rows) + (o,),
                   z.dtype)
    for k, kk in enumerate(np.ndindex(*k_sp)):
        dst, src = [], []
        for a in rows:
            if a == 0:
                dst.append(slice(None))
                src.append(slice(None))
                continue
            d = a - 2
            ld, shift = lhs_dilation[d], padding[d][0] - kk[d] * rhs_dilation[d]
            i0 = max(0, -(shift // ld))
            i1 = min(x.shape[a], (out_sp[d] - 1 - shift) // ld + 1)
            if i1 <= i0:
                break
            dst.append(slice(i0 * ld + shift, (i1 - 1) * ld + shift + 1, ld))
            src.append(slice(i0, i1))
        else:
            out[tuple(dst)] += z[k][tuple(src)]
    pos = {a: i for i, a in enumerate(rows)}
    return out.transpose((pos[0], nsp + 1) + tuple(pos[a] for a in range(2, 2 + nsp)))


def conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                         dimension_numbers, feature_group_count, batch_group_count,
                         precision=None, preferred_element_type=None):
    """``conv_general_dilated_p`` on numpy arrays (params as the primitive documents)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    compute = compute_dtype(lhs.dtype, preferred_element_type)
    x = lhs.astype(compute, copy=False)
    w = np.transpose(rhs, rhs_spec).astype(compute, copy=False)
    out_sp = _out_spatial([x.shape[a] for a in lhs_spec[2:]], w.shape[2:], window_strides,
                          padding, lhs_dilation, rhs_dilation)
    groups = feature_group_count * batch_group_count
    if _shift_add_wins(np.transpose(x, lhs_spec), w, out_sp, window_strides, groups):
        out = _shift_add(np.transpose(x, lhs_spec), w, out_sp, padding, lhs_dilation,
                         rhs_dilation)
    else:
        x = np.transpose(_dilate_and_pad(x, lhs_spec[2:], lhs_dilation, padding), lhs_spec)
        win = _windows(x, w.shape[2:], window_strides, rhs_dilation)
        out = _grouped_matmul(win, w, feature_group_count, batch_group_count)
    return np.ascontiguousarray(np.transpose(out, np.argsort(out_spec)), dtype=out_dtype)


numpy_rules[P.conv_general_dilated_p] = conv_general_dilated
