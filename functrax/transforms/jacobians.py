"""Dense Jacobians over pytrees: ``jacfwd`` (vmap of a JVP over the standard basis of the
inputs), ``jacrev`` / ``jacobian`` (vmap of the VJP over the standard basis of the outputs)
and ``hessian``; ``holomorphic=True`` differentiates complex functions as complex ones,
``allow_int=True`` gives integer inputs float0 Jacobians."""
from __future__ import annotations

import functools

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.core.tracing import fun_name
from functrax.transforms import holomorphic as H
from functrax.transforms.grad import argnums_split, jvp, partial_in, vjp
from functrax.transforms.jvp import Zero, instantiate
from functrax.tree_util import tree_flatten, tree_map, tree_structure, tree_transpose, \
    tree_unflatten


def _std_basis(pytree):
    """The identity basis over all leaves of ``pytree``, as a pytree batched on axis 0.

    With ``n`` the total number of elements, leaf ``k`` of the result has shape
    ``(n,) + leaf.shape`` and holds rows ``offset_k : offset_k + leaf.size`` of ``eye(n)``
    (so mapping over axis 0 gives one unit tangent/cotangent per element), cast to the
    leaf's dtype (float0 for integer leaves).
    """
    leaves, _ = tree_flatten(pytree)
    n = sum(core.get_aval(x).size for x in leaves)
    inexact = [x for x in leaves if dtypes.is_inexact(core.get_aval(x).dtype)]
    dtype = dtypes.result_type(*inexact) if inexact else dtypes.default_float_dtype()
    return _assemble(pytree, 1, None, _eye(n, dtype))


def _eye(n: int, dtype):
    """The ``n x n`` identity of ``dtype``, built as ``functrax.numpy.eye`` builds it."""
    i32 = dtypes.canonicalize_dtype(np.int32)
    rows = P.add(P.broadcasted_iota(i32, (n, n), 0), np.asarray(0, i32)[()])
    return P.convert_element_type(P.eq(rows, P.broadcasted_iota(i32, (n, n), 1)), dtype)


def _float0_part(shape):
    return np.zeros(shape, dtypes.float0)


def _assemble(pytree, axis, example, arr):
    """Split ``arr`` along ``axis`` into one piece per leaf of ``pytree`` (sized like the
    leaf), reshape that axis into the leaf's shape, and cast each piece to the dtype (and
    weak type) of ``example``, or of the leaf itself when ``example`` is None (an integer
    leaf or example gets a float0 piece).

    ``jacfwd`` uses ``axis=-1`` (input structure, pieces ``out.shape + in.shape``);
    ``jacrev`` uses ``axis=0`` (output structure, pieces ``out.shape + in.shape``).
    """
    leaves, treedef = tree_flatten(pytree)
    shape = core.get_aval(arr).shape
    axis %= len(shape)
    parts, start = [], 0
    for leaf in leaves:
        la = core.get_aval(leaf)
        new_shape = shape[:axis] + la.shape + shape[axis + 1:]
        ea = core.get_aval(leaf if example is None else example)
        if not dtypes.is_inexact(ea.dtype) or core.get_aval(arr).dtype == dtypes.float0:
            parts.append(_float0_part(new_shape))
            start += la.size
            continue
        part = arr
        if la.size != shape[axis]:
            part = P.slice_in_dim(arr, start, start + la.size, axis=axis)
        start += la.size
        part = P.reshape(part, new_shape)
        pa = core.get_aval(part)
        if (pa.dtype, pa.weak_type) != (ea.dtype, ea.weak_type):
            if dtypes.issubdtype(pa.dtype, np.complexfloating) and not dtypes.issubdtype(
                    ea.dtype, np.complexfloating):
                part = P.real(part)
            part = P.convert_element_type(part, ea.dtype, ea.weak_type)
        parts.append(part)
    return tree_unflatten(treedef, parts)


def _with_aux(f, has_aux, fun):
    """``f`` returning ``(out, aux)`` (``aux`` is ``()`` without has_aux); ``fun`` is the
    user's function, named in the error for a has_aux function that returns no pair."""
    def f_aux(*args):
        out = f(*args)
        if not has_aux:
            return out, ()
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"{fun_name(fun)} was called with has_aux=True, so it must return "
                            f"a pair (output, aux), got {type(out).__name__}")
        return out
    return f_aux


def _dyn_args(name, fun, args, kwargs, argnums):
    nums = argnums_split(name, args, argnums)
    dyn = tuple(args[i] for i in nums)
    return partial_in(lambda *a: fun(*a, **kwargs), args, nums), dyn


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian of ``fun`` by forward mode: ``vmap`` of a JVP over the standard basis.

    Args:
      fun: function of arrays (pytrees allowed).
      argnums: int or tuple of ints: the positional argument(s) to differentiate.
      has_aux: ``fun`` returns ``(out, aux)``; the result is then ``(jacobian, aux)``.
      holomorphic: ``fun`` is holomorphic (inputs and outputs must be complex).

    Returns:
      A function returning the Jacobian: for each output leaf (outer structure) and input
      leaf (inner structure: the argument's, or a tuple of them for tuple ``argnums``) an
      array of shape ``out.shape + in.shape``.

    Raises:
      TypeError: for non-float inputs (complex needs ``holomorphic=True``), JAX's messages.

    >>> import functrax.numpy as fnp
    >>> jacfwd(lambda x: x ** 2)(fnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
    """
    from functrax.transforms.vmap import vmap

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        f, dyn = _dyn_args("jacfwd", fun, args, kwargs, argnums)
        tree_map(lambda x: H.check_input_jacfwd(holomorphic, x), dyn)

        # aux travels as a primal output of ``_with_aux(f)`` (never as a JVP tracer)
        def pushfwd(tangents):
            (y, aux), (t, _) = jvp(_with_aux(f, has_aux, fun), dyn, tangents)
            return y, t, aux
        res = vmap(pushfwd, out_axes=(None, -1, None))(_std_basis(dyn))
        y, jac = res[0], res[1]
        tree_map(lambda x: H.check_output_jacfwd(holomorphic, x), y)
        example = dyn[0] if isinstance(argnums, int) else dyn
        jac_tree = tree_map(lambda y_leaf, j: _assemble(example, -1, y_leaf, j), y, jac)
        return (jac_tree, res[2]) if has_aux else jac_tree
    return jacfun


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Jacobian of ``fun`` by reverse mode: ``vmap`` of the VJP over the standard basis of
    the output.

    Args:
      fun: function of arrays (pytrees allowed).
      argnums: int or tuple of ints: the positional argument(s) to differentiate.
      has_aux: ``fun`` returns ``(out, aux)``; the result is then ``(jacobian, aux)``.
      holomorphic: ``fun`` is holomorphic (inputs and outputs must be complex).
      allow_int: allow integer inputs (their Jacobian has dtype float0).

    Returns:
      A function returning the Jacobian, laid out as for :func:`jacfwd`
      (``out.shape + in.shape`` per output/input leaf pair).

    Raises:
      TypeError: for integer inputs (unless ``allow_int``) and non-float outputs.

    >>> import functrax.numpy as fnp
    >>> jacrev(lambda x: x ** 2)(fnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
    """
    from functrax.transforms.vmap import vmap

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        f, dyn = _dyn_args("jacrev", fun, args, kwargs, argnums)
        tree_map(lambda x: H.check_input_revderiv("jacrev", holomorphic, allow_int, x), dyn)
        # aux travels as a primal output of ``_with_aux(f)``, with zero cotangents
        (y, aux), pair_pullback = vjp(_with_aux(f, has_aux, fun), *dyn)
        tree_map(lambda x: H.check_output_revderiv("jacrev", holomorphic, x), y)
        aux_zeros = tree_map(lambda a: instantiate(Zero.from_value(a)), aux)
        jac = vmap(lambda ct: _no_float0(pair_pullback((ct, aux_zeros))))(_std_basis(y))
        jac = jac[0] if isinstance(argnums, int) else jac
        example = dyn[0] if isinstance(argnums, int) else dyn
        jac_tree = tree_map(lambda x_leaf, j: _assemble(y, 0, x_leaf, j), example, jac)
        jac_tree = tree_transpose(tree_structure(example), tree_structure(y), jac_tree)
        return (jac_tree, aux) if has_aux else jac_tree
    return jacfun


def _no_float0(cts):
    """float0 cotangents (of integer inputs) as float32 zeros, so vmap can batch them; the
    Jacobian pieces of integer inputs are rebuilt as float0 by ``_assemble``."""
    def fix(c):
        a = core.get_aval(c)
        return P.full(a.shape, 0, np.float32) if a.dtype == dtypes.float0 else c
    return tree_map(fix, cts)


def jacobian(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Alias of :func:`jacrev` (as ``jax.jacobian``).

    >>> import functrax.numpy as fnp
    >>> jacobian(lambda x: 3.0 * x)(fnp.ones(2))
    Array([[3., 0.],
           [0., 3.]], dtype=float32)
    """
    return jacrev(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                  allow_int=allow_int)


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """Second derivatives as a dense array: ``jacfwd(jacrev(fun))``.

    For an input of shape ``s`` and a scalar output the result has shape ``s + s``; with
    pytrees, each output leaf holds the input structure nested twice.

    >>> import functrax.numpy as fnp
    >>> hessian(lambda x: x[0] ** 3 - 2 * x[0] * x[1])(fnp.array([1.0, 2.0]))
    Array([[ 6., -2.],
           [-2.,  0.]], dtype=float32)
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic),
                  argnums, has_aux=has_aux, holomorphic=holomorphic)


__all__ = ["jacfwd", "jacrev", "jacobian", "hessian"]
