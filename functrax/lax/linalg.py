"""``functrax.lax.linalg``: the linear-algebra primitives' wrappers, as ``jax.lax.linalg``.

Every function takes (batches of) matrices with the batch dimensions leading; they are
defined beside their primitives in ``functrax/primitives/linalg.py``.

>>> import functrax.numpy as fnp
>>> from functrax.lax import linalg
>>> linalg.cholesky(fnp.array([[4.0, 2.0], [2.0, 5.0]]))
Array([[2., 0.],
       [1., 2.]], dtype=float32)
"""
from functrax.primitives.linalg import (  # noqa: F401
    cholesky, cholesky_p, eigh, eigh_p, lu, lu_p, lu_pivots_to_permutation, qr, qr_p, svd,
    svd_p, symmetrize, triangular_solve, triangular_solve_p,
)

__all__ = ["cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "symmetrize",
           "lu_pivots_to_permutation"]
