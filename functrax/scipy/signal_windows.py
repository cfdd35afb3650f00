"""Window functions for the spectral estimators of ``functrax.scipy.signal``.

``get_window(window, n)`` is ``scipy.signal.get_window(window, n)`` (periodic windows, for
spectral analysis: the symmetric window of ``n + 1`` points without its last point) for the
windows listed in :data:`WINDOWS`; the window is static (computed with numpy in float64).
JAX calls scipy for every window but ``"hann"``; functrax has no scipy dependency, so the
common ones are implemented here and any other name raises a ValueError listing them.
"""
from __future__ import annotations

import numpy as np

__all__ = ["WINDOWS", "get_window"]


def _cos_sum(m, coefs):
    """sum_k (-1)^k a_k cos(2 pi k t / (m - 1)), t = 0..m-1 (a symmetric cosine window)."""
    t = np.arange(m) * (2 * np.pi / max(m - 1, 1))
    return sum((-1) ** k * a * np.cos(k * t) for k, a in enumerate(coefs))


def _triang(m):
    n = np.arange(1, (m + 1) // 2 + 1)
    if m % 2 == 0:
        w = (2 * n - 1.0) / m
        return np.concatenate([w, w[::-1]])
    w = 2 * n / (m + 1.0)
    return np.concatenate([w, w[-2::-1]])


def _tukey(m, alpha=0.5):
    if alpha <= 0:
        return np.ones(m)
    if alpha >= 1:
        return _cos_sum(m, (0.5, 0.5))
    n = np.arange(m)
    width = int(np.floor(alpha * (m - 1) / 2.0))
    w = np.ones(m)
    lo, hi = n[:width + 1], n[m - width - 1:]
    w[:width + 1] = 0.5 * (1 + np.cos(np.pi * (-1 + 2.0 * lo / alpha / (m - 1))))
    w[m - width - 1:] = 0.5 * (1 + np.cos(np.pi * (-2.0 / alpha + 1 + 2.0 * hi / alpha
                                                   / (m - 1))))
    return w


def _gaussian(m, std):
    n = np.arange(m) - (m - 1.0) / 2.0
    return np.exp(-n ** 2 / (2 * std * std))


# name -> symmetric window of m points (extra parameters after m)
WINDOWS = {
    "boxcar": lambda m: np.ones(m),
    "hann": lambda m: _cos_sum(m, (0.5, 0.5)),
    "hamming": lambda m: _cos_sum(m, (0.54, 0.46)),
    "blackman": lambda m: _cos_sum(m, (0.42, 0.50, 0.08)),
    "nuttall": lambda m: _cos_sum(m, (0.3635819, 0.4891775, 0.1365995, 0.0106411)),
    "blackmanharris": lambda m: _cos_sum(m, (0.35875, 0.48829, 0.14128, 0.01168)),
    "flattop": lambda m: _cos_sum(m, (0.21557895, 0.41663158, 0.277263158, 0.083578947,
                                      0.006947368)),
    "bartlett": lambda m: np.bartlett(m),
    "triang": _triang,
    "cosine": lambda m: np.sin(np.pi / m * (np.arange(m) + 0.5)),
    "tukey": _tukey,
    "kaiser": lambda m, beta: np.kaiser(m, beta),
    "gaussian": _gaussian,
    "general_hamming": lambda m, alpha: _cos_sum(m, (alpha, 1.0 - alpha)),
}
_ALIASES = {"boxcar": ("box", "ones", "rect", "rectangular"), "hann": ("han",),
            "hamming": ("hamm", "ham"), "blackman": ("black", "blk"),
            "blackmanharris": ("blackharr", "bkh"), "nuttall": ("nutl", "nut"),
            "flattop": ("flat", "flt"), "bartlett": ("bart", "brt"),
            "triang": ("triangle", "tri"), "cosine": ("halfcosine",), "tukey": ("tuk",),
            "kaiser": ("ksr",), "gaussian": ("gauss", "gss"),
            "general_hamming": ("general hamming",)}
_NAMES = {alias: name for name, aliases in _ALIASES.items() for alias in (name,) + aliases}
_NEEDS_PARAM = ("kaiser", "gaussian", "general_hamming")


def get_window(window, n: int) -> np.ndarray:
    """The periodic window ``window`` (a name, or a tuple ``(name, *params)``) of ``n``
    points, float64.

    >>> get_window("hann", 4)
    array([0. , 0.5, 1. , 0.5])
    """
    name, params = (window[0], tuple(window[1:])) if isinstance(window, tuple) else (window,
                                                                                   ())
    key = _NAMES.get(name) if isinstance(name, str) else None
    if key is None:
        raise ValueError(f"Unknown window type {name!r}: functrax.scipy.signal supports "
                         f"{sorted(WINDOWS)} (or pass the window as an array)")
    if key in _NEEDS_PARAM and not params:
        raise ValueError(f"The '{key}' window needs one or more parameters -- pass a tuple, "
                         f"e.g. ('{key}', value).")
    if n <= 1:
        return np.ones(max(int(n), 0))
    return np.asarray(WINDOWS[key](n + 1, *params), np.float64)[:-1]
