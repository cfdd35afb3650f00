"""``functrax.scipy``: SciPy functions on functrax arrays (as ``jax.scipy``), one module each."""
from functrax.scipy import linalg, optimize, signal, special  # noqa: F401
