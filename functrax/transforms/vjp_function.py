"""The functions ``vjp`` and ``linearize`` return, as JAX 0.10 returns them: pytrees whose
leaves are the residuals of the forward pass.

- :class:`VJP` (what ``vjp`` returns): a :class:`~functrax.tree_util.Partial` of a static
  pullback (the linear jaxpr, the structures and types) and the residual arrays. It can be
  passed through ``jit`` or ``vmap`` as an argument (its leaves are arrays), returned from a
  jitted function (``fwd_and_bwd``), and called with one cotangent.
- The linearized function of ``linearize``: a ``Partial`` of the same kind, called with
  tangents (attribute ``out_nzs``: which outputs have a non-zero tangent).

The static parts are plain objects compared by identity, so a ``VJP`` returned by a jitted
function has the same tree structure on every call (its jaxpr was traced once) and a jitted
function taking it compiles once.

>>> import functrax, functrax.numpy as fnp
>>> y, f_vjp = functrax.vjp(fnp.sin, fnp.ones(3))
>>> type(f_vjp).__name__, len(functrax.tree_util.tree_leaves(f_vjp))
('VJP', 1)
"""
from __future__ import annotations

from functrax import core, dtypes
from functrax import primitives as P
from functrax.transforms.jvp import Zero, instantiate, tangent_aval
from functrax.transforms.transpose import backward_pass
from functrax.tree_util import (
    Partial, PyTreeDef, register_pytree_node, tree_flatten, tree_unflatten, treedef_is_leaf,
)


# --- messages ---

def _describe(td: PyTreeDef) -> str:
    if treedef_is_leaf(td):
        return "leaf"
    kind, aux, children = td._node
    n = len(children)
    if kind is tuple:
        return f"tuple of length {n}"
    if kind is list:
        return f"list of length {n}"
    if kind is dict:
        return f"dict with keys {list(aux)}"
    if kind is type(None):
        return "None"
    return f"pytree node of type {getattr(kind, 'type', kind).__name__}"


def tree_differences(a: PyTreeDef, b: PyTreeDef, path: str = "") -> list:
    """``(path, what a is, what b is)`` for the first places where ``a`` and ``b`` differ."""
    if a == b:
        return []
    ca, cb = a.children(), b.children()
    if treedef_is_leaf(a) or treedef_is_leaf(b) or a._node[:2] != b._node[:2] or \
            len(ca) != len(cb):
        return [(path, _describe(a), _describe(b))]
    keys = list(a._node[1]) if a._node[0] is dict else list(range(len(ca)))
    out = []
    for k, x, y in zip(keys, ca, cb):
        out.extend(tree_differences(x, y, f"{path}[{k!r}]"))
    return out


def _ct_tree_error(fun_src: str, out_tree, ct_tree):
    lines = "\n".join(f"  * out{p} was a {x} in the original output, but a {y} here, so the "
                      "structures do not match." for p, x, y in tree_differences(out_tree,
                                                                                 ct_tree))
    return ValueError("unexpected tree structure.\n\nThe argument to a VJP function returned "
                      "by `functrax.vjp` must match the pytree structure of the differentiated "
                      f"function {fun_src}.\n\nBut the tree structures differ:\n{lines}")


_TOO_MANY_ARGS = """
The function returned by `functrax.vjp` applied to {} was called with {} arguments,
but functions returned by `functrax.vjp` must be called with a single argument
corresponding to the single value returned by the function being differentiated
(even if that returned value is a tuple or other container).

For example, if we have:

  def f(x):
    return (x, x)
  _, f_vjp = functrax.vjp(f, 1.0)

the function `f` returns a single tuple as output, and so we call `f_vjp` with a
single tuple as its argument:

  x_bar, = f_vjp((2.0, 2.0))

If we instead call `f_vjp(2.0, 2.0)`, with the values 'splatted out' as
arguments rather than in a tuple, this error can arise.
"""


def _ct_matches(ca, want) -> bool:
    if ca.shape != want.shape:
        return False
    if ca.dtype == want.dtype or ca.dtype == dtypes.float0:
        return True
    return ca.weak_type and dtypes.is_inexact(ca.dtype) and dtypes.is_inexact(want.dtype)


def _check_cts(ct_leaves, out_avals):
    for c, a in zip(ct_leaves, out_avals):
        want = tangent_aval(a)
        ca = c.aval if type(c) is Zero else core.get_aval(c)
        if not _ct_matches(ca, want):
            raise ValueError("unexpected JAX type (e.g. shape/dtype) for argument to VJP "
                             f"function: got {ca.str_short()}, but expected {want.str_short()} "
                             "because the corresponding output of the differentiated function "
                             f"had JAX type {a.str_short()}")


def like_input(ct, aval):
    """A cotangent with its input's dtype and weak type (as JAX returns them)."""
    ca = core.get_aval(ct)
    if ca.dtype == dtypes.float0 or (ca.dtype == aval.dtype and ca.weak_type == aval.weak_type):
        return ct
    if ca.dtype != tangent_aval(aval).dtype:
        return ct
    return P.convert_element_type(ct, aval.dtype, aval.weak_type)


# --- the pullback ---

class Pullback:
    """The static part of a :class:`VJP`: the linear jaxpr (its constvars are the
    residuals), which tangent outputs are symbolic zeros, and the structures and types."""

    def __init__(self, linear, in_tree, out_tree, n_out, in_avals, out_avals, fun_src):
        self.jaxpr = linear.closed.jaxpr
        self.out_zero = linear.out_zero
        self.in_used = linear.in_used
        self.in_tangent_avals = linear.in_avals
        self.in_tree, self.out_tree, self.n_out = in_tree, out_tree, n_out
        self.in_avals, self.out_avals, self.fun_src = in_avals, out_avals, fun_src

    def __call__(self, residuals, ct):
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != self.out_tree:
            raise _ct_tree_error(self.fun_src, self.out_tree, ct_tree)
        _check_cts(ct_leaves, self.out_avals)
        n_aux = len(self.out_zero) - self.n_out
        cts = list(ct_leaves) + [None] * n_aux  # aux outputs get no cotangent
        cts = [None if type(c) is Zero or (c is not None and core.get_aval(c).dtype ==
                                           dtypes.float0) else c
               for c in cts]
        live = [c for (z, _), c in zip(self.out_zero, cts) if not z]
        cts_in = iter(backward_pass(self.jaxpr, list(residuals), live))
        out = [next(cts_in) if used else Zero(a)
               for a, used in zip(self.in_tangent_avals, self.in_used)]
        return tree_unflatten(self.in_tree, [like_input(instantiate(c), a)
                                             for c, a in zip(out, self.in_avals)])


class VJP(Partial):
    """The pullback returned by :func:`functrax.vjp`: call it with a cotangent of the
    function's output; its pytree leaves are the residuals of the forward pass.

    >>> import functrax, functrax.numpy as fnp
    >>> _, f_vjp = functrax.vjp(lambda x: x * x, 3.0)
    >>> f_vjp(1.0)
    (Array(6., dtype=float32, weak_type=True),)
    """

    in_tree = property(lambda self: self.func.in_tree)
    out_tree = property(lambda self: self.func.out_tree)
    jaxpr = property(lambda self: self.func.jaxpr)
    out_nzs = property(lambda self: tuple(not z for z, _ in self.func.out_zero[:self.func.n_out]))
    residuals = property(lambda self: list(self.args[0]))

    def __call__(self, out_ct, *extra_args):
        if extra_args:
            name = self.func.fun_src.split(" ")[0]
            raise TypeError(_TOO_MANY_ARGS.format(name, len(extra_args) + 1))
        return self.func(self.args[0], out_ct)

    def __repr__(self):
        return f"VJP(residuals={len(self.args[0])})"


register_pytree_node(VJP, lambda v: (v.args, v.func), lambda func, args: VJP(func, *args))


def make_vjp(linear, in_tree, out_tree, n_out, in_avals, out_avals, fun_src) -> VJP:
    """The :class:`VJP` of a :class:`~functrax.transforms.ad.LinearFunction`."""
    pullback = Pullback(linear, in_tree, out_tree, n_out, in_avals, out_avals, fun_src)
    return VJP(pullback, list(linear.closed.consts))


# --- the linearized function ---

class Linearized:
    """The static part of ``linearize``'s function: the linear jaxpr and the types."""

    def __init__(self, linear, in_tree, out_tree, n_out, primal_avals):
        self.linear_jaxpr = linear.closed.jaxpr
        self.out_zero, self.in_used = linear.out_zero, linear.in_used
        self.in_tree, self.out_tree, self.n_out = in_tree, out_tree, n_out
        self.primal_avals = primal_avals

    def __call__(self, residuals, *tangents):
        t_leaves, t_tree = tree_flatten(tangents)
        if t_tree != self.in_tree:
            raise TypeError(f"expected {self.in_tree}, got {t_tree}")
        for p, t in zip(self.primal_avals, t_leaves):
            want, got = tangent_aval(p), core.get_aval(t)
            if (got.shape, got.dtype) != (want.shape, want.dtype) and not (
                    got.shape == want.shape and got.weak_type and dtypes.is_inexact(got.dtype)
                    and dtypes.is_inexact(want.dtype)):
                raise ValueError("linearized function called on tangent values inconsistent "
                                 "with the original primal values:\nGot tangent aval "
                                 f"{got.str_short()} for primal aval {p.str_short()} but "
                                 f"expected {want.str_short()}.")
        args = [t for t, used in zip(t_leaves, self.in_used) if used]
        outs = iter(core.eval_jaxpr(self.linear_jaxpr, list(residuals), *args))
        full = [instantiate(Zero(a)) if z else next(outs) for z, a in self.out_zero]
        return tree_unflatten(self.out_tree, full[:self.n_out])


def make_linearized(linear, in_tree, out_tree, n_out, primal_avals) -> Partial:
    """``linearize``'s function: a Partial whose leaves are the residuals."""
    lin = Linearized(linear, in_tree, out_tree, n_out, primal_avals)
    f_jvp = Partial(lin, list(linear.closed.consts))
    f_jvp.out_nzs = tuple(not z for z, _ in linear.out_zero[:n_out])
    return f_jvp
