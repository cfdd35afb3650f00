"""Input, output and printing: load / save / savez (numpy's ``.npy``/``.npz`` formats),
the ``from*`` constructors, ``from_dlpack``, and numpy's print options (which also govern
``repr(Array)``), as ``jax.numpy`` has them.

>>> import functrax.numpy as fnp
>>> fnp.frombuffer(b"\\x01\\x02", dtype=fnp.uint8)
Array([1, 2], dtype=uint8)
"""
from __future__ import annotations

import numpy as np

from functrax import dtypes
from functrax.numpy.creation import arange, asarray

__all__ = ["load", "save", "savez", "frombuffer", "fromfile", "fromiter", "fromstring",
           "from_dlpack", "fromfunction", "array_repr", "array_str", "get_printoptions",
           "set_printoptions", "printoptions"]

# numpy's own functions, as in JAX: they accept Arrays (through __array__) and the print
# options they set also apply to repr(Array) and str(Array)
save = np.save
savez = np.savez
array_repr = np.array_repr
array_str = np.array_str
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
printoptions = np.printoptions


def load(file, *args, **kwargs):
    """``numpy.load``, returning an Array for a ``.npy`` file (bfloat16 recovered from the
    ``V2`` void dtype numpy saves it as); other results (``.npz`` archives, pickles) are
    returned as numpy gives them. Arguments as ``numpy.load``.

    >>> import io, numpy as np, functrax.numpy as fnp
    >>> buf = io.BytesIO(); fnp.save(buf, fnp.arange(3)); _ = buf.seek(0)
    >>> fnp.load(buf)
    Array([0, 1, 2], dtype=int32)
    """
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray):
        if out.dtype == "V2" and dtypes.bfloat16 is not None:
            out = out.view(dtypes.bfloat16)
        try:
            out = asarray(out)
        except TypeError:  # a dtype functrax does not support: numpy's array
            pass
    return out


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """An Array from the bytes of ``buffer`` (``numpy.frombuffer``; the dtype is
    canonicalized: ``float`` gives float32 unless x64 is enabled).

    >>> import functrax.numpy as fnp
    >>> fnp.frombuffer(b"\\x00\\x00\\x80\\x3f", dtype=fnp.float32)
    Array([1.], dtype=float32)
    """
    return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """An Array from the numbers written in ``string`` separated by ``sep``.

    >>> import functrax.numpy as fnp
    >>> fnp.fromstring("1 2 3", dtype=int, sep=" ")
    Array([1, 2, 3], dtype=int32)
    """
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


_IMPURE = ("functrax.numpy.{0}() is not implemented because it may be non-pure and thus unsafe "
           "for use with JIT and other transformations. Consider using "
           "functrax.numpy.asarray(np.{0}(...)) instead, although care should be taken if "
           "np.{0} is used within transformations because of its potential side-effect of "
           "consuming the {1} object; for more information see `Common Gotchas: Pure "
           "Functions <https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html"
           "#pure-functions>`_.")


def fromfile(*args, **kwargs):
    """Not implemented, as in JAX (reading a file is a side effect): use
    ``asarray(np.fromfile(...))`` outside transformed functions.

    Raises:
      NotImplementedError: always.
    """
    raise NotImplementedError(_IMPURE.format("fromfile", "file"))


def fromiter(*args, **kwargs):
    """Not implemented, as in JAX (consuming an iterator is a side effect): use
    ``asarray(np.fromiter(...))`` outside transformed functions.

    Raises:
      NotImplementedError: always.
    """
    raise NotImplementedError(_IMPURE.format("fromiter", "iterable"))


def from_dlpack(x, /, *, device=None, copy=None):
    """An Array from an object implementing the DLPack protocol (``__dlpack__``), such as a
    numpy array. ``device`` must be None or a CPU device (arrays live on the host).

    >>> import numpy as np, functrax.numpy as fnp
    >>> fnp.from_dlpack(np.arange(3, dtype=np.int32))
    Array([0, 1, 2], dtype=int32)
    """
    if device is not None and getattr(device, "platform", "cpu") != "cpu":
        raise ValueError(f"from_dlpack: functrax arrays are created on the host, got "
                         f"device={device}")
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with a __dlpack__ method, got "
                        f"{type(x).__name__}")
    return asarray(np.from_dlpack(x, copy=copy))


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(*indices)`` where ``indices`` are the coordinate arrays of ``shape``; as
    JAX, ``function`` is vmapped over each axis, so it is called once on traced scalars.

    >>> import functrax.numpy as fnp
    >>> fnp.fromfunction(lambda i, j: i + 2 * j, (2, 3), dtype=int)
    Array([[0, 2, 4],
           [1, 3, 5]], dtype=int32)
    """
    from functrax.transforms.vmap import vmap
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        function = vmap(function, in_axes=tuple(in_axes[::-1]))
    return function(*(arange(s, dtype=dtype) for s in shape), **kwargs)
