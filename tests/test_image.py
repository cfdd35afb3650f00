"""``functrax.image``: resize / scale_and_translate against a float64 numpy implementation of
the kernel-weight formulation written here (and, for nearest and for linear without
antialiasing, against direct numpy formulas), gradients (image, scale, translation), jit,
vmap and the errors."""
from __future__ import annotations

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import image
from functrax.test_util import check_grads, enable_x64

RNG = np.random.default_rng(0)
METHODS = ["linear", "cubic", "lanczos3", "lanczos5"]


# --- the numpy reference ---

def _keys_cubic(x):
    a = -0.5
    return np.where(x < 1, (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1,
                    np.where(x < 2, a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a, 0.0))


def _lanczos(radius):
    return lambda x: np.where(x < radius, np.sinc(x) * np.sinc(x / radius), 0.0)


REF_KERNELS = {"linear": lambda x: np.maximum(0.0, 1.0 - x), "cubic": _keys_cubic,
               "lanczos3": _lanczos(3.0), "lanczos5": _lanczos(5.0)}


def ref_weights(m, n, scale, translation, method, antialias):
    """The (m, n) weights: kernel of the distance from each output sample's inverse image
    to each input pixel center, widened by 1/scale when antialiasing a downsample, each
    column normalized, zero when the sample falls outside the input."""
    inv = 1.0 / scale
    width = max(inv, 1.0) if antialias else 1.0
    sample = (np.arange(n) + 0.5) * inv - translation * inv - 0.5
    w = REF_KERNELS[method](np.abs(sample[None, :] - np.arange(m)[:, None]) / width)
    total = w.sum(axis=0, keepdims=True)
    w = np.where(np.abs(total) > 1000 * np.finfo(np.float32).eps,
                 w / np.where(total != 0, total, 1.0), 0.0)
    inside = (sample >= -0.5) & (sample <= m - 0.5)
    return np.where(inside[None, :], w, 0.0)


def ref_scale_and_translate(x, shape, dims, scale, translation, method, antialias=True):
    out = np.asarray(x, np.float64)
    for d, s, t in zip(dims, scale, translation):
        w = ref_weights(out.shape[d], shape[d], s, t, method, antialias)
        out = np.moveaxis(np.tensordot(out, w, axes=([d], [0])), -1, d)
    return out


def ref_resize(x, shape, method, antialias=True):
    dims = [d for d in range(x.ndim) if x.shape[d] != shape[d]]
    return ref_scale_and_translate(x, shape, dims, [shape[d] / x.shape[d] for d in dims],
                                   [0.0] * len(dims), method, antialias)


def nearest_formula(x, shape):
    for d in range(x.ndim):
        m, n = x.shape[d], shape[d]
        x = np.take(x, np.floor((np.arange(n) + 0.5) * m / n).astype(int), axis=d)
    return x


def linear_formula(x, shape):
    """Half-pixel linear interpolation with clamped coordinates, axis by axis."""
    out = np.asarray(x, np.float64)
    for d in range(x.ndim):
        m, n = out.shape[d], shape[d]
        if m == n:
            continue
        s = np.clip((np.arange(n) + 0.5) * m / n - 0.5, 0, m - 1)
        i0 = np.floor(s).astype(int)
        i1 = np.minimum(i0 + 1, m - 1)
        frac = (s - i0).reshape((-1,) + (1,) * (out.ndim - d - 1))
        a, b = np.take(out, i0, axis=d), np.take(out, i1, axis=d)
        out = (1 - frac) * a + frac * b
    return out


# --- resize ---

SHAPES = [((4, 6), (7, 3)), ((5, 5), (2, 9)), ((3, 8, 2), (6, 3, 2)), ((6,), (15,)),
          ((9,), (4,))]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_resize_matches_reference(method, antialias, shapes):
    in_shape, out_shape = shapes
    x = RNG.standard_normal(in_shape).astype(np.float32)
    got = image.resize(fnp.asarray(x), out_shape, method, antialias=antialias)
    assert got.dtype == np.float32 and got.shape == out_shape
    np.testing.assert_allclose(got, ref_resize(x, out_shape, method, antialias), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_nearest_matches_formula(shapes):
    in_shape, out_shape = shapes
    x = RNG.standard_normal(in_shape).astype(np.float32)
    got = image.resize(fnp.asarray(x), out_shape, "nearest")
    np.testing.assert_array_equal(got, nearest_formula(x, out_shape))
    ints = np.arange(np.prod(in_shape), dtype=np.int32).reshape(in_shape)
    got = image.resize(ints, out_shape, image.ResizeMethod.NEAREST)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, nearest_formula(ints, out_shape))


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_linear_without_antialias_matches_formula(shapes):
    in_shape, out_shape = shapes
    x = RNG.standard_normal(in_shape).astype(np.float32)
    for name in ("linear", "bilinear", "trilinear", "triangle"):
        got = image.resize(fnp.asarray(x), out_shape, name, antialias=False)
        np.testing.assert_allclose(got, linear_formula(x, out_shape), rtol=1e-5, atol=1e-5)


def test_upsampling_ignores_antialias_and_identity_is_exact():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    for method in METHODS:
        a = image.resize(x, (6, 9), method, antialias=True)
        b = image.resize(x, (6, 9), method, antialias=False)
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(image.resize(x, (3, 4), method), x)


def test_resize_dtypes():
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert image.resize(ints, (6, 8), "linear").dtype == np.float32
    z = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
    got = image.resize(z, (5, 2), "cubic")
    assert got.dtype == np.complex64
    want = ref_resize(z.real, (5, 2), "cubic") + 1j * ref_resize(z.imag, (5, 2), "cubic")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with enable_x64():
        x = RNG.standard_normal((4, 5))
        got = image.resize(x, (7, 3), "lanczos3")
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, ref_resize(x, (7, 3), "lanczos3"), rtol=1e-12)


def test_resize_method_enum():
    assert [m.name for m in image.ResizeMethod] == ["NEAREST", "LINEAR", "LANCZOS3",
                                                   "LANCZOS5", "CUBIC"]
    for s, m in [("bicubic", "CUBIC"), ("tricubic", "CUBIC"), ("triangle", "LINEAR"),
                 ("lanczos5", "LANCZOS5"), ("nearest", "NEAREST")]:
        assert image.ResizeMethod.from_string(s) is image.ResizeMethod[m]


# --- scale_and_translate ---

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [True, False])
def test_scale_and_translate_matches_reference(method, antialias):
    x = RNG.standard_normal((2, 5, 6)).astype(np.float32)
    for scale, trans, shape in [((1.7, 0.6), (0.3, -1.2), (2, 8, 4)),
                                ((0.5, 2.0), (2.0, 0.5), (2, 4, 9)),
                                ((1.0, 1.0), (1.0, -2.0), (2, 5, 6))]:
        got = image.scale_and_translate(fnp.asarray(x), shape, (1, 2), fnp.asarray(scale),
                                        fnp.asarray(trans), method, antialias=antialias)
        want = ref_scale_and_translate(x, shape, (1, 2), scale, trans, method, antialias)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_scale_and_translate_negative_spatial_dims_and_outside():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    got = image.scale_and_translate(x, (3, 4), (-1,), np.array([1.0]), np.array([10.0]),
                                    "linear")
    np.testing.assert_array_equal(got, np.zeros((3, 4)))  # every sample is outside
    got = image.scale_and_translate(x, (3, 4), (-1,), np.array([1.0]), np.array([1.0]),
                                    "linear")
    np.testing.assert_allclose(got[:, 1:], x[:, :-1], rtol=1e-6)


# --- transformations ---

@pytest.mark.parametrize("method", METHODS)
def test_grads_wrt_image(method):
    with enable_x64():
        x = RNG.standard_normal((4, 5))
        check_grads(lambda v: image.resize(v, (6, 3), method), (x,), order=2,
                    modes=("fwd", "rev"))


@pytest.mark.parametrize("method", ["linear", "cubic", "lanczos3"])
def test_grads_wrt_scale_and_translation(method):
    with enable_x64():
        x = RNG.standard_normal((5, 6))
        fn = lambda s, t: image.scale_and_translate(  # noqa: E731
            x, (7, 4), (0, 1), s, t, method)
        check_grads(fn, (np.array([1.3, 0.7]), np.array([0.25, -0.4])), order=1,
                    modes=("fwd", "rev"), eps=1e-6)


def test_grad_of_resize_is_the_weight_transpose():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    ct = RNG.standard_normal((7, 3)).astype(np.float32)
    g = functrax.grad(lambda v: fnp.sum(image.resize(v, (7, 3), "cubic") * ct))(
        fnp.asarray(x))
    w0 = ref_weights(4, 7, 7 / 4, 0.0, "cubic", True)
    w1 = ref_weights(6, 3, 3 / 6, 0.0, "cubic", True)
    np.testing.assert_allclose(g, w0 @ ct @ w1.T, rtol=1e-5, atol=1e-5)


def test_jit_and_vmap():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    for method in ("nearest", "linear", "lanczos5"):
        fn = lambda v, m=method: image.resize(v, (7, 2), m)  # noqa: E731
        batched = functrax.vmap(fn)(fnp.asarray(x))
        np.testing.assert_allclose(batched, np.stack([fn(fnp.asarray(e)) for e in x]),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(functrax.jit(fn)(x[0]), fn(x[0]), rtol=1e-6, atol=1e-6)
    scales = np.array([[1.5, 0.5], [2.0, 1.0], [0.8, 1.2]], np.float32)
    fn = lambda v, s: image.scale_and_translate(  # noqa: E731
        v, (4, 5), (0, 1), s, fnp.zeros(2), "cubic")
    got = functrax.jit(functrax.vmap(fn))(fnp.asarray(x), fnp.asarray(scales))
    want = np.stack([ref_scale_and_translate(e, (4, 5), (0, 1), s, (0, 0), "cubic")
                     for e, s in zip(x, scales)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# --- errors ---

def test_errors():
    x = fnp.ones((3, 4))
    with pytest.raises(ValueError, match="shape must have length equal to the number of "
                                         "dimensions of x"):
        image.resize(x, (3,), "linear")
    with pytest.raises(ValueError, match='Unknown resize method "bogus"'):
        image.resize(x, (3, 5), "bogus")
    with pytest.raises(TypeError, match="method must be a string or a ResizeMethod"):
        image.resize(x, (3, 5), 1)
    with pytest.raises(ValueError, match="Nearest neighbor resampling is not currently "
                                         "supported for scale_and_translate"):
        image.scale_and_translate(x, (3, 4), (0,), fnp.ones(1), fnp.zeros(1), "nearest")
    with pytest.raises(ValueError, match=r"scale must have shape \(2,\)"):
        image.scale_and_translate(x, (3, 4), (0, 1), fnp.ones(1), fnp.zeros(2), "linear")
    with pytest.raises(ValueError, match="dimension 0 is not in spatial_dims"):
        image.scale_and_translate(x, (5, 4), (1,), fnp.ones(1), fnp.zeros(1), "linear")
    with pytest.raises(ValueError, match="spatial dimension 2 is out of bounds"):
        image.scale_and_translate(x, (3, 4), (2,), fnp.ones(1), fnp.zeros(1), "linear")


@pytest.mark.parametrize("module", ["functrax.image", "functrax.image.scale"])
def test_doctests(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
