"""Fusion groups that run a hand-written kernel of ``kernels/``: a table of pattern -> kernel.

:func:`build_pattern` looks a group up in :data:`PATTERNS` (the rows named by
``KernelConfig.hand_written``: ``("dense",)`` by default, all three in ``codegen.GPU_CONFIG``)
before the code generator sees it:

============  ===========  ====================================================================
pattern       group kind   kernel
============  ===========  ====================================================================
dense         MATMUL       ``kernels/matmul.py``: ``relu?(x @ w + b?)``, 2-D row-major operands
softmax       REDUCTION    ``kernels/softmax.py``: softmax of ``x`` over its last axis
layernorm     REDUCTION    ``kernels/layernorm.py``: ``(x - mean) / sqrt(var + eps)`` over the
                           last axis (two-pass variance), optionally ``* w + b``
============  ===========  ====================================================================

A REDUCTION pattern is a reference function (:data:`TEMPLATES`) traced at the group's shape
and dtype (and optimized as ``jit`` optimizes). Both it and the group become *canonical
terms*: expression trees over their inputs in which the spellings that do not change values
disappear (``expand_dims``/``squeeze``/``reshape`` that only add or drop size-1 dims,
broadcasts of a row result back along the row, ``stop_gradient``, ``max(-inf, r)``), and
commutative operations match in either order. The group matches when it has one output and
its term equals the template's up to a one-to-one mapping of inputs (the template's ``eps``
matches any float literal). Anything else, or rows too long for the kernel, falls through to
the code generator.

>>> from functrax.lowering.triton.codegen import GPU_CONFIG   # doctest: +SKIP
>>> build_pattern(group, GPU_CONFIG)                           # doctest: +SKIP
('softmax', TritonKernel(softmax_kernel, grid=(1,)), <function ...>)
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from functrax.core import Literal
from functrax.lowering.fusion_types import FusionGroup, GroupKind
from functrax.lowering.triton.codegen import INTERPRETER_CONFIG, KernelConfig

__all__ = ["Pattern", "PATTERNS", "TEMPLATES", "build_pattern", "match_template",
           "canonical_term"]

EPS_SENTINEL = 1.2345678e-05  # the template's eps: matches any float literal


# --- reference functions (traced at the group's avals) ---


def _softmax(x):
    import functrax.numpy as fnp
    from functrax import lax
    m = fnp.max(x, axis=-1, keepdims=True)
    e = fnp.exp(x - lax.stop_gradient(m))
    return e / fnp.sum(e, axis=-1, keepdims=True)


def _normalized(x, rsqrt):
    import functrax.numpy as fnp
    from functrax import lax
    mu = fnp.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = fnp.mean(xc * xc, axis=-1, keepdims=True)
    if rsqrt:
        return xc * lax.rsqrt(var + EPS_SENTINEL)
    return xc / fnp.sqrt(var + EPS_SENTINEL)


def _normalized_pow(x, rsqrt):
    import functrax.numpy as fnp
    from functrax import lax
    mu = fnp.mean(x, axis=-1, keepdims=True)
    var = fnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    if rsqrt:
        return (x - mu) * lax.rsqrt(var + EPS_SENTINEL)
    return (x - mu) / fnp.sqrt(var + EPS_SENTINEL)


def _layernorm_variants():
    out = []
    for norm in (_normalized, _normalized_pow):
        for rsqrt in (False, True):
            out.append((f"{norm.__name__}{'_rsqrt' if rsqrt else ''}",
                        lambda x, n=norm, r=rsqrt: n(x, r), False))
            out.append((f"{norm.__name__}{'_rsqrt' if rsqrt else ''}_affine",
                        lambda x, w, b, n=norm, r=rsqrt: n(x, r) * w + b, True))
    return out


# name -> [(variant, fn, affine)]: fn(x[, w, b]) with x (..., N), w and b (N,)
TEMPLATES = {
    "softmax": [("softmax", _softmax, False)],
    "layernorm": _layernorm_variants(),
}


# --- canonical terms ---

_TRANSPARENT = {"stop_gradient", "copy", "expand_dims", "squeeze", "reshape"}
_COMMUTATIVE = {"add", "mul", "max", "min", "and", "or", "eq", "ne"}


def _nontrivial(shape):
    return tuple(n for n in shape if n != 1)


def _params_key(eqn):
    p = dict(eqn.params)
    if "axes" in p:
        nd = max(eqn.invars[0].aval.ndim, 1)
        p["axes"] = tuple(sorted(a % nd for a in p["axes"]))
    items = []
    for k in sorted(p):
        v = p[k]
        try:
            hash(v)
        except TypeError:
            v = repr(v)
        items.append((k, v))
    return tuple(items)


def canonical_term(group_or_eqns, outvar, inputs):
    """The canonical term of ``outvar`` computed by ``eqns`` from ``inputs`` (see the module
    docstring): nested tuples ``(primitive, params, *operands)``, ``("in", position)`` and
    ``("lit", value, dtype)``. None when a value has no producer."""
    eqns = group_or_eqns.eqns if isinstance(group_or_eqns, FusionGroup) else group_or_eqns
    producer = {v: e for e in eqns for v in e.outvars}
    pos = {v: i for i, v in enumerate(inputs)}
    memo = {}

    def term(v):
        if type(v) is Literal:
            return ("lit", float(np.asarray(v.val)), str(v.aval.dtype))
        if v in pos:
            return ("in", pos[v])
        if v in memo:
            return memo[v]
        e = producer.get(v)
        if e is None:
            raise KeyError(v)
        name, x = e.primitive.name, e.invars[0] if e.invars else None
        out_shape = e.outvars[0].aval.shape
        if name in _TRANSPARENT and _nontrivial(x.aval.shape) == _nontrivial(out_shape) and (
                name != "reshape" or e.params.get("dimensions") is None):
            t = term(x)
        elif name == "broadcast_in_dim" and _row_broadcast(e):
            t = term(x)
        elif name == "max" and any(type(u) is Literal and np.isneginf(u.val) for u in e.invars):
            t = term(next(u for u in e.invars if type(u) is not Literal))
        else:
            args = [term(u) for u in e.invars]
            if name in _COMMUTATIVE:
                args = sorted(args, key=repr)
            t = (name, _params_key(e), *args)
        memo[v] = t
        return t

    try:
        return term(outvar)
    except KeyError:
        return None


def _row_broadcast(eqn) -> bool:
    """A broadcast of a row result (trailing size-1 dim) back along the last axis."""
    x, out = eqn.invars[0].aval.shape, eqn.outvars[0].aval.shape
    dims = eqn.params["broadcast_dimensions"]
    if not out or len(x) != len(out) or tuple(dims) != tuple(range(len(out))):
        return False
    return x[:-1] == out[:-1] and x[-1] == 1


def _unify(t, g, binding) -> bool:
    """``t`` (template term) equals ``g`` (group term) under ``binding`` (template input ->
    group input), extended in place."""
    if t[0] == "in":
        if g[0] != "in":
            return False
        prev = binding.get(t[1])
        if prev is None:
            if g[1] in binding.values():
                return False
            binding[t[1]] = g[1]
            return True
        return prev == g[1]
    if t[0] == "lit":
        if g[0] != "lit" or g[2] != t[2]:
            return False
        if np.asarray(t[1]).astype(t[2]) == np.asarray(EPS_SENTINEL).astype(t[2]):
            binding.setdefault("eps", g[1])
            return binding["eps"] == g[1]
        return t[1] == g[1]
    if g[0] != t[0] or g[1] != t[1] or len(g) != len(t):
        return False
    orders = [t[2:]]
    if t[0] in _COMMUTATIVE and len(t) == 4:
        orders.append((t[3], t[2]))
    for order in orders:
        trial = dict(binding)
        if all(_unify(a, b, trial) for a, b in zip(order, g[2:])):
            binding.clear()
            binding.update(trial)
            return True
    return False


_TEMPLATE_TERMS: dict = {}


def _template_term(fn, avals):
    key = (fn, tuple((a.shape, str(a.dtype)) for a in avals))
    if key not in _TEMPLATE_TERMS:
        from functrax.passes.pipeline import optimize
        from functrax.tracing import make_jaxpr
        args = [np.zeros(a.shape, a.dtype) for a in avals]
        closed = optimize(make_jaxpr(fn)(*args))
        j = closed.jaxpr
        term = None
        if len(j.outvars) == 1 and not j.constvars:
            term = canonical_term(j.eqns, j.outvars[0], j.invars)
        _TEMPLATE_TERMS[key] = term
    return _TEMPLATE_TERMS[key]


def match_template(group: FusionGroup, name: str):
    """``(variant, {template input: group input position, "eps": value})`` when the
    REDUCTION ``group`` computes the template ``name`` of :data:`TEMPLATES`, else None."""
    if group.kind is not GroupKind.REDUCTION or len(group.outputs) != 1:
        return None
    xs = [v for v in group.inputs if v.aval.shape == tuple(group.shape)]
    if len(xs) != 1 or not group.shape or group.reduce_axes != (len(group.shape) - 1,):
        return None
    x = xs[0]
    if str(x.aval.dtype) not in ("float16", "float32") or group.outputs[0].aval != x.aval:
        return None
    gterm = canonical_term(group, group.outputs[0], group.inputs)
    if gterm is None:
        return None
    n = group.shape[-1]
    vec = type(x.aval)((n,), x.aval.dtype)
    for variant, fn, affine in TEMPLATES[name]:
        if len(group.inputs) != (3 if affine else 1):
            continue
        tterm = _template_term(fn, [x.aval, vec, vec] if affine else [x.aval])
        binding = {}
        if tterm is not None and _unify(tterm, gterm, binding):
            if affine and any(group.inputs[binding[i]].aval != vec for i in (1, 2)):
                continue
            return variant, binding
    return None


# --- the table ---


@dataclasses.dataclass(frozen=True)
class Pattern:
    """One row of :data:`PATTERNS`.

    Attributes:
      name: the pattern (``as_text`` shows the kernel's name).
      kind: the group kind it applies to.
      match: ``match(group) -> match object or None``.
      build: ``build(group, match, config) -> (runtime.TritonKernel, step fn)``; the step
        function takes the group's inputs in order.
    """

    name: str
    kind: GroupKind
    match: object
    build: object


def _rows(x_aval):
    return math.prod(x_aval.shape[:-1]), x_aval.shape[-1]


def _match_softmax(group):
    got = match_template(group, "softmax")
    if got is None:
        return None
    from kernels import softmax as ksoftmax
    try:
        ksoftmax.pick_config(group.shape[-1])
    except ValueError:
        return None  # rows too long for the kernel's registers: the generated loop
    return got


def _build_softmax(group, match, config):
    from kernels import softmax as ksoftmax
    _, binding = match
    i = binding[0]
    aval = group.inputs[i].aval
    shape2 = _rows(aval)
    kernel = ksoftmax.build(np.empty(shape2, aval.dtype))

    def fn(*vals):
        (y,) = kernel(np.asarray(vals[i]).reshape(shape2))
        return [y.reshape(aval.shape)]

    return kernel, fn


def _match_layernorm(group):
    got = match_template(group, "layernorm")
    if got is None:
        return None
    from kernels import layernorm as klayernorm
    try:
        klayernorm.pick_config(group.shape[-1])
    except ValueError:
        return None
    return got


def _build_layernorm(group, match, config):
    from kernels import layernorm as klayernorm
    variant, binding = match
    i = binding[0]
    aval = group.inputs[i].aval
    shape2 = _rows(aval)
    eps = binding.get("eps", EPS_SENTINEL)
    n = shape2[1]
    if variant.endswith("_affine"):
        iw, ib = binding[1], binding[2]
        ones = zeros = None
    else:
        iw = ib = None
        ones, zeros = np.ones(n, aval.dtype), np.zeros(n, aval.dtype)
    x0, v0 = np.empty(shape2, aval.dtype), np.empty(n, aval.dtype)
    kernel = klayernorm.build(x0, v0, v0, eps)

    def fn(*vals):
        w = ones if iw is None else vals[iw]
        b = zeros if ib is None else vals[ib]
        (y,) = kernel(np.asarray(vals[i]).reshape(shape2), w, b)
        return [y.reshape(aval.shape)]

    return kernel, fn


def _match_dense(group):
    from functrax.lowering.triton.matmul_groups import MatmulMatch, match_matmul
    m = match_matmul(group)
    if isinstance(m, MatmulMatch) and not m.a[1] and not m.b[1]:
        return m
    return None


def _build_dense(group, match, config):
    from functrax.lowering.triton.matmul_groups import build_dense
    return build_dense(group, match, config)


PATTERNS = (
    Pattern("dense", GroupKind.MATMUL, _match_dense, _build_dense),
    Pattern("softmax", GroupKind.REDUCTION, _match_softmax, _build_softmax),
    Pattern("layernorm", GroupKind.REDUCTION, _match_layernorm, _build_layernorm),
)

_NAMES = frozenset(p.name for p in PATTERNS)


def build_pattern(group: FusionGroup, config: KernelConfig | None = None):
    """``(pattern name, kernel, step fn)`` for the first row of :data:`PATTERNS` named in
    ``config.hand_written`` that matches ``group``; None otherwise (generate a kernel)."""
    config = config or INTERPRETER_CONFIG
    enabled = config.hand_written
    if isinstance(enabled, str) or not all(p in _NAMES for p in enabled):
        raise ValueError(f"KernelConfig.hand_written must be a tuple of pattern names from "
                         f"{sorted(_NAMES)}, got {enabled!r}")
    for pattern in PATTERNS:
        if pattern.name in enabled and pattern.kind is group.kind:
            match = pattern.match(group)
            if match is not None:
                kernel, fn = pattern.build(group, match, config)
                return pattern.name, kernel, fn
    return None

