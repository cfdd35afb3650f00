"""``functrax.numpy.ufunc`` (JAX's ``jnp.ufunc``) and ``frompyfunc``, and the binary ufuncs
of ``functrax.numpy`` as ufunc objects (``add``, ``multiply``, ``maximum``, ...), so that
``fnp.add.outer``, ``fnp.multiply.reduce`` or ``fnp.add.at(x, idx, v, inplace=False)`` work.

A ufunc wraps a scalar function: calling it vectorizes the function (``vectorize``), and
``reduce`` / ``accumulate`` / ``at`` / ``reduceat`` run it in loops (``fori_loop`` / ``scan``)
unless the ufunc has a faster implementation (the built-in ones use sum, cumsum,
scatter-add, ...).

>>> import operator, functrax.numpy as fnp
>>> add = fnp.frompyfunc(operator.add, nin=2, nout=1, identity=0)
>>> add.reduce(fnp.arange(4))
Array(6, dtype=int32)
>>> fnp.add.outer(fnp.arange(2), fnp.arange(3))
Array([[0, 1, 2],
       [1, 2, 3]], dtype=int32)
"""
from __future__ import annotations

import math

import numpy as np

from functrax import core, lax
from functrax.numpy import reductions, selection, shape_ops, ufuncs
from functrax.numpy.creation import asarray
from functrax.numpy.promotion import canonicalize_axis, check_arraylike

__all__ = ["ufunc", "frompyfunc", "add", "subtract", "multiply", "maximum", "minimum",
           "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
           "bitwise_xor"]

_AT_INPLACE = ("functrax.numpy.ufunc.at cannot modify arrays in-place, because functrax "
               "arrays are immutable. Pass inplace=False to instead return an updated array.")


def _aval(x):
    return core.get_aval(x)


def _loops():
    from functrax.control_flow import loops, scan
    return loops.fori_loop, scan.scan


def _vmap(f, in_axes):
    from functrax.transforms.vmap import vmap
    return vmap(f, in_axes=in_axes)


class ufunc:
    """A universal function: elementwise (broadcasting) calls plus the ``reduce``,
    ``accumulate``, ``at``, ``reduceat`` and ``outer`` methods of numpy's ufuncs.

    Args:
      func: the scalar function (``nin`` arguments, ``nout`` results).
      nin, nout: the numbers of inputs and outputs.
      name: the name (default ``func.__name__``).
      nargs: ``nin`` unless given.
      identity: the identity of a binary operation (the start of an empty ``reduce``).
      call, reduce, accumulate, at, reduceat: faster implementations of the methods
        (default: ``vectorize(func)`` and loops over ``func``).

    >>> import functrax.numpy as fnp
    >>> fnp.add.nin, fnp.add.nout, fnp.add.identity
    (2, 1, 0)
    """

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None,
                 call=None, reduce=None, accumulate=None, at=None, reduceat=None):
        self.__doc__ = getattr(func, "__doc__", None)
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__qualname__ = self.__name__
        self.__module__ = "functrax.numpy"
        self.nin, self.nout = int(nin), int(nout)
        self.nargs = int(nargs or nin)
        self.identity = identity
        self._func = func
        self._call = call or self._call_vectorized
        self._reduce = reduce or self._reduce_via_loop
        self._accumulate = accumulate or self._accumulate_via_scan
        self._at = at or self._at_via_scan
        self._reduceat = reduceat or self._reduceat_via_loop

    def __repr__(self):
        return f"<functrax.numpy.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        return self._call(*args)

    def _call_vectorized(self, *args):
        from functrax.numpy.vectorize import vectorize
        return vectorize(self._func)(*args)

    def _binary_only(self, method):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs; {self.__name__} "
                             f"has nin={self.nin}")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single "
                             f"value; {self.__name__} has nout={self.nout}")

    def _result_dtype(self, *xs):
        from functrax.core.tracing import ShapeDtypeStruct, eval_shape
        structs = [ShapeDtypeStruct((), _aval(x).dtype) for x in xs]
        return eval_shape(self._func, *structs).dtype

    # --- reduce ---

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        """Reduce ``a`` along ``axis`` (None: all axes) by repeated application.

        >>> import functrax.numpy as fnp
        >>> fnp.multiply.reduce(fnp.array([2, 3, 5]))
        Array(30, dtype=int32)
        """
        check_arraylike(f"{self.__name__}.reduce", a)
        self._binary_only("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if initial is not None:
            check_arraylike(f"{self.__name__}.reduce", initial)
        if where is not None:
            check_arraylike(f"{self.__name__}.reduce", where)
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify "
                                 "'initial'.")
        return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                            where=where)

    def _reduce_via_loop(self, a, axis=0, dtype=None, keepdims=False, initial=None,
                         where=None):
        arr = asarray(a)
        nd = _aval(arr).ndim
        initial = self.identity if initial is None else initial
        dtype = self._result_dtype(arr, arr) if dtype is None else np.dtype(dtype)
        if where is not None:
            where = shape_ops.broadcast_to(asarray(where), _aval(arr).shape)
        if isinstance(axis, tuple):
            raise NotImplementedError(f"{self.__name__}.reduce: a tuple of axes is not "
                                      "supported")
        if axis is None:
            final = (1,) * nd if keepdims else ()
            arr = shape_ops.ravel(arr)
            where = None if where is None else shape_ops.ravel(where)
            axis = 0
        else:
            axis = canonicalize_axis(axis, nd, f"{self.__name__}.reduce")
            shape = _aval(arr).shape
            final = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]
        arr = shape_ops.moveaxis(arr, axis, 0)
        where = None if where is None else shape_ops.moveaxis(where, axis, 0)
        n = _aval(arr).shape[0]
        if initial is None and n == 0:
            raise ValueError(f"zero-size array to reduction operation {self.__name__} which "
                             "has no identity")
        start, init = (1, arr[0]) if initial is None else (0, initial)
        init = shape_ops.broadcast_to(lax.convert_element_type(asarray(init), dtype),
                                      _aval(arr).shape[1:])

        def body(i, acc):
            new = self._call(acc, lax.convert_element_type(arr[i], dtype))
            return new if where is None else selection.where(where[i], new, acc)
        fori_loop, _ = _loops()
        result = fori_loop(start, n, body, init)
        return shape_ops.reshape(result, final) if keepdims else result

    # --- accumulate ---

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """The running reduction of ``a`` along ``axis``.

        >>> import functrax.numpy as fnp
        >>> fnp.add.accumulate(fnp.array([1, 2, 3]))
        Array([1, 3, 6], dtype=int32)
        """
        self._binary_only("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        return self._accumulate(a, axis=axis, dtype=dtype)

    def _accumulate_via_scan(self, a, axis=0, dtype=None):
        check_arraylike(f"{self.__name__}.accumulate", a)
        arr = asarray(a)
        dtype = self._result_dtype(arr, arr) if dtype is None else np.dtype(dtype)
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        axis = canonicalize_axis(axis, _aval(arr).ndim, f"{self.__name__}.accumulate")
        arr = lax.convert_element_type(shape_ops.moveaxis(arr, axis, 0), dtype)
        if _aval(arr).shape[0] == 0:
            return shape_ops.moveaxis(arr, 0, axis)

        def step(acc, x):
            new = self._call(acc, x)
            return new, new
        _, scan = _loops()
        _, rest = scan(step, arr[0], arr[1:])
        out = shape_ops.concatenate([arr[:1], rest], axis=0)
        return shape_ops.moveaxis(out, 0, axis)

    # --- at ---

    def at(self, a, indices, b=None, /, *, inplace=True):
        """``a`` with ``a[indices] = func(a[indices], b)`` applied once per index (repeated
        indices accumulate). Requires ``inplace=False``.

        >>> import functrax.numpy as fnp
        >>> fnp.add.at(fnp.zeros(3), fnp.array([0, 0, 2]), 1.0, inplace=False)
        Array([2., 0., 1.], dtype=float32)
        """
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        return self._at(a, indices) if b is None else self._at(a, indices, b)

    def _at_via_scan(self, a, indices, *args):
        check_arraylike(f"{self.__name__}.at", a, *args)
        dtype = self._result_dtype(asarray(a), *[asarray(x) for x in args])
        a = lax.convert_element_type(asarray(a), dtype)
        args = [lax.convert_element_type(asarray(x), dtype) for x in args]
        idx = indices if isinstance(indices, tuple) else (indices,)
        if not idx:
            return a
        shapes = [np.shape(i) for i in idx if not isinstance(i, slice)]
        shape = np.broadcast_shapes(*shapes) if shapes else ()
        if not shape:
            return a.at[idx].set(self._call(a.at[idx].get(), *args))
        count = math.prod(shape)
        if args:
            tail = _aval(args[0]).shape[len(shape):]
            args = [shape_ops.reshape(shape_ops.broadcast_to(args[0], shape + tail),
                                      (count,) + tail)]
        flat = [i if isinstance(i, slice) else shape_ops.ravel(
            shape_ops.broadcast_to(asarray(i), shape)) for i in idx]

        def step(a, i):
            where = tuple(f if isinstance(f, slice) else f[i] for f in flat)
            return a.at[where].set(self._call(a.at[where].get(), *(x[i] for x in args))), None
        _, scan = _loops()
        out, _ = scan(step, a, lax.iota(np.int32, count))
        return out

    # --- reduceat ---

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions over the slices ``a[indices[i]:indices[i+1]]`` along ``axis`` (just
        ``a[indices[i]]`` where ``indices[i] >= indices[i+1]``), as numpy's.

        >>> import functrax.numpy as fnp
        >>> fnp.add.reduceat(fnp.arange(8), fnp.array([0, 4, 1]))
        Array([ 6,  4, 28], dtype=int32)
        """
        self._binary_only("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        return self._reduceat(a, indices, axis=axis, dtype=dtype)

    def _reduceat_via_loop(self, a, indices, axis=0, dtype=None):
        from functrax.numpy.indexing import take
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a, ind = asarray(a), asarray(indices)
        if _aval(a).ndim == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got "
                             f"a.shape={_aval(a).shape}")
        if _aval(ind).ndim != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got "
                             f"indices.shape={_aval(ind).shape}")
        if dtype is not None:
            a = lax.convert_element_type(a, np.dtype(dtype))
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        axis = canonicalize_axis(axis, _aval(a).ndim, f"{self.__name__}.reduceat")
        n = _aval(a).shape[axis]
        out = take(a, ind, axis=axis)
        other = tuple(d for d in range(_aval(out).ndim) if d != axis)
        bounds = shape_ops.expand_dims(shape_ops.concatenate([ind, asarray([n], _aval(
            ind).dtype)]), other)
        start = lax.slice_in_dim(bounds, 0, _aval(ind).shape[0], axis=axis)
        stop = lax.slice_in_dim(bounds, 1, _aval(ind).shape[0] + 1, axis=axis)

        def body(i, acc):
            inside = ufuncs.logical_and(ufuncs.greater(i, start), ufuncs.less(i, stop))
            item = take(a, shape_ops.expand_dims(i, (0,)), axis=axis)
            return selection.where(inside, self._call(acc, item), acc)
        fori_loop, _ = _loops()
        return fori_loop(0, n, body, out)

    # --- outer ---

    def outer(self, A, B, /):
        """``func(A[i...], B[j...])`` for every pair: shape ``A.shape + B.shape``.

        >>> import functrax.numpy as fnp
        >>> fnp.multiply.outer(fnp.array([1, 2]), fnp.array([3, 4]))
        Array([[3, 4],
               [6, 8]], dtype=int32)
        """
        self._binary_only("outer")
        check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = asarray(A), asarray(B)
        ra, rb = shape_ops.ravel(A), shape_ops.ravel(B)
        res = _vmap(_vmap(self._call, (None, 0)), (0, None))(ra, rb)
        return shape_ops.reshape(res, _aval(A).shape + _aval(B).shape)


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A :class:`ufunc` from a scalar function of ``nin`` arguments and ``nout`` results.

    >>> import functrax.numpy as fnp
    >>> hyp = fnp.frompyfunc(lambda x, y: fnp.sqrt(x * x + y * y), nin=2, nout=1)
    >>> hyp(fnp.array([3.0]), 4.0)
    Array([5.], dtype=float32)
    """
    return ufunc(func, nin, nout, identity=identity)


# --- the built-in binary ufuncs, with fast methods ---


def _reducer(fn, takes_dtype=True):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        if not takes_dtype and dtype is not None:
            a = lax.convert_element_type(asarray(a), np.dtype(dtype))
        kw = {"dtype": dtype} if takes_dtype else {}
        return fn(a, axis=axis, keepdims=keepdims, initial=initial, where=where, **kw)
    return reduce


def _bool_reducer(fn):
    def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        out = fn(a, axis=axis, keepdims=keepdims, where=where)
        if initial is not None:
            out = ufuncs.logical_and(out, asarray(initial)) if fn is reductions.all else \
                ufuncs.logical_or(out, asarray(initial))
        return out if dtype is None else lax.convert_element_type(out, np.dtype(dtype))
    return reduce


def _accumulator(fn):
    def accumulate(a, axis=0, dtype=None):
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        return fn(a, axis=axis, dtype=dtype)
    return accumulate


def _lax_accumulator(lax_fn):
    def accumulate(a, axis=0, dtype=None):
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        a = asarray(a) if dtype is None else lax.convert_element_type(asarray(a),
                                                                      np.dtype(dtype))
        return lax_fn(a, axis=canonicalize_axis(axis, _aval(a).ndim, "accumulate"))
    return accumulate


def _scatter_at(method, negate=False):
    def at(a, indices, *args):
        ref = asarray(a).at[indices]
        (b,) = args if args else (None,)
        if b is None:
            raise TypeError("at: this ufunc needs a second operand b")
        return getattr(ref, method)(ufuncs.negative(b) if negate else b)
    return at


add = ufunc(ufuncs.add, 2, 1, name="add", identity=0, call=ufuncs.add,
            reduce=_reducer(reductions.sum), accumulate=_accumulator(reductions.cumsum),
            at=_scatter_at("add"))
subtract = ufunc(ufuncs.subtract, 2, 1, name="subtract", call=ufuncs.subtract,
                 at=_scatter_at("add", negate=True))
multiply = ufunc(ufuncs.multiply, 2, 1, name="multiply", identity=1, call=ufuncs.multiply,
                 reduce=_reducer(reductions.prod), accumulate=_accumulator(reductions.cumprod),
                 at=_scatter_at("multiply"))
maximum = ufunc(ufuncs.maximum, 2, 1, name="maximum", call=ufuncs.maximum,
                reduce=_reducer(reductions.max, takes_dtype=False),
                accumulate=_lax_accumulator(lax.cummax), at=_scatter_at("max"))
minimum = ufunc(ufuncs.minimum, 2, 1, name="minimum", call=ufuncs.minimum,
                reduce=_reducer(reductions.min, takes_dtype=False),
                accumulate=_lax_accumulator(lax.cummin), at=_scatter_at("min"))
logical_and = ufunc(ufuncs.logical_and, 2, 1, name="logical_and", identity=True,
                    call=ufuncs.logical_and, reduce=_bool_reducer(reductions.all))
logical_or = ufunc(ufuncs.logical_or, 2, 1, name="logical_or", identity=False,
                   call=ufuncs.logical_or, reduce=_bool_reducer(reductions.any))
logical_xor = ufunc(ufuncs.logical_xor, 2, 1, name="logical_xor", identity=False,
                    call=ufuncs.logical_xor)
bitwise_and = ufunc(ufuncs.bitwise_and, 2, 1, name="bitwise_and", identity=-1,
                    call=ufuncs.bitwise_and)
bitwise_or = ufunc(ufuncs.bitwise_or, 2, 1, name="bitwise_or", identity=0,
                   call=ufuncs.bitwise_or)
bitwise_xor = ufunc(ufuncs.bitwise_xor, 2, 1, name="bitwise_xor", identity=0,
                    call=ufuncs.bitwise_xor)
