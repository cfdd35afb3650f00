"""The differentiation API over pytrees: jvp, linearize, vjp, grad, value_and_grad, jacfwd,
jacrev, hessian, linear_transpose."""
from __future__ import annotations

import functools
import operator

import numpy as np

from functrax import core, dtypes
from functrax.transforms.ad import jvp_flat, linearize_flat
from functrax.transforms.jvp import Zero, instantiate, tangent_aval
from functrax.tracing import fun_name
from functrax.tree_util import tree_flatten, tree_map, tree_unflatten


def _flat_fun(fun, in_tree, has_aux, aux_box):
    """``fun`` as a function of flat leaves returning flat outputs (aux kept aside)."""
    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"{fun_name(fun)} was called with has_aux=True, so it must "
                                f"return a pair (output, aux), got {type(out).__name__}")
            out, aux = out
            aux_box.append(aux)
        leaves_out, tree = tree_flatten(out)
        aux_box.insert(0, tree)
        return leaves_out
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
    box = []
    outs, t_outs = jvp_flat(_flat_fun(lambda *a: fun(*a), in_tree, has_aux, box), p_leaves,
                            t_leaves)
    out_tree = box[0]
    res = (tree_unflatten(out_tree, outs),
           tree_unflatten(out_tree, [_zeros_for(t) for t in t_outs]))
    return res + (box[1],) if has_aux else res


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
    box = []
    outs, linear = linearize_flat(_flat_fun(fun, in_tree, has_aux, box), leaves)
    out_tree = box[0]

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != in_tree:
            raise TypeError(f"linearized function called with tangents of structure {t_tree}, "
                            f"expected {in_tree}")
        return tree_unflatten(out_tree, linear(*t_leaves))
    out = tree_unflatten(out_tree, outs)
    return (out, f_jvp, box[1]) if has_aux else (out, f_jvp)


def vjp(fun, *primals, has_aux=False):
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(cotangent) -> tuple of input cotangents``.

    >>> import functrax.numpy as fnp
    >>> y, f_vjp = vjp(fnp.sin, 0.0)
    >>> f_vjp(1.0)
    (Array(1., dtype=float32, weak_type=True),)
    """
    leaves, in_tree = tree_flatten(primals)
    box = []
    outs, linear = linearize_flat(_flat_fun(fun, in_tree, has_aux, box), leaves)
    out_tree = box[0]
    out_avals = [core.get_aval(o) for o in outs]

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
        cts = linear.transpose(ct_leaves)
        return tree_unflatten(in_tree, [_zeros_for(c) for c in cts])

    out = tree_unflatten(out_tree, outs)
    return (out, vjp_fn, box[1]) if has_aux else (out, vjp_fn)


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


def _std_basis(aval):
    from functrax import numpy as fnp
    n = aval.size
    return fnp.reshape(fnp.eye(n, dtype=aval.dtype), (n,) + aval.shape)


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Jacobian by forward mode: one JVP per input element (``out.shape + in.shape``)."""
    from functrax import numpy as fnp

    def jac_f(*args):
        nums = _argnums_split("jacfwd", args, argnums)
        dyn = [args[i] for i in nums]
        f = _partial_in(fun, args, nums)
        res = linearize(f, *dyn, has_aux=has_aux)
        out, f_jvp = res[0], res[1]
        leaves, in_tree = tree_flatten(tuple(dyn))
        out_leaves, out_tree = tree_flatten(out)
        jac_per_in = []
        for k, leaf in enumerate(leaves):
            aval = core.get_aval(leaf)
            basis = _std_basis(tangent_aval(aval))
            cols = []
            for b in basis:
                ts = [b if j == k else fnp.zeros_like(lv) for j, lv in enumerate(leaves)]
                cols.append(tree_flatten(f_jvp(*tree_unflatten(in_tree, ts)))[0])
            per_out = []
            for o_idx, o in enumerate(out_leaves):
                col = fnp.stack([c[o_idx] for c in cols], axis=-1) if cols else None
                per_out.append(fnp.reshape(col, core.get_aval(o).shape + aval.shape))
            jac_per_in.append(per_out)
        jac = _assemble(jac_per_in, in_tree, out_tree, argnums)
        return (jac, res[2]) if has_aux else jac
    return jac_f


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Jacobian by reverse mode: one VJP per output element (``out.shape + in.shape``)."""
    from functrax import numpy as fnp

    def jac_f(*args):
        nums = _argnums_split("jacrev", args, argnums)
        dyn = [args[i] for i in nums]
        f = _partial_in(fun, args, nums)
        res = vjp(f, *dyn, has_aux=has_aux)
        out, f_vjp = res[0], res[1]
        out_leaves, out_tree = tree_flatten(out)
        in_leaves, in_tree = tree_flatten(tuple(dyn))
        rows_per_out = []
        for o_idx, o in enumerate(out_leaves):
            aval = core.get_aval(o)
            rows = []
            for b in _std_basis(aval):
                cts = [b if j == o_idx else fnp.zeros_like(ol) for j, ol in enumerate(out_leaves)]
                rows.append(tree_flatten(f_vjp(tree_unflatten(out_tree, cts)))[0])
            per_in = []
            for i_idx, leaf in enumerate(in_leaves):
                row = fnp.stack([r[i_idx] for r in rows])
                per_in.append(fnp.reshape(row, aval.shape + core.get_aval(leaf).shape))
            rows_per_out.append(per_in)
        jac_per_in = [[rows_per_out[o][i] for o in range(len(out_leaves))]
                      for i in range(len(in_leaves))]
        jac = _assemble(jac_per_in, in_tree, out_tree, argnums)
        return (jac, res[2]) if has_aux else jac
    return jac_f


def _assemble(jac_per_in, in_tree, out_tree, argnums):
    """Nest as JAX does: output structure outside, input structure inside."""
    n_out = out_tree.num_leaves
    per_out = []
    for o in range(n_out):
        inner = tree_unflatten(in_tree, [jac_per_in[i][o] for i in range(len(jac_per_in))])
        per_out.append(inner[0] if isinstance(argnums, int) else inner)
    return tree_unflatten(out_tree, per_out)


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """Second derivatives: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux), argnums, has_aux)


def linear_transpose(fun, *primals):
    """The transpose of linear ``fun`` at example ``primals`` (only shapes/dtypes matter)."""
    leaves, in_tree = tree_flatten(primals)
    box = []
    _, linear = linearize_flat(_flat_fun(fun, in_tree, False, box), leaves)
    out_tree = box[0]

    def transposed(ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: cotangent structure {ct_tree} does not match "
                            f"the output structure {out_tree}")
        return tree_unflatten(in_tree, [_zeros_for(c) for c in linear.transpose(ct_leaves)])
    return transposed


__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian",
           "linear_transpose"]
