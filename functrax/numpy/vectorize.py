"""Auto-vectorization helpers: vectorize (numpy's generalized-ufunc signatures, through
vmap), apply_along_axis, apply_over_axes and piecewise (as ``jax.numpy``'s).

>>> import functrax.numpy as fnp
>>> mv = fnp.vectorize(lambda m, v: m @ v, signature="(n,k),(k)->(n)")
>>> mv(fnp.ones((4, 2, 3)), fnp.ones(3)).shape
(4, 2)
"""
from __future__ import annotations

import functools
import re

import numpy as np

from functrax import core, lax
from functrax.numpy import reductions, shape_ops
from functrax.numpy.creation import asarray
from functrax.numpy.promotion import canonicalize_axis, check_arraylike

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes", "piecewise"]

# numpy's gufunc signature grammar: "(m,n),(n)->(m)"
_DIM = r"\w+"
_DIMS = "(?:{0}(?:,{0})*)?".format(_DIM)
_ARG = rf"\({_DIMS}\)"
_ARGS = "{0}(?:,{0})*".format(_ARG)
_SIGNATURE = "^{0}->{0}$".format(_ARGS)


def _vmap(f, in_axes=0, out_axes=0):
    from functrax.transforms.vmap import vmap
    return vmap(f, in_axes=in_axes, out_axes=out_axes)


def _parse_signature(signature):
    """``(input core dims, output core dims)``, one tuple of names per argument."""
    if not re.match(_SIGNATURE, signature.replace(" ", "")):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = ([tuple(re.findall(_DIM, arg)) for arg in re.findall(_ARG, side)]
                 for side in signature.replace(" ", "").split("->"))
    return ins, outs


def _update_sizes(sizes, shape, dims, context, is_input):
    n = len(dims)
    if is_input and len(shape) < n:
        raise ValueError(f"input with shape {shape!r} does not have enough dimensions for "
                         f"all core dimensions {dims!r} {context}")
    if not is_input and len(shape) != n:
        raise ValueError(f"output shape {shape!r} does not match core dimensions {dims!r} "
                         f"{context}")
    for d, size in zip(dims, shape[len(shape) - n:] if n else ()):
        if sizes.setdefault(d, size) != size:
            raise ValueError(f"inconsistent size for core dimension {d!r}: {size!r} vs "
                             f"{sizes[d]!r} {context}")


def _input_dims(args, in_dims, context):
    """The broadcast loop shape and the core dimension sizes."""
    if len(args) != len(in_dims):
        raise TypeError(f"wrong number of positional arguments: expected {len(in_dims)!r}, "
                        f"got {len(args)!r} {context}")
    sizes, loop_shapes = {}, []
    for arg, dims in zip(args, in_dims):
        shape = core.get_aval(arg).shape
        _update_sizes(sizes, shape, dims, context, True)
        loop_shapes.append(shape[:len(shape) - len(dims)])
    try:
        return np.broadcast_shapes(*loop_shapes), sizes
    except ValueError:
        raise ValueError(f"vectorize: the loop dimensions {loop_shapes} of the arguments do "
                         f"not broadcast {context}") from None


def _checked(func, sizes, out_dims, context):
    """``func``, checking that its outputs have the signature's core dimensions."""
    def wrapped(*args):
        out = func(*args)
        outs = out if isinstance(out, tuple) else [out]
        if len(out_dims) > 1 and not isinstance(out, tuple):
            raise TypeError(f"output must be a tuple when multiple outputs are expected, got: "
                            f"{out!r}\n{context}")
        if len(outs) != len(out_dims):
            raise TypeError(f"wrong number of output arguments: expected {len(out_dims)!r}, "
                            f"got {len(outs)!r} {context}")
        local = dict(sizes)
        for o, dims in zip(outs, out_dims):
            _update_sizes(local, tuple(np.shape(o)), dims, context, False)
        return out
    return wrapped


def _apply_excluded(func, excluded, args, kwargs):
    """``func`` with the excluded positional and keyword arguments bound."""
    if not excluded:
        return func, list(args), kwargs
    static_args = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int))
                   if i < len(args)]
    dyn_args = [a for i, a in enumerate(args) if i not in excluded]
    static_kw = {k: v for k, v in kwargs.items() if k in excluded}
    dyn_kw = {k: v for k, v in kwargs.items() if k not in excluded}

    def bound(*a, **kw):
        a = list(a)
        for i, v in static_args:
            a.insert(i, v)
        return func(*a, **kw, **static_kw)
    return bound, dyn_args, dyn_kw


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """Vectorize ``pyfunc`` over leading (loop) dimensions with numpy broadcasting, by vmap.

    Args:
      pyfunc: the function of scalars (or of core-dimension arrays, with ``signature``).
      excluded: positions (ints) or keyword names (strs) passed to ``pyfunc`` unchanged.
      signature: a generalized-ufunc signature such as ``"(m,n),(n)->(m)"``: ``pyfunc``
        then sees (and must return) arrays of those core shapes.

    Returns:
      The vectorized function. Keyword arguments must be listed in ``excluded`` (JAX drops
      the others silently; here that is a TypeError).

    Raises:
      ValueError: shapes that do not fit the signature (JAX's messages).

    >>> import functrax.numpy as fnp
    >>> f = fnp.vectorize(lambda x, p: x ** p, excluded={1})
    >>> f(fnp.arange(3.0), 2)
    Array([0., 1., 4.], dtype=float32)
    """
    if any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError(f"functrax.numpy.vectorize can only exclude integer or string "
                        f"arguments, but excluded={excluded!r}")
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        context = f"on vectorized function with excluded={excluded!r} and " \
                  f"signature={signature!r}"
        func, args, kwargs = _apply_excluded(pyfunc, excluded, args, kwargs)
        if kwargs:
            raise TypeError(f"vectorize: keyword arguments {sorted(kwargs)} are not "
                            f"excluded; pass them positionally or list them in excluded= "
                            f"{context}")
        if signature is not None:
            in_dims, out_dims = _parse_signature(signature)
        else:
            in_dims, out_dims = [()] * len(args), None
        nones = {i for i, a in enumerate(args) if a is None}
        if nones:
            if any(in_dims[i] != () for i in nones if i < len(in_dims)):
                raise ValueError(f"Cannot pass None at locations {nones} with "
                                 f"signature={signature!r}")
            func, args, _ = _apply_excluded(func, nones, args, {})
            in_dims = [d for i, d in enumerate(in_dims) if i not in nones]
        args = [asarray(a) for a in args]
        loop_shape, sizes = _input_dims(args, in_dims, context)
        if out_dims is not None:
            func = _checked(func, sizes, out_dims, context)
        return _vectorized_call(func, args, in_dims, loop_shape)
    return wrapped


def _vectorized_call(func, args, in_dims, loop_shape):
    """vmap ``func`` once per loop dimension (size-1 loop dims are squeezed and broadcast
    by vmap's ``None`` axes, not materialized)."""
    squeezed, rev_shapes = [], []
    for arg, dims in zip(args, in_dims):
        shape = core.get_aval(arg).shape
        loop = shape[:len(shape) - len(dims)]
        rev_shapes.append(((1,) * (len(loop_shape) - len(loop)) + loop)[::-1])
        ones = tuple(i for i, s in enumerate(loop) if s == 1)
        squeezed.append(shape_ops.squeeze(arg, ones) if ones else arg)
    f, expand = func, []
    for negdim, axis_sizes in enumerate(zip(*rev_shapes)):
        in_axes = tuple(None if s == 1 else 0 for s in axis_sizes)
        if all(a is None for a in in_axes):
            expand.append(len(loop_shape) - 1 - negdim)
        else:
            f = _vmap(f, in_axes)
    out = f(*squeezed)
    if not expand:
        return out
    if isinstance(out, tuple):
        return tuple(shape_ops.expand_dims(o, expand) for o in out)
    return shape_ops.expand_dims(out, expand)


# --- apply_along_axis / apply_over_axes ---


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """Apply ``func1d`` to the 1-D slices of ``arr`` along ``axis`` (by vmap); the slices'
    results take the place of that axis.

    >>> import functrax.numpy as fnp
    >>> fnp.apply_along_axis(lambda v: v.sum(), 1, fnp.arange(6.0).reshape(2, 3))
    Array([ 3., 12.], dtype=float32)
    """
    check_arraylike("apply_along_axis", arr)
    nd = np.ndim(arr) if not isinstance(arr, (core.Array, core.Tracer)) else \
        core.get_aval(arr).ndim
    axis = canonicalize_axis(axis, nd, "apply_along_axis")

    def func(a):
        return func1d(a, *args, **kwargs)
    for i in range(1, nd - axis):
        func = _vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = _vmap(func, in_axes=0, out_axes=0)
    return func(asarray(arr))


def apply_over_axes(func, a, axes):
    """Apply ``func(a, axis)`` repeatedly over ``axes``, keeping reduced axes as size 1.

    >>> import functrax.numpy as fnp
    >>> fnp.apply_over_axes(fnp.sum, fnp.ones((2, 3, 4)), [0, 2]).shape
    (1, 3, 1)
    """
    check_arraylike("apply_over_axes", a)
    a = asarray(a)
    for axis in axes:
        b = func(a, axis)
        nb, na = core.get_aval(b).ndim, core.get_aval(a).ndim
        if nb == na:
            a = b
        elif nb == na - 1:
            a = shape_ops.expand_dims(b, axis)
        else:
            raise ValueError("apply_over_axes: function is not returning an array of the "
                             f"correct shape (got ndim {nb} from an input of ndim {na})")
    return a


# --- piecewise ---


def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluate the piece of ``funclist`` whose condition holds, elementwise.

    Args:
      x: the input.
      condlist: boolean arrays (shape of ``x``), one per piece.
      funclist: one function or constant per condition, plus optionally a default for
        where none holds (else 0).
      *args, **kw: passed to the functions.

    As JAX, each function is called on scalars (the pieces are selected by a vmapped
    ``lax.switch``), so it must be written for one element; with several conditions true,
    the last one wins.

    >>> import functrax.numpy as fnp
    >>> x = fnp.array([-2., 0.5, 3.])
    >>> fnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 10, 0.0])
    Array([ 2.,  0., 30.], dtype=float32)
    """
    check_arraylike("piecewise", x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"piecewise: with {nc} condition(s), either {nc} or {nc + 1} "
                         f"functions are expected; got {nf}")
    x = asarray(x)
    conds = asarray(condlist, dtype=bool) if not isinstance(condlist, (core.Array,
                                                                       core.Tracer)) else \
        lax.convert_element_type(condlist, np.bool_)
    dt = core.get_aval(x).dtype
    first = lax.full((1,) + core.get_aval(conds).shape[1:], False, np.bool_)
    steps = reductions.cumsum(shape_ops.concatenate([first, conds], axis=0), axis=0)
    index = reductions.argmax(steps, axis=0)

    def branch(f):
        if callable(f):
            return lambda v: lax.convert_element_type(asarray(f(v, *args, **kw)), dt)
        return lambda v: asarray(f, dtype=dt)
    branches = [branch(f) for f in funclist]
    from functrax.control_flow.cond import switch
    return vectorize(switch, excluded=(1,))(index, branches, x)
