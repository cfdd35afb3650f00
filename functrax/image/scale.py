"""Image resampling by separable kernels, as ``jax.image`` (``jax/_src/image/scale.py``).

Each resampled axis ``d`` of length ``m -> n`` gets an ``(m, n)`` weight matrix: output
sample ``j`` sits at input coordinate ``(j + 0.5) / scale - translation / scale - 0.5``
(half-centered pixels), and input pixel ``i`` weighs ``kernel(|sample - i| / k)`` with
``k = max(1 / scale, 1)`` when antialiasing a downsample (a wider low-pass kernel), 1
otherwise. Each column is normalized to sum to 1 (zeroed when its sum is ~0) and zeroed
where the sample falls outside ``[-0.5, m - 0.5]``. The image is contracted with each matrix
by ``dot_general``, so everything is differentiable (in the image, ``scale`` and
``translation``) and traceable by ``jit`` / ``vmap``.

``nearest`` is a gather at ``floor((j + 0.5) * m / n)`` (computed in float32, as JAX).
"""
from __future__ import annotations

import enum

import numpy as np

from functrax import core, lax
from functrax import numpy as fnp
from functrax.numpy.promotion import array_operand, promote_dtypes_inexact

__all__ = ["ResizeMethod", "resize", "scale_and_translate", "compute_weight_mat"]


class ResizeMethod(enum.Enum):
    """Image resize method (``jax.image.ResizeMethod``).

    NEAREST: nearest-neighbor; LINEAR: linear interpolation (the triangle kernel);
    LANCZOS3 / LANCZOS5: Lanczos resampling with a radius-3 / radius-5 kernel; CUBIC: the
    Keys cubic kernel (``a = -0.5``).

    >>> ResizeMethod.from_string("bilinear")
    <ResizeMethod.LINEAR: 1>
    """

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4

    @staticmethod
    def from_string(s: str):
        """The method named ``s`` (``"nearest"``, ``"linear"``/``"bilinear"``/
        ``"trilinear"``/``"triangle"``, ``"lanczos3"``, ``"lanczos5"``, ``"cubic"``/
        ``"bicubic"``/``"tricubic"``)."""
        method = _NAMES.get(s)
        if method is None:
            raise ValueError(f'Unknown resize method "{s}"')
        return method


_NAMES = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
          "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
          "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
          "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
          "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC}


# --- kernels (of |distance| >= 0) ---

def _lanczos_kernel(radius, x):
    y = radius * fnp.sin(np.pi * x) * fnp.sin(np.pi * x / radius)
    # y / (pi^2 x^2) away from 0 (with a safe denominator, for the gradient), 1 near it
    out = fnp.where(x > 1e-3, fnp.divide(y, fnp.where(x != 0, np.pi ** 2 * x ** 2, 1)), 1)
    return fnp.where(x > radius, 0.0, out)


def _keys_cubic_kernel(x):
    # R. G. Keys, "Cubic convolution interpolation for digital image processing" (1981)
    out = ((1.5 * x - 2.5) * x) * x + 1.0
    out = fnp.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
    return fnp.where(x >= 2.0, 0.0, out)


def _triangle_kernel(x):
    return fnp.maximum(0, 1 - fnp.abs(x))


_KERNELS = {
    ResizeMethod.LINEAR: _triangle_kernel,
    ResizeMethod.LANCZOS3: lambda x: _lanczos_kernel(3.0, x),
    ResizeMethod.LANCZOS5: lambda x: _lanczos_kernel(5.0, x),
    ResizeMethod.CUBIC: _keys_cubic_kernel,
}


def compute_weight_mat(input_size: int, output_size: int, scale, translation, kernel,
                       antialias: bool):
    """The ``(input_size, output_size)`` resampling weights of one axis (module docstring).

    ``scale`` and ``translation`` are scalars (Python numbers or, traced, 0-d arrays).
    """
    dtype = fnp.result_type(scale, translation)
    inv_scale = 1.0 / scale
    kernel_scale = fnp.maximum(inv_scale, 1.0) if antialias else 1.0
    sample_f = ((fnp.arange(output_size, dtype=dtype) + 0.5) * inv_scale
                - translation * inv_scale - 0.5)
    x = fnp.abs(sample_f[None, :] - fnp.arange(input_size, dtype=dtype)[:, None]) / kernel_scale
    weights = kernel(x)
    total = fnp.sum(weights, axis=0, keepdims=True)
    weights = fnp.where(fnp.abs(total) > 1000.0 * float(np.finfo(np.float32).eps),
                        fnp.divide(weights, fnp.where(total != 0, total, 1)), 0)
    # zero the columns whose sample lies outside the input (sample_f lost its 0.5 above)
    inside = fnp.logical_and(sample_f >= -0.5, sample_f <= input_size - 0.5)
    return fnp.where(inside[None, :], weights, 0)


def _contract_axis(x, w, d, precision):
    """``x`` with axis ``d`` (length m) contracted with ``w`` (m, n): the new axis at ``d``."""
    out = lax.dot_general(x, w, (((d,), (0,)), ((), ())), precision=precision)
    nd = core.get_aval(out).ndim
    perm = list(range(nd - 1))
    perm.insert(d, nd - 1)
    return lax.transpose(out, perm)


def _scale_and_translate(x, output_shape, spatial_dims, scale, translation, kernel,
                         antialias, precision):
    in_shape = core.get_aval(x).shape
    dtype = core.get_aval(x).dtype
    for i, d in enumerate(spatial_dims):
        w = compute_weight_mat(in_shape[d], output_shape[d], scale[i], translation[i], kernel,
                               antialias)
        x = _contract_axis(x, fnp.asarray(w).astype(dtype), d, precision)
    return x


# --- argument checks ---

def _canonical_shape(fun_name, image, shape):
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{fun_name}: shape must be a sequence of integers, got "
                        f"{shape!r}") from None
    img_shape = core.get_aval(image).shape
    if len(shape) != len(img_shape):
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {img_shape}")
    if any(s < 0 for s in shape):
        raise ValueError(f"{fun_name}: shape {shape} has negative dimensions")
    return shape


def _method(fun_name, method) -> ResizeMethod:
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(f"{fun_name}: method must be a string or a ResizeMethod, got "
                        f"{method!r}")
    return method


def _spatial_axes(fun_name, spatial_dims, ndim):
    try:
        dims = tuple(int(d) for d in spatial_dims)
    except TypeError:
        raise TypeError(f"{fun_name}: spatial_dims must be a sequence of ints, got "
                        f"{spatial_dims!r}") from None
    out = []
    for d in dims:
        if not -ndim <= d < ndim:
            raise ValueError(f"{fun_name}: spatial dimension {d} is out of bounds for an "
                             f"image of rank {ndim}")
        out.append(d % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{fun_name}: spatial_dims {dims} contain duplicates")
    return tuple(out)


def _vector(fun_name, name, v, k):
    v = fnp.asarray(v)
    if v.shape != (k,):
        raise ValueError(f"{fun_name}: {name} must have shape ({k},), one entry per spatial "
                         f"dimension, got shape {v.shape}")
    return v


# --- public functions ---

def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision=lax.Precision.HIGHEST):
    """Resample ``image`` under a scale and translation of its ``spatial_dims``.

    An input location ``x`` of spatial dimension ``spatial_dims[i]`` maps to the output
    location ``x * scale[i] + translation[i]`` (half-centered pixels: pixel ``k`` is at
    ``k + 0.5``); each output pixel samples the input at the inverse image of its center,
    and is zero where that falls outside the input.

    Args:
      image: the input array.
      shape: the output shape (one entry per dimension of ``image``; non-spatial
        dimensions must keep their size).
      spatial_dims: the K dimensions that are resampled.
      scale, translation: arrays of shape ``[K]`` (may be traced: the result is
        differentiable in them).
      method: a :class:`ResizeMethod` or its name (not ``"nearest"``).
      antialias: widen the kernel when downsampling (a low-pass filter).
      precision: passed to ``dot_general`` (JAX's default: ``Precision.HIGHEST``).

    Returns:
      the resampled image (integer images become the default float type).

    Raises:
      ValueError: a shape of the wrong rank, an unknown or ``nearest`` method, mismatched
        ``scale``/``translation`` shapes, or a non-spatial dimension changing size.

    >>> import functrax.numpy as fnp
    >>> img = fnp.arange(4.0).reshape(1, 4)
    >>> scale_and_translate(img, (1, 4), (1,), fnp.array([1.0]), fnp.array([1.0]), "linear")
    Array([[0., 0., 1., 2.]], dtype=float32)
    """
    image = array_operand("scale_and_translate", image)
    shape = _canonical_shape("scale_and_translate", image, shape)
    method = _method("scale_and_translate", method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    in_shape = core.get_aval(image).shape
    dims = _spatial_axes("scale_and_translate", spatial_dims, len(in_shape))
    for d in range(len(in_shape)):
        if d not in dims and shape[d] != in_shape[d]:
            raise ValueError(f"scale_and_translate: dimension {d} is not in spatial_dims "
                             f"{dims} but its size changes ({in_shape[d]} -> {shape[d]}); "
                             "add it to spatial_dims or keep its size")
    scale = _vector("scale_and_translate", "scale", scale, len(dims))
    translation = _vector("scale_and_translate", "translation", translation, len(dims))
    image, = promote_dtypes_inexact(image)
    scale, translation = promote_dtypes_inexact(scale, translation)
    return _scale_and_translate(image, shape, dims, scale, translation, _KERNELS[method],
                                antialias, precision)


def _resize_nearest(x, output_shape):
    in_shape = core.get_aval(x).shape
    for d in range(len(in_shape)):
        m, n = in_shape[d], output_shape[d]
        if m == n:
            continue
        offsets = (np.arange(n, dtype=np.float32) + np.float32(0.5)) * np.float32(m)
        offsets = np.floor(offsets / np.float32(n)).astype(np.int32)
        x = fnp.take(x, offsets, axis=d)
    return x


def resize(image, shape, method, antialias=True, precision=lax.Precision.HIGHEST):
    """Resize ``image`` to ``shape`` (every dimension whose size changes is resampled).

    Args:
      image: the input array (batch and channel dimensions simply keep their size).
      shape: the output shape, one entry per dimension of ``image``.
      method: a :class:`ResizeMethod` or its name: ``"nearest"``, ``"linear"`` (also
        ``"bilinear"``, ``"trilinear"``, ``"triangle"``), ``"cubic"`` (``"bicubic"``,
        ``"tricubic"``), ``"lanczos3"``, ``"lanczos5"``.
      antialias: low-pass filter when downsampling (ignored by ``nearest``).
      precision: passed to ``dot_general`` (ignored by ``nearest``).

    Returns:
      the resized image; integer images become the default float type, except with
      ``nearest``, which keeps the dtype.

    Raises:
      ValueError: ``shape`` of the wrong length or an unknown method.

    >>> import functrax.numpy as fnp
    >>> resize(fnp.array([[0.0, 1.0], [2.0, 3.0]]), (4, 4), "nearest")[0]
    Array([0., 0., 1., 1.], dtype=float32)
    """
    image = array_operand("resize", image)
    shape = _canonical_shape("resize", image, shape)
    method = _method("resize", method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    image, = promote_dtypes_inexact(image)
    in_shape = core.get_aval(image).shape
    dims = tuple(i for i in range(len(shape)) if in_shape[i] != shape[i])
    for d in dims:
        if in_shape[d] == 0:
            raise ValueError(f"resize: cannot resize the empty dimension {d} of shape "
                             f"{in_shape} to {shape[d]}")
    scale = [1.0 if shape[d] == 0 else shape[d] / in_shape[d] for d in dims]
    return _scale_and_translate(image, shape, dims, scale, [0.0] * len(dims),
                                _KERNELS[method], antialias, precision)
