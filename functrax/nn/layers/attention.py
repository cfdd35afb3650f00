"""``MultiHeadAttention`` on one example: ``(seq, features)`` queries, keys and values.

>>> import functrax, functrax.numpy as fnp
>>> mha = MultiHeadAttention(2, 8, key=functrax.random.key(0))
>>> x = fnp.ones((5, 8))
>>> mha(x, x, x).shape
(5, 8)
"""
from __future__ import annotations

import math

import numpy as np

from functrax import numpy as fnp
from functrax.nn.attention import dot_product_attention
from functrax.nn.layers import _util as u
from functrax.nn.layers.linear import Linear
from functrax.nn.module import Module

__all__ = ["MultiHeadAttention", "MultiheadAttention"]


class MultiHeadAttention(Module):
    """Multi-head attention, as ``equinox.nn.MultiheadAttention``: project the queries, keys
    and values per head, attend (:func:`functrax.nn.dot_product_attention`), project back.

    Args:
      num_heads: the number of heads.
      query_size: the query features; key_size, value_size (default ``query_size``): the
        key and value features; output_size (default ``query_size``).
      qk_size, vo_size: the per-head query/key and value/output sizes (default
        ``query_size // num_heads``).
      use_query_bias, use_key_bias, use_value_bias, use_output_bias: biases of the four
        projections (default False).
      key: the PRNG key initialising the projections (keyword, required).
      dtype: the parameters' dtype.

    Returns (when called as ``mha(query, key_, value, mask=None, *, is_causal=False)`` on
    ``(T, query_size)``, ``(S, key_size)``, ``(S, value_size)``, with a boolean ``mask`` of
    shape ``(T, S)`` or ``(num_heads, T, S)``, False masking a key out):
      an array of shape ``(T, output_size)``.

    Raises:
      ValueError: for a missing key or inconsistent shapes.

    >>> import functrax, functrax.numpy as fnp
    >>> mha = MultiHeadAttention(2, 4, vo_size=3, key=functrax.random.key(0))
    >>> mha(fnp.ones((3, 4)), fnp.ones((6, 4)), fnp.ones((6, 4)), is_causal=False).shape
    (3, 4)
    """
    query_proj: Linear
    key_proj: Linear
    value_proj: Linear
    output_proj: Linear
    num_heads: int
    query_size: int
    key_size: int
    value_size: int
    output_size: int
    qk_size: int
    vo_size: int

    def __init__(self, num_heads, query_size, key_size=None, value_size=None,
                 output_size=None, qk_size=None, vo_size=None, use_query_bias=False,
                 use_key_bias=False, use_value_bias=False, use_output_bias=False, *,
                 key=None, dtype=fnp.float32):
        name = "MultiHeadAttention"
        qkey, kkey, vkey, okey = u.split(u.check_key(name, key), 4)
        h = self.num_heads = u.as_int(name, "num_heads", num_heads)
        q = self.query_size = u.as_int(name, "query_size", query_size)
        self.key_size = u.as_int(name, "key_size", q if key_size is None else key_size)
        self.value_size = u.as_int(name, "value_size", q if value_size is None else value_size)
        self.output_size = u.as_int(name, "output_size",
                                    q if output_size is None else output_size)
        if (qk_size is None or vo_size is None) and q // h == 0:
            raise ValueError(f"{name}: query_size={q} < num_heads={h}; pass qk_size and "
                             "vo_size explicitly.")
        self.qk_size = u.as_int(name, "qk_size", q // h if qk_size is None else qk_size)
        self.vo_size = u.as_int(name, "vo_size", q // h if vo_size is None else vo_size)
        self.query_proj = Linear(q, h * self.qk_size, use_query_bias, key=qkey, dtype=dtype)
        self.key_proj = Linear(self.key_size, h * self.qk_size, use_key_bias, key=kkey,
                               dtype=dtype)
        self.value_proj = Linear(self.value_size, h * self.vo_size, use_value_bias, key=vkey,
                                 dtype=dtype)
        self.output_proj = Linear(h * self.vo_size, self.output_size, use_output_bias,
                                  key=okey, dtype=dtype)

    def _check(self, query, key_, value, mask):
        name, (qs, ks, vs) = "MultiHeadAttention", map(u.shape_of, (query, key_, value))
        for arg, s, size in (("query", qs, self.query_size), ("key_", ks, self.key_size),
                             ("value", vs, self.value_size)):
            if len(s) != 2 or s[1] != size:
                raise ValueError(f"{name}: expected {arg} of shape (seq, {size}) for one "
                                 f"example, got shape {s}. For a batch, use functrax.vmap.")
        if ks[0] != vs[0]:
            raise ValueError(f"{name}: key_ and value must have the same sequence length, got "
                             f"shapes {ks} and {vs}.")
        if mask is not None:
            ms, want = u.shape_of(mask), (qs[0], ks[0])
            if ms not in (want, (self.num_heads,) + want):
                raise ValueError(f"{name}: mask must have shape (T, S) = {want} or (num_heads,"
                                 f" T, S) = {(self.num_heads,) + want}, got shape {ms}.")
            if u.dtype_of(mask) != np.bool_:
                raise ValueError(f"{name}: mask must be boolean (False masks a key out), got "
                                 f"dtype {u.dtype_of(mask)}.")

    def __call__(self, query, key_, value, mask=None, *, is_causal=False, key=None):
        """Attention of ``query`` ``(T, query_size)`` over ``key_``/``value`` ``(S, ...)``."""
        self._check(query, key_, value, mask)
        h, dqk, dvo = self.num_heads, self.qk_size, self.vo_size
        q = fnp.reshape(self.query_proj(query), (-1, h, dqk))
        k = fnp.reshape(self.key_proj(key_), (-1, h, dqk))
        v = fnp.reshape(self.value_proj(value), (-1, h, dvo))
        # dot_product_attention wants one head size: zero-pad the smaller of (q, k) and v
        # (zeros change neither q.k nor the kept value columns); the scale stays 1/sqrt(qk)
        width = max(dqk, dvo)

        def pad(t):
            extra = width - t.shape[-1]
            return fnp.pad(t, ((0, 0), (0, 0), (0, extra))) if extra else t
        if mask is not None:
            mask = fnp.asarray(mask)
            mask = mask[None, None] if mask.ndim == 2 else mask[None]
        out = dot_product_attention(pad(q), pad(k), pad(v), mask=mask,
                                    scale=1.0 / math.sqrt(dqk), is_causal=is_causal)
        out = fnp.reshape(out[..., :dvo], (-1, h * dvo))
        return self.output_proj(out)


MultiheadAttention = MultiHeadAttention  # Equinox's spelling
