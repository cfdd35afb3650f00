"""Products and contractions of ``functrax.numpy``: dot, matmul, einsum, tensordot, trace, ...

Every product lowers to ``lax.dot_general`` (or to elementwise multiplication for outer
products), with dtypes promoted here and ``preferred_element_type`` set to the result dtype,
as ``jax.numpy`` does.

>>> import functrax.numpy as fnp
>>> fnp.dot(fnp.ones((2, 3)), fnp.ones(3))
Array([3., 3.], dtype=float32)
"""
from __future__ import annotations

import operator
import string

import numpy as np

from functrax import core, dtypes, lax
from functrax.numpy import array_methods, reductions, shape_ops, ufuncs
from functrax.numpy.promotion import (
    asarray_operand, broadcast_shapes_named, broadcast_to_shape, canonicalize_axis,
    check_arraylike, promote_dtypes,
)

__all__ = ["dot", "matmul", "vdot", "vecdot", "inner", "outer", "tensordot", "einsum", "kron",
           "trace", "diagonal", "cross", "matrix_transpose", "einsum_path", "matvec", "vecmat"]


def _shape(x):
    return core.get_aval(x).shape


def _static_int(x, fun_name, arg_name):
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{fun_name}: '{arg_name}' must be a static Python integer, got "
                        f"{type(x).__name__} {x!r}") from None


def _prepare(fun_name, preferred_element_type, *args):
    """Check, pick the result dtype (JAX's promotion) and promote the operands to one dtype."""
    check_arraylike(fun_name, *args)
    if preferred_element_type is None:
        pet, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    else:
        pet, weak = dtypes.canonicalize_dtype(preferred_element_type), False
    args = promote_dtypes(*args)
    return [asarray_operand(a) for a in args], pet, weak


def _finish(out, pet, weak):
    return lax.convert_element_type(out, pet, weak)


def _check_contract(fun_name, a, b, a_axes, b_axes, hint=""):
    sa, sb = _shape(a), _shape(b)
    for i, j in zip(a_axes, b_axes):
        if sa[i] != sb[j]:
            raise TypeError(
                f"{fun_name}: contraction dimensions do not match: axis {i} of the first operand "
                f"(shape {sa}) has size {sa[i]}, axis {j} of the second operand (shape {sb}) "
                f"has size {sb[j]}.{hint}")


def _dot_general(a, b, contract, batch, precision, pet):
    dn = ((tuple(contract[0]), tuple(contract[1])), (tuple(batch[0]), tuple(batch[1])))
    return lax.dot_general(a, b, dn, precision=precision, preferred_element_type=pet)


# --- dot, matmul, vdot, vecdot, inner, outer, tensordot ---


def _dot(fun_name, a, b, precision, preferred_element_type):
    (a, b), pet, weak = _prepare(fun_name, preferred_element_type, a, b)
    na, nb = len(_shape(a)), len(_shape(b))
    if na == 0 or nb == 0:
        contract = ((), ())
    else:
        contract = ((na - 1,), (0 if nb == 1 else nb - 2,))
    _check_contract(fun_name, a, b, *contract, hint=" The last axis of a must match the "
                    "second-to-last axis of b (the only axis when b is 1-d).")
    return _finish(_dot_general(a, b, contract, ((), ()), precision, pet), pet, weak)


def dot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product with numpy semantics: the last axis of ``a`` with the second-to-last of ``b``.

    Scalars multiply; 1-d arrays contract their only axis. For N-d operands the result has
    shape ``a.shape[:-1] + b.shape[:-2] + b.shape[-1:]``.

    Args:
      a, b: arrays or scalars.
      precision: passed to ``lax.dot_general``.
      preferred_element_type: accumulation and result dtype (default: the promoted dtype).

    >>> import functrax.numpy as fnp
    >>> fnp.dot(fnp.array([1, 2]), fnp.array([3, 4]))
    Array(11, dtype=int32)
    """
    return _dot("dot", a, b, precision, preferred_element_type)


def matmul(a, b, *, precision=None, preferred_element_type=None):
    """Matrix product with leading (batch) dimensions broadcast, as ``numpy.matmul``.

    A 1-d first operand is treated as a row vector and a 1-d second operand as a column vector;
    the added dimension is removed from the result. Scalars are not allowed.

    >>> import functrax.numpy as fnp
    >>> fnp.matmul(fnp.ones((5, 2, 3)), fnp.ones((3, 4))).shape
    (5, 2, 4)
    """
    (a, b), pet, weak = _prepare("matmul", preferred_element_type, a, b)
    sa, sb = _shape(a), _shape(b)
    for i, s in enumerate((sa, sb)):
        if len(s) < 1:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                             f"ndim 0 (use fnp.multiply or the * operator for scalars)")
    a_mat, b_mat = len(sa) > 1, len(sb) > 1
    _check_contract("matmul", a, b, (len(sa) - 1,), (len(sb) - 1 - b_mat,),
                    hint=" The last axis of a must match the second-to-last axis of b (the only "
                    "axis when b is 1-d).")
    a_bd, b_bd = (sa[:-2] if a_mat else ()), (sb[:-2] if b_mat else ())
    nbatch = max(len(a_bd), len(b_bd))
    a_bd = (None,) * (nbatch - len(a_bd)) + tuple(a_bd)
    b_bd = (None,) * (nbatch - len(b_bd)) + tuple(b_bd)
    a_squeeze, b_squeeze, a_batch, b_batch = [], [], [], []
    idx_batch, idx_a, idx_b = [], [], []
    for i, (da, db) in enumerate(zip(a_bd, b_bd)):
        if da is None:
            idx_b.append(i)
        elif db is None:
            idx_a.append(i)
        elif da == 1:
            idx_b.append(i)
            a_squeeze.append(len(idx_batch) + len(idx_a) + len(a_squeeze))
        elif db == 1:
            idx_a.append(i)
            b_squeeze.append(len(idx_batch) + len(idx_b) + len(b_squeeze))
        elif da == db:
            a_batch.append(len(idx_batch) + len(idx_a))
            b_batch.append(len(idx_batch) + len(idx_b))
            idx_batch.append(i)
        else:
            raise ValueError(f"matmul: Incompatible shapes for matmul arguments: {sa} and {sb} "
                             f"(the leading batch dimensions {sa[:-2]} and {sb[:-2]} do not "
                             "broadcast)")
    if a_mat:
        idx_a.append(nbatch)
    if b_mat:
        idx_b.append(nbatch + a_mat)
    order = idx_batch + idx_a + idx_b
    perm = sorted(range(len(order)), key=order.__getitem__)
    a, b = lax.squeeze(a, a_squeeze), lax.squeeze(b, b_squeeze)
    na, nb = len(_shape(a)), len(_shape(b))
    out = _dot_general(a, b, ((na - 1,), (nb - 1 - b_mat,)), (a_batch, b_batch), precision, pet)
    return _finish(lax.transpose(out, perm), pet, weak)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating ``a`` when it is complex.

    >>> import functrax.numpy as fnp
    >>> fnp.vdot(fnp.ones((2, 2)), fnp.ones(4))
    Array(4., dtype=float32)
    """
    check_arraylike("vdot", a, b)
    a, b = asarray_operand(a), asarray_operand(b)
    if dtypes.issubdtype(core.get_aval(a).dtype, np.complexfloating):
        a = ufuncs.conjugate(a)
    if core.get_aval(a).size != core.get_aval(b).size:
        raise TypeError(f"vdot: the operands must have the same number of elements, got shapes "
                        f"{_shape(a)} and {_shape(b)}")
    return _dot("vdot", shape_ops.ravel(a), shape_ops.ravel(b), precision,
                preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Vector dot product along ``axis`` with the other dimensions broadcast (conjugates x1).

    >>> import functrax.numpy as fnp
    >>> fnp.vecdot(fnp.ones((2, 3)), fnp.ones(3))
    Array([3., 3.], dtype=float32)
    """
    (x1, x2), pet, weak = _prepare("vecdot", preferred_element_type, x1, x2)
    s1, s2 = _shape(x1), _shape(x2)
    if not s1 or not s2:
        raise ValueError(f"vecdot: the operands must be at least 1-d, got shapes {s1} and {s2}")
    ax1, ax2 = canonicalize_axis(axis, len(s1), "vecdot"), canonicalize_axis(axis, len(s2),
                                                                              "vecdot")
    if s1[ax1] != s2[ax2]:
        raise ValueError(f"vecdot: axes must match; got shapes {s1} and {s2} with axis={axis}")
    if dtypes.issubdtype(core.get_aval(x1).dtype, np.complexfloating):
        x1 = ufuncs.conjugate(x1)
    x1, x2 = shape_ops.moveaxis(x1, ax1, -1), shape_ops.moveaxis(x2, ax2, -1)
    batch = broadcast_shapes_named("vecdot", _shape(x1)[:-1], _shape(x2)[:-1])
    n = s1[ax1]
    x1 = broadcast_to_shape(x1, tuple(batch) + (n,))
    x2 = broadcast_to_shape(x2, tuple(batch) + (n,))
    nb = len(batch)
    bd = tuple(range(nb))
    return _finish(_dot_general(x1, x2, ((nb,), (nb,)), (bd, bd), precision, pet), pet, weak)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Sum products over the given axes: ``axes`` is an int N (last N of ``a`` with first N of
    ``b``), a pair of ints, or a pair of sequences of axes.

    >>> import functrax.numpy as fnp
    >>> fnp.tensordot(fnp.ones((2, 3, 4)), fnp.ones((3, 4, 5))).shape
    (2, 5)
    """
    return _tensordot("tensordot", a, b, axes, precision, preferred_element_type)


def _tensordot(fun_name, a, b, axes, precision, preferred_element_type):
    (a, b), pet, weak = _prepare(fun_name, preferred_element_type, a, b)
    sa, sb = _shape(a), _shape(b)
    na, nb = len(sa), len(sb)
    if _is_int(axes):
        axes = operator.index(axes)
        if axes < 0 or axes > min(na, nb):
            raise TypeError(f"{fun_name}: number of axes (axes={axes}) must be between 0 and the "
                            f"smaller rank of the inputs (shapes {sa} and {sb})")
        contract = (tuple(range(na - axes, na)), tuple(range(axes)))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax1, ax2 = axes
        if _is_int(ax1) and _is_int(ax2):
            ax1, ax2 = (ax1,), (ax2,)
        elif not (isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list))):
            raise TypeError(f"{fun_name} requires both axes lists to be either ints, tuples or "
                            f"lists, got {ax1} and {ax2}")
        if len(ax1) != len(ax2):
            raise TypeError(f"{fun_name} requires axes lists to have equal length, got {ax1} and "
                            f"{ax2}.")
        contract = (tuple(canonicalize_axis(i, na, fun_name) for i in ax1),
                    tuple(canonicalize_axis(i, nb, fun_name) for i in ax2))
        for c in contract:
            if len(set(c)) != len(c):
                raise ValueError(f"{fun_name}: repeated axis in axes={axes}")
    else:
        raise TypeError(f"{fun_name} axes argument must be an int, a pair of ints, or a pair of "
                        f"lists/tuples of ints, got {axes!r}.")
    _check_contract(fun_name, a, b, *contract)
    return _finish(_dot_general(a, b, contract, ((), ()), precision, pet), pet, weak)


def _is_int(x):
    try:
        operator.index(x)
    except TypeError:
        return False
    return not isinstance(x, (core.Array, core.Tracer)) or core.get_aval(x).ndim == 0


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Inner product over the last axes of ``a`` and ``b`` (a plain product for scalars).

    >>> import functrax.numpy as fnp
    >>> fnp.inner(fnp.ones((2, 3)), fnp.ones((4, 3))).shape
    (2, 4)
    """
    check_arraylike("inner", a, b)
    if not _shape(a) or not _shape(b):
        (a, b), pet, weak = _prepare("inner", preferred_element_type, a, b)
        return _finish(ufuncs.multiply(a, b), pet, weak)
    return _tensordot("inner", a, b, (-1, -1), precision, preferred_element_type)


def outer(a, b, out=None):
    """Outer product of the flattened ``a`` and ``b``: ``result[i, j] = a[i] * b[j]``.

    >>> import functrax.numpy as fnp
    >>> fnp.outer(fnp.arange(2), fnp.arange(3)).shape
    (2, 3)
    """
    if out is not None:
        raise NotImplementedError("functrax.numpy.outer: the 'out' argument is not supported "
                                  "(arrays are immutable); use the return value")
    check_arraylike("outer", a, b)
    a, b = (asarray_operand(x) for x in promote_dtypes(a, b))
    return ufuncs.multiply(lax.reshape(a, (core.get_aval(a).size, 1)),
                           lax.reshape(b, (1, core.get_aval(b).size)))


def kron(a, b):
    """Kronecker product: blocks ``a[i, j] * b`` (ranks are aligned by adding leading axes).

    >>> import functrax.numpy as fnp
    >>> fnp.kron(fnp.eye(2), fnp.ones((2, 3))).shape
    (4, 6)
    """
    check_arraylike("kron", a, b)
    a, b = (asarray_operand(x) for x in promote_dtypes(a, b))
    sa, sb = _shape(a), _shape(b)
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    a = lax.reshape(a, [d for s in sa for d in (s, 1)])
    b = lax.reshape(b, [d for s in sb for d in (1, s)])
    return lax.reshape(ufuncs.multiply(a, b), [x * y for x, y in zip(sa, sb)])


# --- diagonal, trace, cross, matrix_transpose ---


def _diag_last2(a, offset):
    """The ``offset`` diagonal of the last two axes, gather-free (two slices and a reshape)."""
    *batch, n, m = _shape(a)
    d = max(0, min(n + min(offset, 0), m - max(offset, 0)))
    r0, c0 = (max(-offset, 0), max(offset, 0)) if d else (0, 0)
    zeros = [0] * len(batch)
    a = lax.slice(a, zeros + [r0, c0], batch + [r0 + d, c0 + d])
    flat = lax.reshape(a, batch + [d * d])
    # element (i, i) of the d x d block sits at flat position i * (d + 1)
    return lax.slice(flat, zeros + [0], batch + [d * d], [1] * len(batch) + [d + 1])


def diagonal(a, offset=0, axis1=0, axis2=1):
    """The ``offset`` diagonal of the (axis1, axis2) planes, as the last axis of the result.

    >>> import functrax.numpy as fnp
    >>> fnp.diagonal(fnp.arange(9).reshape(3, 3), 1)
    Array([1, 5], dtype=int32)
    """
    check_arraylike("diagonal", a)
    a = asarray_operand(a)
    nd = len(_shape(a))
    if nd < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape "
                         f"{_shape(a)}")
    offset = _static_int(offset, "diagonal", "offset")
    ax1, ax2 = canonicalize_axis(axis1, nd, "diagonal"), canonicalize_axis(axis2, nd, "diagonal")
    if ax1 == ax2:
        raise ValueError(f"diagonal: axis1 and axis2 cannot be the same (both are {ax1})")
    return _diag_last2(shape_ops.moveaxis(a, (ax1, ax2), (-2, -1)), offset)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along the ``offset`` diagonal of the (axis1, axis2) planes.

    >>> import functrax.numpy as fnp
    >>> fnp.trace(fnp.eye(3))
    Array(3., dtype=float32)
    """
    if out is not None:
        raise NotImplementedError("functrax.numpy.trace: the 'out' argument is not supported "
                                  "(arrays are immutable); use the return value")
    check_arraylike("trace", a)
    if len(_shape(asarray_operand(a))) < 2:
        raise ValueError(f"trace requires an array of at least two dimensions, got shape "
                         f"{_shape(asarray_operand(a))}")
    return reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _component(x, i):
    return lax.index_in_dim(x, i, len(_shape(x)) - 1, keepdims=False)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (or 2-vectors) along the given axes, other axes broadcast.

    >>> import functrax.numpy as fnp
    >>> fnp.cross(fnp.array([1., 0., 0.]), fnp.array([0., 1., 0.]))
    Array([0., 0., 1.], dtype=float32)
    """
    check_arraylike("cross", a, b)
    a, b = (asarray_operand(x) for x in promote_dtypes(a, b))
    if axis is not None:
        axisa = axisb = axisc = axis
    for name, x in (("a", a), ("b", b)):
        if not _shape(x):
            raise ValueError(f"cross: {name} must be at least 1-d, got a scalar")
    a = shape_ops.moveaxis(a, canonicalize_axis(axisa, len(_shape(a)), "cross"), -1)
    b = shape_ops.moveaxis(b, canonicalize_axis(axisb, len(_shape(b)), "cross"), -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must be "
                         f"2 or 3), got vectors of size {na} and {nb} (shapes {_shape(a)} and "
                         f"{_shape(b)} after moving axisa/axisb last)")
    broadcast_shapes_named("cross", _shape(a)[:-1], _shape(b)[:-1])
    mul, sub = ufuncs.multiply, ufuncs.subtract
    a0, a1, b0, b1 = _component(a, 0), _component(a, 1), _component(b, 0), _component(b, 1)
    if na == 2 and nb == 2:
        return sub(mul(a0, b1), mul(a1, b0))
    a2 = _component(a, 2) if na == 3 else lax.full_like(a0, 0)
    b2 = _component(b, 2) if nb == 3 else lax.full_like(b0, 0)
    c = shape_ops.stack([sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)),
                         sub(mul(a0, b1), mul(a1, b0))], axis=0)
    return shape_ops.moveaxis(c, 0, canonicalize_axis(axisc, len(_shape(c)), "cross"))


def matrix_transpose(x, /):
    """Swap the last two axes of ``x`` (at least 2-d).

    >>> import functrax.numpy as fnp
    >>> fnp.matrix_transpose(fnp.ones((4, 2, 3))).shape
    (4, 3, 2)
    """
    check_arraylike("matrix_transpose", x)
    x = asarray_operand(x)
    nd = len(_shape(x))
    if nd < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got "
                         f"ndim={nd}")
    return lax.transpose(x, list(range(nd - 2)) + [nd - 1, nd - 2])


# --- einsum ---

_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _einsum_error(subscripts, msg):
    return ValueError(f"einsum: {msg} (subscripts {subscripts!r})")


def _label_name(label):
    return chr(label) if label >= 0 else f"... dimension {label}"


def _parse_term(subscripts, term, shape, where):
    """Labels of one term: letters map to their code point, '...' dims to -n..-1."""
    n_ell = term.count("...")
    if n_ell > 1:
        raise _einsum_error(subscripts, f"{where} contains more than one ellipsis ('...')")
    before, _, after = term.partition("...") if n_ell else (term, "", "")
    for c in before + after:
        if c == ".":
            raise _einsum_error(subscripts, f"{where} contains a '.' that is not part of an "
                                "ellipsis ('...')")
        if c not in _LETTERS:
            raise _einsum_error(subscripts, f"invalid subscript {c!r} in {where}; subscripts "
                                "must be ASCII letters")
    if shape is None:  # the output term
        return before, after, bool(n_ell)
    extra = len(shape) - len(before) - len(after)
    if extra < 0 or (extra and not n_ell):
        raise _einsum_error(subscripts, f"{where} names {len(before) + len(after)} dimensions "
                            f"{'(plus ...) ' if n_ell else ''}but the operand has shape {shape}")
    return ([ord(c) for c in before] + list(range(-extra, 0)) + [ord(c) for c in after])


def _parse_einsum(subscripts, shapes):
    """(input label lists, output label list) for a subscripts string and operand shapes."""
    s = subscripts.replace(" ", "")
    lhs, arrow, rhs = s.partition("->")
    if "-" in lhs + rhs or ">" in lhs + rhs:
        raise _einsum_error(subscripts, "'-' and '>' may only appear together, once, as '->'")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise _einsum_error(subscripts, f"the subscripts name {len(terms)} operand(s) but "
                            f"{len(shapes)} were given")
    inputs = [_parse_term(subscripts, t, shp, f"the subscripts {t!r} of operand {i}")
              for i, (t, shp) in enumerate(zip(terms, shapes))]
    n_ell = max([-min([lab for lab in labs if lab < 0], default=0) for labs in inputs] or [0])
    ell = list(range(-n_ell, 0))
    if not arrow:
        counts = {}
        for labs in inputs:
            for lab in labs:
                counts[lab] = counts.get(lab, 0) + 1
        return inputs, ell + sorted(lab for lab, c in counts.items() if c == 1 and lab >= 0)
    before, after, has_ell = _parse_term(subscripts, rhs, None, "the output subscripts")
    if n_ell and not has_ell:
        raise _einsum_error(subscripts, "the operands have broadcast ('...') dimensions but "
                            "the output has no '...'; add '...' to the output")
    output = [ord(c) for c in before] + (ell if has_ell else []) + [ord(c) for c in after]
    present = {lab for labs in inputs for lab in labs}
    for lab in output:
        if output.count(lab) > 1:
            raise _einsum_error(subscripts, f"output subscript {chr(lab)!r} appears more "
                                "than once")
        if lab not in present:
            raise _einsum_error(subscripts, f"output subscript {chr(lab)!r} never appears in "
                                "an input")
    return inputs, output


def _label_sizes(subscripts, inputs, shapes):
    sizes = {}
    for k, (labs, shp) in enumerate(zip(inputs, shapes)):
        mine = {}
        for lab, d in zip(labs, shp):
            if mine.setdefault(lab, d) != d:
                raise _einsum_error(subscripts, f"dimensions in operand {k} (shape {shp}) for "
                                    f"repeated subscript {_label_name(lab)!r} do not match "
                                    f"({mine[lab]} != {d})")
        for lab, d in mine.items():
            prev = sizes.get(lab, 1)
            if d != 1 and prev != 1 and d != prev:
                raise _einsum_error(subscripts, f"size of label {_label_name(lab)!r} for operand "
                                    f"{k} ({d}) does not match previous terms ({prev}); operand "
                                    f"shapes {[tuple(s) for s in shapes]}")
            sizes[lab] = max(prev, d) if d != 1 else prev
    return sizes


def _drop_broadcast_dims(x, labs, sizes):
    """Remove size-1 dims whose label has a larger size elsewhere (numpy broadcasting)."""
    shp = _shape(x)
    drop = [i for i, (lab, d) in enumerate(zip(labs, shp)) if d == 1 and sizes[lab] != 1]
    if not drop:
        return x, labs
    return (lax.reshape(x, [d for i, d in enumerate(shp) if i not in drop]),
            [lab for i, lab in enumerate(labs) if i not in drop])


def _take_diagonals(x, labs):
    """Replace every label repeated within one operand by its diagonal (gather-free)."""
    while len(set(labs)) != len(labs):
        lab = next(lab for lab in labs if labs.count(lab) > 1)
        i = labs.index(lab)
        j = labs.index(lab, i + 1)
        x = _diag_last2(shape_ops.moveaxis(x, (i, j), (-2, -1)), 0)
        labs = [lb for k, lb in enumerate(labs) if k not in (i, j)] + [lab]
    return x, labs


def _sum_unneeded(x, labs, keep):
    """Sum out the labels that neither the output nor another operand needs."""
    summed = [i for i, lab in enumerate(labs) if lab not in keep]
    if not summed:
        return x, labs
    return lax.reduce_sum(x, summed), [lab for i, lab in enumerate(labs) if i not in summed]


def _keep(ops, output, skip):
    return set(output).union(*[labs for k, (_, labs) in enumerate(ops) if k not in skip])


def _einsum_contract(x, xl, y, yl, keep, precision, pet):
    """Contract two labelled operands; labels in ``keep`` stay (as batch dims if shared)."""
    shared = [lab for lab in xl if lab in yl]
    batch = [lab for lab in shared if lab in keep]
    contract = [lab for lab in shared if lab not in keep]
    if core.get_aval(x).dtype != core.get_aval(y).dtype:
        x, y = promote_dtypes(x, y)
    out = _dot_general(x, y, ([xl.index(c) for c in contract], [yl.index(c) for c in contract]),
                       ([xl.index(b) for b in batch], [yl.index(b) for b in batch]),
                       precision, pet)
    labels = batch + [lab for lab in xl if lab not in yl] + [lab for lab in yl if lab not in xl]
    return out, labels


def _greedy_pair(ops, output, sizes):
    """The pair whose contraction gives the smallest result (leftmost on ties)."""
    best = None
    for i in range(len(ops)):
        for j in range(i + 1, len(ops)):
            keep = _keep(ops, output, (i, j))
            res = set(ops[i][1]) ^ set(ops[j][1]) | (set(ops[i][1]) & set(ops[j][1]) & keep)
            cost = 1
            for lab in res:
                cost *= sizes[lab]
            if best is None or cost < best[0]:
                best = (cost, i, j)
    return best[1:]


def _interleaved(args):
    """Convert numpy's ``einsum(op0, sublist0, op1, sublist1, ..., [sublistout])`` form."""
    out = args[-1] if len(args) % 2 else None
    pairs = args[:-1] if len(args) % 2 else args
    operands, subs = list(pairs[0::2]), list(pairs[1::2])

    def term(sub):
        parts = []
        for s in sub:
            if s is Ellipsis:
                parts.append("...")
            else:
                try:
                    parts.append(_LETTERS[operator.index(s)])
                except (TypeError, IndexError):
                    raise ValueError(f"einsum: sublist labels must be Ellipsis or integers in "
                                     f"[0, {len(_LETTERS)}), got {s!r}") from None
        return "".join(parts)
    spec = ",".join(term(s) for s in subs) + ("" if out is None else "->" + term(out))
    return spec, operands


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None):
    """Einstein summation, e.g. ``einsum('ij,jk->ik', a, b)``; ``optimize`` is accepted and
    ignored (operands are contracted pairwise, smallest intermediate first).

    Supports implicit outputs (labels appearing once, sorted), ``...`` broadcasting, repeated
    labels in one operand (diagonals), size-1 broadcasting, and numpy's interleaved
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` form.

    Args:
      subscripts: the subscripts string (or the first operand in the interleaved form).
      operands: arrays.
      precision, preferred_element_type: passed to every ``lax.dot_general``; the result has
        dtype ``preferred_element_type`` (default: the promoted dtype of the operands).

    >>> import functrax.numpy as fnp
    >>> fnp.einsum('ii->i', fnp.eye(2))
    Array([1., 1.], dtype=float32)
    """
    del optimize, _dot_general
    if out is not None:
        raise NotImplementedError("functrax.numpy.einsum: the 'out' argument is not supported "
                                  "(arrays are immutable); use the return value")
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts,) + tuple(operands))
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    operands, pet, weak = _prepare("einsum", preferred_element_type, *operands)
    shapes = [_shape(x) for x in operands]
    inputs, output = _parse_einsum(subscripts, shapes)
    sizes = _label_sizes(subscripts, inputs, shapes)
    ops = [_take_diagonals(*_drop_broadcast_dims(x, list(labs), sizes))
           for x, labs in zip(operands, inputs)]
    ops = [_sum_unneeded(x, labs, _keep(ops, output, (k,))) for k, (x, labs) in enumerate(ops)]
    while len(ops) > 1:
        i, j = _greedy_pair(ops, output, sizes)
        keep = _keep(ops, output, (i, j))
        new = _sum_unneeded(*_einsum_contract(*ops[i], *ops[j], keep, precision, pet), keep)
        ops = [o for k, o in enumerate(ops) if k not in (i, j)] + [new]
    x, labs = ops[0]
    x = lax.transpose(x, [labs.index(lab) for lab in output])
    return _finish(x, pet, weak)


def _plan(inputs, shapes, output, sizes):
    """The pairwise contraction order :func:`einsum` follows: ``(path, steps)``, each step
    ``(input labels, output labels)``."""
    ops = []
    for labs, shp in zip(inputs, shapes):
        labs = [lab for lab, d in zip(labs, shp) if not (d == 1 and sizes[lab] != 1)]
        ops.append((None, list(dict.fromkeys(labs))))  # repeated labels: a diagonal
    ops = [(None, [lab for lab in labs if lab in _keep(ops, output, (k,))])
           for k, (_, labs) in enumerate(ops)]
    if len(ops) == 1:
        return [(0,)], [([ops[0][1]], output)]
    path, steps = [], []
    while len(ops) > 1:
        i, j = _greedy_pair(ops, output, sizes)
        keep = _keep(ops, output, (i, j))
        xl, yl = ops[i][1], ops[j][1]
        new = [lab for lab in xl if lab in yl and lab in keep] + [
            lab for lab in xl + yl if (lab in xl) != (lab in yl) and lab in keep]
        ops = [o for k, o in enumerate(ops) if k not in (i, j)] + [(None, new)]
        path.append((i, j))
        steps.append(([xl, yl], new if len(ops) > 1 else output))
    return path, steps


def _term(labs):
    return "".join(chr(lab) if lab >= 0 else "." for lab in labs)


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order :func:`einsum` uses for these operands (only their shapes
    matter): ``(path, description)``.

    ``path`` is a list of operand-index pairs in opt_einsum's convention (the pair is
    removed from the list of operands and its result appended), as ``jax.numpy``'s; the
    description is a printable summary (JAX returns opt_einsum's ``PathInfo``).
    ``optimize`` is accepted for compatibility: functrax contracts greedily, smallest
    intermediate first.

    >>> import functrax.numpy as fnp
    >>> path, info = fnp.einsum_path("ij,jk,kl->il", fnp.ones((2, 3)), fnp.ones((3, 4)),
    ...                              fnp.ones((4, 5)))
    >>> path
    [(0, 1), (0, 1)]
    """
    del optimize
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts,) + tuple(operands))
    if not operands:
        raise ValueError("einsum_path: at least one operand is required")
    shapes = [tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)
              for x in operands]
    inputs, output = _parse_einsum(subscripts, shapes)
    sizes = _label_sizes(subscripts, inputs, shapes)
    path, steps = _plan(inputs, shapes, output, sizes)
    lines = [f"  Complete contraction:  {subscripts.replace(' ', '')}",
             f"  Operand shapes:  {shapes}", "  Contractions (functrax einsum order):"]
    for (ins, out), p in zip(steps, path):
        flops = 1
        for lab in set().union(*map(set, ins)):
            flops *= sizes[lab]
        lines.append(f"    {p}: {','.join(_term(t) for t in ins)}->{_term(out)}  "
                     f"(~{flops} multiply-adds)")
    return path, "\n".join(lines)


def matvec(x1, x2, /):
    """Batched matrix-vector products ``x1[..., i, j] @ x2[..., j]`` (broadcast batches).

    >>> import functrax.numpy as fnp
    >>> fnp.matvec(fnp.ones((2, 3)), fnp.array([1., 2., 3.]))
    Array([6., 6.], dtype=float32)
    """
    from functrax.numpy.vectorize import vectorize
    check_arraylike("matvec", x1, x2)
    return vectorize(matmul, signature="(n,m),(m)->(n)")(x1, x2)


def vecmat(x1, x2, /):
    """Batched vector-matrix products ``conj(x1[..., i]) @ x2[..., i, j]``.

    >>> import functrax.numpy as fnp
    >>> fnp.vecmat(fnp.array([1., 2.]), fnp.ones((2, 3)))
    Array([3., 3., 3.], dtype=float32)
    """
    from functrax.numpy.vectorize import vectorize
    check_arraylike("vecmat", x1, x2)
    return vectorize(lambda a, b: vecdot(a, b, axis=0), signature="(n),(n,m)->(m)")(x1, x2)


# --- operators and methods on arrays ---

array_methods.install_extra("__matmul__", array_methods._defer(matmul))
array_methods.install_extra("__rmatmul__", array_methods._defer(array_methods._swap(matmul)))
array_methods.install_extra("dot", lambda self, b, *, precision=None,
                            preferred_element_type=None: dot(
                                self, b, precision=precision,
                                preferred_element_type=preferred_element_type))
array_methods.install_extra("diagonal", diagonal)
array_methods.install_extra("trace", trace)
