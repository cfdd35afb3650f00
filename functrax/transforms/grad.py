"""The differentiation API over pytrees: jvp, linearize, vjp, grad, value_and_grad, jacfwd,
jacrev, hessian, linear_transpose."""
from __future__ import annotations

import functools
import operator

import numpy as np

from functrax import core, dtypes
from functrax import primitives as P
from functrax.transforms.ad import jvp_flat, linearize_flat
from functrax.transforms.jvp import Zero, instantiate, tangent_aval
from functrax.core.tracing import fun_name
from functrax.tree_util import tree_flatten, tree_map, tree_unflatten


class _OutInfo:
    """Filled in while a flat function runs: output structure and aux structure/count."""
    out_tree = aux_tree = None
    n_out = 0

    def split(self, outs):
        """(outputs, aux pytree or None) from a flat list ending with the aux leaves."""
        aux = tree_unflatten(self.aux_tree, outs[self.n_out:]) if self.aux_tree else None
        return list(outs[:self.n_out]), aux


def _flat_fun(fun, in_tree, has_aux, info: _OutInfo):
    """``fun`` as a function of flat leaves returning flat outputs; aux leaves are appended
    as extra outputs (so they leave the transformation as plain values, never tracers)."""
    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        aux_leaves = []
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"{fun_name(fun)} was called with has_aux=True, so it must "
                                f"return a pair (output, aux), got {type(out).__name__}")
            out, aux = out
            aux_leaves, info.aux_tree = tree_flatten(aux)
        leaves_out, info.out_tree = tree_flatten(out)
        info.n_out = len(leaves_out)
        return leaves_out + aux_leaves
    return flat


def _zeros_for(t):
    return instantiate(t) if type(t) is Zero else t


def _check_jvp_args(primals, tangents):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to functrax.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}.")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError("primal and tangent arguments to functrax.jvp must have the same tree "
                        f"structure; primals have tree structure {p_tree} whereas tangents "
                        f"have tree structure {t_tree}.")
    for p, t in zip(p_leaves, t_leaves):
        pa, ta = core.get_aval(p), core.get_aval(t)
        want = tangent_aval(pa)
        if pa.shape != ta.shape:
            raise ValueError("functrax.jvp called with different primal and tangent shapes; "
                             f"Got primal shape {pa.shape} and tangent shape as {ta.shape}")
        if ta.dtype != want.dtype:
            raise TypeError("primal and tangent arguments to functrax.jvp do not match; dtypes "
                            "must be equal, or in case of int/bool primal dtype the tangent "
                            "dtype must be float0. Got primal dtype "
                            f"{pa.dtype.name} and so expected tangent dtype {want.dtype}, but "
                            f"got tangent dtype {ta.dtype.name} instead.")
    return p_leaves, t_leaves, p_tree


def jvp(fun, primals, tangents, has_aux=False):
    """Jacobian-vector product: ``(fun(*primals), J @ tangents)``.

    Args:
      fun: function of arrays (pytrees allowed).
      primals: tuple/list of arguments.
      tangents: tuple/list with the same structure, shapes and (tangent) dtypes.
      has_aux: ``fun`` returns ``(out, aux)``; aux is returned unchanged as a third value.

    Raises:
      TypeError / ValueError: when tangents do not match primals (structure, shape, dtype).

    >>> import functrax.numpy as fnp
    >>> jvp(fnp.sin, (0.0,), (1.0,))
    (Array(0., dtype=float32, weak_type=True), Array(1., dtype=float32, weak_type=True))
    """
    p_leaves, t_leaves, in_tree = _check_jvp_args(primals, tangents)
    t_leaves = [Zero(tangent_aval(core.get_aval(p))) if core.get_aval(t).dtype == dtypes.float0
                else t for p, t in zip(p_leaves, t_leaves)]
    info = _OutInfo()
    outs, t_outs = jvp_flat(_flat_fun(fun, in_tree, has_aux, info), p_leaves, t_leaves)
    outs, aux = info.split(outs)
    res = (tree_unflatten(info.out_tree, outs),
           tree_unflatten(info.out_tree, [_zeros_for(t) for t in t_outs[:info.n_out]]))
    return res + (aux,) if has_aux else res


def _argnums_split(fun_label, args, argnums):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums and not isinstance(argnums, int):
        raise ValueError(f"{fun_label}: argnums must not be empty")
    for i in nums:
        if not -len(args) <= i < len(args):
            raise ValueError(f"{fun_label}: argnums={argnums} refers to argument {i}, but the "
                             f"function was called with only {len(args)} positional arguments")
    return [operator.index(i) % len(args) for i in nums]


def _partial_in(fun, args, nums):
    """``fun`` as a function of the arguments at positions ``nums`` only."""
    def f(*dyn):
        full = list(args)
        for i, d in zip(nums, dyn):
            full[i] = d
        return fun(*full)
    return f


def linearize(fun, *primals, has_aux=False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` applies the linearization."""
    leaves, in_tree = tree_flatten(primals)
    info = _OutInfo()
    outs, linear = linearize_flat(_flat_fun(fun, in_tree, has_aux, info), leaves)
    outs, aux = info.split(outs)

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != in_tree:
            raise TypeError(f"linearized function called with tangents of structure {t_tree}, "
                            f"expected {in_tree}")
        return tree_unflatten(info.out_tree, linear(*t_leaves)[:info.n_out])
    out = tree_unflatten(info.out_tree, outs)
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def vjp(fun, *primals, has_aux=False):
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(cotangent) -> tuple of input cotangents``.

    >>> import functrax.numpy as fnp
    >>> y, f_vjp = vjp(fnp.sin, 0.0)
    >>> f_vjp(1.0)
    (Array(1., dtype=float32, weak_type=True),)
    """
    leaves, in_tree = tree_flatten(primals)
    info = _OutInfo()
    outs, linear = linearize_flat(_flat_fun(fun, in_tree, has_aux, info), leaves)
    aux_zeros = [Zero(tangent_aval(core.get_aval(a))) for a in outs[info.n_out:]]
    outs, aux = info.split(outs)
    out_tree = info.out_tree
    out_avals = [core.get_aval(o) for o in outs]
    in_avals = [core.get_aval(x) for x in leaves]

    def vjp_fn(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError(f"vjp function of {fun_name(fun)} was called with a cotangent of "
                            f"structure {ct_tree}, but the function's output has structure "
                            f"{out_tree}")
        for c, a in zip(ct_leaves, out_avals):
            ca = core.get_aval(c)
            if ca.shape != a.shape or (ca.dtype != tangent_aval(a).dtype and not (
                    ca.weak_type and dtypes.is_inexact(ca.dtype))):
                raise ValueError(f"vjp function of {fun_name(fun)}: cotangent of type "
                                 f"{ca.str_short()} does not match the output type "
                                 f"{tangent_aval(a).str_short()}")
        cts = linear.transpose(list(ct_leaves) + aux_zeros)
        return tree_unflatten(in_tree, [_like_input(_zeros_for(c), a)
                                        for c, a in zip(cts, in_avals)])

    out = tree_unflatten(out_tree, outs)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _like_input(ct, aval):
    """A cotangent with its input's dtype and weak type (as JAX returns them)."""
    ca = core.get_aval(ct)
    if ca.dtype == dtypes.float0 or (ca.dtype == aval.dtype and ca.weak_type == aval.weak_type):
        return ct
    if ca.dtype != tangent_aval(aval).dtype:
        return ct
    return P.convert_element_type(ct, aval.dtype, aval.weak_type)


def _check_grad_input(x, allow_int, label):
    dt = core.get_aval(x).dtype
    if not dtypes.is_inexact(dt) and not allow_int:
        raise TypeError(f"{label} requires real- or complex-valued inputs (input dtype that is a "
                        f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                        "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def _check_scalar_output(out, label):
    aval = core.get_aval(out)
    if aval.shape != ():
        raise TypeError("Gradient only defined for scalar-output functions. Output had shape: "
                        f"{aval.shape}.")
    if not dtypes.is_float(aval.dtype):
        raise TypeError(f"{label} requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {aval.dtype.name}. For holomorphic "
                        "differentiation, pass holomorphic=True.")


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    """``fun`` and its gradient w.r.t. the ``argnums`` arguments, in one pass.

    Returns:
      A function returning ``(value, grad)`` (``((value, aux), grad)`` with has_aux).
    """
    label = "grad"

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = _argnums_split(label, args, argnums)
        dyn = [args[i] for i in nums]
        for d in dyn:
            tree_map(lambda x: _check_grad_input(x, allow_int, label), d)
        f = _partial_in(lambda *a: fun(*a, **kwargs), args, nums)
        if has_aux:
            out, f_vjp, aux = vjp(f, *dyn, has_aux=True)
        else:
            out, f_vjp = vjp(f, *dyn)
        _check_scalar_output(out, label)
        one = np.ones((), core.get_aval(out).dtype)[()]
        g = f_vjp(core.Array(np.asarray(one)))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        return ((out, aux), g) if has_aux else (out, g)

    return value_and_grad_f


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    """The gradient of scalar-valued ``fun`` w.r.t. argument(s) ``argnums``.

    Raises:
      TypeError: for non-scalar or non-float outputs, and for integer inputs unless
        ``allow_int=True`` (then their gradient is a float0 zero).

    >>> import functrax.numpy as fnp
    >>> grad(lambda x: x ** 3)(2.0)
    Array(12., dtype=float32, weak_type=True)
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int, reduce_axes)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


def _check_jac_dtype(name, what, holomorphic, allow_int, x):
    """JAX's dtype checks for jacfwd/jacrev inputs ("input") and outputs ("output")."""
    dt = core.get_aval(x).dtype
    is_complex = dtypes.issubdtype(dt, np.complexfloating)
    if holomorphic:
        if not is_complex:
            raise TypeError(f"{name} with holomorphic=True requires {what}s with complex dtype, "
                            f"but got {dt.name}.")
        return
    if name == "jacfwd" and what == "input" and not dtypes.is_float(dt):
        raise TypeError("jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                        f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
                        "holomorphic=True. For differentiation of non-holomorphic functions "
                        "involving complex inputs or integer inputs, use functrax.jvp directly.")
    if name == "jacrev" and what == "input" and not dtypes.is_inexact(dt):
        if dtypes.issubdtype(dt, np.integer) or dtypes.issubdtype(dt, np.bool_):
            if not allow_int:
                raise TypeError("jacrev requires real- or complex-valued inputs (input dtype "
                                f"that is a sub-dtype of np.inexact), but got {dt.name}. If you "
                                "want to use Boolean- or integer-valued inputs, use vjp or set "
                                "allow_int to True.")
        else:
            raise TypeError("jacrev requires numerical-valued inputs (input dtype that is a "
                            f"sub-dtype of np.bool_ or np.number), but got {dt.name}.")
    if name == "jacrev" and what == "output" and not dtypes.is_float(dt):
        hint = ("For holomorphic differentiation, pass holomorphic=True. For differentiation "
                "of non-holomorphic functions involving complex outputs, use functrax.vjp "
                "directly." if is_complex else "For differentiation of functions with integer "
                "outputs, use functrax.vjp directly.")
        raise TypeError("jacrev requires real-valued outputs (output dtype that is a sub-dtype "
                        f"of np.floating), but got {dt.name}. {hint}")


def _std_basis(pytree):
    """The identity basis over all leaves of ``pytree``, as a pytree batched on axis 0.

    With ``n`` the total number of elements, leaf ``k`` of the result has shape
    ``(n,) + leaf.shape`` and holds rows ``offset_k : offset_k + leaf.size`` of ``eye(n)``
    (so mapping over axis 0 gives one unit tangent/cotangent per element), cast to the
    leaf's dtype.
    """
    leaves, _ = tree_flatten(pytree)
    n = sum(core.get_aval(x).size for x in leaves)
    dtype = dtypes.result_type(*leaves) if leaves else dtypes.default_float_dtype()
    return _assemble(pytree, 1, None, _eye(n, dtype))


def _eye(n: int, dtype):
    """The ``n x n`` identity of ``dtype``, built as ``functrax.numpy.eye`` builds it."""
    i32 = dtypes.canonicalize_dtype(np.int32)
    rows = P.add(P.broadcasted_iota(i32, (n, n), 0), np.asarray(0, i32)[()])
    return P.convert_element_type(P.eq(rows, P.broadcasted_iota(i32, (n, n), 1)), dtype)


def _assemble(pytree, axis, example, arr):
    """Split ``arr`` along ``axis`` into one piece per leaf of ``pytree`` (sized like the
    leaf), reshape that axis into the leaf's shape, and cast each piece to the dtype (and
    weak type) of ``example``, or of the leaf itself when ``example`` is None.

    ``jacfwd`` uses ``axis=-1`` (input structure, pieces ``out.shape + in.shape``);
    ``jacrev`` uses ``axis=0`` (output structure, pieces ``out.shape + in.shape``).
    """
    leaves, treedef = tree_flatten(pytree)
    shape = core.get_aval(arr).shape
    axis %= len(shape)
    parts, start = [], 0
    for leaf in leaves:
        la = core.get_aval(leaf)
        part = arr
        if la.size != shape[axis]:
            part = P.slice_in_dim(arr, start, start + la.size, axis=axis)
        start += la.size
        part = P.reshape(part, shape[:axis] + la.shape + shape[axis + 1:])
        ea = core.get_aval(leaf if example is None else example)
        pa = core.get_aval(part)
        if pa.dtype != dtypes.float0 and (pa.dtype, pa.weak_type) != (ea.dtype, ea.weak_type):
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
    nums = _argnums_split(name, args, argnums)
    dyn = tuple(args[i] for i in nums)
    return _partial_in(lambda *a: fun(*a, **kwargs), args, nums), dyn


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
      TypeError: for non-float inputs (complex needs ``holomorphic=True``).

    >>> import functrax.numpy as fnp
    >>> jacfwd(lambda x: x ** 2)(fnp.array([1.0, 2.0]))
    Array([[2., 0.],
           [0., 4.]], dtype=float32)
    """
    from functrax.transforms.vmap import vmap

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        f, dyn = _dyn_args("jacfwd", fun, args, kwargs, argnums)
        tree_map(lambda x: _check_jac_dtype("jacfwd", "input", holomorphic, False, x), dyn)

        # aux travels as a primal output of ``_with_aux(f)`` (never as a JVP tracer)
        def pushfwd(tangents):
            (y, aux), (t, _) = jvp(_with_aux(f, has_aux, fun), dyn, tangents)
            return y, t, aux
        res = vmap(pushfwd, out_axes=(None, -1, None))(_std_basis(dyn))
        y, jac = res[0], res[1]
        tree_map(lambda x: _check_jac_dtype("jacfwd", "output", holomorphic, False, x), y)
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
    from functrax.tree_util import tree_structure, tree_transpose

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        f, dyn = _dyn_args("jacrev", fun, args, kwargs, argnums)
        tree_map(lambda x: _check_jac_dtype("jacrev", "input", holomorphic, allow_int, x), dyn)
        # aux travels as a primal output of ``_with_aux(f)``, with zero cotangents
        (y, aux), pair_pullback = vjp(_with_aux(f, has_aux, fun), *dyn)
        tree_map(lambda x: _check_jac_dtype("jacrev", "output", holomorphic, allow_int, x), y)
        aux_zeros = tree_map(lambda a: instantiate(Zero.from_value(a)), aux)
        jac = vmap(lambda ct: pair_pullback((ct, aux_zeros)))(_std_basis(y))
        jac = jac[0] if isinstance(argnums, int) else jac
        example = dyn[0] if isinstance(argnums, int) else dyn
        jac_tree = tree_map(lambda x_leaf, j: _assemble(y, 0, x_leaf, j), example, jac)
        jac_tree = tree_transpose(tree_structure(example), tree_structure(y), jac_tree)
        return (jac_tree, aux) if has_aux else jac_tree
    return jacfun


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


def linear_transpose(fun, *primals):
    """The transpose of linear ``fun``; ``primals`` only give shapes and dtypes.

    The function is staged as it is (no JVP), every input unknown, then transposed.

    >>> import functrax.numpy as fnp
    >>> f_t = linear_transpose(lambda x: 2.0 * x, fnp.ones(2))
    >>> f_t(fnp.ones(2))
    (Array([2., 2.], dtype=float32),)
    """
    from functrax.transforms.partial_eval import PartialEvalTrace
    from functrax.transforms.transpose import backward_pass
    leaves, in_tree = tree_flatten(primals)
    avals = [core.get_aval(x) for x in leaves]
    info = _OutInfo()
    pe = PartialEvalTrace(core.current_trace())
    try:
        ins = [pe.new_arg(a) for a in avals]
        with core.set_current_trace(pe):
            outs = _flat_fun(fun, in_tree, False, info)(*ins)
        closed = pe.to_jaxpr(outs)
    finally:
        pe.invalidate()
    out_tree = info.out_tree
    out_avals = closed.out_avals

    def transposed(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: cotangent structure {ct_tree} does not match "
                            f"the output structure {out_tree}")
        for c, a in zip(ct_leaves, out_avals):
            if core.get_aval(c).shape != a.shape:
                raise TypeError(f"linear_transpose: cotangent of shape {core.get_aval(c).shape}"
                                f" for an output of shape {a.shape}")
        cts = backward_pass(closed.jaxpr, closed.consts, ct_leaves)
        return tree_unflatten(in_tree, [_zeros_for(c) for c in cts])
    return transposed


__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian",
           "linear_transpose"]
