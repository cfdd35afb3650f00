"""``nn.dot_product_attention``: scaled dot-product attention as JAX computes it (its
"xla" implementation), on ``(B, T, N, H)`` arrays with grouped-query attention, bias, masks,
causal and local-window masking and sequence lengths.

The computation is plain functrax.numpy (differentiable, vmappable); the attention pass
(``functrax/passes/attention.py``) recognises it in a jitted program and, on the Triton
backend, runs it as one flash-style kernel when it is unmasked or causal.

>>> import functrax.numpy as fnp
>>> q = fnp.ones((1, 4, 2, 8))
>>> dot_product_attention(q, q, q).shape
(1, 4, 2, 8)
"""
from __future__ import annotations

import math

import numpy as np

from functrax import core, dtypes
from functrax import numpy as fnp
from functrax.nn.functions import softmax

__all__ = ["dot_product_attention"]


def _shape(x):
    return core.get_aval(x).shape


def _large_negative(dtype):
    return fnp.asarray(-0.7 * float(dtypes.finfo(dtype).max), dtype)


def _check(name, x, rank, what):
    if x is not None and len(_shape(x)) != rank:
        raise ValueError(f"dot_product_attention: {name} must have rank {rank} ({what}), got "
                         f"shape {_shape(x)}")


def _grouped(t, B, K, G, T, S):
    """A (B|1, N|1, T|1, S|1) bias or mask as (B|1, K, G, T|1, S|1)."""
    if t is None:
        return None
    t = fnp.asarray(t)
    if t.ndim != 4:
        raise ValueError(f"dot_product_attention: bias and mask must be 4-D, broadcastable to "
                         f"(B, N, T, S) = {(B, K * G, T, S)}, got shape {t.shape}")
    tB, tN, tT, tS = t.shape
    if tN == 1:
        return fnp.broadcast_to(t[:, :, None], (tB, K, G, tT, tS))
    if tN != K * G:
        raise ValueError(f"dot_product_attention: bias/mask heads {tN} must be 1 or N={K * G}")
    return fnp.reshape(t, (tB, K, G, tT, tS))


def _masks(T, S, mask, is_causal, q_len, kv_len, window, grouped):
    """The combined boolean mask (broadcastable to (B, K, G, T, S), or (B, N, T, S) when not
    ``grouped``), or None."""
    combined = None
    lead = (None, None, None) if grouped else (None, None)

    def both(a, b):
        return b if a is None else fnp.logical_and(a, b)
    if mask is not None:
        combined = mask
    if is_causal:
        combined = both(combined, fnp.tril(fnp.ones((T, S), bool))[lead])
    if window is not None:
        left, right = window
        qp, kp = fnp.arange(T)[:, None], fnp.arange(S)[None, :]
        w = fnp.logical_and(qp >= kp - right, qp <= kp + left)
        combined = both(combined, w[lead])
    if q_len is not None or kv_len is not None:
        m = None
        if q_len is not None:
            m = fnp.arange(T)[None, :, None] < q_len[:, None, None]
        if kv_len is not None:
            kv = fnp.arange(S)[None, None, :] < kv_len[:, None, None]
            m = kv if m is None else fnp.logical_and(m, kv)
        combined = both(combined, m[(slice(None),) + lead[1:]])
    return combined


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
    """``softmax(q k^T * scale + bias, masked) v`` per head, as ``jax.nn.dot_product_attention``.

    Args:
      query: ``(B, T, N, H)`` (or ``(T, N, H)``).
      key, value: ``(B, S, K, H)`` with ``N`` a multiple of ``K`` (grouped-query attention).
      bias: added to the logits, broadcastable to ``(B, N, T, S)``.
      mask: boolean, broadcastable to ``(B, N, T, S)``: False masks a logit out.
      scale: the logits' scale (default ``1 / sqrt(H)``).
      is_causal: query ``i`` attends to keys ``j <= i``.
      query_seq_lengths, key_value_seq_lengths: int32 ``(B,)`` valid lengths (padding is
        masked; padded query rows give zeros).
      local_window_size: ``w`` or ``(left, right)``: query ``i`` sees keys
        ``i - left <= j <= i + right``.
      implementation: None or ``"xla"`` (the same computation here); ``"cudnn"`` raises.
      return_residual: also return the log-sum-exp of the logits, ``(B, T, N)``.

    Raises:
      ValueError / NotImplementedError: for inconsistent shapes or an unavailable
        implementation.
    """
    if implementation not in (None, "xla"):
        raise NotImplementedError(f"dot_product_attention: implementation={implementation!r} "
                                  "is not available (functrax has the 'xla' computation; pass "
                                  "None or 'xla')")
    query, key, value = fnp.asarray(query), fnp.asarray(key), fnp.asarray(value)
    unbatched = query.ndim == 3
    if unbatched:
        query, key, value = query[None], key[None], value[None]
        for name in ("bias", "mask"):
            t = locals()[name]
            if t is not None and fnp.ndim(t) == 3:
                raise ValueError(f"dot_product_attention: with unbatched q/k/v, {name} must "
                                 "be 4-D or broadcastable; got a 3-D one")
    for name, x in (("query", query), ("key", key), ("value", value)):
        _check(name, x, 4, "B, T|S, N|K, H")
    B, T, N, H = _shape(query)
    _, S, K, Hk = _shape(key)
    if _shape(key) != _shape(value) or _shape(key)[0] != B or Hk != H:
        raise ValueError(f"dot_product_attention: key and value must be (B, S, K, H) = "
                         f"{(B, S, K, H)}, got {_shape(key)} and {_shape(value)}")
    if N % K:
        raise ValueError(f"dot_product_attention: the query heads N={N} must be a multiple "
                         f"of the key/value heads K={K}")
    G = N // K
    if mask is not None and fnp.asarray(mask).dtype != np.bool_:
        raise ValueError(f"dot_product_attention: mask must be boolean, got dtype "
                         f"{fnp.asarray(mask).dtype}")
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    scale = 1.0 / math.sqrt(H) if scale is None else scale
    # the head groups of grouped-query attention as an axis of their own (none when N == K:
    # then the einsums are the plain BTNH ones the attention pass recognises)
    grouped = G > 1
    q = fnp.reshape(query, (B, T, K, G, H)) if grouped else query
    spec = ("BTKGH,BSKH->BKGTS", "BKGTS,BSKH->BTKGH") if grouped else \
        ("BTKH,BSKH->BKTS", "BKTS,BSKH->BTKH")

    def heads(t):  # a (B, N, T, S)-broadcastable bias/mask in the layout of the logits
        if t is None or grouped:
            return _grouped(t, B, K, G, T, S)
        return fnp.asarray(t)
    logits_dtype = fnp.promote_types(query.dtype, np.float32)
    logits = fnp.einsum(spec[0], q, key, preferred_element_type=logits_dtype)
    logits = logits * fnp.array(scale, logits.dtype)
    if bias is not None:
        logits = (logits + heads(bias)).astype(logits.dtype)
    combined = _masks(T, S, heads(mask), is_causal, query_seq_lengths,
                      key_value_seq_lengths, local_window_size, grouped)
    if combined is not None:
        logits = fnp.where(combined, logits, _large_negative(logits.dtype))
    logits = logits.astype(np.float32) if logits.dtype != np.float64 else logits
    probs = softmax(logits, axis=-1).astype(key.dtype)
    out = fnp.einsum(spec[1], probs, value)
    if query_seq_lengths is not None and key_value_seq_lengths is not None:
        valid = fnp.arange(T)[None, :] < query_seq_lengths[:, None]
        out = out * valid.reshape((B, T) + (1,) * (out.ndim - 2)).astype(out.dtype)
    out = fnp.reshape(out, (B, T, N, H))
    if unbatched:
        out = out[0]
    if return_residual:
        from functrax.nn.functions import logsumexp
        lse = fnp.reshape(fnp.moveaxis(logsumexp(logits, axis=-1), -1, 1), (B, T, N))
        return out, (lse[0] if unbatched else lse)
    return out
