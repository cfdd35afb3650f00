"""``functrax.image``: image resampling (``jax.image``): :func:`resize` and
:func:`scale_and_translate` with the :class:`ResizeMethod` kernels (nearest, linear, cubic,
lanczos3, lanczos5; antialiasing when downsampling).

>>> import functrax.numpy as fnp
>>> import functrax.image
>>> functrax.image.resize(fnp.ones((2, 2)), (3, 3), "bilinear").shape
(3, 3)
"""
from functrax.image.scale import ResizeMethod, resize, scale_and_translate  # noqa: F401

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
