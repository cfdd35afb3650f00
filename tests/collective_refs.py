"""numpy references of the collectives, shared by the vmap (tests/test_collectives.py) and
pmap (tests/test_pmap.py) tests: ``X`` holds the per-lane (per-device) values along axis 0,
and each reference returns every lane's result stacked the same way."""
from __future__ import annotations

import numpy as np


def ref_psum(X):
    return np.broadcast_to(X.sum(0), X.shape)


def ref_all_gather(X, axis=0, tiled=False):
    lanes = list(X)
    g = np.concatenate(lanes, axis) if tiled else np.stack(lanes, axis)
    return np.broadcast_to(g, (len(lanes),) + g.shape)


def ref_ppermute(X, perm):
    out = np.zeros_like(X)
    for src, dst in perm:
        out[dst] = X[src]
    return out


def ref_all_to_all(X, split, concat, tiled):
    n = len(X)
    outs = []
    for i in range(n):
        if tiled:
            chunks = [np.split(X[j], n, axis=split)[i] for j in range(n)]
            outs.append(np.concatenate(chunks, axis=concat))
        else:  # untiled: split axis (of size n) removed, a new axis over sources at concat
            outs.append(np.stack([np.take(X[j], i, axis=split) for j in range(n)], concat))
    return np.stack(outs)


def ref_psum_scatter(X, dim=0, tiled=False):
    n = len(X)
    total = X.sum(0)
    if tiled:
        return np.stack(np.split(total, n, axis=dim))
    return np.moveaxis(total, dim, 0)


def ref_axis_index(X):
    return np.arange(len(X), dtype=np.int32)
