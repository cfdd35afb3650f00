"""The ``fused_attention`` primitive: scaled dot-product attention as one equation.

``fused_attention(q, k, v; causal, scale, precision, out_dtype)`` is
``softmax(q @ k^T * scale [causal mask]) @ v`` with ``q (..., Lq, D)``, ``k (..., Lk, D)``,
``v (..., Lk, Dv)`` of one dtype and equal batch dims; the result is ``(..., Lq, Dv)`` of
``out_dtype``; ``causal``: query ``i`` sees keys ``j <= i`` (top-left aligned).

It is lowering-internal: user code never binds it. The attention pass
(``functrax/passes/attention.py``) makes it from an optimized, first-order jaxpr after every
transformation ran, so it has no JVP, transpose or vmap rule. Its numpy rule (the float32
reference) is in ``functrax/lowering/numpy/attention.py``, its cost in
``functrax/lowering/cost.py``, its Triton kernel in ``kernels/attention.py``.
"""
from __future__ import annotations

from functrax.primitives.define import Family, ShapedArray, new_primitive, np

__all__ = ["attention_p"]

attention_p = new_primitive("fused_attention", family=Family.FUSED)


@attention_p.def_abstract_eval
def _attention_abstract(q, k, v, *, causal, scale, precision, out_dtype):
    if not (q.ndim == k.ndim == v.ndim >= 2 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
            and q.shape[-1] == k.shape[-1] and k.shape[-2] == v.shape[-2]):
        raise TypeError(f"fused_attention: q (..., Lq, D), k (..., Lk, D) and v (..., Lk, Dv) "
                        f"disagree: got {q.str_short()}, {k.str_short()}, {v.str_short()}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"fused_attention: q, k and v must have one dtype, got {q.dtype}, "
                        f"{k.dtype} and {v.dtype}")
    return ShapedArray(q.shape[:-1] + v.shape[-1:], np.dtype(out_dtype))
