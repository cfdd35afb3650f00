"""numpy rule of ``fused_attention`` (``functrax/primitives/attention.py``): the float32
reference, :func:`attention_reference` (the whole score matrix, output in ``out_dtype``)."""
from __future__ import annotations

import numpy as np

from functrax.lowering.numpy.rules import numpy_rules
from functrax.primitives.attention import attention_p

__all__ = ["attention_reference"]


def attention_reference(q, k, v, *, causal, scale, precision=None, out_dtype=None):
    """numpy value of a ``fused_attention`` equation (float32 math)."""
    qf, kf, vf = (np.asarray(a, np.float32) for a in (q, k, v))
    s = (qf @ np.swapaxes(kf, -1, -2)) * np.float32(scale)
    if causal:
        lq, lk = s.shape[-2:]
        s = np.where(np.tril(np.ones((lq, lk), bool)), s, -np.inf)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        p = e / e.sum(axis=-1, keepdims=True)
    return (p @ vf).astype(out_dtype or np.asarray(q).dtype)


numpy_rules[attention_p] = attention_reference
