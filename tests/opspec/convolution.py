"""Op specs: convolutions (``lax.conv_general_dilated`` and the functions built on it:
``lax.conv*``, ``functrax.numpy.convolve/correlate``, ``functrax.scipy.signal``).

Every name starts with ``conv_`` (select them with ``-k conv_``). The lax entries are checked
against :func:`conv_reference`, a direct implementation of XLA's convolution semantics with
an explicit loop over output positions (small sizes only); the numpy/scipy entries against
numpy and scipy.
"""
from __future__ import annotations

import itertools

import numpy as np
import scipy.signal

import functrax.numpy as fnp
import functrax.scipy.signal as fsignal
from functrax import lax
from tests.opspec.spec import F32, I32, OpSpec, uniform

CONV = ("conv_general_dilated",)
BF16, F16 = np.dtype("bfloat16"), np.dtype(np.float16)


# --- the reference: XLA's Conv, one output position at a time ---

def _perms(dimension_numbers, ndim):
    """(lhs, rhs, out) positions of (N, C / O, I, spatial...), spatial in rhs order."""
    if dimension_numbers is None:
        return (tuple(range(ndim)),) * 3
    if not isinstance(dimension_numbers[0], str):
        return tuple(tuple(s) for s in dimension_numbers)
    lhs, rhs, out = dimension_numbers
    spatial = [c for c in rhs if c not in "OI"]
    return ((lhs.index("N"), lhs.index("C"), *[lhs.index(c) for c in spatial]),
            (rhs.index("O"), rhs.index("I"), *[rhs.index(c) for c in spatial]),
            (out.index("N"), out.index("C"), *[out.index(c) for c in spatial]))


def _dilated(n, d):
    return 0 if n == 0 else (n - 1) * d + 1


def _string_pads(kind, in_shape, kernel, strides):
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, k, s in zip(in_shape, kernel, strides):
        total = max((-(-n // s) - 1) * s + k - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return pads


def _padded_input(x, lhs_dilation, pads):
    """``x`` (N C spatial) dilated and padded (negative pads crop), built element-wise."""
    dil = [_dilated(n, d) for n, d in zip(x.shape[2:], lhs_dilation)]
    shape = [n + lo + hi for n, (lo, hi) in zip(dil, pads)]
    out = np.zeros(x.shape[:2] + tuple(shape), x.dtype)
    for pos in itertools.product(*[range(n) for n in shape]):
        src = []
        for p, (lo, _), d, n in zip(pos, pads, lhs_dilation, x.shape[2:]):
            q = p - lo  # position in the dilated input
            if q < 0 or q % d or q // d >= n:
                break
            src.append(q // d)
        else:
            out[(slice(None), slice(None)) + pos] = x[(slice(None), slice(None)) + tuple(src)]
    return out


def conv_reference(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                   dimension_numbers=None, feature_group_count=1, batch_group_count=1,
                   precision=None, preferred_element_type=None):
    """XLA's convolution computed one output element at a time (float64 / complex128 /
    int64 accumulation)."""
    del precision
    nsp = lhs.ndim - 2
    lp, rp, op = _perms(dimension_numbers, lhs.ndim)
    acc = np.complex128 if lhs.dtype.kind == "c" else (
        np.int64 if lhs.dtype.kind in "biu" else np.float64)
    x = np.transpose(lhs, lp).astype(acc)
    w = np.transpose(rhs, rp).astype(acc)
    ld, rd = lhs_dilation or (1,) * nsp, rhs_dilation or (1,) * nsp
    kernel = [_dilated(k, r) for k, r in zip(w.shape[2:], rd)]
    pads = (_string_pads(padding.upper(), x.shape[2:], kernel, window_strides)
            if isinstance(padding, str) else [tuple(p) for p in padding])
    xp = _padded_input(x, ld, pads)
    out_sp = [max(0, (n - k) // s + 1) for n, k, s in zip(xp.shape[2:], kernel, window_strides)]
    n_out, o_total, cin = x.shape[0] // batch_group_count, w.shape[0], w.shape[1]
    per_group = o_total // max(feature_group_count, batch_group_count)
    out = np.zeros((n_out, o_total) + tuple(out_sp), acc)
    for n, o in itertools.product(range(n_out), range(o_total)):
        g = o // per_group
        b = g * n_out + n if batch_group_count > 1 else n
        c0 = g * cin if feature_group_count > 1 else 0
        for pos in itertools.product(*[range(m) for m in out_sp]):
            window = xp[(b, slice(c0, c0 + cin)) + tuple(
                slice(p * s, p * s + k, r) for p, s, k, r in zip(pos, window_strides, kernel,
                                                                  rd))]
            out[(n, o) + pos] = np.sum(window * w[o])
    out_dtype = np.dtype(preferred_element_type or lhs.dtype)
    return np.transpose(out, np.argsort(op)).astype(out_dtype)


def _lax_conv(lhs, rhs, **kw):
    return lax.conv_general_dilated(lhs, rhs, **kw)


def _spec(name, shapes, kwargs, dtypes=(F32,), **extra):
    return OpSpec(f"conv_{name}", _lax_conv, conv_reference, shapes=shapes, dtypes=dtypes,
                  kwargs=tuple(kwargs), primitives=CONV, atol=1e-4, rtol=1e-4, **extra)


def _kw(strides, padding, **kw):
    return dict(window_strides=strides, padding=padding, **kw)


NHWC = ("NHWC", "HWIO", "NHWC")

LAX_SPECS = [
    _spec("1d_valid", (((2, 3, 7), (4, 3, 3)), ((1, 1, 1), (1, 1, 1))),
          [_kw((1,), "VALID"), _kw((2,), "VALID")]),
    _spec("1d_strided_dilated", (((2, 2, 9), (3, 2, 3)),),
          [_kw((2,), ((1, 2),), rhs_dilation=(2,)), _kw((3,), ((0, 1),), rhs_dilation=(3,))]),
    _spec("1d_lhs_dilation", (((1, 2, 5), (2, 2, 3)),),
          [_kw((1,), ((2, 2),), lhs_dilation=(2,)),
           _kw((2,), ((1, 0),), lhs_dilation=(3,), rhs_dilation=(2,))]),
    _spec("1d_negative_padding", (((2, 2, 8), (2, 2, 2)),),
          [_kw((1,), ((-1, -2),)), _kw((2,), ((-2, 1),))]),
    _spec("1d_nwc", (((2, 6, 3), (3, 3, 4)),),
          [_kw((1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC")),
           _kw((2,), "SAME_LOWER", dimension_numbers=("NWC", "WIO", "NCW"))]),
    _spec("2d_same_strided", (((2, 3, 6, 5), (4, 3, 3, 2)),),
          [_kw((2, 1), "SAME"), _kw((1, 2), "SAME_LOWER"), _kw((2, 2), "VALID")]),
    _spec("2d_nhwc", (((2, 5, 6, 3), (3, 2, 3, 4)),),
          [_kw((1, 1), "SAME", dimension_numbers=NHWC),
           _kw((2, 1), ((1, 0), (2, 1)), dimension_numbers=NHWC, rhs_dilation=(1, 2))]),
    _spec("2d_layouts", (((3, 5, 2, 4), (2, 5, 2, 3)),),
          [_kw((1, 2), "VALID", dimension_numbers=("HCNW", "WIHO", "WNCH")),
           _kw((2, 1), "SAME", dimension_numbers=("HCNW", "WIHO", "NHWC"))]),
    _spec("2d_transposed", (((1, 2, 3, 4), (2, 2, 3, 3)),),
          [_kw((1, 1), ((2, 2), (1, 2)), lhs_dilation=(2, 2)),
           _kw((1, 2), ((1, 1), (2, 2)), lhs_dilation=(3, 1), rhs_dilation=(1, 2))]),
    _spec("2d_feature_groups", (((2, 6, 5, 4), (6, 3, 2, 2)),),
          [_kw((1, 1), "VALID", feature_group_count=2),
           _kw((2, 1), "SAME", feature_group_count=2, rhs_dilation=(2, 1))]),
    _spec("2d_depthwise", (((2, 5, 4, 3), (3, 3, 1, 6)),),
          [_kw((1, 1), "SAME", dimension_numbers=NHWC, feature_group_count=3)]),
    _spec("2d_batch_groups", (((4, 3, 5, 4), (6, 3, 2, 3)),),
          [_kw((1, 1), "VALID", batch_group_count=2),
           _kw((2, 1), ((1, 1), (0, 2)), batch_group_count=2, lhs_dilation=(1, 2))]),
    _spec("3d_ndhwc", (((1, 4, 3, 5, 2), (2, 2, 3, 2, 3)),),
          [_kw((1, 2, 1), "SAME", dimension_numbers=("NDHWC", "DHWIO", "NDHWC")),
           _kw((2, 1, 2), "VALID", dimension_numbers=("NDHWC", "DHWIO", "NCDHW"),
               rhs_dilation=(1, 1, 2))]),
    _spec("3d_groups", (((2, 4, 3, 3, 4), (4, 2, 2, 1, 2)),),
          [_kw((1, 1, 2), ((1, 0), (0, 0), (1, 1)), feature_group_count=2)]),
    _spec("int32", (((2, 2, 5), (3, 2, 2)),), [_kw((1,), "SAME")], dtypes=(I32,),
          domain=uniform(-4, 4)),
    _spec("bf16_preferred_f32", (((2, 3, 6), (2, 3, 3)),),
          [_kw((1,), "SAME", preferred_element_type=np.float32)], dtypes=(BF16, F16),
          out_dtype=lambda *_: F32, check_dtype=False),
    _spec("f16", (((2, 3, 6), (2, 3, 3)),), [_kw((1,), "VALID")], dtypes=(F16,),
          check_dtype=False, out_dtype=lambda *_: F16),
]


# --- the lax convenience wrappers ---

def _ref_conv(lhs, rhs, window_strides, padding, **kw):
    return conv_reference(lhs, rhs, window_strides, padding)


def _ref_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation):
    return conv_reference(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation)


_TF_DEFAULTS = {3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                5: ("NHWDC", "HWDIO", "NHWDC")}


def _conv_transpose_ref(lhs, rhs, strides, padding, dimension_numbers=None,
                        transpose_kernel=False, rhs_dilation=None):
    """conv_transpose from its definition: the lhs dilated by the strides, the kernel
    optionally flipped and its feature axes swapped, the padding of the forward convolution's
    transpose for "SAME" / "VALID"."""
    dn = dimension_numbers or _TF_DEFAULTS[lhs.ndim]
    _, rp, _ = _perms(dn, lhs.ndim)
    w = rhs
    if transpose_kernel:
        w = np.swapaxes(np.flip(rhs, rp[2:]), rp[0], rp[1])
    ksp = [_dilated(rhs.shape[d], r) for d, r in zip(rp[2:], rhs_dilation or (1,) * len(strides))]
    pads = padding
    if isinstance(padding, str):
        pads = []
        for k, s in zip(ksp, strides):
            total = k + s - 2 if padding == "SAME" else k + s - 2 + max(k - s, 0)
            lo = (k - 1 if s > k - 1 else -(-total // 2)) if padding == "SAME" else k - 1
            pads.append((lo, total - lo))
    return conv_reference(lhs, w, (1,) * len(strides), pads, lhs_dilation=strides,
                          rhs_dilation=rhs_dilation, dimension_numbers=dn)


def _patches_ref(lhs, filter_shape, window_strides, padding, dimension_numbers=None):
    lp, rp, op = _perms(dimension_numbers, lhs.ndim)
    c = lhs.shape[lp[1]]
    size = int(np.prod(filter_shape))
    canon = np.zeros((c * size, 1) + tuple(filter_shape), lhs.dtype)
    for ch, k in itertools.product(range(c), range(size)):
        canon[(ch * size + k, 0) + np.unravel_index(k, filter_shape)] = 1
    rhs = np.transpose(canon, np.argsort(rp))
    return conv_reference(lhs, rhs, window_strides, padding, dimension_numbers=dimension_numbers,
                          feature_group_count=c)


def _local_ref(lhs, rhs, window_strides, padding, filter_shape, dimension_numbers=None):
    """Per output position, the patch times that position's kernel."""
    lp, rp, op = _perms(dimension_numbers, lhs.ndim)
    patches = _patches_ref(lhs, filter_shape, window_strides, padding, dimension_numbers)
    pc = np.transpose(patches, op)                       # N, C*K, out spatial
    wc = np.transpose(rhs, rp)                           # O, C*K, out spatial
    out = np.einsum("nk...,ok...->no...", pc, wc)
    return np.transpose(out, np.argsort(op))


WRAPPER_SPECS = [
    OpSpec("conv_lax_conv", lambda x, w, **kw: lax.conv(x, w, **kw), _ref_conv,
           shapes=(((2, 3, 5, 5), (2, 3, 2, 3)),), primitives=CONV, atol=1e-4, rtol=1e-4,
           kwargs=(dict(window_strides=(1, 2), padding="SAME"),
                   dict(window_strides=(2, 1), padding="VALID"))),
    OpSpec("conv_with_general_padding",
           lambda x, w, **kw: lax.conv_with_general_padding(x, w, **kw), _ref_general_padding,
           shapes=(((1, 2, 4, 3), (3, 2, 2, 2)),), primitives=CONV, atol=1e-4, rtol=1e-4,
           kwargs=(dict(window_strides=(1, 1), padding=((1, 0), (0, 2)), lhs_dilation=(2, 1),
                        rhs_dilation=(1, 2)),
                   dict(window_strides=(2, 1), padding="SAME", lhs_dilation=None,
                        rhs_dilation=(2, 1)))),
    OpSpec("conv_transpose_2d", lambda x, w, **kw: lax.conv_transpose(x, w, **kw),
           _conv_transpose_ref, shapes=(((2, 3, 4, 2), (3, 2, 2, 3)),), primitives=CONV,
           atol=1e-4, rtol=1e-4,
           kwargs=(dict(strides=(2, 2), padding="SAME"), dict(strides=(2, 1), padding="VALID"),
                   dict(strides=(1, 2), padding=((1, 2), (0, 1))),
                   dict(strides=(2, 1), padding="VALID", rhs_dilation=(2, 1)))),
    OpSpec("conv_transpose_2d_transpose_kernel",
           lambda x, w, **kw: lax.conv_transpose(x, w, **kw), _conv_transpose_ref,
           shapes=(((2, 3, 4, 2), (3, 2, 3, 2)),), primitives=CONV, atol=1e-4, rtol=1e-4,
           kwargs=(dict(strides=(2, 2), padding="SAME", transpose_kernel=True),
                   dict(strides=(1, 2), padding="VALID", transpose_kernel=True))),
    OpSpec("conv_transpose_1d_nchw", lambda x, w, **kw: lax.conv_transpose(x, w, **kw),
           _conv_transpose_ref, shapes=(((2, 3, 4), (3, 3, 2)),), primitives=CONV, atol=1e-4,
           rtol=1e-4, kwargs=(dict(strides=(3,), padding="VALID",
                                   dimension_numbers=("NCH", "OIH", "NCH"),
                                   transpose_kernel=True),)),
    OpSpec("conv_general_dilated_patches",
           lambda x, **kw: lax.conv_general_dilated_patches(x, **kw), _patches_ref,
           shapes=(((2, 2, 5, 4),),), primitives=CONV, atol=1e-5,
           kwargs=(dict(filter_shape=(2, 3), window_strides=(1, 1), padding="VALID"),
                   dict(filter_shape=(3, 2), window_strides=(2, 1), padding="SAME",
                        dimension_numbers=NHWC))),
    OpSpec("conv_general_dilated_local",
           lambda x, w, **kw: lax.conv_general_dilated_local(x, w, **kw), _local_ref,
           shapes=(((2, 2, 5, 4), (3, 12, 4, 2)),), primitives=CONV, atol=1e-4, rtol=1e-4,
           kwargs=(dict(window_strides=(1, 1), padding="VALID", filter_shape=(2, 3)),)),
    OpSpec("conv_general_dilated_local_nhwc",
           lambda x, w, **kw: lax.conv_general_dilated_local(x, w, **kw), _local_ref,
           shapes=(((2, 5, 4, 2), (3, 4, 8, 3)),), primitives=CONV, atol=1e-4, rtol=1e-4,
           kwargs=(dict(window_strides=(2, 1), padding="SAME", filter_shape=(2, 2),
                        dimension_numbers=NHWC),)),
]


# --- functrax.numpy and functrax.scipy.signal ---

def _np_like(f):
    """A numpy/scipy reference returning the inexact dtype JAX gives (ints -> float)."""
    def ref(*xs, **kw):
        out = f(*xs, **kw)
        kind = np.result_type(*xs).kind
        return out.astype(np.float64 if kind in "biu" else out.dtype)
    return ref


_PAIRS_1D = (((7,), (3,)), ((3,), (6,)), ((4,), (4,)), ((1,), (5,)))
_MODES_1D = tuple({"mode": m} for m in ("full", "same", "valid"))
_SIG = dict(atol=1e-4, rtol=1e-4, primitives=CONV)

NUMPY_SCIPY_SPECS = [
    OpSpec("conv_numpy_convolve", fnp.convolve, _np_like(np.convolve), shapes=_PAIRS_1D,
           dtypes=(F32, I32, (I32, F32)), kwargs=_MODES_1D, **_SIG),
    OpSpec("conv_numpy_correlate", fnp.correlate, _np_like(np.correlate), shapes=_PAIRS_1D,
           dtypes=(F32, I32), kwargs=_MODES_1D, **_SIG),
    OpSpec("conv_numpy_convolve_preferred",
           lambda a, v, **kw: fnp.convolve(a, v, preferred_element_type=np.float32, **kw),
           lambda a, v, **kw: np.convolve(a, v, **kw).astype(np.float32),
           shapes=(((5,), (3,)),), dtypes=(I32,), kwargs=_MODES_1D, **_SIG),
    OpSpec("conv_scipy_convolve", fsignal.convolve, _np_like(scipy.signal.convolve),
           shapes=(((6,), (3,)), ((4, 5), (2, 3)), ((2, 3), (4, 5)), ((3, 4, 3), (2, 2, 2))),
           dtypes=(F32, I32), kwargs=tuple({"mode": m} for m in ("full", "same", "valid")),
           **_SIG),
    OpSpec("conv_scipy_correlate", fsignal.correlate, _np_like(scipy.signal.correlate),
           shapes=(((6,), (3,)), ((4, 5), (2, 3)), ((2, 3), (4, 5)), ((3, 2, 3), (2, 2, 2))),
           kwargs=tuple({"mode": m} for m in ("full", "same", "valid")), **_SIG),
    OpSpec("conv_scipy_convolve2d", fsignal.convolve2d, _np_like(scipy.signal.convolve2d),
           shapes=(((5, 6), (3, 2)), ((2, 3), (3, 4)), ((4, 4), (4, 4))), dtypes=(F32, I32),
           kwargs=tuple({"mode": m, "boundary": b} for b in ("fill", "wrap")
                        for m in ("full", "same", "valid")), **_SIG),
    OpSpec("conv_scipy_correlate2d", fsignal.correlate2d, _np_like(scipy.signal.correlate2d),
           shapes=(((5, 6), (3, 2)), ((2, 3), (3, 4)), ((4, 4), (4, 4))),
           kwargs=tuple({"mode": m, "boundary": b} for b in ("fill", "wrap")
                        for m in ("full", "same", "valid")), **_SIG),
]

SPECS = LAX_SPECS + WRAPPER_SPECS + NUMPY_SCIPY_SPECS
