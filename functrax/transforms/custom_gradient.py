"""``custom_gradient`` and ``closure_convert`` (JAX's ``jax.custom_gradient`` /
``jax.closure_convert``).

- ``custom_gradient(fun)``: ``fun(*args)`` returns ``(value, vjp_fn)``; the result is a
  ``custom_vjp`` function whose backward pass is ``vjp_fn``. ``vjp_fn`` is traced in the
  forward pass to a jaxpr; the values it closes over are the residuals.
- ``closure_convert(fun, *example_args)``: ``(converted, consts)`` where the floating-point
  values ``fun`` closes over (e.g. tracers of an enclosing transformation) are hoisted into
  ``consts`` and ``converted(*args, *consts)`` computes ``fun(*args)``. A ``custom_vjp``
  ``fwd``/``bwd`` pair can then take them as explicit arguments.
"""
from __future__ import annotations

import functools

from functrax import core, dtypes
from functrax.core import ClosedJaxpr, Jaxpr
from functrax.core.tracing import fun_name, trace_to_jaxpr
from functrax.transforms.custom_derivatives import custom_vjp
from functrax.transforms.jvp import tangent_aval
from functrax.tree_util import Partial, tree_flatten, tree_unflatten, treedef_is_leaf


class _Rule:
    """The static part of ``custom_gradient``'s residuals: the traced ``vjp_fn``."""

    def __init__(self, jaxpr, in_tree, out_tree):
        self.jaxpr, self.in_tree, self.out_tree = jaxpr, in_tree, out_tree

    def __call__(self, consts, cts):
        cts_flat, tree = tree_flatten((cts,))
        if tree != self.out_tree:
            raise TypeError(f"{self.out_tree}\n!=\n{tree}")
        outs = core.eval_jaxpr(self.jaxpr, list(consts), *cts_flat)
        out = tree_unflatten(self.in_tree, outs)
        return (out,) if treedef_is_leaf(self.in_tree) else out


def custom_gradient(fun):
    """Define a function and its gradient at once: ``fun(*args) -> (value, vjp_fn)`` with
    ``vjp_fn(cotangent) ->`` the cotangent of the (single) argument, or a tuple of them.

    Returns:
      A ``custom_vjp`` function computing ``value``.

    >>> import functrax, functrax.numpy as fnp
    >>> @custom_gradient
    ... def f(x):
    ...     return x ** 2, lambda g: g * 10.0
    >>> functrax.grad(f)(3.0)
    Array(10., dtype=float32, weak_type=True)
    """
    @custom_vjp
    def wrapped_fun(*args, **kwargs):
        ans, _ = fun(*args, **kwargs)
        return ans

    def fwd(*args, **kwargs):
        ans, rule = fun(*args, **kwargs)
        ans_flat, out_tree = tree_flatten((ans,))
        box = []

        def flat_rule(*cts):
            out = rule(*tree_unflatten(out_tree, list(cts)))
            leaves, tree = tree_flatten(out)
            box.append(tree)
            return leaves
        closed = trace_to_jaxpr(flat_rule,
                                [tangent_aval(core.get_aval(x)) for x in ans_flat])
        return ans, Partial(_Rule(closed.jaxpr, box[0], out_tree), list(closed.consts))

    def bwd(res, cts):
        return res(cts)

    wrapped_fun.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped_fun, fun)
    return wrapped_fun


def closure_convert(fun, *example_args):
    """Closure-convert ``fun``: hoist the floating-point values it closes over.

    Args:
      fun: the function (pytree inputs and outputs).
      example_args: arguments like the ones it will get (their types are traced).

    Returns:
      ``(converted_fun, hoisted_consts)``: ``converted_fun(*args, *hoisted_consts)`` computes
      ``fun(*args)``; ``hoisted_consts`` lists the floating-point tracers ``fun`` closes over
      (as in JAX, concrete constants stay inside ``converted_fun``).

    >>> import functrax
    >>> def outer(c):
    ...     f, consts = closure_convert(lambda x: c * x, 1.0)
    ...     return f(3.0, *consts), len(consts)
    >>> functrax.grad(lambda c: outer(c)[0])(2.0)
    Array(3., dtype=float32, weak_type=True)
    """
    flat_args, in_tree = tree_flatten(example_args)
    box = []

    def flat_fun(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        out_leaves, tree = tree_flatten(out)
        box.append(tree)
        return out_leaves
    closed = trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in flat_args])
    out_tree = box[0]
    j = closed.jaxpr
    hoist = [isinstance(c, core.Tracer) and dtypes.is_inexact(v.aval.dtype)
             for v, c in zip(j.constvars, closed.consts)]
    kept_vars = [v for v, h in zip(j.constvars, hoist) if not h]
    kept = [c for c, h in zip(closed.consts, hoist) if not h]
    h_vars = [v for v, h in zip(j.constvars, hoist) if h]
    consts = [c for c, h in zip(closed.consts, hoist) if h]
    jaxpr = Jaxpr(kept_vars, list(j.invars) + h_vars, j.outvars, j.eqns, j.debug_info)
    converted_closed = ClosedJaxpr(jaxpr, kept)
    n_args = len(flat_args)

    def converted_fun(*args_and_consts):
        n = len(args_and_consts) - len(consts)
        args, hc = args_and_consts[:n], args_and_consts[n:]
        leaves, tree = tree_flatten(args)
        if tree != in_tree or len(leaves) != n_args:
            raise TypeError(f"closure_convert({fun_name(fun)}): the converted function takes "
                            f"arguments structured as {in_tree} then {len(consts)} consts, "
                            f"got {tree}")
        outs = core.eval_jaxpr(converted_closed.jaxpr, converted_closed.consts, *leaves, *hc)
        return tree_unflatten(out_tree, outs)
    converted_fun.__name__ = f"closure_converted_{fun_name(fun)}"
    return converted_fun, consts


__all__ = ["custom_gradient", "closure_convert"]
