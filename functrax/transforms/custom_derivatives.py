"""``custom_jvp`` and ``custom_vjp``: user-defined derivative rules.

A call binds a higher-order primitive holding the traced function (``call_jaxpr``) and the
user's rule as a parameter; every transform has a rule for it: evaluation and staging use
``call_jaxpr``, the JVP rule calls the user's rule. For ``custom_vjp`` the JVP rule runs
``fwd`` and emits ``custom_lin``, a linear primitive whose transpose calls ``bwd``.

As in JAX, three traces handle a call without tracing the function (``_direct_call``): the
bottom (eager) trace calls the function itself on the concrete arguments, the JVP trace calls
only the rule (on its primals, under its parent trace), and a linearization trace forwards a
call whose inputs are all known to its parent. So outside ``jit`` the function and the rules
see concrete values (a Python ``if x > 0`` works) and the function is not run by ``grad``.
"""
from __future__ import annotations

import functools
import inspect

from functrax import core
from functrax import primitives as P
from functrax.primitives.calls import custom_jvp_call_p, custom_lin_p, custom_vjp_call_p
from functrax.core.tracing import fun_name
from functrax.transforms.call_util import trace_subjaxpr
from functrax.transforms.jvp import JVPTrace, Zero, instantiate, jvp_rules, tangent_aval
from functrax.transforms.partial_eval import PartialEvalTrace, partial_eval_rules
from functrax.transforms.symbolic_zeros import CustomVJPPrimal, SymbolicZero, from_user, to_user
from functrax.transforms.transpose import is_undefined, transpose_rules
from functrax.tree_util import tree_flatten, tree_leaves, tree_unflatten



def _resolve_args(fun, args, kwargs):
    if not kwargs:
        return tuple(args)
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{fun_name(fun)}: {e}") from None
    bound.apply_defaults()
    return tuple(bound.args) + tuple(bound.kwargs.values())


def _nondiff_positions(fun, nondiff_argnums, nondiff_argnames) -> tuple:
    """``nondiff_argnums`` joined with the positions of ``nondiff_argnames`` (sorted)."""
    nums = set(nondiff_argnums)
    if nondiff_argnames:
        names = (nondiff_argnames,) if isinstance(nondiff_argnames, str) else nondiff_argnames
        params = list(inspect.signature(fun).parameters)
        for n in names:
            if n not in params:
                raise ValueError(f"nondiff_argnames: {n!r} is not a parameter of "
                                 f"{fun_name(fun)} (parameters: {params})")
            nums.add(params.index(n))
    return tuple(sorted(nums))


class _CustomBase:
    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)

    def _split(self, args):
        nondiff = {i % len(args): args[i] for i in self.nondiff_argnums}
        diff = tuple(a for i, a in enumerate(args) if i not in nondiff)
        return nondiff, diff

    @staticmethod
    def _merge(nondiff, diff):
        it = iter(diff)
        n = len(nondiff) + len(diff)
        return [nondiff[i] if i in nondiff else next(it) for i in range(n)]

    def _direct_call(self, args, jvp_call):
        """The result when the current trace handles this call without tracing the function,
        else None (see the module docstring)."""
        trace = core.current_trace()
        kind = type(trace)
        if kind is core.EvalTrace:
            return (self.fun(*args),)
        if kind is PartialEvalTrace and not any(trace.is_unknown(x) for x in tree_leaves(args)):
            with core.set_current_trace(trace.parent):
                return (self(*args),)
        if kind is JVPTrace:
            nondiff, diff = self._split(args)
            if any(isinstance(x, core.Tracer) and x._trace is trace
                   for x in tree_leaves(list(nondiff.values()))):
                return None  # staged: a differentiated non-differentiable argument is an error
            flat, in_tree = tree_flatten(diff)
            pairs = [trace.lift(x) for x in flat]
            if all(type(t) is Zero for _, t in pairs):
                with core.set_current_trace(trace.parent):
                    return (self(*self._merge(nondiff, tree_unflatten(
                        in_tree, [p for p, _ in pairs]))),)
            nd_vals = [nondiff[i] for i in sorted(nondiff)]
            with core.set_current_trace(trace.parent):
                outs, t_outs, out_tree = jvp_call(nd_vals, in_tree, pairs)
            return (tree_unflatten(out_tree, [trace.pure(o, t) for o, t in zip(outs, t_outs)]),)
        return None

    def _trace(self, args, kwargs):
        args = _resolve_args(self.fun, args, kwargs)
        nondiff, diff = self._split(args)
        closed, consts, flat, in_tree, out_tree = trace_subjaxpr(
            lambda *d: self.fun(*self._merge(nondiff, d)), diff)
        return nondiff, closed, consts, flat, in_tree, out_tree


class custom_jvp(_CustomBase):
    """A function with a custom JVP rule (``defjvp`` / ``defjvps``).

    >>> import functrax, functrax.numpy as fnp
    >>> @custom_jvp
    ... def log1pexp(x):
    ...     return fnp.log1p(fnp.exp(x))
    >>> @log1pexp.defjvp
    ... def _(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t * (1 - 1 / (1 + fnp.exp(x)))
    >>> functrax.grad(log1pexp)(100.0)
    Array(1., dtype=float32, weak_type=True)
    """

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp = None
        self.symbolic_zeros = False

    def defjvp(self, jvp, symbolic_zeros=False):
        """Set the rule ``jvp(*nondiff_args, primals, tangents) -> (out, tangent_out)``.

        With ``symbolic_zeros=True`` the tangent of each input that is not differentiated is
        a :class:`~functrax.custom_derivatives.SymbolicZero`, and the rule may return
        ``SymbolicZero`` tangents. Returns ``jvp`` (usable as a decorator).
        """
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        """One rule per argument, ``fn(t, ans, *primals) -> contribution`` (None: zero).

        Raises:
          TypeError: with ``nondiff_argnums`` (as JAX).
        """
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            ans = self(*primals)
            out = None
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                c = fn(t, ans, *primals)
                out = c if out is None else _tree_add(out, c)
            return ans, out if out is not None else _zeros_like_tree(ans)
        jvp.__name__ = "defjvps"
        self.defjvp(jvp)

    def __call__(self, *args, **kwargs):
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {fun_name(self.fun)} "
                                 "using defjvp.")
        args = _resolve_args(self.fun, args, kwargs)
        direct = self._direct_call(args, self._jvp_direct)
        if direct is not None:
            return direct[0]
        nondiff, closed, consts, flat, in_tree, out_tree = self._trace(args, {})
        nd_vals = [nondiff[i] for i in sorted(nondiff)]

        def flat_jvp(primals, tangents):
            out_l, t_l, _ = self._run_rule(nd_vals, in_tree, primals, tangents, out_tree,
                                           closed.out_avals)
            return out_l, t_l
        flat_jvp.__name__ = fun_name(self.jvp)
        outs = custom_jvp_call_p.bind(*consts, *flat, call_jaxpr=closed, jvp=flat_jvp,
                                      num_consts=len(consts), symbolic_zeros=self.symbolic_zeros,
                                      name=fun_name(self.fun))
        return tree_unflatten(out_tree, outs)

    def _run_rule(self, nd_vals, in_tree, primals, tangents, out_tree=None, out_avals=None):
        """The rule on flat primals and tangents, checked: (outs, tangent outs, out tree).
        The function's output tree and types are checked when it was traced (given)."""
        rule = self.jvp
        p = tree_unflatten(in_tree, list(primals))
        t = tree_unflatten(in_tree, list(tangents))
        res = rule(*nd_vals, tuple(p), tuple(t))
        if not (isinstance(res, (tuple, list)) and len(res) == 2):
            raise TypeError(f"Custom JVP rule {fun_name(rule)} for function "
                            f"{fun_name(self.fun)} must produce a pair (list or tuple of "
                            f"length two) representing primal and tangent outputs, got "
                            f"{res!r}")
        out, t_out = res
        out_l, o_tree = tree_flatten(out)
        t_l, t_tree = tree_flatten(t_out)
        t_l = [from_user(t) for t in t_l]
        want = o_tree if out_tree is None else out_tree
        if o_tree != want or t_tree != want:
            what = "the function's output" if out_tree is not None else "its primal output"
            raise TypeError(f"Custom JVP rule {fun_name(rule)} for function "
                            f"{fun_name(self.fun)} must produce primal and tangent outputs "
                            f"with the structure of {what} {want}, got "
                            f"primal {o_tree} and tangent {t_tree}")
        _check_types(self.fun, rule, out_l, t_l, out_avals)
        return out_l, t_l, want

    def _jvp_direct(self, nd_vals, in_tree, pairs):
        primals = [p for p, _ in pairs]
        ts = [to_user(t, self.symbolic_zeros) for _, t in pairs]
        return self._run_rule(nd_vals, in_tree, primals, ts)


def _check_types(fun, rule, outs, t_outs, avals):
    for i, (o, t) in enumerate(zip(outs, t_outs)):
        oa = core.get_aval(o)
        a = oa if avals is None else avals[i]
        if oa.shape != a.shape or oa.dtype != a.dtype:
            raise TypeError(f"Custom JVP rule {fun_name(rule)} for function {fun_name(fun)} "
                            f"must produce primal outputs of the function's output types; "
                            f"expected {a.str_short()}, got {oa.str_short()}")
        if type(t) is Zero:
            continue
        ta = core.get_aval(t)
        want = tangent_aval(a)
        if ta.shape != want.shape:
            raise TypeError(f"Custom JVP rule {fun_name(rule)} for function {fun_name(fun)} "
                            f"must produce tangent outputs with shapes matching the primal "
                            f"outputs; expected {want.str_short()}, got {ta.str_short()}")


def _tree_add(a, b):
    from functrax.tree_util import tree_map
    return tree_map(P.add, a, b)


def _zeros_like_tree(x):
    from functrax.tree_util import tree_map
    return tree_map(lambda v: instantiate(Zero(tangent_aval(core.get_aval(v)))), x)


def _closure_tangent_error(kind, name):
    raise TypeError(f"{kind} function {name} closes over a value that is being differentiated "
                    "(a tracer of an enclosing transformation). Pass that value as an explicit "
                    "argument of the function instead.")


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, symbolic_zeros,
                         name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        _closure_tangent_error("custom_jvp", name)
    ts = [to_user(t, symbolic_zeros) for t in tangents[num_consts:]]
    outs, t_outs = jvp(primals[num_consts:], ts)
    return outs, list(t_outs)


jvp_rules[custom_jvp_call_p] = _custom_jvp_call_jvp


def _custom_jvp_call_partial_eval(trace, args, params):
    # as JAX: partial evaluation with unknown inputs builds a linear function, which needs
    # no custom rule any more: the function is inlined (so it can be transposed)
    closed = params["call_jaxpr"]
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


partial_eval_rules[custom_jvp_call_p] = _custom_jvp_call_partial_eval


class custom_vjp(_CustomBase):
    """A function with a custom VJP rule given by ``defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(*nondiff_args, residuals, ct_out) ->`` a tuple
    with one cotangent per differentiable positional argument.

    >>> import functrax, functrax.numpy as fnp
    >>> @custom_vjp
    ... def clip_grad(x):
    ...     return x
    >>> clip_grad.defvjp(lambda x: (x, None), lambda _, g: (fnp.clip(g, -1, 1),))
    >>> functrax.grad(lambda x: 5 * clip_grad(x))(2.0)
    Array(1., dtype=float32, weak_type=True)
    """

    def __init__(self, fun, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd = self.bwd = None
        self.symbolic_zeros = False
        self.optimize_remat = False

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        """Set the rules: ``fwd(*args) -> (out, residuals)``, ``bwd(*nondiff_args,
        residuals, ct_out) ->`` one cotangent (or None) per differentiable argument.

        Args:
          symbolic_zeros: ``fwd`` gets a :class:`~functrax.custom_derivatives.CustomVJPPrimal`
            (``value``, ``perturbed``) per input leaf, and ``bwd`` a
            :class:`~functrax.custom_derivatives.SymbolicZero` for each zero output
            cotangent; ``bwd`` may return ``SymbolicZero`` or None.
          optimize_remat: accepted as JAX's experimental flag; functrax's ``checkpoint``
            already recomputes a custom_vjp call through its ``fwd`` rule, so the values
            are the same either way.

        Raises:
          NotImplementedError: for ``symbolic_zeros`` with ``optimize_remat`` (as JAX).
        """
        if symbolic_zeros and optimize_remat:
            raise NotImplementedError("remat optimization for custom_vjp does not support "
                                      "symbolic zeros")
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros
        self.optimize_remat = optimize_remat

    def __call__(self, *args, **kwargs):
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {fun_name(self.fun)} "
                                 "using defvjp.")
        args = _resolve_args(self.fun, args, kwargs)
        direct = self._direct_call(args, self._jvp_direct)
        if direct is not None:
            return direct[0]
        nondiff, closed, consts, flat, in_tree, out_tree = self._trace(args, {})
        nd_vals = [nondiff[i] for i in sorted(nondiff)]
        flat_fwd, flat_bwd = self._flat_rules(nd_vals, in_tree, flat, [out_tree])
        outs = custom_vjp_call_p.bind(*consts, *flat, call_jaxpr=closed, fwd=flat_fwd,
                                      bwd=flat_bwd, num_consts=len(consts),
                                      symbolic_zeros=self.symbolic_zeros,
                                      name=fun_name(self.fun))
        return tree_unflatten(out_tree, outs)

    def _flat_rules(self, nd_vals, in_tree, flat, out_tree_box):
        """``fwd`` and ``bwd`` on flat values, checked. ``out_tree_box`` holds the function's
        output tree, or None (when it was not traced): then ``fwd``'s output sets it."""
        fwd, bwd, name = self.fwd, self.bwd, fun_name(self.fun)
        in_avals = [core.get_aval(x) for x in flat]
        symbolic = self.symbolic_zeros

        def flat_fwd(*primals, perturbed=None):
            if symbolic:
                flags = [True] * len(primals) if perturbed is None else perturbed
                primals = [CustomVJPPrimal(p, bool(f)) for p, f in zip(primals, flags)]
            res = fwd(*nd_vals, *tree_unflatten(in_tree, list(primals)))
            if not (isinstance(res, (tuple, list)) and len(res) == 2):
                raise TypeError(f"Custom VJP fwd rule {fun_name(fwd)} for function {name} must "
                                f"return a pair (output, residuals), got {type(res).__name__}")
            out, residuals = res
            out_l, o_tree = tree_flatten(out)
            if out_tree_box[0] is None:
                out_tree_box[0] = o_tree
            elif o_tree != out_tree_box[0]:
                raise TypeError(f"Custom VJP fwd rule {fun_name(fwd)} for function {name} must "
                                f"produce an output with the structure of the function's output"
                                f" {out_tree_box[0]}, got {o_tree}")
            res_l, res_tree = tree_flatten(residuals)
            return out_l, res_l, res_tree

        def flat_bwd(res_tree, res_l, cts):
            cts = [to_user(c, symbolic) for c in cts]
            cts_in = bwd(*nd_vals, tree_unflatten(res_tree, list(res_l)),
                         tree_unflatten(out_tree_box[0], list(cts)))
            n_diff = len(tree_unflatten(in_tree, [None] * in_tree.num_leaves))
            if not isinstance(cts_in, tuple) or len(cts_in) != n_diff:
                got = (f"a tuple of length {len(cts_in)}" if isinstance(cts_in, tuple)
                       else type(cts_in).__name__)
                raise TypeError(f"Custom VJP bwd rule {fun_name(bwd)} for function {name} must "
                                f"produce a tuple of length equal to the number of "
                                f"differentiable primal inputs ({n_diff}), but got {got}.")
            ct_l, ct_tree = _flatten_cts(cts_in, in_tree, bwd, name)
            for c, a in zip(ct_l, in_avals):
                if type(c) is SymbolicZero and c.aval.shape != a.shape:
                    raise ValueError("Custom VJP bwd rule produced a SymbolicZero with a "
                                     "shape/dtype that does not match the corresponding input "
                                     f"tangent shape/dtype: the SymbolicZero had shape/dtype "
                                     f"{c.aval.str_short()} while the corresponding input had "
                                     f"shape/dtype {a.str_short()}. Consider just returning a "
                                     "None here instead of a SymbolicZero object.")
            ct_l = [None if type(c) is SymbolicZero else c for c in ct_l]
            for c, a in zip(ct_l, in_avals):
                if c is not None and core.get_aval(c).shape != a.shape:
                    raise ValueError(f"Custom VJP bwd rule {fun_name(bwd)} for function {name} "
                                     f"produced a cotangent of shape {core.get_aval(c).shape} "
                                     f"for an input of shape {a.shape}")
            return ct_l

        return flat_fwd, flat_bwd

    def _jvp_direct(self, nd_vals, in_tree, pairs):
        primals = [p for p, _ in pairs]
        box = [None]
        flat_fwd, flat_bwd = self._flat_rules(nd_vals, in_tree, primals, box)
        outs, t_outs = _vjp_lin(flat_fwd, flat_bwd, primals, [t for _, t in pairs],
                                fun_name(self.fun), self.symbolic_zeros)
        return outs, t_outs, box[0]


def _flatten_cts(cts_in, in_tree, bwd, name):
    # None in bwd's output means a zero cotangent for that whole argument
    want = tree_unflatten(in_tree, [0] * in_tree.num_leaves)
    flat = []
    for c, w in zip(cts_in, want):
        w_l, w_tree = tree_flatten(w)
        if c is None:
            flat.extend([None] * len(w_l))
            continue
        c_l, c_tree = tree_flatten(c)
        if c_tree != w_tree:
            raise TypeError(f"Custom VJP bwd rule {fun_name(bwd)} for function {name} produced a "
                            f"cotangent of structure {c_tree} for an argument of structure "
                            f"{w_tree}")
        flat.extend(c_l)
    return flat, in_tree


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts, symbolic_zeros,
                         name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        _closure_tangent_error("custom_vjp", name)
    return _vjp_lin(fwd, bwd, primals[num_consts:], tangents[num_consts:], name,
                    symbolic_zeros)


def _vjp_lin(fwd, bwd, primals, tangents, name, symbolic_zeros=False):
    """``fwd`` on the primals, and the tangent outputs as ``custom_lin`` (transposed by bwd)."""
    outs, res_l, res_tree = fwd(*primals, perturbed=[type(t) is not Zero for t in tangents])
    ts = [instantiate(t) for t in tangents]
    out_avals = tuple(tangent_aval(core.get_aval(o)) for o in outs)
    t_outs = custom_lin_p.bind(*res_l, *ts, num_res=len(res_l),
                               bwd=functools.partial(bwd, res_tree), out_avals=out_avals,
                               symbolic_zeros=symbolic_zeros, name=name)
    return outs, t_outs


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, symbolic_zeros, name):
    # zero cotangents reach the bwd rule as Zero: it instantiates them or passes them to the
    # user's rule as SymbolicZero (symbolic_zeros)
    res = args[:num_res]
    cts_in = bwd(res, list(cts))
    lin = args[num_res:]
    out = [None] * num_res
    for c, a in zip(cts_in, lin):
        out.append(None if not is_undefined(a) else (Zero(a.aval) if c is None else c))
    return out


jvp_rules[custom_vjp_call_p] = _custom_vjp_call_jvp
transpose_rules[custom_lin_p] = _custom_lin_transpose
