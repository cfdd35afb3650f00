"""functrax.nn Conv / ConvTranspose / MaxPool / AvgPool against numpy loops (1-3 spatial
dims, strides, paddings, dilations, groups), their gradients, dtypes and error messages."""
import itertools

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax, nn
from functrax import tree_util as tu
from functrax.test_util import check_grads

KEY = functrax.random.key


def rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def a(x):
    return np.asarray(x)


def to64(tree):
    return tu.tree_map(lambda v: np.asarray(v, np.float64) if nn.is_inexact_array(v) else v,
                       tree)


# --- numpy references ---


def np_conv(x, w, stride, pads, dil, groups, lhs_dil=None):
    """Cross-correlation of one example x (C, *sp) with w (O, C/g, *k), by loops."""
    n = x.ndim - 1
    if lhs_dil is not None and any(d > 1 for d in lhs_dil):
        shp = (x.shape[0],) + tuple((s - 1) * d + 1 for s, d in zip(x.shape[1:], lhs_dil))
        xd = np.zeros(shp, x.dtype)
        xd[(slice(None),) + tuple(slice(None, None, d) for d in lhs_dil)] = x
        x = xd
    x = np.pad(x.astype(np.float64), ((0, 0),) + tuple(pads))
    cout, cg, k = w.shape[0], w.shape[1], w.shape[2:]
    out_sp = [(x.shape[1 + i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    out = np.zeros((cout, *out_sp))
    for o in range(cout):
        g = o // (cout // groups)
        for idx in np.ndindex(*out_sp):
            for kk in np.ndindex(*k):
                pos = tuple(idx[i] * stride[i] + kk[i] * dil[i] for i in range(n))
                patch = x[(slice(g * cg, (g + 1) * cg),) + pos]
                out[(o,) + idx] += patch @ w[(o, slice(None)) + kk]
    return out


def np_conv_transpose(x, w, stride, pads, dil, groups, out_pad):
    """Transposed convolution by scatter: out[o, i*s + k*d - lo] += x[c, i] w[o, c, k]."""
    n = x.ndim - 1
    cout, cg, k = w.shape[0], w.shape[1], w.shape[2:]
    size = [(x.shape[1 + i] - 1) * stride[i] + dil[i] * (k[i] - 1) + 1 - pads[i][0]
            - pads[i][1] + out_pad[i] for i in range(n)]
    out = np.zeros((cout, *size))
    for o in range(cout):
        g = o // (cout // groups)
        for c in range(cg):
            for idx in np.ndindex(*x.shape[1:]):
                for kk in np.ndindex(*k):
                    pos = tuple(idx[i] * stride[i] + kk[i] * dil[i] - pads[i][0]
                                for i in range(n))
                    if all(0 <= p < s for p, s in zip(pos, size)):
                        out[(o,) + pos] += x[(g * cg + c,) + idx] * w[(o, c) + kk]
    return out


def np_pool(x, k, stride, pads, op, count_include_pad=True):
    n = x.ndim - 1
    fill = -np.inf if op == "max" else 0.0
    xp = np.pad(x.astype(np.float64), ((0, 0),) + tuple(pads), constant_values=fill)
    mask = np.pad(np.ones(x.shape[1:]), tuple(pads))
    out_sp = [(xp.shape[1 + i] - k[i]) // stride[i] + 1 for i in range(n)]
    out = np.zeros((x.shape[0], *out_sp))
    for idx in np.ndindex(*out_sp):
        win = tuple(slice(idx[i] * stride[i], idx[i] * stride[i] + k[i]) for i in range(n))
        v = xp[(slice(None),) + win].reshape(x.shape[0], -1)
        if op == "max":
            out[(slice(None),) + idx] = v.max(1)
        else:
            cnt = np.prod(k) if count_include_pad else mask[win].sum()
            out[(slice(None),) + idx] = v.sum(1) / cnt
    return out


def pairs(p, n):
    return ((p, p),) * n if isinstance(p, int) else tuple(p)


# --- Conv ---

CONV_CASES = [
    # n, cin, cout, k, stride, padding, dilation, groups, spatial
    (1, 2, 3, 3, 1, 0, 1, 1, (7,)),
    (1, 4, 6, 2, 2, ((1, 2),), 2, 2, (9,)),
    (2, 3, 4, (3, 2), (2, 1), 1, 1, 1, (6, 5)),
    (2, 4, 4, 3, 1, ((0, 1), (2, 0)), (2, 1), 4, (7, 6)),
    (3, 2, 2, 2, 1, 0, 1, 2, (3, 4, 3)),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_matches_numpy_loops(case):
    n, cin, cout, k, stride, padding, dil, groups, sp = case
    conv = nn.Conv(n, cin, cout, k, stride=stride, padding=padding, dilation=dil,
                   groups=groups, key=KEY(0))
    assert conv.weight.shape == (cout, cin // groups) + conv.kernel_size
    bias = rand(cout, seed=5)
    conv = nn.tree_at(lambda c: c.bias, conv, fnp.asarray(bias))
    x = rand(cin, *sp, seed=1)
    want = np_conv(x, a(conv.weight), conv.stride, conv.padding, conv.dilation, groups)
    want += bias.reshape((-1,) + (1,) * n)
    np.testing.assert_allclose(a(conv(fnp.asarray(x))), want, rtol=1e-4, atol=1e-5)


def test_conv_same_padding_input_dilation_and_fixed_rank_classes():
    x = rand(2, 5, 6, seed=1)
    conv = nn.Conv2d(2, 3, 3, stride=2, padding="SAME", key=KEY(0), use_bias=False)
    out = conv(fnp.asarray(x))
    assert out.shape == (3, 3, 3) and type(conv).__name__ == "Conv2d"
    # SAME: total padding max((ceil(n/s) - 1) s + k - n, 0), the extra element at the end
    pads = [((p := max((-(-s // 2) - 1) * 2 + 3 - s, 0)) // 2, p - p // 2) for s in (5, 6)]
    np.testing.assert_allclose(a(out), np_conv(x, a(conv.weight), (2, 2), pads, (1, 1), 1),
                               rtol=1e-4, atol=1e-5)
    conv = nn.Conv1d(2, 2, 2, input_dilation=2, use_bias=False, key=KEY(1))
    x = rand(2, 4, seed=2)
    np.testing.assert_allclose(
        a(conv(fnp.asarray(x))),
        np_conv(x, a(conv.weight), (1,), ((0, 0),), (1,), 1, lhs_dil=(2,)), rtol=1e-5)


def test_conv_kernel_init_uses_the_grouped_fan_in():
    # lecun_normal: stddev 1/sqrt(in_channels // groups * prod(kernel_size))
    w = a(nn.Conv2d(64, 64, 3, groups=4, key=KEY(0)).weight)
    assert w.shape == (64, 16, 3, 3)
    assert abs(w.std() * np.sqrt(16 * 9) - 1) < 0.05
    assert float(fnp.abs(nn.Conv1d(2, 3, 1, key=KEY(0)).bias).sum()) == 0.0


def test_conv_gradients_and_dtypes():
    conv = nn.Conv2d(2, 2, 2, stride=(2, 1), padding=1, dilation=(1, 2), key=KEY(0))
    check_grads(lambda m, x: m(x), (to64(conv), rand(2, 5, 5, seed=3, dtype=np.float64)), 1)
    # reverse mode against numpy: d/dW of sum(c * conv(x)) is a correlation of x and c
    cv = nn.Conv1d(1, 1, 3, use_bias=False, key=KEY(1))
    x, c = rand(1, 8, seed=4), rand(1, 6, seed=5)
    g = functrax.grad(lambda m: fnp.sum(m(fnp.asarray(x)) * c))(cv)
    want = np.array([[[(x[0, j:j + 6] * c[0]).sum() for j in range(3)]]])
    np.testing.assert_allclose(a(g.weight), want, rtol=1e-5)
    bf = nn.cast(conv, fnp.bfloat16)
    assert bf(fnp.ones((2, 4, 4), fnp.bfloat16)).dtype == fnp.bfloat16
    assert conv(fnp.ones((2, 4, 4), fnp.bfloat16)).dtype == np.float32  # promoted


def test_conv_errors_name_the_layer_and_suggest_vmap():
    conv = nn.Conv2d(3, 4, 3, key=KEY(0))
    with pytest.raises(ValueError, match=r"Conv2d: expected an input of rank 3, shape "
                                         r"\(C=3, d0, d1\).*got shape \(8, 3, 5, 5\)\. "
                                         r"Layers act on one example: for a batch, use "
                                         r"functrax\.vmap"):
        conv(fnp.ones((8, 3, 5, 5)))
    with pytest.raises(ValueError, match=r"Conv2d: expected 3 input channels.*got shape "
                                         r"\(2, 5, 5\)"):
        conv(fnp.ones((2, 5, 5)))
    with pytest.raises(ValueError, match="Conv: groups=2 must divide in_channels=3"):
        nn.Conv(2, 3, 4, 3, groups=2, key=KEY(0))
    with pytest.raises(ValueError, match="Conv: num_spatial_dims must be 1, 2 or 3, got 4"):
        nn.Conv(4, 3, 4, 3, key=KEY(0))
    with pytest.raises(ValueError, match=r"Conv2d: kernel_size must be an int or 2 ints"):
        nn.Conv2d(3, 4, (3, 3, 3), key=KEY(0))
    with pytest.raises(ValueError, match=r"Conv1d: padding must be one of"):
        nn.Conv1d(3, 4, 3, padding="FULL", key=KEY(0))


# --- ConvTranspose ---

TRANSPOSE_CASES = [
    # n, cin, cout, k, stride, padding, output_padding, dilation, groups, spatial
    (1, 2, 3, 3, 2, 0, 1, 1, 1, (4,)),
    (1, 4, 2, 2, 3, 2, 0, 1, 2, (3,)),          # padding > k - 1: crops
    (2, 2, 3, (3, 2), (2, 1), ((1, 0), (0, 1)), (1, 0), 1, 1, (3, 4)),
    (2, 2, 2, 2, 1, 1, 1, 2, 2, (3, 3)),
    (3, 1, 2, 2, 2, 0, 0, 1, 1, (2, 2, 2)),
]


@pytest.mark.parametrize("case", TRANSPOSE_CASES)
def test_conv_transpose_matches_a_numpy_scatter(case):
    n, cin, cout, k, stride, padding, out_pad, dil, groups, sp = case
    ct = nn.ConvTranspose(n, cin, cout, k, stride=stride, padding=padding,
                          output_padding=out_pad, dilation=dil, groups=groups, key=KEY(0))
    bias = rand(cout, seed=7)
    ct = nn.tree_at(lambda c: c.bias, ct, fnp.asarray(bias))
    x = rand(cin, *sp, seed=2)
    want = np_conv_transpose(x, a(ct.weight), ct.stride, pairs(padding, n) if isinstance(
        padding, int) else padding, ct.dilation, groups, ct.output_padding)
    want += bias.reshape((-1,) + (1,) * n)
    np.testing.assert_allclose(a(ct(fnp.asarray(x))), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("padding,k,s", [("SAME", 3, 2), ("SAME", 2, 3), ("VALID", 3, 2),
                                         ("VALID", 2, 3)])
def test_conv_transpose_string_padding_is_lax_conv_transposes(padding, k, s):
    ct = nn.ConvTranspose1d(2, 3, k, stride=s, padding=padding, use_bias=False, key=KEY(0))
    x = rand(2, 4, seed=1)
    out = ct(fnp.asarray(x))
    if padding == "SAME":
        assert out.shape == (3, 4 * s)
    else:
        assert out.shape == (3, 4 * s + max(k - s, 0))
    want = lax.conv_transpose(x[None], np.flip(a(ct.weight), 2), (s,), padding,
                              dimension_numbers=("NCH", "OIH", "NCH"))[0]
    np.testing.assert_allclose(a(out), a(want), rtol=1e-5, atol=1e-6)


def test_conv_transpose_is_the_input_gradient_of_a_conv():
    # <conv_transpose(x), y> == <x, conv(y)> for the transposed kernel: the adjoint relation
    conv = nn.Conv2d(3, 2, 3, stride=2, padding=1, use_bias=False, key=KEY(0))
    y = fnp.asarray(rand(3, 7, 7, seed=1))
    cy = conv(y)
    ct = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, use_bias=False, key=KEY(1))
    ct = nn.tree_at(lambda c: c.weight, ct, fnp.transpose(conv.weight, (1, 0, 2, 3)))
    x = fnp.asarray(rand(*cy.shape, seed=2))
    out = ct(x)
    assert out.shape == y.shape
    np.testing.assert_allclose(float(fnp.sum(out * y)), float(fnp.sum(x * cy)), rtol=1e-4)


def test_conv_transpose_gradients_and_errors():
    ct = nn.ConvTranspose2d(2, 2, 2, stride=2, padding=((0, 1), (1, 0)), key=KEY(0))
    check_grads(lambda m, x: m(x), (to64(ct), rand(2, 3, 3, seed=3, dtype=np.float64)), 1)
    with pytest.raises(ValueError, match=r"ConvTranspose1d: output_padding=\(2,\) must be "
                                         r"smaller than stride"):
        nn.ConvTranspose1d(2, 2, 3, stride=2, output_padding=2, key=KEY(0))
    with pytest.raises(ValueError, match="ConvTranspose: padding='SAME_LOWER' is not defined"):
        nn.ConvTranspose(1, 2, 2, 3, padding="same_lower", key=KEY(0))
    with pytest.raises(ValueError, match=r"ConvTranspose2d: expected an input of rank 3"):
        ct(fnp.ones((1, 2, 3, 3)))


# --- pooling ---

POOL_CASES = [
    (1, 2, 2, 0, (7,)),
    (2, (2, 3), (2, 1), ((1, 0), (0, 1)), (5, 6)),
    (2, 3, 2, "SAME", (5, 4)),
    (3, 2, 1, 0, (3, 3, 4)),
]


@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_pooling_matches_numpy_loops(op, case):
    n, k, stride, padding, sp = case
    cls = nn.MaxPool if op == "max" else nn.AvgPool
    pool = cls(n, k, stride=stride, padding=padding)
    x = rand(3, *sp, seed=1)
    pads = pool.padding if not isinstance(pool.padding, str) else lax.padtype_to_pads(
        sp, pool.kernel_size, pool.stride, pool.padding)
    want = np_pool(x, pool.kernel_size, pool.stride, pads, op)
    np.testing.assert_allclose(a(pool(fnp.asarray(x))), want, rtol=1e-5, atol=1e-6)
    if op == "avg":
        pool = nn.AvgPool(n, k, stride=stride, padding=padding, count_include_pad=False)
        want = np_pool(x, pool.kernel_size, pool.stride, pads, op, count_include_pad=False)
        np.testing.assert_allclose(a(pool(fnp.asarray(x))), want, rtol=1e-5, atol=1e-6)


def test_pooling_gradients_dtypes_and_errors():
    x = rand(2, 6, 6, seed=4)
    g = functrax.grad(lambda x: fnp.sum(nn.MaxPool2d(2, stride=2)(x)))(fnp.asarray(x))
    want = np.zeros_like(x)  # 1 at each window's argmax
    for c, i, j in itertools.product(range(2), range(3), range(3)):
        w = x[c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]
        di, dj = np.unravel_index(w.argmax(), w.shape)
        want[c, 2 * i + di, 2 * j + dj] = 1
    np.testing.assert_array_equal(a(g), want)
    check_grads(nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
                (x.astype(np.float64),), 2)
    xb = fnp.asarray(x).astype(fnp.bfloat16)
    assert nn.MaxPool2d(2)(xb).dtype == fnp.bfloat16 and nn.AvgPool2d(2)(xb).dtype == \
        fnp.bfloat16
    np.testing.assert_array_equal(a(nn.MaxPool1d(2, stride=2)(fnp.array([[1, 5, -3, 2]]))),
                                  [[5, 2]])
    with pytest.raises(ValueError, match=r"MaxPool2d: expected an input of rank 3, shape "
                                         r"\(C, d0, d1\).*got shape \(4, 2, 6, 6\).*"
                                         r"functrax\.vmap"):
        nn.MaxPool2d(2)(fnp.ones((4, 2, 6, 6)))
    with pytest.raises(TypeError, match="AvgPool1d: expected a floating input, got dtype int32"):
        nn.AvgPool1d(2)(fnp.array([[1, 2, 3]]))
    assert tu.tree_leaves(nn.MaxPool2d(2)) == []  # no parameters: all static


def test_vmapped_conv_and_pool_over_a_batch():
    conv, pool = nn.Conv2d(2, 3, 3, padding=1, key=KEY(0)), nn.MaxPool2d(2, stride=2)
    xs = rand(4, 2, 6, 6, seed=6)
    out = functrax.vmap(lambda x: pool(conv(x)))(fnp.asarray(xs))
    for i in range(4):
        np.testing.assert_allclose(a(out[i]), a(pool(conv(fnp.asarray(xs[i])))), rtol=1e-5,
                                   atol=1e-6)
