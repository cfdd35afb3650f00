"""The jaxpr IR and its printer.

A ``Jaxpr`` is a typed, first-order program ``{ lambda constvars ; invars . let eqns in
outvars }`` of ``JaxprEqn`` s over ``Var`` s and ``Literal`` s; a ``ClosedJaxpr`` carries
the values of its constvars. ``eval_jaxpr`` interprets one by binding each equation on the
current trace.

Printing follows JAX's text format: names are given in order of appearance (a, b, ..., z,
ba, bb, ...), sub-jaxprs continue the naming of their parent, outputs that nothing uses
print as ``_``, literals print as the Python scalar of their value with their type
(``2.0:f32[]``, ``-0.9999999403953552:f32[]``), params are sorted and broken onto lines when
they do not fit, and sub-jaxprs used twice or of more than 10 equations print once, first
(``let _uniform = { lambda ... } in``), named after the call that holds them. Per-primitive
printing lives in the ``pp_param_rules`` table.

Effects: an equation may have side effects (a debug print, an IO callback): ``effect_rules``
(primitive -> ``fn(params) -> frozenset`` of :class:`Effect`) says which; an equation holding
sub-jaxprs (jit, scan, cond, ...) has theirs too. ``eqn.effects`` / ``jaxpr.effects`` read
them; the passes never drop, merge, fold or duplicate an effectful equation, and the
executors keep the ordered ones in program order.
"""
from __future__ import annotations

import weakref

import numpy as np

from functrax import pretty_printer as pp
from functrax.core.avals import ShapedArray

# --- the IR ---


class Var:
    """A variable of a jaxpr; named only when printed."""

    __slots__ = ("aval", "__weakref__")

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Var(id={id(self):x}):{self.aval.str_short()}"


class Literal:
    """A scalar constant inlined in an equation (printed ``2.0:f32[]``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"{literal_str(self.val, self.aval)}:{self.aval.str_short()}"


def literal_str(val, aval) -> str:
    """A literal's value as JAX prints it: a weakly typed one as the Python scalar it was
    written as (``0.1``: the shortest text of its value), a strongly typed one as the Python
    scalar of its value (``-0.9999999403953552`` for float32's ``nextafter(-1, 0)``)."""
    if aval.weak_type or type(val) in (bool, int, float, complex):
        return str(val)
    try:
        return str(np.asarray(val, dtype=aval.dtype).item())
    except (TypeError, ValueError):  # a value numpy cannot hold in that dtype (keys, ...)
        return str(val)


class JaxprEqn:
    __slots__ = ("invars", "outvars", "primitive", "params")

    def __init__(self, invars, outvars, primitive, params):
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.primitive = primitive
        self.params = dict(params)

    def replace(self, **kw) -> JaxprEqn:
        d = dict(invars=self.invars, outvars=self.outvars, primitive=self.primitive,
                 params=self.params)
        d.update(kw)
        return JaxprEqn(**d)

    @property
    def effects(self) -> frozenset:
        """The side effects of this equation (its sub-jaxprs' included)."""
        return eqn_effects(self)

    def __repr__(self):
        return pp_eqn_str(self)


class Jaxpr:
    """A typed, first-order program: ``{ lambda constvars ; invars . let eqns in outvars }``."""

    __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info", "__weakref__")

    def __init__(self, constvars, invars, outvars, eqns, debug_info=None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.debug_info = debug_info

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])
    effects = property(lambda self: jaxpr_effects(self))

    def pretty_print(self, width: int = 80, **options) -> str:
        """The program as JAX prints it. JAX's printing options (``name_stack``,
        ``source_info``, ``print_shapes``, ...) are accepted; none changes the text."""
        return pp_jaxpr_str(self, width)

    def __str__(self):
        return self.pretty_print()

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars.

    >>> import functrax, functrax.numpy as fnp
    >>> print(functrax.make_jaxpr(fnp.sin)(1.0))
    { lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
    """

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts):
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    effects = property(lambda self: jaxpr_effects(self.jaxpr))
    literals = property(lambda self: [v for e in self.jaxpr.eqns for v in e.invars
                                      if isinstance(v, Literal)])

    def pretty_print(self, width: int = 80, **options) -> str:
        return self.jaxpr.pretty_print(width, **options)

    def __str__(self):
        return self.jaxpr.pretty_print()

    __repr__ = __str__


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
    """Evaluate ``jaxpr`` by binding each equation on the current trace.

    Under no transformation this runs eagerly; under a transformation it re-traces.
    """
    env = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: the jaxpr takes {len(jaxpr.invars)} arguments, "
                        f"got {len(args)}")
    for v, x in zip(jaxpr.invars, args):
        env[v] = x
    for eqn in jaxpr.eqns:
        invals = [v.val if type(v) is Literal else env[v] for v in eqn.invars]
        out = eqn.primitive.bind(*invals, **eqn.params)
        if eqn.primitive.multiple_results:
            for v, o in zip(eqn.outvars, out):
                env[v] = o
        else:
            env[eqn.outvars[0]] = out
    return [v.val if type(v) is Literal else env[v] for v in jaxpr.outvars]


def jaxpr_as_fun(closed: ClosedJaxpr):
    """A Python function that evaluates ``closed`` on its arguments."""
    return lambda *args: eval_jaxpr(closed.jaxpr, closed.consts, *args)


def map_sub_jaxprs(params: dict, on_closed, on_open) -> dict:
    """``params`` with each sub-jaxpr replaced: ``on_closed(ClosedJaxpr)``, ``on_open(Jaxpr)``
    (also inside tuples, as ``cond``'s branches); ``params`` itself when every replacement is
    its argument (a pass that changes nothing keeps its input)."""
    def one(v):
        if isinstance(v, ClosedJaxpr):
            return on_closed(v)
        if isinstance(v, Jaxpr):
            return on_open(v)
        if type(v) is tuple and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in v):
            new = tuple(one(x) for x in v)
            return v if all(a is b for a, b in zip(new, v)) else new
        return v
    new = {k: one(v) for k, v in params.items()}
    return params if all(new[k] is params[k] for k in params) else new


def sub_jaxprs(params):
    for v in params.values():
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            yield v.jaxpr if isinstance(v, ClosedJaxpr) else v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, (Jaxpr, ClosedJaxpr)):
                    yield x.jaxpr if isinstance(x, ClosedJaxpr) else x


# --- effects ---


class Effect:
    """A side effect of an equation. Subclasses set ``name`` (how JAX prints it, e.g.
    ``Debug``) and ``ordered`` (ordered effects run in program order among themselves);
    every instance of one subclass is the same effect.

    >>> class Demo(Effect):
    ...     name = "Demo"
    >>> str(Demo()), Demo() == Demo()
    ('Demo', True)
    """

    __slots__ = ()
    name = "Effect"
    ordered = False

    def __str__(self):
        return self.name

    __repr__ = __str__

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self))


no_effects: frozenset = frozenset()

# primitive -> fn(params) -> frozenset of Effects of one of its equations (filled where the
# effectful primitives are defined; a sub-jaxpr's effects are added by eqn_effects)
effect_rules: dict = {}

_JAXPR_EFFECTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def eqn_effects(eqn) -> frozenset:
    """The effects of ``eqn``: its primitive's (``effect_rules``) and its sub-jaxprs'."""
    rule = effect_rules.get(eqn.primitive)
    effects = rule(eqn.params) if rule is not None else no_effects
    for sub in sub_jaxprs(eqn.params):
        inner = jaxpr_effects(sub)
        if inner:
            effects = effects | inner
    return effects


def jaxpr_effects(jaxpr: Jaxpr) -> frozenset:
    """The union of the effects of ``jaxpr``'s equations (memoized per jaxpr object)."""
    hit = _JAXPR_EFFECTS.get(jaxpr)
    if hit is not None and hit[0] == len(jaxpr.eqns):
        return hit[1]
    effects = no_effects
    for e in jaxpr.eqns:
        effects = effects | eqn_effects(e)
    _JAXPR_EFFECTS[jaxpr] = (len(jaxpr.eqns), effects)
    return effects


def has_effects(eqn) -> bool:
    """Whether ``eqn`` has a side effect (never dropped, merged, folded or duplicated)."""
    return bool(eqn_effects(eqn))


def has_ordered_effects(eqn) -> bool:
    """Whether ``eqn`` has an ordered effect (kept in program order with the others)."""
    return any(e.ordered for e in eqn_effects(eqn))


# --- printing ---

# primitive -> fn(eqn, context) -> Doc for the right-hand side's params part
pp_param_rules: dict = {}


def _encode(n: int) -> str:
    s = ""
    while not s or n:
        n, i = divmod(n, 26)
        s = chr(97 + i) + s
    return s


class PPContext:
    """Names of the variables (and shared sub-jaxprs) of one printed program.

    Fresh names are given in order of appearance (a, b, ..., z, ba, ...), skipping the names
    of shared jaxprs; ``suggest_same_names`` lets a call's inner variables print with the
    names of the outer values they are bound to (JAX's ``suggest_same_var_names``);
    ``unused`` holds the binders that nothing reads (printed ``_``).
    """

    def __init__(self):
        self.names = {}
        self.fresh = 0
        self.shared = {}           # sub-jaxpr printed once at the top -> its name
        self.shared_names = set()
        self.unused = set()

    def name(self, v) -> str:
        n = self.names.get(v)
        if n is None:
            n = _encode(self.fresh)
            self.fresh += 1
            while n in self.shared_names:
                n = _encode(self.fresh)
                self.fresh += 1
            self.names[v] = n
        return n

    def suggest_same_names(self, for_vars, like_vars) -> None:
        """Name each of ``for_vars`` (not named yet) as the corresponding ``like_vars``."""
        if len(for_vars) != len(like_vars):
            return
        used = set()
        for f, like in zip(for_vars, like_vars):
            if (type(like) is not Literal and like not in used and type(f) is not Literal
                    and f not in self.names):
                used.add(like)
                self.names[f] = pp_var(like, self)


def pp_var(v, ctx: PPContext, unused=frozenset()) -> str:
    if type(v) is Literal:
        return repr(v)
    if v in unused or v in ctx.unused:
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
    if not eqn.outvars:  # an equation run for its effect only: JAX prints no "="
        return pp.concat(rhs)
    return pp.concat([lhs, pp.text(" = "), *rhs])


def _unused_vars(jaxpr: Jaxpr) -> frozenset:
    used = {v for e in jaxpr.eqns for v in e.invars if type(v) is not Literal}
    used.update(v for v in jaxpr.outvars if type(v) is not Literal)
    return frozenset(v for e in jaxpr.eqns for v in e.outvars if v not in used)


def pp_jaxpr_doc(jaxpr: Jaxpr, ctx: PPContext) -> pp.Doc:
    """``jaxpr``'s document (its name when it is printed once at the top, as shared)."""
    name = ctx.shared.get(jaxpr)
    if name is not None:
        return pp.text(name)
    return _pp_skeleton(jaxpr, ctx)


def _pp_skeleton(jaxpr: Jaxpr, ctx: PPContext) -> pp.Doc:
    unused = _unused_vars(jaxpr)
    ctx.unused |= unused
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


# a sub-jaxpr of more equations than this is printed once, at the top (as JAX 0.10 does)
SHARED_JAXPR_MIN_EQNS = 11


def _shared_jaxprs(top: Jaxpr) -> list:
    """``[(name, jaxpr)]``: the sub-jaxprs printed once at the top as ``let name = ... in``:
    those used more than once, and those of more than 10 equations; named after the ``name``
    param of the first equation holding them (``jaxpr`` otherwise), numbered when repeated."""
    names, counts, queue = {}, {}, [top]
    i = 0
    while i < len(queue):
        jaxpr = queue[i]
        i += 1
        counts[jaxpr] = counts.get(jaxpr, 0) + 1
        if jaxpr is not top and len(jaxpr.eqns) >= SHARED_JAXPR_MIN_EQNS:
            counts[jaxpr] += 1
        for eqn in jaxpr.eqns:
            name = eqn.params.get("name")
            for sub in sub_jaxprs(eqn.params):
                queue.append(sub)
                if isinstance(name, str):
                    names.setdefault(sub, name.strip("<>"))
    shared, used = [], {}
    for jaxpr, c in counts.items():
        if c == 1:
            continue
        name = names.get(jaxpr, "jaxpr")
        n = used.get(name, 0)
        used[name] = n + 1
        if n:
            name += str(n)
            used[name] = used.get(name, 0) + 1
        shared.append((name, jaxpr))
    return shared


def pp_toplevel_doc(jaxpr: Jaxpr, ctx: PPContext) -> pp.Doc:
    """``jaxpr`` with its shared sub-jaxprs first (``let _uniform = { ... } in``)."""
    shared = _shared_jaxprs(jaxpr)
    for name, sub in shared:
        ctx.shared_names.add(name)
        ctx.shared[sub] = name
    docs = [pp.concat([pp.text(f"let {name} = "), _pp_skeleton(sub, ctx), pp.text(" in"),
                       pp.brk()]) for name, sub in shared]
    return pp.concat(docs + [pp_jaxpr_doc(jaxpr, ctx)])


def pp_jaxpr_str(jaxpr: Jaxpr, width: int = 80) -> str:
    return pp_toplevel_doc(jaxpr, PPContext()).format(width)


def pp_eqn_str(eqn, width: int = 80) -> str:
    return pp_eqn(eqn, PPContext()).format(width)
