"""Fusion groups that run a hand-written kernel of ``kernels/``: a table of pattern -> kernel.

:func:`build_pattern` looks a group up in :data:`PATTERNS` (the rows named by
``KernelConfig.hand_written``: ``("dense", "attention")`` by default, all four in
``codegen.GPU_CONFIG``) before the code generator sees it:

============  ===========  ====================================================================
pattern       group kind   kernel
============  ===========  ====================================================================
dense         MATMUL       ``kernels/matmul.py``: ``relu?(x @ w + b?)``, 2-D row-major operands
softmax       REDUCTION    ``kernels/softmax.py``: softmax of ``x`` over its last axis
layernorm     REDUCTION    ``kernels/layernorm.py``: ``(x - mean) / sqrt(var + eps)`` over the
                           last axis (two-pass variance), optionally ``* w + b``
attention     OPAQUE       ``kernels/attention.py``: one ``fused_attention`` equation, made by
                           :func:`rewrite_patterns` before planning from
                           ``softmax(q @ k^T * scale [causal mask]) @ v``, which spans three
                           groups otherwise (``functrax/passes/attention.py``)
============  ===========  ====================================================================

A REDUCTION pattern is a reference function (:data:`TEMPLATES`, written with the
primitive-level wrappers and the row helpers of ``functrax/passes/pattern_terms.py``) traced
at the group's shape and dtype (and optimized as ``jit`` optimizes). Both it and the group
become *canonical terms*: expression trees over their inputs in which the spellings that do
not change values disappear (``expand_dims``/``squeeze``/``reshape`` that only add or drop
size-1 dims, broadcasts of a row result back along the row, ``stop_gradient``,
``max(-inf, r)``), and commutative operations match in either order. The group matches when
it has one output and its term equals the template's up to a one-to-one mapping of inputs
(the template's ``eps`` matches any float literal). Anything else, or rows too long for the
kernel, falls through to the code generator.

>>> from functrax.lowering.triton.codegen import GPU_CONFIG   # doctest: +SKIP
>>> build_pattern(group, GPU_CONFIG)                           # doctest: +SKIP
('softmax', TritonKernel(softmax_kernel, grid=(1,)), <function ...>)
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from functrax import primitives as P
from functrax.lowering.fusion.types import FusionGroup, GroupKind
from functrax.lowering.triton.codegen import INTERPRETER_CONFIG, KernelConfig
from functrax.passes.pattern_terms import (
    EPS_SENTINEL, along_rows, canonical_term, row_mean, softmax_template, template_term, unify,
)

__all__ = ["Pattern", "PATTERNS", "TEMPLATES", "build_pattern", "rewrite_patterns",
           "match_template", "canonical_term"]

# --- reference functions (traced at the group's avals; written with the primitive-level
# wrappers and the row helpers of functrax/passes/pattern_terms.py) ---


def _normalized(x, rsqrt):
    xc = P.sub(x, along_rows(row_mean(x), x))
    var = row_mean(P.mul(xc, xc))
    if rsqrt:
        return P.mul(xc, along_rows(P.rsqrt(P.add(var, EPS_SENTINEL)), xc))
    return P.div(xc, along_rows(P.sqrt(P.add(var, EPS_SENTINEL)), xc))


def _normalized_pow(x, rsqrt):
    xc = P.sub(x, along_rows(row_mean(x), x))
    var = row_mean(P.integer_pow(xc, 2))
    if rsqrt:
        return P.mul(xc, along_rows(P.rsqrt(P.add(var, EPS_SENTINEL)), xc))
    return P.div(xc, along_rows(P.sqrt(P.add(var, EPS_SENTINEL)), xc))


def _affine(y, w, b):
    """``y * w + b`` with ``w`` and ``b`` (N,) broadcast along the rows of ``y`` (..., N)."""
    shape = y.aval.shape
    along = (len(shape) - 1,)
    return P.add(P.mul(y, P.broadcast_in_dim(w, shape, along)),
                 P.broadcast_in_dim(b, shape, along))


def _layernorm_variants():
    out = []
    for norm in (_normalized, _normalized_pow):
        for rsqrt in (False, True):
            out.append((f"{norm.__name__}{'_rsqrt' if rsqrt else ''}",
                        lambda x, n=norm, r=rsqrt: n(x, r), False))
            out.append((f"{norm.__name__}{'_rsqrt' if rsqrt else ''}_affine",
                        lambda x, w, b, n=norm, r=rsqrt: _affine(n(x, r), w, b), True))
    return out


# name -> [(variant, fn, affine)]: fn(x[, w, b]) with x (..., N), w and b (N,)
TEMPLATES = {
    "softmax": [("softmax", softmax_template, False)],
    "layernorm": _layernorm_variants(),
}


# --- matching a REDUCTION group (canonical terms: functrax/passes/pattern_terms.py) ---

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
        tterm = template_term(fn, [x.aval, vec, vec] if affine else [x.aval])
        binding = {}
        if tterm is not None and unify(tterm, gterm, binding):
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


def _attention_fits(match) -> bool:
    """The kernel takes the match (head dims fit its register tiles)."""
    from kernels import attention as kattention
    (_, d), (_, dv) = (s[-2:] for s in match.shapes()[::2])
    try:
        kattention.pick_config(max(d, dv))
    except ValueError:
        return False
    return True


def _match_attention(group):
    if len(group.eqns) == 1 and group.eqns[0].primitive is P.attention_p:
        return group.eqns[0]
    return None


def _build_attention(group, eqn, config):
    from functrax.lowering.triton.matmul_groups import dot_precision
    from kernels import attention as kattention
    ops = [np.empty(x.aval.shape, x.aval.dtype) for x in eqn.invars]
    p = eqn.params
    kernel = kattention.build(*ops, causal=p["causal"], scale=p["scale"],
                              precision=dot_precision(eqn, config), out_dtype=p["out_dtype"])
    pos = [group.inputs.index(x) for x in eqn.invars]
    if pos == list(range(len(group.inputs))):
        return kernel, None

    def fn(*vals):  # q, k and v from the group's (deduplicated) inputs
        return kernel(*(vals[i] for i in pos))

    return kernel, fn


PATTERNS = (
    Pattern("dense", GroupKind.MATMUL, _match_dense, _build_dense),
    Pattern("softmax", GroupKind.REDUCTION, _match_softmax, _build_softmax),
    Pattern("layernorm", GroupKind.REDUCTION, _match_layernorm, _build_layernorm),
    Pattern("attention", GroupKind.OPAQUE, _match_attention, _build_attention),
)

_NAMES = frozenset(p.name for p in PATTERNS)


def _enabled(config: KernelConfig) -> tuple:
    enabled = config.hand_written
    if isinstance(enabled, str) or not all(p in _NAMES for p in enabled):
        raise ValueError(f"KernelConfig.hand_written must be a tuple of pattern names from "
                         f"{sorted(_NAMES)}, got {enabled!r}")
    return enabled


def rewrite_patterns(closed, config: KernelConfig | None = None):
    """``closed`` with the multi-group patterns named in ``config.hand_written`` rewritten
    before planning: ``"attention"`` makes each attention subgraph the kernel takes one
    ``fused_attention`` equation (``functrax.passes.attention``), so one OPAQUE
    group. Returns ``closed`` itself when nothing changes."""
    config = config or INTERPRETER_CONFIG
    if "attention" not in _enabled(config):
        return closed
    from functrax.passes.attention import rewrite_attention
    return rewrite_attention(closed, accept=_attention_fits)


def build_pattern(group: FusionGroup, config: KernelConfig | None = None):
    """``(pattern name, kernel, step fn)`` for the first row of :data:`PATTERNS` named in
    ``config.hand_written`` that matches ``group``; None otherwise (generate a kernel)."""
    config = config or INTERPRETER_CONFIG
    enabled = _enabled(config)
    for pattern in PATTERNS:
        if pattern.name in enabled and pattern.kind is group.kind:
            match = pattern.match(group)
            if match is not None:
                kernel, fn = pattern.build(group, match, config)
                return pattern.name, kernel, fn
    return None

