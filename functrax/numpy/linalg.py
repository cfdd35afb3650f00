"""``functrax.numpy.linalg``."""
__all__ = []
