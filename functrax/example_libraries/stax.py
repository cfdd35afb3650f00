"""``functrax.example_libraries.stax``: a small neural-network library, as JAX's ``stax``.

A *layer* is an ``(init_fun, apply_fun)`` pair of functions:

- ``init_fun(rng, input_shape) -> (output_shape, params)`` draws the layer's parameters
  from the PRNG key ``rng`` for inputs of shape ``input_shape`` (a tuple of ints; a leading
  ``-1`` stands for an unknown batch size);
- ``apply_fun(params, inputs, **kwargs) -> outputs`` applies it; the keyword ``rng`` is
  the PRNG key of random layers (``Dropout``); other keywords are passed through the
  combinators and ignored by the layers that do not use them.

Layer constructors are CamelCase (``Dense(10)``, ``Conv(32, (3, 3))``); parameterless
layers are values (``Relu``, ``Flatten``, ``Identity``, ``FanInSum``). ``serial``,
``parallel`` and ``shape_dependent`` compose layers. Parameters are drawn from
``functrax.random`` with the same key splits and initializers as JAX's stax, so the same
key gives the same parameters.

>>> from functrax import random
>>> from functrax.example_libraries import stax
>>> init_fun, apply_fun = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(3),
...                                   stax.LogSoftmax)
>>> out_shape, params = init_fun(random.PRNGKey(0), (-1, 8))
>>> out_shape
(-1, 3)
>>> apply_fun(params, random.normal(random.PRNGKey(1), (5, 8))).shape
(5, 3)
"""
from __future__ import annotations

import math
import operator

import numpy as np

from functrax import lax, random
from functrax import numpy as fnp
from functrax.nn import (
    elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus, standardize,
)
from functrax.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
    "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu",
    "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "elu", "gelu",
    "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax", "normal", "ones",
    "parallel", "randn", "relu", "selu", "serial", "shape_dependent", "sigmoid", "softmax",
    "softplus", "standardize", "zeros",
]

# aliases JAX's stax keeps for backward compatibility
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# --- argument checks ---


def _input_shape(layer, input_shape, rank=None, min_rank=0):
    """``input_shape`` as a tuple of ints, with a clear error when it is not one or its
    rank is not the layer's."""
    try:
        shape = tuple(operator.index(d) for d in input_shape)
    except TypeError:
        raise TypeError(f"{layer} init_fun: input_shape must be a tuple of ints (-1 for an "
                        f"unknown batch size), got {input_shape!r}.") from None
    if (rank is not None and len(shape) != rank) or len(shape) < min_rank:
        want = f"{rank}" if rank is not None else f"at least {min_rank}"
        raise ValueError(f"{layer} init_fun: input_shape {shape} has rank {len(shape)}, but "
                         f"the layer needs inputs of rank {want}.")
    return shape


def _positive_int(layer, name, value):
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{layer}: {name} must be an int, got {value!r}.") from None
    if n <= 0:
        raise ValueError(f"{layer}: {name} must be positive, got {n}.")
    return n


def _int_tuple(layer, name, value):
    try:
        return tuple(operator.index(d) for d in value)
    except TypeError:
        raise TypeError(f"{layer}: {name} must be a tuple of ints, got {value!r}.") from None


def _check_rank(layer, inputs, rank):
    shape = fnp.shape(inputs)
    if len(shape) != rank:
        raise TypeError(f"{layer} apply_fun: inputs of shape {shape} have rank {len(shape)}, "
                        f"but the layer was built for inputs of rank {rank}.")


def _layer_funs(combinator, layers):
    """``(init_funs, apply_funs)`` of ``layers``, each checked to be a pair of callables."""
    if not layers:
        raise ValueError(f"{combinator}: needs at least one layer (an (init_fun, apply_fun) "
                         "pair), got none.")
    for i, layer in enumerate(layers):
        if not (isinstance(layer, (tuple, list)) and len(layer) == 2
                and all(callable(f) for f in layer)):
            raise TypeError(f"{combinator}: layer {i} is not an (init_fun, apply_fun) pair of "
                            f"functions, got {layer!r}. Layer constructors must be called "
                            "(e.g. Dense(10), not Dense); Relu, Flatten, Identity and "
                            "FanInSum are layers already (not Relu()).")
    return tuple(zip(*layers))


def _check_count(layer, what, values, n):
    if len(values) != n:
        raise ValueError(f"{layer} apply_fun: got {len(values)} {what} for {n} layers; pass "
                         f"the params init_fun returned (one entry per layer).")


# --- dense and convolutional layers ---


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully connected layer: ``inputs @ W + b``.

    Args:
      out_dim: the number of output features.
      W_init, b_init: initializers ``init(key, shape)`` of the ``(in_dim, out_dim)`` weights
        (Glorot normal) and the ``(out_dim,)`` bias (normal with stddev 0.01).

    Returns:
      a layer ``(init_fun, apply_fun)``; its params are ``(W, b)``.

    >>> from functrax import random
    >>> init_fun, apply_fun = Dense(4)
    >>> out_shape, (W, b) = init_fun(random.PRNGKey(0), (2, 3))
    >>> out_shape, W.shape, b.shape
    ((2, 4), (3, 4), (4,))
    """
    out_dim = _positive_int("Dense", "out_dim", out_dim)

    def init_fun(rng, input_shape):
        input_shape = _input_shape("Dense", input_shape, min_rank=1)
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return input_shape[:-1] + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        shape = fnp.shape(inputs)
        if shape and shape[-1] != W.shape[0]:
            raise TypeError(f"Dense apply_fun: inputs of shape {shape} have {shape[-1]} "
                            f"features, but the weights of shape {tuple(W.shape)} expect "
                            f"{W.shape[0]}; build the params with init_fun for this input "
                            "shape.")
        return fnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _conv_specs(layer, dimension_numbers, filter_shape):
    """The three spec strings of ``dimension_numbers``, checked against each other."""
    if (not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3
            or not all(isinstance(s, str) for s in dimension_numbers)):
        raise TypeError(f"{layer}: dimension_numbers must be three spec strings "
                        f"(lhs, rhs, out), e.g. ('NHWC', 'HWIO', 'NHWC'), got "
                        f"{dimension_numbers!r}.")
    lhs, rhs, out = dimension_numbers
    ok = (len(lhs) == len(rhs) == len(out) and set(lhs) >= {"N", "C"}
          and set(out) >= {"N", "C"} and set(rhs) >= {"I", "O"})
    if not ok:
        raise ValueError(f"{layer}: invalid dimension_numbers {tuple(dimension_numbers)}: the "
                         "specs must have one length, the lhs and out specs an 'N' and a 'C', "
                         "the rhs spec an 'I' and an 'O'.")
    if len(filter_shape) != len(rhs) - 2:
        raise ValueError(f"{layer}: filter_shape {tuple(filter_shape)} has "
                         f"{len(filter_shape)} dimensions, but the rhs spec {rhs!r} has "
                         f"{len(rhs) - 2} spatial dimensions.")
    return lhs, rhs, out


def _conv_layer(layer, shape_rule, apply_rule):
    """A convolution layer constructor: ``shape_rule`` gives the output shape,
    ``apply_rule(inputs, W, strides, padding, dimension_numbers)`` the convolution."""
    def make(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
             W_init=None, b_init=normal(1e-6)):
        out_chan = _positive_int(layer, "out_chan", out_chan)
        filter_shape = _int_tuple(layer, "filter_shape", filter_shape)
        lhs_spec, rhs_spec, out_spec = _conv_specs(layer, dimension_numbers, filter_shape)
        dimension_numbers = (lhs_spec, rhs_spec, out_spec)
        one = (1,) * len(filter_shape)
        strides = _int_tuple(layer, "strides", strides) if strides else one
        W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

        def init_fun(rng, input_shape):
            input_shape = _input_shape(layer, input_shape, rank=len(lhs_spec))
            spatial = iter(filter_shape)
            in_chan = input_shape[lhs_spec.index("C")]
            kernel_shape = tuple(out_chan if c == "O" else in_chan if c == "I"
                                 else next(spatial) for c in rhs_spec)
            output_shape = shape_rule(input_shape, kernel_shape, strides, padding,
                                      dimension_numbers)
            bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
            k1, k2 = random.split(rng)
            return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

        def apply_fun(params, inputs, **kwargs):
            W, b = params
            _check_rank(layer, inputs, len(lhs_spec))
            return apply_rule(inputs, W, strides, padding, dimension_numbers) + b

        return init_fun, apply_fun
    make.__name__ = make.__qualname__ = layer
    return make


def _conv_apply(inputs, W, strides, padding, dimension_numbers):
    one = (1,) * len(strides)
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers)


def _conv_transpose_apply(inputs, W, strides, padding, dimension_numbers):
    return lax.conv_transpose(inputs, W, strides, padding,
                              dimension_numbers=dimension_numbers)


GeneralConv = _conv_layer("GeneralConv", lax.conv_general_shape_tuple, _conv_apply)
GeneralConv.__doc__ = """A convolution layer with any layout (``lax.conv_general_dilated``).

    Args:
      dimension_numbers: ``(lhs_spec, rhs_spec, out_spec)`` strings, e.g.
        ``('NHWC', 'HWIO', 'NHWC')`` (N batch, C features, I/O kernel in/out features,
        other letters spatial).
      out_chan: the number of output features.
      filter_shape: the kernel's spatial sizes, in the rhs spec's order.
      strides: the window strides (default 1 per spatial dimension).
      padding: ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or ``(low, high)`` pairs.
      W_init: the kernel initializer (default Glorot normal over the kernel's I and O
        axes); b_init: the bias initializer (normal with stddev 1e-6).

    Returns:
      a layer ``(init_fun, apply_fun)``; its params are ``(W, b)``, the bias shaped to
      broadcast against the output (``out_chan`` on the out spec's C axis, 1 elsewhere).

    >>> from functrax import random
    >>> init_fun, _ = GeneralConv(('NCHW', 'OIHW', 'NCHW'), 8, (3, 3), padding='SAME')
    >>> init_fun(random.PRNGKey(0), (2, 3, 5, 5))[0]
    (2, 8, 5, 5)
    """

GeneralConvTranspose = _conv_layer("GeneralConvTranspose", lax.conv_transpose_shape_tuple,
                                   _conv_transpose_apply)
GeneralConvTranspose.__doc__ = """A transposed-convolution layer (``lax.conv_transpose``).

    Arguments as :func:`GeneralConv`; the strides dilate the input (upsampling).

    >>> from functrax import random
    >>> init_fun, _ = GeneralConvTranspose(('NHWC', 'HWIO', 'NHWC'), 4, (3, 3), (2, 2),
    ...                                    padding='SAME')
    >>> init_fun(random.PRNGKey(0), (1, 5, 5, 3))[0]
    (1, 10, 10, 4)
    """

_NHWC = ("NHWC", "HWIO", "NHWC")


def Conv(out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
         b_init=normal(1e-6)):
    """A 2-D convolution layer on NHWC inputs with HWIO kernels:
    ``GeneralConv(('NHWC', 'HWIO', 'NHWC'), ...)`` (see :func:`GeneralConv`).

    >>> from functrax import random
    >>> init_fun, apply_fun = Conv(8, (3, 3), strides=(2, 2))
    >>> out_shape, (W, b) = init_fun(random.PRNGKey(0), (4, 9, 9, 3))
    >>> out_shape, W.shape, b.shape
    ((4, 4, 4, 8), (3, 3, 3, 8), (1, 1, 1, 8))
    """
    return GeneralConv(_NHWC, out_chan, filter_shape, strides, padding, W_init, b_init)


def ConvTranspose(out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
                  b_init=normal(1e-6)):
    """A 2-D transposed convolution on NHWC inputs with HWIO kernels:
    ``GeneralConvTranspose(('NHWC', 'HWIO', 'NHWC'), ...)``."""
    return GeneralConvTranspose(_NHWC, out_chan, filter_shape, strides, padding, W_init,
                                b_init)


def Conv1DTranspose(out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
                    b_init=normal(1e-6)):
    """A 1-D transposed convolution on NHC inputs with HIO kernels:
    ``GeneralConvTranspose(('NHC', 'HIO', 'NHC'), ...)``."""
    return GeneralConvTranspose(("NHC", "HIO", "NHC"), out_chan, filter_shape, strides,
                                padding, W_init, b_init)


# --- normalization ---


def _bn_axes(axis, ndim):
    axes = (axis,) if np.isscalar(axis) else tuple(axis)
    try:
        norm = tuple(operator.index(a) % ndim if -ndim <= operator.index(a) < ndim else None
                     for a in axes)
    except TypeError:
        raise TypeError(f"BatchNorm: axis must be an int or a tuple of ints, got "
                        f"{axis!r}.") from None
    if None in norm or len(set(norm)) != len(norm):
        raise ValueError(f"BatchNorm: axis {axis!r} is out of range or repeated for inputs "
                         f"of rank {ndim}.")
    return norm


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Batch normalization: standardize over ``axis``, then scale and shift.

    Args:
      axis: the axes the statistics are taken over (default ``(0, 1, 2)``: batch and
        spatial axes of NHWC inputs); negative axes count from the end.
      epsilon: added to the variance.
      center, scale: whether to learn the shift ``beta`` and the scale ``gamma`` (an
        unused one is ``()`` in the params).
      beta_init, gamma_init: their initializers (zeros, ones), over the shape of the axes
        not in ``axis``.

    Returns:
      a layer ``(init_fun, apply_fun)``; its params are ``(beta, gamma)``. The batch
      statistics are computed on every call (there are no running averages).

    >>> import functrax.numpy as fnp
    >>> from functrax import random
    >>> init_fun, apply_fun = BatchNorm(axis=0)
    >>> _, params = init_fun(random.PRNGKey(0), (4, 3))
    >>> y = apply_fun(params, fnp.arange(12.0).reshape(4, 3))
    >>> fnp.round(y.mean(0), 4), y.shape
    (Array([0., 0., 0.], dtype=float32), (4, 3))
    """
    def init_fun(rng, input_shape):
        input_shape = _input_shape("BatchNorm", input_shape)
        axes = _bn_axes(axis, len(input_shape))
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axes)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        axes = _bn_axes(axis, fnp.ndim(x))
        expand = tuple(None if i in axes else slice(None) for i in range(fnp.ndim(x)))
        z = standardize(x, axes, epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        if center:
            z = z + beta[expand]
        return z

    return init_fun, apply_fun


# --- elementwise layers ---


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)`` (shape-preserving).

    >>> import functrax.numpy as fnp
    >>> init_fun, apply_fun = elementwise(fnp.clip, min=0.0, max=1.0)
    >>> apply_fun((), fnp.array([-1.0, 0.5, 2.0]))
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(fnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(fnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# --- pooling ---


def _non_spatial_axes(layer, spec, n_spatial):
    if spec is None:
        return 0, n_spatial + 1
    if (not isinstance(spec, str) or len(spec) != n_spatial + 2 or spec.count("N") != 1
            or spec.count("C") != 1):
        raise ValueError(f"{layer}: spec must be a string of {n_spatial + 2} letters with one "
                         f"'N' and one 'C' (e.g. 'NHWC') for a {n_spatial}-D window, got "
                         f"{spec!r}.")
    return spec.index("N"), spec.index("C")


def _with_ones(values, axes):
    """``values`` with a 1 inserted at each of the (sorted) ``axes``."""
    values = list(values)
    for i in sorted(axes):
        values.insert(i, 1)
    return tuple(values)


def _pads(layer, input_shape, window, strides, padding):
    if isinstance(padding, str):
        return lax.padtype_to_pads(input_shape, window, strides, padding)
    pads = tuple(tuple(p) for p in padding)
    if len(pads) != len(input_shape) or any(len(p) != 2 for p in pads):
        raise ValueError(f"{layer}: explicit padding needs one (low, high) pair per input "
                         f"dimension ({len(input_shape)}), got {padding!r}.")
    return pads


def _pooling_layer(layer, reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        window_shape = _int_tuple(layer, "window_shape", window_shape)
        strides = (_int_tuple(layer, "strides", strides) if strides
                   else (1,) * len(window_shape))
        if len(strides) != len(window_shape):
            raise ValueError(f"{layer}: strides {strides} and window_shape {window_shape} "
                             "must have the same length.")
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = _non_spatial_axes(layer, spec, len(window_shape))
        window = _with_ones(window_shape, non_spatial)
        full_strides = _with_ones(strides, non_spatial)
        rank = len(window)

        def init_fun(rng, input_shape):
            input_shape = _input_shape(layer, input_shape, rank=rank)
            pads = _pads(layer, input_shape, window, full_strides, padding)
            out_shape = lax.reduce_window_shape_tuple(input_shape, window, full_strides, pads,
                                                      (1,) * rank, (1,) * rank)
            return out_shape, ()

        def apply_fun(params, inputs, **kwargs):
            _check_rank(layer, inputs, rank)
            out = lax.reduce_window(inputs, init_val, reducer, window, full_strides, padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun
    PoolingLayer.__name__ = PoolingLayer.__qualname__ = layer
    return PoolingLayer


def _normalize_by_window_size(window_shape, strides, padding):
    """AvgPool's rescaling: divide each output by the number of input elements its window
    covers (padding excluded, so 'SAME' averages over the valid elements only)."""
    def rescale(outputs, inputs, spec):
        ndim = fnp.ndim(inputs)
        non_spatial = _non_spatial_axes("AvgPool", spec, ndim - 2)
        spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
        pads = padding
        if not isinstance(padding, str):
            pads = tuple(p for i, p in enumerate(padding) if i not in non_spatial)
        counts = lax.reduce_window(fnp.ones(spatial_shape, inputs.dtype), 0., lax.add,
                                   window_shape, strides, pads)
        for i in sorted(non_spatial):
            counts = fnp.expand_dims(counts, i)
        return outputs / counts
    return rescale


MaxPool = _pooling_layer("MaxPool", lax.max, -np.inf)
SumPool = _pooling_layer("SumPool", lax.add, 0.)
AvgPool = _pooling_layer("AvgPool", lax.add, 0., _normalize_by_window_size)
_POOL_DOC = """A {what} pooling layer (``lax.reduce_window`` with ``lax.{op}``).

    Args:
      window_shape: the window's spatial sizes (e.g. ``(2, 2)``).
      strides: the window strides (default 1 per spatial dimension).
      padding: ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or one ``(low, high)`` pair per
        input dimension.
      spec: the input layout, a string with one 'N' (batch) and one 'C' (features), e.g.
        ``'NCHW'``; default None: batch first, features last.

    Returns:
      a parameterless layer ``(init_fun, apply_fun)``.{extra}

    >>> from functrax import random
    >>> init_fun, _ = {name}((2, 2), strides=(2, 2))
    >>> init_fun(random.PRNGKey(0), (8, 28, 28, 16))[0]
    (8, 14, 14, 16)
    """
MaxPool.__doc__ = _POOL_DOC.format(what="max", op="max", name="MaxPool", extra="")
SumPool.__doc__ = _POOL_DOC.format(what="sum", op="add", name="SumPool", extra="")
AvgPool.__doc__ = _POOL_DOC.format(
    what="mean", op="add", name="AvgPool",
    extra=" Each output is divided by the number of input elements its window covers "
          "(padding not counted).")


# --- shape layers ---


def _flatten():
    def init_fun(rng, input_shape):
        input_shape = _input_shape("Flatten", input_shape, min_rank=1)
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return fnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


# reshapes ``(batch, d1, d2, ...)`` inputs to ``(batch, d1 * d2 * ...)``
Flatten = _flatten()


def _identity():
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs

    return init_fun, apply_fun


# returns its inputs
Identity = _identity()


def FanOut(num):
    """A layer returning a list of ``num`` copies of its input (to feed :func:`parallel`).

    >>> init_fun, apply_fun = FanOut(2)
    >>> init_fun(None, (3, 4))
    ([(3, 4), (3, 4)], ())
    """
    num = _positive_int("FanOut", "num", num)

    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_shapes(layer, input_shape, axis=None):
    """The input shapes of a fan-in layer (and ``axis`` made non-negative), checked to
    agree except on ``axis``."""
    shapes = [_input_shape(layer, s) for s in input_shape]
    rank = len(shapes[0]) if shapes else 0
    if axis is not None:
        if not -rank <= axis < rank:
            raise ValueError(f"{layer} init_fun: axis {axis} is out of range for inputs of "
                             f"rank {rank}.")
        axis %= rank
    rest = {tuple(d for i, d in enumerate(s) if i != axis) for s in shapes}
    if not shapes or len(rest) != 1 or len({len(s) for s in shapes}) != 1:
        where = "" if axis is None else f" except on axis {axis}"
        raise ValueError(f"{layer} init_fun: needs a list of input shapes that agree{where}, "
                         f"got {input_shape!r}.")
    return shapes, axis


def _fan_in_sum():
    def init_fun(rng, input_shape):
        shapes, _ = _fan_in_shapes("FanInSum", input_shape)
        return shapes[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs)

    return init_fun, apply_fun


# sums the list of inputs it gets (e.g. from ``parallel``)
FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
    """A layer concatenating the list of inputs it gets along ``axis``.

    >>> init_fun, apply_fun = FanInConcat()
    >>> init_fun(None, [(3, 4), (3, 2)])
    ((3, 6), ())
    """
    def init_fun(rng, input_shape):
        shapes, ax = _fan_in_shapes("FanInConcat", input_shape, axis)
        size = sum(s[ax] for s in shapes)
        return shapes[0][:ax] + (size,) + shapes[0][ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return fnp.concatenate(inputs, axis)

    return init_fun, apply_fun


# --- random layers ---


def Dropout(rate, mode="train"):
    """A dropout layer, as JAX's stax: ``rate`` is the probability of KEEPING an element.

    In ``mode='train'``, ``apply_fun(params, inputs, rng=key)`` keeps each element with
    probability ``rate`` (``random.bernoulli(key, rate, inputs.shape)``) and scales the
    kept ones by ``1 / rate``; in ``mode='test'`` it returns the inputs.

    Raises:
      ValueError: in train mode without an ``rng`` key, or for another ``mode``.

    >>> import functrax.numpy as fnp
    >>> from functrax import random
    >>> _, apply_fun = Dropout(0.5)
    >>> apply_fun((), fnp.ones(4), rng=random.PRNGKey(0))
    Array([0., 0., 2., 2.], dtype=float32)
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if mode == "test":
            return inputs
        if mode != "train":
            raise ValueError(f"Dropout layer requires `mode` argument to be either `'train'` "
                             f"or `'test'`, got {mode!r}.")
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                             "argument. That is, instead of `apply_fun(params, inputs)`, call "
                             "it like `apply_fun(params, inputs, rng=rng)` where `rng` is a "
                             "PRNG key (e.g. from `functrax.random.PRNGKey`).")
        keep = random.bernoulli(rng, rate, inputs.shape)
        return fnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


# --- combinators ---


def _split_rng(rng, n):
    return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers):
    """Compose layers in sequence: each layer's output is the next one's input.

    Args:
      *layers: ``(init_fun, apply_fun)`` pairs.

    Returns:
      a layer whose params are the list of the layers' params. ``init_fun`` splits its key
      once per layer (``rng, layer_rng = split(rng)``); ``apply_fun`` splits an ``rng``
      keyword into one key per layer and passes the other keywords to every layer.

    >>> from functrax import random
    >>> init_fun, apply_fun = serial(Dense(4), Relu)
    >>> out_shape, params = init_fun(random.PRNGKey(0), (2, 3))
    >>> out_shape, len(params)
    ((2, 4), 2)
    """
    init_funs, apply_funs = _layer_funs("serial", layers)
    nlayers = len(layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        _check_count("serial", "params", params, nlayers)
        rngs = _split_rng(kwargs.pop("rng", None), nlayers)
        for fun, param, rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """Apply layers side by side: the i-th layer to the i-th input (a sequence of
    ``len(layers)`` inputs, e.g. from :func:`FanOut`); outputs a list.

    Returns:
      a layer whose ``init_fun`` takes a sequence of input shapes and returns the tuple of
      output shapes and the tuple of the layers' params (one key per layer from
      ``split(rng, len(layers))``).

    >>> from functrax import random
    >>> layer = serial(FanOut(2), parallel(Dense(3), Identity), FanInConcat())
    >>> layer[0](random.PRNGKey(0), (5, 2))[0]
    (5, 5)
    """
    init_funs, apply_funs = _layer_funs("parallel", layers)
    nlayers = len(layers)

    def init_fun(rng, input_shape):
        _check_count("parallel", "input shapes", input_shape, nlayers)
        rngs = random.split(rng, nlayers)
        results = [init(r, s) for init, r, s in zip(init_funs, rngs, input_shape)]
        return tuple(s for s, _ in results), tuple(p for _, p in results)

    def apply_fun(params, inputs, **kwargs):
        _check_count("parallel", "params", params, nlayers)
        _check_count("parallel", "inputs", inputs, nlayers)
        rngs = _split_rng(kwargs.pop("rng", None), nlayers)
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built only once the input shape is known: ``make_layer(input_shape)``
    returns the ``(init_fun, apply_fun)`` pair to use (called again by ``apply_fun`` with
    ``inputs.shape``).

    >>> from functrax import random
    >>> init_fun, _ = shape_dependent(lambda shape: Dense(2 * shape[-1]))
    >>> init_fun(random.PRNGKey(0), (1, 3))[0]
    (1, 6)
    """
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
