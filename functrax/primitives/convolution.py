"""conv_general_dilated: the general N-d convolution (XLA's ``Conv``), its dimension numbers,
its shape helpers and the ``lax`` wrappers built on it.

Params of ``conv_general_dilated_p`` (all static and hashable; every backend rule and
transformation reads exactly these):

- ``window_strides``: ``n`` ints >= 1, one per spatial dimension;
- ``padding``: ``n`` ``(lo, hi)`` int pairs applied to the (lhs-dilated) input; negative
  values crop;
- ``lhs_dilation`` / ``rhs_dilation``: ``n`` ints >= 1: ``d - 1`` zeros are inserted between
  neighbouring input / kernel elements (lhs dilation is a transposed convolution, rhs dilation
  an atrous one);
- ``dimension_numbers``: a :class:`ConvDimensionNumbers` of three int tuples, the positions of
  ``(batch, feature, spatial...)`` in the lhs, ``(out feature, in feature, spatial...)`` in
  the rhs and ``(batch, feature, spatial...)`` in the output; the spatial dimensions of all
  three are listed in the order of the rhs's;
- ``feature_group_count`` / ``batch_group_count``: ints >= 1, at most one of them > 1. With
  ``G`` feature groups the lhs features split into ``G`` groups (group index outermost) each
  convolved with ``O / G`` kernels of ``C / G`` input features; with ``B`` batch groups the
  lhs batch splits into ``B`` groups (outermost), group ``b`` convolved with output features
  ``[b * O / B, (b + 1) * O / B)``: the output batch is ``N / B``;
- ``precision``: None or a pair (kept for printing; the numpy backend computes exactly);
- ``preferred_element_type``: None or the (canonical) result dtype; float16 / bfloat16
  accumulate in float32 in every case.

In canonical order (``N C spatial``), output spatial size ``i`` is
``max(0, (dilate(in_i, lhs_dilation_i) + lo_i + hi_i - dilate(k_i, rhs_dilation_i))
// stride_i + 1)`` with ``dilate(d, r) = 0 if d == 0 else 1 + r * (d - 1)``.

>>> import numpy as np
>>> from functrax import lax
>>> x = np.ones((1, 1, 5), np.float32); w = np.ones((1, 1, 3), np.float32)
>>> lax.conv_general_dilated(x, w, (1,), "SAME")
Array([[[2., 3., 3., 3., 2.]]], dtype=float32)
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple, Sequence, Union

from functrax import core, dtypes
from functrax.primitives.contraction import canonicalize_precision, dot_general
from functrax.primitives.define import Family, ShapedArray, new_primitive, np
from functrax.primitives.shape import rev, transpose
from functrax.primitives.windows import padtype_to_pads

__all__ = [
    "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "conv_general_dilated_p",
    "conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
    "conv_dimension_numbers", "conv_general_permutations", "conv_general_shape_tuple",
    "conv_shape_tuple", "conv_transpose_shape_tuple", "padtype_to_pads",
    "conv_general_dilated_patches", "conv_general_dilated_local", "dilate_shape",
]


class ConvDimensionNumbers(NamedTuple):
    """Describes batch, spatial, and feature dimensions of a convolution.

    Args:
      lhs_spec: a tuple of nonnegative integer dimension numbers containing
        ``(batch dimension, feature dimension, spatial dimensions...)``.
      rhs_spec: a tuple of nonnegative integer dimension numbers containing
        ``(out feature dimension, in feature dimension, spatial dimensions...)``.
      out_spec: a tuple of nonnegative integer dimension numbers containing
        ``(batch dimension, feature dimension, spatial dimensions...)``.
    """

    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


ConvGeneralDilatedDimensionNumbers = Union[None, ConvDimensionNumbers, tuple]

conv_general_dilated_p = new_primitive("conv_general_dilated", family=Family.CONVOLUTION)


# --- dimension numbers ---

def conv_general_permutations(dimension_numbers):
    """Utility for convolution dimension permutations relative to Conv HLO.

    Args:
      dimension_numbers: three strings ``(lhs_spec, rhs_spec, out_spec)`` such as
        ``("NHWC", "HWIO", "NHWC")``.

    Returns:
      three int tuples: the positions of ``(N, C, spatial...)``, ``(O, I, spatial...)`` and
      ``(N, C, spatial...)``, spatial dimensions in the order of the rhs spec.

    >>> conv_general_permutations(("NHWC", "HWIO", "NHWC"))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"}
            == set(out_spec) - {"N", "C"}):
        raise TypeError("convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {dimension_numbers}.")

    def perm(spec, pair):
        spatial = sorted((i for i, c in enumerate(spec) if c not in pair),
                         key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

    return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Converts convolution ``dimension_numbers`` to a :class:`ConvDimensionNumbers`.

    Args:
      lhs_shape: shape of the convolution input.
      rhs_shape: shape of the convolution kernel.
      dimension_numbers: None (``NCH...``, ``OIH...``, ``NCH...``), a tuple/list of three
        strings, or a :class:`ConvDimensionNumbers` (returned as it is).

    Returns:
      the :class:`ConvDimensionNumbers` lax functions use.

    Raises:
      TypeError: for ranks that differ or specs that do not describe a convolution.

    >>> conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers)}.")
    if len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}.")
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                        f"{tuple(map(type, dimension_numbers))}.")
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                            f"ndim of lhs and rhs, got {len(s)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


# --- shapes ---

def dilate_shape(shape, dilation):
    """Sizes after inserting ``d - 1`` zeros between neighbours (``0`` stays ``0``)."""
    return tuple(0 if s == 0 else 1 + d * (s - 1) for s, d in zip(shape, dilation))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """Compute the shape tuple of a conv given input shapes in canonical order.

    >>> conv_shape_tuple((2, 3, 9), (4, 3, 3), (2,), "VALID")
    (2, 4, 4)
    """
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={pads} for lhs_shape[2:]="
                         f"{tuple(lhs_shape[2:])}")
    space = tuple(max(0, (p - int(k)) // int(s) + 1)
                  for p, k, s in zip(padded, rhs_shape[2:], strides))
    batch = int(lhs_shape[0]) // batch_group_count if batch_group_count > 1 else int(
        lhs_shape[0])
    return (batch, int(rhs_shape[0])) + space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
    """The output shape of a convolution with string ``dimension_numbers``."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(tuple(np.take(lhs_shape, lhs_perm)),
                           tuple(np.take(rhs_shape, rhs_perm)), window_strides, padding)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """The output shape of :func:`conv_transpose` with string ``dimension_numbers``."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t = [int(d) for d in np.take(lhs_shape, lhs_perm)]
    rhs_t = [int(d) for d in np.take(rhs_shape, rhs_perm)]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding)
                   for k, s in zip(rhs_t[2:], window_strides)]
    space = [(i - 1) * s - k + 2 + int(sum(p))
             for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
    out = (lhs_t[0], rhs_t[0]) + tuple(space)
    return tuple(int(d) for d in np.take(out, np.argsort(out_perm)))


# --- abstract evaluation ---

def _check_groups(lhs, rhs, dn, feature_group_count, batch_group_count):
    """JAX's checks (and texts) of the feature / batch group counts."""
    name = "conv_general_dilated"
    if not feature_group_count > 0:
        raise ValueError(f"{name} feature_group_count must be a positive integer, got "
                         f"{feature_group_count}.")
    lhs_features = lhs.shape[dn.lhs_spec[1]]
    quot, rem = divmod(lhs_features, feature_group_count)
    if rem:
        raise ValueError(f"{name} feature_group_count must divide lhs feature dimension "
                         f"size, but {feature_group_count} does not divide {lhs_features}.")
    rhs_in, rhs_out = rhs.shape[dn.rhs_spec[1]], rhs.shape[dn.rhs_spec[0]]
    if quot != rhs_in:
        raise ValueError(f"{name} lhs feature dimension size divided by feature_group_count "
                         "must equal the rhs input feature dimension size, but "
                         f"{lhs_features} // {feature_group_count} != {rhs_in}.")
    if rhs_out % feature_group_count:
        raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                         f"feature_group_count, but {rhs_out} is not a multiple of "
                         f"{feature_group_count}.")
    if not batch_group_count > 0:
        raise ValueError(f"{name} batch_group_count must be a positive integer, got "
                         f"{batch_group_count}.")
    lhs_batch = lhs.shape[dn.lhs_spec[0]]
    if batch_group_count > 1 and lhs_batch % batch_group_count:
        raise ValueError(f"{name} batch_group_count must divide lhs batch dimension size, "
                         f"but {batch_group_count} does not divide {lhs_batch}.")
    if rhs_out % batch_group_count:
        raise ValueError(f"{name} rhs output feature dimension size must be a multiple of "
                         f"batch_group_count, but {rhs_out} is not a multiple of "
                         f"{batch_group_count}.")
    if batch_group_count > 1 and feature_group_count > 1:
        raise ValueError("At most one of batch_group_count and feature_group_count may be > "
                         f"1, got batch_group_count={batch_group_count} and "
                         f"feature_group_count={feature_group_count}")


def _check_spatial_params(nspatial, window_strides, padding, lhs_dilation, rhs_dilation):
    name = "conv_general_dilated"
    if len(window_strides) != nspatial:
        raise ValueError(f"{name} window and window_strides must have the same number of "
                         f"dimensions, but got {nspatial} and {len(window_strides)}")
    for arg, vals in (("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(vals) != nspatial:
            raise ValueError(f"{name}: {arg} must have one entry per spatial dimension "
                             f"({nspatial}), got {tuple(vals)}")
    for arg, vals in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                      ("rhs_dilation", rhs_dilation)):
        if any(v < 1 for v in vals):
            raise ValueError(f"{name}: {arg} must be positive integers, got {tuple(vals)}")
    if len(padding) != nspatial:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{nspatial}, got {len(padding)}.")


def _check_dims(lhs, rhs, dn):
    if lhs.ndim != rhs.ndim:
        raise ValueError("conv_general_dilated lhs and rhs must have the same number of "
                         f"dimensions, but got {lhs.shape} and {rhs.shape}.")
    if lhs.ndim < 2:
        raise ValueError("conv_general_dilated: lhs and rhs need a batch and a feature "
                         f"dimension (rank >= 2), got shapes {lhs.shape} and {rhs.shape}.")
    for name, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dn):
        if sorted(spec) != list(range(lhs.ndim)):
            raise ValueError(f"conv_general_dilated: dimension_numbers.{name}={tuple(spec)} "
                             f"is not a permutation of the {lhs.ndim} dimensions")


def conv_output_shape(lhs_shape, rhs_shape, *, window_strides, padding, lhs_dilation,
                      rhs_dilation, dimension_numbers, batch_group_count=1, **_):
    """The output shape of ``conv_general_dilated_p`` for operand shapes and its params."""
    lhs_perm, rhs_perm, out_perm = dimension_numbers
    lhs_t = np.take(lhs_shape, lhs_perm)
    rhs_t = np.take(rhs_shape, rhs_perm)
    lhs_t = tuple(lhs_t[:2]) + dilate_shape(lhs_t[2:], lhs_dilation)
    rhs_t = tuple(rhs_t[:2]) + dilate_shape(rhs_t[2:], rhs_dilation)
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding, batch_group_count)
    return tuple(int(d) for d in np.take(out_t, np.argsort(out_perm)))


_KINDS = "(integral, integral), (integral, floating), (floating, floating), (complex, complex)"


def _kind(dt):
    if dtypes.is_float(dt):
        return "floating"
    return {"i": "integral", "u": "integral", "c": "complex", "b": "bool"}[np.dtype(dt).kind]


def check_preferred_element_type(name, input_dtype, preferred):
    """JAX's rule: the preferred type keeps the kind (ints may widen to floats), never
    narrower than the input."""
    k_in, k_out = _kind(input_dtype), _kind(preferred)
    if not (k_in == k_out or (k_in == "integral" and k_out == "floating")
            or k_in == "bool"):
        raise TypeError(f"{name}: input type {np.dtype(input_dtype).name} is incompatible "
                        f"with `preferred_element_type` {np.dtype(preferred).name}. The "
                        f"compatible combinations of (input_type, preferred_element_type) "
                        f"are {_KINDS}.")
    if k_in == k_out and np.dtype(preferred).itemsize < np.dtype(input_dtype).itemsize:
        raise TypeError("`preferred_element_type` must not be narrower than the original "
                        f"type, got {np.dtype(preferred).name} for inputs of type "
                        f"{np.dtype(input_dtype).name}.")


@conv_general_dilated_p.def_abstract_eval
def _conv_general_dilated_abstract(lhs, rhs, *, window_strides, padding, lhs_dilation,
                                   rhs_dilation, dimension_numbers, feature_group_count,
                                   batch_group_count, precision=None,
                                   preferred_element_type=None):
    dn = dimension_numbers
    _check_dims(lhs, rhs, dn)
    _check_groups(lhs, rhs, dn, feature_group_count, batch_group_count)
    _check_spatial_params(lhs.ndim - 2, window_strides, padding, lhs_dilation, rhs_dilation)
    if lhs.dtype != rhs.dtype:
        raise TypeError("lax.conv_general_dilated requires arguments to have the same "
                        f"dtypes, got {lhs.dtype.name}, {rhs.dtype.name}. Cast one operand "
                        "(lax.convert_element_type) or use functrax.numpy.convolve, which "
                        "promotes.")
    out_dtype = lhs.dtype
    if preferred_element_type is not None:
        check_preferred_element_type("conv_general_dilated", lhs.dtype,
                                     preferred_element_type)
        out_dtype = np.dtype(preferred_element_type)
    shape = conv_output_shape(lhs.shape, rhs.shape, window_strides=window_strides,
                              padding=padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, dimension_numbers=dn,
                              batch_group_count=batch_group_count)
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(shape, out_dtype, weak)


# --- the wrapper that binds the primitive ---

def _int_tuple(name, argname, values):
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{name}: {argname} must be a sequence of integers, got "
                        f"{values!r}") from None


def _explicit_padding(padding):
    try:
        return tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (ValueError, TypeError) as e:
        raise ValueError("padding argument to conv_general_dilated should be a string or a "
                         f"sequence of (low, high) pairs, got {padding}") from e


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """General n-dimensional convolution operator, with optional dilation (XLA's ``Conv``).

    Args:
      lhs: a rank ``n+2`` input array (``NCH...`` unless ``dimension_numbers`` say otherwise).
      rhs: a rank ``n+2`` kernel array (``OIH...`` by default).
      window_strides: ``n`` inter-window strides.
      padding: ``"SAME"``, ``"SAME_LOWER"``, ``"VALID"`` or ``n`` ``(low, high)`` pairs.
        ``"SAME"`` gives ``ceil(in / stride)`` outputs, an odd padding's extra element at the
        end (``"SAME_LOWER"``: at the beginning).
      lhs_dilation: None or ``n`` lhs dilation factors (a transposed convolution).
      rhs_dilation: None or ``n`` rhs dilation factors (an atrous convolution).
      dimension_numbers: None, a :class:`ConvDimensionNumbers`, or three strings such as
        ``("NHWC", "HWIO", "NHWC")`` (N batch, C feature, O/I kernel output/input features,
        any other letters spatial; strides follow the order of the rhs spec's letters).
      feature_group_count: split the lhs features into this many groups.
      batch_group_count: split the lhs batch into this many groups.
      precision: None, a precision name, or a pair of them (recorded; numpy computes exactly).
      preferred_element_type: the accumulation and result dtype (None: the input dtype).
      out_sharding: must be None (functrax has no sharding annotations).

    Returns:
      the convolution, laid out as ``dimension_numbers``' output spec says.

    Raises:
      ValueError / TypeError: for shapes, group counts, dtypes or specs that do not fit
        (JAX's messages).
      NotImplementedError: for an ``out_sharding``.

    >>> import numpy as np
    >>> from functrax import lax
    >>> x = np.arange(6.0, dtype=np.float32).reshape(1, 6, 1)      # NWC
    >>> w = np.ones((2, 1, 1), np.float32)                          # WIO
    >>> lax.conv_general_dilated(x, w, (2,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"))
    Array([[[1.],
            [5.],
            [9.]]], dtype=float32)
    """
    name = "conv_general_dilated"
    if out_sharding is not None:
        raise NotImplementedError(f"{name}: out_sharding={out_sharding!r} is not supported "
                                  "(functrax has no sharding annotations); pass None")
    lhs_aval, rhs_aval = core.get_aval(lhs), core.get_aval(rhs)
    dnums = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    if lhs_aval.ndim != rhs_aval.ndim:
        raise ValueError(f"{name} lhs and rhs must have the same number of dimensions, but got "
                         f"{lhs_aval.shape} and {rhs_aval.shape}.")
    ones = (1,) * max(lhs_aval.ndim - 2, 0)
    if isinstance(padding, str) and lhs_dilation is not None and any(
            d != 1 for d in lhs_dilation):
        raise ValueError("String padding is not implemented for transposed convolution using "
                         "this op. Please either exactly specify the required padding or use "
                         "conv_transpose.")
    window_strides = _int_tuple(name, "window_strides", window_strides)
    lhs_dilation = _int_tuple(name, "lhs_dilation", ones if lhs_dilation is None else lhs_dilation)
    rhs_dilation = _int_tuple(name, "rhs_dilation", ones if rhs_dilation is None else rhs_dilation)
    if isinstance(padding, str):
        padding = _string_padding(lhs_aval, rhs_aval, dnums, window_strides, rhs_dilation,
                                  padding)
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=_explicit_padding(padding),
        lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=canonicalize_precision(precision), preferred_element_type=pet)


def _string_padding(lhs_aval, rhs_aval, dnums, window_strides, rhs_dilation, padding):
    """``padding`` ("SAME", ...) as explicit pairs, for the dilated kernel's window."""
    kernel = dilate_shape(np.take(rhs_aval.shape, dnums.rhs_spec)[2:], rhs_dilation)
    return padtype_to_pads(np.take(lhs_aval.shape, dnums.lhs_spec)[2:], kernel, window_strides,
                           padding)


# --- convenience wrappers ---

def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """Convolution of an ``NCH...`` input with an ``OIH...`` kernel (``conv_general_dilated``
    without dilation or groups).

    >>> import numpy as np
    >>> from functrax import lax
    >>> lax.conv(np.ones((1, 1, 4), np.float32), np.ones((1, 1, 2), np.float32), (1,), "VALID")
    Array([[[2., 2., 2.]]], dtype=float32)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """``conv_general_dilated`` in the default ``NCH...`` / ``OIH...`` layout, with dilations.

    >>> import numpy as np
    >>> from functrax import lax
    >>> x, w = np.ones((1, 1, 3), np.float32), np.ones((1, 1, 2), np.float32)
    >>> lax.conv_with_general_padding(x, w, (1,), ((1, 1),), (1,), (2,))
    Array([[[1., 2., 1.]]], dtype=float32)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
    """(before, after) padding of one dimension of a transposed convolution, for the forward
    convolution's padding ``padding`` (``"SAME"``, ``"VALID"`` or a ``(lo, hi)`` pair)."""
    if isinstance(padding, str) and padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else int(math.ceil(pad_len / 2))
    elif isinstance(padding, str) and padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, (tuple, list)) and len(padding) == 2:
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return pad_a, pad_len - pad_a


_TRANSPOSE_DEFAULT_DIMS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                           4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """The N-d convolution "transpose" (a fractionally strided convolution).

    Args:
      lhs: a rank ``n+2`` input array.
      rhs: a rank ``n+2`` kernel array.
      strides: ``n`` fractional strides (the lhs dilation of the convolution computed).
      padding: ``"SAME"``, ``"VALID"`` (both: the forward convolution's padding), or ``n``
        ``(lo, hi)`` pairs: the transposed convolution's own padding, unless
        ``use_consistent_padding`` (then the forward convolution's, as PyTorch).
      rhs_dilation: None or ``n`` kernel dilation factors.
      dimension_numbers: as ``conv_general_dilated``; default TensorFlow's
        (``NHWC``, ``HWIO``, ``NHWC`` for two spatial dimensions).
      transpose_kernel: flip the kernel's spatial axes and swap its input/output feature
        axes, which makes this the gradient of ``conv_general_dilated`` (as Keras'
        ``Conv2DTranspose``).
      precision, preferred_element_type: as ``conv_general_dilated``.
      use_consistent_padding: read explicit pairs as the forward convolution's padding.

    Returns:
      the transposed convolution.

    >>> import numpy as np
    >>> from functrax import lax
    >>> x, w = np.ones((1, 2, 1), np.float32), np.ones((2, 1, 1), np.float32)
    >>> lax.conv_transpose(x, w, (2,), "VALID")[0, :, 0]
    Array([1., 1., 1., 1.], dtype=float32)
    """
    lhs_aval, rhs_aval = core.get_aval(lhs), core.get_aval(rhs)
    ndims = lhs_aval.ndim
    if ndims != rhs_aval.ndim or ndims < 2:
        raise ValueError(f"conv_transpose: lhs and rhs must have the same rank >= 2, got "
                         f"shapes {lhs_aval.shape} and {rhs_aval.shape}")
    if dimension_numbers is None:
        if ndims not in _TRANSPOSE_DEFAULT_DIMS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_DEFAULT_DIMS[ndims]
    dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    k_sdims = [int(rhs_aval.shape[d]) for d in dn.rhs_spec[2:]]
    rhs_dilation = (1,) * (ndims - 2) if rhs_dilation is None else tuple(rhs_dilation)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        eff_k = dilate_shape(k_sdims, rhs_dilation)
        per_dim = [padding] * len(strides) if isinstance(padding, str) else padding
        pads = tuple(_conv_transpose_padding(k, s, p) for k, s, p in zip(eff_k, strides,
                                                                          per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, dn.rhs_spec[2:])
        perm = list(range(ndims))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * (ndims - 2), pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# --- patches and unshared (locally connected) convolutions ---

def _patches_kernel(dtype, n_channels, filter_shape, rhs_spec):
    """The constant kernel whose output feature ``c * prod(filter) + k`` picks channel ``c``
    at window position ``k``: a 0/1 array laid out as ``rhs_spec``."""
    size = math.prod(filter_shape)
    eye = np.eye(size, dtype=dtype).reshape((size, 1) + tuple(filter_shape))
    kernel = np.tile(eye, (n_channels,) + (1,) * (eye.ndim - 1))
    return np.moveaxis(kernel, (0, 1), (rhs_spec[0], rhs_spec[1]))


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches (receptive fields) a ``conv_general_dilated`` with these params reads.

    The output feature dimension holds each flattened patch, ordered
    ``"c" + <the rhs spec's spatial letters>``: its size is
    ``prod(filter_shape) * <lhs features>``.

    Args:
      lhs: a rank ``n+2`` input array.
      filter_shape: ``n`` window sizes, in the order of the rhs spec's spatial letters.
      window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
        preferred_element_type: as ``conv_general_dilated``.
      precision: None or the precision of the lhs.

    Returns:
      a rank ``n+2`` array of patches, laid out as the output spec says.

    >>> import numpy as np
    >>> from functrax import lax
    >>> x = np.arange(4.0, dtype=np.float32).reshape(1, 1, 4)
    >>> lax.conv_general_dilated_patches(x, (2,), (1,), "VALID")[0]
    Array([[0., 1., 2.],
           [1., 2., 3.]], dtype=float32)
    """
    lhs_aval = core.get_aval(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    dn = conv_dimension_numbers(lhs_aval.shape, (1, 1) + filter_shape, dimension_numbers)
    n_channels = lhs_aval.shape[dn.lhs_spec[1]]
    rhs = _patches_kernel(lhs_aval.dtype, n_channels, filter_shape, dn.rhs_spec)
    return conv_general_dilated(
        lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dn,
        precision=precision if precision is None or (isinstance(precision, str)
                                                     and precision.isupper())
        else (precision, "default"),  # a dot-algorithm preset applies to the whole product
        feature_group_count=n_channels, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """An unshared convolution (a locally connected layer): a separate kernel per output
    position.

    Args:
      lhs: a rank ``n+2`` input array.
      rhs: a rank ``n+2`` array of kernels: its spatial dimensions are the *output*
        positions; its ``I`` dimension holds the flattened patch (``"C" + <the rhs spec's
        spatial letters>`` of the receptive window, size ``prod(filter_shape) * C``).
      window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers: as
        ``conv_general_dilated``.
      filter_shape: ``n`` receptive-window sizes, in the rhs spec's spatial order.
      precision: None, a precision, or a pair (lhs, rhs).

    Returns:
      the unshared convolution, laid out as the output spec says.

    >>> import numpy as np
    >>> from functrax import lax
    >>> x = np.arange(4.0, dtype=np.float32).reshape(1, 1, 4)
    >>> w = np.ones((1, 2, 3), np.float32)                  # O, I = C * 2, output W = 3
    >>> lax.conv_general_dilated_local(x, w, (1,), "VALID", (2,))
    Array([[[1., 3., 5.]]], dtype=float32)
    """
    c_precision = canonicalize_precision(precision)
    patches = conv_general_dilated_patches(
        lhs, filter_shape, window_strides, padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
        precision=c_precision if c_precision is None or isinstance(c_precision, str)
        else c_precision[0])  # a dot-algorithm preset name passes as it is
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(
        core.get_aval(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    lhs_b = tuple(out_spec[2:])
    rhs_b = tuple(rhs_spec[2:][i] for i in sorted(range(len(lhs_b)), key=lambda k: lhs_b[k]))
    dn = (((out_spec[1],), (rhs_spec[1],)), (tuple(sorted(lhs_b)), rhs_b))
    out = dot_general(patches, rhs, dn, precision=c_precision)
    # dot_general's result: the spatial (batch) dims, then lhs N, then rhs O
    nd = core.get_aval(out).ndim
    order = [d for d in range(nd) if d not in (out_spec[0], out_spec[1])]
    perm = [0] * nd
    for src, dst in zip(range(nd - 2), order):
        perm[dst] = src
    perm[out_spec[0]], perm[out_spec[1]] = nd - 2, nd - 1
    return transpose(out, perm)
