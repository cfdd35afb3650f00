"""Print jaxprs in JAX's text format.

Names are given in order of appearance (a, b, ..., z, ba, bb, ...), sub-jaxprs continue the
naming of their parent, outputs that nothing uses print as ``_``, literals print with their
type (``2.0:f32[]``), params are sorted and broken onto lines when they do not fit.
Per-primitive printing lives in the ``pp_rules`` table.
"""
from __future__ import annotations

from functrax import pretty_printer as pp
from functrax.core import ClosedJaxpr, Jaxpr, Literal

# primitive -> fn(eqn, context) -> Doc for the right-hand side's params part
pp_param_rules: dict = {}


def _encode(n: int) -> str:
    s = ""
    while not s or n:
        n, i = divmod(n, 26)
        s = chr(97 + i) + s
    return s


class PPContext:
    def __init__(self):
        self.names = {}

    def name(self, v) -> str:
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = _encode(len(self.names))
        return n


def pp_var(v, ctx: PPContext, unused=frozenset()) -> str:
    if type(v) is Literal:
        return repr(v)
    if v in unused:
        return "_"
    return ctx.name(v)


def pp_vars(vs, ctx, *, separator="", print_shapes=False, unused=frozenset()) -> pp.Doc:
    if print_shapes:
        items = [pp.text(pp_var(v, ctx, unused) + ":" + v.aval.str_short()) for v in vs]
    else:
        items = [pp.text(pp_var(v, ctx, unused)) for v in vs]
    return pp.nest(2, pp.group(pp.join(pp.text(separator) + pp.group(pp.brk()), items)))


def pp_kv_pair(k, v, ctx) -> pp.Doc:
    if type(v) is tuple and v and all(isinstance(j, (Jaxpr, ClosedJaxpr)) for j in v):
        doc = pp.group(pp.nest(2, pp.concat([
            pp.text("("), pp.brk(""),
            pp.join(pp.brk(), [pp_jaxpr_doc(_unclose(j), ctx) for j in v])])) + pp.brk("")
            + pp.text(")"))
    elif isinstance(v, (Jaxpr, ClosedJaxpr)):
        doc = pp_jaxpr_doc(_unclose(v), ctx)
    else:
        doc = pp.text(_param_str(v))
    return pp.text(f"{k}=") + doc


def _param_str(v) -> str:
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return str(v)


def _unclose(j):
    return j.jaxpr if isinstance(j, ClosedJaxpr) else j


def pp_kv_pairs(items, ctx) -> pp.Doc:
    if not items:
        return pp.nil()
    return pp.group(pp.nest(2, pp.concat([
        pp.text("["), pp.brk(""),
        pp.join(pp.brk(), [pp_kv_pair(k, v, ctx) for k, v in items])])) + pp.brk("")
        + pp.text("]"))


def sorted_params(params) -> list:
    """Params sorted by name, with ``name`` first (as JAX prints them)."""
    items = sorted(params.items())
    return sorted(items, key=lambda kv: kv[0] != "name")


def pp_eqn(eqn, ctx, unused=frozenset()) -> pp.Doc:
    # outputs are named before the vars of sub-jaxprs in params (JAX's naming order)
    lhs = pp_vars(eqn.outvars, ctx, print_shapes=True, unused=unused)
    rule = pp_param_rules.get(eqn.primitive)
    params = rule(eqn, ctx) if rule else pp_kv_pairs(sorted_params(eqn.params), ctx)
    rhs = [pp.text(eqn.primitive.name), params, pp.text(" ") + pp_vars(eqn.invars, ctx)]
    return pp.concat([lhs, pp.text(" = "), *rhs])


def _unused_vars(jaxpr: Jaxpr) -> frozenset:
    used = {v for e in jaxpr.eqns for v in e.invars if type(v) is not Literal}
    used.update(v for v in jaxpr.outvars if type(v) is not Literal)
    return frozenset(v for e in jaxpr.eqns for v in e.outvars if v not in used)


def pp_jaxpr_doc(jaxpr: Jaxpr, ctx: PPContext) -> pp.Doc:
    unused = _unused_vars(jaxpr)
    constvars = pp_vars(jaxpr.constvars, ctx, print_shapes=True)
    invars = pp_vars(jaxpr.invars, ctx, print_shapes=True)
    eqns = pp.join(pp.brk("; "), [pp_eqn(e, ctx, unused) for e in jaxpr.eqns])
    close = ")" if len(jaxpr.outvars) != 1 else ",)"
    outvars = pp.concat([pp.text("("), pp_vars(jaxpr.outvars, ctx, separator=","),
                         pp.text(close)])
    return pp.group(pp.nest(2, pp.concat([
        pp.text("{ "), pp.text("lambda "), constvars, pp.text("; "), invars,
        pp.text(". "), pp.text("let"), pp.nest(2, pp.brk() + eqns), pp.brk(),
        pp.text("in "), outvars])) + pp.text(" }"))


def pp_jaxpr_str(jaxpr: Jaxpr, width: int = 80) -> str:
    return pp_jaxpr_doc(jaxpr, PPContext()).format(width)


def pp_eqn_str(eqn, width: int = 80) -> str:
    return pp_eqn(eqn, PPContext()).format(width)
