"""``functrax.scipy``: scipy-like APIs (as ``jax.scipy``)."""
from functrax.scipy import special  # noqa: F401
