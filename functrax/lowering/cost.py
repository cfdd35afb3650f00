"""A static cost model of a jaxpr, as ``jax.stages.Compiled.cost_analysis()`` reports it.

Costs are counted per equation from a table keyed by primitive (``cost_rules``). As XLA's
``HloCostAnalysis`` does:

- elementwise arithmetic and comparisons: one flop per output element;
- transcendental elementwise ops (``exp``, ``log``, ``tanh``, ``sin``, ``pow``, ``sqrt``,
  ``erf``, ...): one *transcendental* per output element, no flops;
- ``dot_general``: ``2 * batch * M * N * K`` flops (one multiply and one add per term);
- ``conv_general_dilated``: ``2 * output size * kernel window * input features per group``;
- reductions, cumulative ops and arg-reductions: one flop per input element;
- windowed reductions: one flop per output element per window element;
- ``fft``: ``5 N log2 N`` flops per transform of ``N`` points;
- data movement (reshape, broadcast, transpose, slice, gather, ...): no flops;
- ``bytes accessed``: for every equation, the bytes of its operands plus its results.

Call-like equations (``jit``, ``custom_jvp_call``, ``remat2``, ...; see
``passes.inline.inlinable``) cost what their inner jaxpr costs. Primitives missing from the
table cost one flop per output element (``default_cost``).

A fused program (a backend running each group of a fusion plan as one kernel) costs what
:func:`fused_cost_analysis` says: the flops of each group are those of its equations, but
its ``bytes accessed`` are only what the kernel reads and writes -- each distinct input
buffer once, at its own size (a broadcast operand is not counted at the broadcast shape),
plus each output; values living inside the kernel cost no memory traffic.
"""
from __future__ import annotations

import math

import numpy as np

from functrax import primitives as P
from functrax.core import ClosedJaxpr, Family, Jaxpr, Literal
from functrax.passes.inline import inlinable

__all__ = ["cost_analysis", "cost_rules", "default_cost", "eqn_cost", "group_cost",
           "fused_cost_analysis"]

# primitive -> rule(eqn) -> (flops, transcendentals)
cost_rules: dict = {}


def _size(aval) -> int:
    return int(math.prod(aval.shape))


def _out_size(eqn) -> int:
    return sum(_size(v.aval) for v in eqn.outvars)


def _in_size(eqn) -> int:
    return _size(eqn.invars[0].aval)


def _nbytes(aval) -> int:
    return _size(aval) * np.dtype(aval.dtype).itemsize


def default_cost(eqn):
    """Cost of a primitive without a rule: one flop per output element."""
    return _out_size(eqn), 0


# --- families ---

def _elementwise(eqn):
    return _out_size(eqn), 0


def _transcendental(eqn):
    return 0, _out_size(eqn)


def _free(eqn):
    return 0, 0


def _reduction(eqn):
    return _in_size(eqn), 0


def _window(eqn):
    # one combine per window element per output; select_and_scatter_add: per source element;
    # reduce (whole dimensions): one per operand element
    wd = eqn.params.get("window_dimensions")
    if wd is None:
        return sum(_size(v.aval) for v in eqn.invars[:len(eqn.invars) // 2]), 0
    per = _size(eqn.invars[0].aval) if "base_dilation" not in eqn.params else _out_size(eqn)
    return per * math.prod(wd), 0


# what each family costs; the primitives below that differ from their family override it
_FAMILY_COSTS = {
    Family.ELEMENTWISE: _elementwise, Family.TRANSCENDENTAL: _transcendental,
    Family.SHAPE: _free, Family.INDEXING: _free, Family.SCATTER: _free, Family.BARRIER: _free,
    Family.REDUCTION: _reduction, Family.CUMULATIVE: _reduction, Family.COLLECTIVE: _reduction,
    Family.WINDOW: _window, Family.CALLBACK: _free,
}
for _prim in P.primitive_registry.values():
    if _prim.family in _FAMILY_COSTS:
        cost_rules[_prim] = _FAMILY_COSTS[_prim.family]


def _dot_general_cost(eqn):
    (lhs_contract, _), _ = eqn.params["dimension_numbers"]
    lhs_shape = eqn.invars[0].aval.shape
    k = math.prod(lhs_shape[d] for d in lhs_contract)
    return 2 * _out_size(eqn) * k, 0


def _conv_cost(eqn):
    # each output element: one multiply-add per (kernel position, input feature of its group)
    rhs = eqn.invars[1].aval
    rhs_spec = eqn.params["dimension_numbers"].rhs_spec
    window = math.prod(rhs.shape[d] for d in rhs_spec[2:]) * rhs.shape[rhs_spec[1]]
    return 2 * _out_size(eqn) * window, 0


def _integer_pow_cost(eqn):
    # x ** y by repeated squaring: bit_length - 1 squarings + popcount - 1 multiplies
    y = abs(eqn.params["y"])
    muls = max(y.bit_length() + bin(y).count("1") - 2, 1)
    return (muls + (eqn.params["y"] < 0)) * _out_size(eqn), 0


def _scatter_combine_cost(eqn):
    return _size(eqn.invars[2].aval), 0  # one combine per update element


def _cumlogsumexp_cost(eqn):
    n = _in_size(eqn)
    return n, 2 * n  # an exp and a log per element


def _sort_cost(eqn):
    shape = eqn.invars[0].aval.shape
    n = shape[eqn.params.get("dimension", -1)] if shape else 1
    return _in_size(eqn) * max(math.ceil(math.log2(max(n, 1))), 1), 0


def _fft_cost(eqn):
    # 5 N log2 N flops per transform of N = prod(fft_lengths) points (Cooley-Tukey's count)
    lengths = eqn.params["fft_lengths"]
    n = math.prod(lengths)
    batch = math.prod(eqn.invars[0].aval.shape[:-len(lengths)])
    return (round(5 * batch * n * math.log2(n)) if n > 1 else 0), 0


def _attention_cost(eqn):
    # fused_attention: the two matmuls, plus scale, max, exp, sum and divide per score;
    # one exp (a transcendental) per score
    q, k, v = (x.aval for x in eqn.invars)
    batch = math.prod(q.shape[:-2])
    lq, d = q.shape[-2:]
    lk, dv = v.shape[-2:]
    return 2 * batch * lq * lk * (d + dv) + 4 * batch * lq * lk, batch * lq * lk


cost_rules.update({
    P.dot_general_p: _dot_general_cost, P.conv_general_dilated_p: _conv_cost,
    P.integer_pow_p: _integer_pow_cost,
    P.scatter_add_p: _scatter_combine_cost, P.scatter_mul_p: _scatter_combine_cost,
    P.scatter_min_p: _scatter_combine_cost, P.scatter_max_p: _scatter_combine_cost,
    P.cumlogsumexp_p: _cumlogsumexp_cost, P.sort_p: _sort_cost, P.top_k_p: _sort_cost,
    # identities and data movement: no arithmetic
    P.copy_p: _free, P.stop_gradient_p: _free, P.name_p: _free, P.axis_index_p: _free,
    P.sharding_constraint_p: _free,
    P.all_gather_p: _free,
    P.ppermute_p: _free, P.all_to_all_p: _free,
    P.attention_p: _attention_cost, P.fft_p: _fft_cost,
})


# --- the analysis ---

def _accumulate(jaxpr: Jaxpr, totals: list) -> None:
    for eqn in jaxpr.eqns:
        param = inlinable.get(eqn.primitive)
        if param is not None:
            sub = eqn.params[param]
            _accumulate(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub, totals)
            continue
        flops, trans = cost_rules.get(eqn.primitive, default_cost)(eqn)
        totals[0] += flops
        totals[1] += trans
        totals[2] += sum(_nbytes(v.aval) for v in eqn.invars)
        totals[2] += sum(_nbytes(v.aval) for v in eqn.outvars)


def cost_analysis(closed) -> dict:
    """Estimated ``flops``, ``transcendentals`` and ``bytes accessed`` of a jaxpr.

    Args:
      closed: a ``ClosedJaxpr`` (or ``Jaxpr``), e.g. ``jit(f).lower(x).jaxpr``.

    Returns:
      a dict with float values under JAX's keys ``'flops'``, ``'transcendentals'`` and
      ``'bytes accessed'``.

    >>> import functrax, functrax.numpy as fnp
    >>> c = functrax.make_jaxpr(lambda a, b: fnp.tanh(a @ b))(fnp.ones((2, 3)), fnp.ones((3, 4)))
    >>> cost_analysis(c)['flops'], cost_analysis(c)['transcendentals']
    (48.0, 8.0)
    """
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    if not isinstance(jaxpr, Jaxpr):
        raise TypeError(f"cost_analysis: expected a ClosedJaxpr or Jaxpr, got "
                        f"{type(closed).__name__}")
    totals = [0, 0, 0]
    _accumulate(jaxpr, totals)
    return {"flops": float(totals[0]), "transcendentals": float(totals[1]),
            "bytes accessed": float(totals[2])}


# --- control flow and mapped calls (a cond costs its most expensive branch, as XLA's) ---

def _cond_cost(eqn):
    costs = [cost_analysis(b) for b in eqn.params["branches"]]
    return max(c["flops"] for c in costs), max(c["transcendentals"] for c in costs)


def _scan_cost(eqn):  # the body once per iteration
    c = cost_analysis(eqn.params["jaxpr"])
    n = eqn.params["length"]
    return n * c["flops"], n * c["transcendentals"]


def _while_cost(eqn):  # the trip count is unknown: one test and one body, as XLA counts it
    cond, body = cost_analysis(eqn.params["cond_jaxpr"]), cost_analysis(eqn.params["body_jaxpr"])
    return cond["flops"] + body["flops"], cond["transcendentals"] + body["transcendentals"]


def _linear_call_cost(eqn):  # the callee (the transpose runs only when transposed)
    c = cost_analysis(eqn.params["callee"])
    return c["flops"], c["transcendentals"]


def _linear_solve_cost(eqn):  # the solve function (the others serve transformations)
    c = cost_analysis(eqn.params["jaxprs"].solve)
    return c["flops"], c["transcendentals"]


def _pmap_cost(eqn):  # every replica runs the body
    c = cost_analysis(eqn.params["call_jaxpr"])
    n = eqn.params["axis_size"]
    return n * c["flops"], n * c["transcendentals"]


cost_rules.update({P.cond_p: _cond_cost, P.scan_p: _scan_cost, P.while_p: _while_cost,
                   P.xla_pmap_p: _pmap_cost, P.linear_call_p: _linear_call_cost,
                   P.custom_linear_solve_p: _linear_solve_cost})


# --- fused programs: one kernel per fusion group ---

def eqn_cost(eqn) -> tuple:
    """``(flops, transcendentals)`` of one equation (a call-like one: its inner jaxpr's)."""
    param = inlinable.get(eqn.primitive)
    if param is not None:
        sub = eqn.params[param]
        totals = [0, 0, 0]
        _accumulate(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub, totals)
        return totals[0], totals[1]
    return cost_rules.get(eqn.primitive, default_cost)(eqn)


def _buffers(vs) -> list:
    """The distinct non-literal vars of ``vs`` (literals are baked into the kernel)."""
    seen, out = set(), []
    for v in vs:
        if type(v) is not Literal and id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def group_cost(eqns, inputs, outputs) -> dict:
    """The cost of one kernel running ``eqns``, reading ``inputs`` and writing ``outputs``.

    Returns:
      a dict of floats: ``'flops'`` and ``'transcendentals'`` (summed over ``eqns``),
      ``'bytes accessed'`` (``'bytes read'`` + ``'bytes written'``), and XLA's per-buffer
      keys ``'bytes accessed{i}{}'`` (input ``i``) and ``'bytes accessedout{}'``.
    """
    flops = trans = 0
    for eqn in eqns:
        f, t = eqn_cost(eqn)
        flops += f
        trans += t
    reads = [_nbytes(v.aval) for v in _buffers(inputs)]
    written = sum(_nbytes(v.aval) for v in _buffers(outputs))
    cost = {"flops": float(flops), "transcendentals": float(trans),
            "bytes accessed": float(sum(reads) + written), "bytes read": float(sum(reads)),
            "bytes written": float(written)}
    cost.update((f"bytes accessed{i}{{}}", float(b)) for i, b in enumerate(reads))
    cost["bytes accessedout{}"] = float(written)
    return cost


_TOTALS = ("flops", "transcendentals", "bytes accessed", "bytes read", "bytes written")


def fused_cost_analysis(groups) -> dict:
    """The cost of running each of ``groups`` (``FusionGroup`` s, or a ``FusionPlan``) as
    one kernel.

    Returns:
      a dict: the totals under ``'flops'``, ``'transcendentals'``, ``'bytes accessed'``,
      ``'bytes read'`` and ``'bytes written'``, and under ``'kernels'`` a list with one
      :func:`group_cost` dict per group (plus its ``'index'`` and ``'kind'``).

    >>> import functrax, functrax.numpy as fnp
    >>> from functrax.lowering.fusion.planner import plan_fusion
    >>> c = functrax.make_jaxpr(lambda x: fnp.exp(x) * 2.0)(fnp.ones(8))
    >>> cost = fused_cost_analysis(plan_fusion(c))
    >>> cost['flops'], cost['transcendentals'], cost['bytes accessed']
    (8.0, 8.0, 64.0)
    """
    groups = getattr(groups, "groups", groups)
    kernels = []
    for i, g in enumerate(groups):
        kernels.append({"index": i, "kind": g.kind.value,
                        **group_cost(g.eqns, g.inputs, g.outputs)})
    totals = {k: float(sum(c[k] for c in kernels)) for k in _TOTALS}
    return {**totals, "kernels": kernels}
