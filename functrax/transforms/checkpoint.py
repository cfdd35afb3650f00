"""``checkpoint`` (``remat``): recompute intermediates in the backward pass instead of storing.

``checkpoint(f)`` binds ``remat2`` holding ``f``'s jaxpr. Its JVP rule splits the JVP of that
jaxpr into a known part (the primal computation, which also emits the residuals the policy
allows to be saved) and an unknown part (the tangent computation, which recomputes every
non-saved intermediate from the residuals). Under reverse mode only the residuals are stored;
the transpose of the unknown part redoes the recomputation inside the backward pass.
"""
from __future__ import annotations

import functools
import types
from typing import NamedTuple

from functrax import core
from functrax import primitives as P
from functrax.core import ClosedJaxpr
from functrax.primitives.calls import remat_p
from functrax.primitives.names import name_p
from functrax.transforms.ad import jvp_jaxpr
from functrax.transforms.call_util import eval_closed, trace_subjaxpr
from functrax.transforms.jvp import Zero, instantiate, jvp_rules
from functrax.transforms.partial_eval import PartialEvalTrace, partial_eval_jaxpr
from functrax.transforms.transpose import backward_pass, is_undefined, transpose_rules
from functrax.tree_util import tree_unflatten


class RecomputeType:
    """The type of :data:`Recompute`."""

    def __repr__(self):
        return "Recompute"


class SaveableType:
    """The type of :data:`Saveable`."""

    def __repr__(self):
        return "Saveable"


#: a policy's answer: recompute this value in the backward pass (as ``False``)
Recompute = RecomputeType()
#: a policy's answer: save this value for the backward pass (as ``True``)
Saveable = SaveableType()


class Offloadable(NamedTuple):
    """A policy's answer: save this value in memory space ``dst`` (moved from ``src``).

    functrax runs on one host memory: an offloadable value is simply saved (as
    :data:`Saveable`); ``src``/``dst`` (e.g. ``"device"``/``"pinned_host"``) are kept for
    JAX compatibility only.
    """
    src: str
    dst: str


def _is_dot(prim):
    return prim is P.dot_general_p


def _no_batch_dims(params) -> bool:
    (_, _), (lhs_b, rhs_b) = params["dimension_numbers"]
    return not lhs_b and not rhs_b


def everything_saveable(*_, **__) -> bool:
    """The default strategy, as if ``checkpoint`` were not used at all."""
    return True


def nothing_saveable(*_, **__) -> bool:
    """Rematerialize everything (the policy of ``checkpoint`` without one)."""
    return False


def dots_saveable(prim, *_, **__) -> bool:
    """Save the results of matrix multiplications and convolutions."""
    return prim is P.dot_general_p or prim is P.conv_general_dilated_p


def dots_with_no_batch_dims_saveable(prim, *_, **params) -> bool:
    """Save the results of matrix multiplications without batch dimensions (a useful
    heuristic for transformers)."""
    return _is_dot(prim) and _no_batch_dims(params)


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
    """As ``dots_with_no_batch_dims_saveable``, but offloaded to ``offload_dst`` (saved:
    functrax has one host memory)."""
    def policy(prim, *_, **params):
        if _is_dot(prim) and _no_batch_dims(params):
            return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute
    return policy


def _named(prim, params):
    return params["name"] if prim is name_p else None


def save_anything_except_these_names(*names_not_to_save):
    """Save any values (named or not) except the named ones among the names given."""
    names = frozenset(names_not_to_save)

    def policy(prim, *_, **params):
        if prim is name_p:
            return params["name"] not in names
        return True
    return policy


def save_any_names_but_these(*names_not_to_save):
    """Save only named values, excluding the names given."""
    names = frozenset(names_not_to_save)

    def policy(prim, *_, **params):
        return prim is name_p and params["name"] not in names
    return policy


def save_only_these_names(*names_which_can_be_saved):
    """Save only named values, and only among the names given."""
    names = frozenset(names_which_can_be_saved)

    def policy(prim, *_, **params):
        return prim is name_p and params["name"] in names
    return policy


def save_from_both_policies(policy_1, policy_2):
    """Save what either policy saves (both must answer booleans).

    Raises:
      ValueError: (from the policy) when a policy answers something else than a bool.
    """
    def policy(prim, *args, **params):
        out1 = policy_1(prim, *args, **params)
        out2 = policy_2(prim, *args, **params)
        if not (isinstance(out1, bool) and isinstance(out2, bool)):
            raise ValueError("The return value of the policies should be a boolean. Got: "
                             f"{out1} and {out2}. Please write a custom policy function "
                             "directly, rather than using this helper function.")
        return out1 or out2
    return policy


def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                       names_which_can_be_offloaded, offload_src, offload_dst):
    """Save the values named in ``names_which_can_be_saved``, offload those named in
    ``names_which_can_be_offloaded`` (saved too: one host memory), recompute the rest.

    Raises:
      ValueError: when the two name sets intersect.
    """
    saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
    both = saved & offloaded
    if both:
        raise ValueError("The names should be exclusive and should not intersect in "
                         "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
                         f"names_which_can_be_saved={saved}, names_which_can_be_offloaded="
                         f"{offloaded} and the intersection={both}")

    def policy(prim, *_, **params):
        name = _named(prim, params)
        if name in saved:
            return Saveable
        if name in offloaded:
            return Offloadable(src=offload_src, dst=offload_dst)
        return Recompute
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
)
checkpoint_policies.__doc__ = ("Which intermediates the forward pass of a ``checkpoint`` "
                               "function may save: ``policy(prim, *avals, **params)`` returns "
                               "a bool, :data:`Saveable`, :data:`Recompute` or an "
                               ":class:`Offloadable`.")


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """Make ``fun`` recompute its intermediates during differentiation instead of storing them.

    Args:
      fun: the function.
      prevent_cse: kept for JAX compatibility (recomputation is always kept apart).
      policy: ``checkpoint_policies.*`` or ``fn(prim, *avals, **params) -> bool`` saying which
        intermediates may be saved; None saves nothing but the inputs.
      static_argnums: arguments that are Python values, not traced.

    >>> import functrax, functrax.numpy as fnp
    >>> functrax.grad(functrax.checkpoint(lambda x: fnp.sin(fnp.sin(x))))(1.0)
    Array(0.3600153, dtype=float32, weak_type=True)
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def fun_remat(*args, **kwargs):
        st = {i % len(args): args[i] for i in static}
        dyn = tuple(a for i, a in enumerate(args) if i not in st)

        def f(*d):
            it = iter(d)
            return fun(*[st[i] if i in st else next(it) for i in range(len(args))], **kwargs)
        closed, consts, flat, _, out_tree = trace_subjaxpr(f, dyn)
        outs = remat_p.bind(*consts, *flat, jaxpr=closed, prevent_cse=prevent_cse,
                            differentiated=False, policy=policy)
        return tree_unflatten(out_tree, outs)

    return fun_remat


remat = checkpoint


def _decision(answer) -> bool:
    """A policy's answer as "save it": bools, Saveable and Offloadable (saved: one host
    memory) or Recompute."""
    if isinstance(answer, bool):
        return answer
    if answer is Saveable or isinstance(answer, Offloadable):
        return True
    if answer is Recompute:
        return False
    raise TypeError(f"checkpoint policy returned {answer!r}: expected a bool, "
                    "checkpoint_policies' Saveable / Recompute or an Offloadable")


def _saveable(policy):
    if policy is None:
        return lambda eqn: False
    return lambda eqn: _decision(policy(eqn.primitive, *[v.aval for v in eqn.invars],
                                        **eqn.params))


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    nonzero = [type(t) is not Zero for t in tangents]
    jvp_closed = jvp_jaxpr(jaxpr, nonzero)
    n_out = len(jaxpr.out_avals)
    n_nz = sum(nonzero)
    j = jvp_closed.jaxpr
    if j.constvars:  # constants staged during tracing become known inputs
        j = core.Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns)
    consts = list(jvp_closed.consts)
    in_unknowns = [False] * (len(consts) + len(primals)) + [True] * n_nz
    jk, ju, out_unk, num_res = partial_eval_jaxpr(j, in_unknowns, _saveable(policy))
    params = dict(prevent_cse=prevent_cse, differentiated=True, policy=policy)
    known = remat_p.bind(*consts, *primals, jaxpr=ClosedJaxpr(jk, []), **params)
    n_known = len(known) - num_res
    k_outs, res = known[:n_known], known[n_known:]
    nz_t = [t for t in tangents if type(t) is not Zero]
    u_outs = remat_p.bind(*res, *nz_t, jaxpr=ClosedJaxpr(ju, []), **params) if any(
        out_unk) else []
    k_it, u_it = iter(k_outs), iter(u_outs)
    outs = [next(u_it) if u else next(k_it) for u in out_unk]
    return outs[:n_out], outs[n_out:]


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
    lin_avals = [a.aval for a in args if is_undefined(a)]
    known = [a for a in args if not is_undefined(a)]
    cts = [instantiate(c) for c in cts]

    def bwd(*known_and_cts):
        kn, cs = known_and_cts[:len(known)], known_and_cts[len(known):]
        pe = PartialEvalTrace(core.current_trace())
        try:
            lin_in = [pe.new_arg(a) for a in lin_avals]
            it_k, it_l = iter(kn), iter(lin_in)
            full = [next(it_l) if is_undefined(a) else next(it_k) for a in args]
            with core.set_current_trace(pe):
                outs = eval_closed(jaxpr, *full)
            lin = pe.to_jaxpr(outs)
        finally:
            pe.invalidate()
        return [instantiate(c) for c in backward_pass(lin.jaxpr, lin.consts, list(cs))]

    closed, consts, flat, _, out_tree = trace_subjaxpr(bwd, (*known, *cts))
    outs = iter(remat_p.bind(*consts, *flat, jaxpr=closed, prevent_cse=prevent_cse,
                             differentiated=True, policy=policy))
    return [next(outs) if is_undefined(a) else None for a in args]


def _name_jvp(primals, tangents, *, name):
    # the primal is named (policies see it); its tangent is not
    (x,), (t,) = primals, tangents
    return name_p.bind(x, name=name), t


jvp_rules[remat_p] = _remat_jvp
jvp_rules[name_p] = _name_jvp
transpose_rules[remat_p] = _remat_transpose
