"""``functrax.lax.linalg``: the linear-algebra primitives' wrappers, as ``jax.lax.linalg``.

Every function takes (batches of) matrices with the batch dimensions leading; they are
defined beside their primitives in ``functrax/primitives/linalg.py`` and
``linalg_more.py``; ``qdwh`` (a ``while_loop``) is in ``functrax/lax/qdwh.py``.

>>> import functrax.numpy as fnp
>>> from functrax.lax import linalg
>>> linalg.cholesky(fnp.array([[4.0, 2.0], [2.0, 5.0]]))
Array([[2., 0.],
       [1., 2.]], dtype=float32)
"""
from functrax.primitives.linalg import (  # noqa: F401
    EighImplementation, SvdAlgorithm, cholesky, cholesky_p, eigh, eigh_p, geqp3, geqp3_p, lu,
    lu_p, lu_pivots_to_permutation, qr, qr_p, svd, svd_p, symmetrize, triangular_solve,
    triangular_solve_p,
)
from functrax.primitives.linalg_more import (  # noqa: F401
    EigImplementation, cholesky_update, eig, eig_p, hessenberg, hessenberg_p,
    householder_product, householder_product_p, ormqr, schur, schur_p, symmetric_product,
    tridiagonal, tridiagonal_p, tridiagonal_solve, tridiagonal_solve_p,
)
from functrax.lax.qdwh import qdwh  # noqa: F401

__all__ = ["cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "symmetrize",
           "lu_pivots_to_permutation", "EigImplementation", "EighImplementation",
           "SvdAlgorithm", "cholesky_update", "eig", "hessenberg", "householder_product",
           "ormqr", "qdwh", "schur", "symmetric_product", "tridiagonal", "tridiagonal_solve"]
