"""``functrax.scipy.signal``'s spectral functions (fftconvolve, detrend, stft, istft, csd,
welch) and windows against ``scipy.signal`` (a test-only reference), plus gradients, jit,
vmap and the errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.signal as ss

import functrax
import functrax.numpy as fnp
from functrax.scipy import signal as S
from functrax.scipy.signal_windows import WINDOWS, get_window
from functrax.test_util import check_grads, enable_x64

RNG = np.random.default_rng(0)


def _close(got, want, tol=1e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _sig(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# --- windows ---

@pytest.mark.parametrize("window", sorted(set(WINDOWS) - {"kaiser", "gaussian",
                                                         "general_hamming"})
                         + [("kaiser", 4.0), ("gaussian", 2.5), ("general_hamming", 0.6),
                            ("tukey", 0.3), ("tukey", 1.0), "han", "rect", "tri"], ids=str)
def test_windows_match_scipy(window):
    for n in (1, 2, 5, 8, 9, 16):
        np.testing.assert_allclose(get_window(window, n), ss.get_window(window, n),
                                   atol=1e-12)


def test_unknown_window():
    with pytest.raises(ValueError, match="Unknown window type 'dpss'"):
        get_window("dpss", 8)
    with pytest.raises(ValueError, match="The 'kaiser' window needs"):
        get_window("kaiser", 8)


# --- fftconvolve ---

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("shapes", [((7,), (3,)), ((3,), (7,)), ((5, 6), (3, 4)),
                                    ((3, 4), (5, 6)), ((2, 3, 4), (2, 2, 2))], ids=str)
def test_fftconvolve_matches_scipy(mode, shapes):
    a, b = _sig(*shapes[0]), _sig(*shapes[1])
    _close(S.fftconvolve(a, b, mode), ss.fftconvolve(a, b, mode))
    za = a + 1j * _sig(*shapes[0])
    got = S.fftconvolve(za.astype(np.complex64), b, mode)
    assert got.dtype == np.complex64
    _close(got, ss.fftconvolve(za, b, mode))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_fftconvolve_axes(mode):
    a, b = _sig(4, 7, 3), _sig(4, 3, 3)
    for axes in (1, (-2,), (1, 2), [2, 1]):
        _close(S.fftconvolve(a, b, mode, axes=axes), ss.fftconvolve(a, b, mode, axes=axes))


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_and_correlate_method_fft(mode):
    a, b = _sig(6, 5), _sig(3, 2) + 1j * _sig(3, 2)
    for ours, theirs in ((S.convolve, ss.convolve), (S.correlate, ss.correlate)):
        got = ours(a, b.astype(np.complex64), mode, method="fft")
        _close(got, theirs(a, b, mode, method="fft"))
        _close(got, ours(a, b.astype(np.complex64), mode, method="direct"))


def test_fftconvolve_dtypes_and_x64():
    ints = np.arange(5, dtype=np.int32)
    got = S.fftconvolve(ints, ints)
    assert got.dtype == np.float32
    _close(got, np.convolve(ints, ints), 1e-4)
    with enable_x64():
        a, b = _sig(9, dtype=np.float64), _sig(4, dtype=np.float64)
        got = S.fftconvolve(a, b, "same")
        assert got.dtype == np.float64
        _close(got, ss.fftconvolve(a, b, "same"), 1e-12)


def test_fftconvolve_errors():
    with pytest.raises(ValueError, match="in1 and in2 should have the same dimensionality"):
        S.fftconvolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"mode must be one of \['same', 'full', 'valid'\]"):
        S.fftconvolve(np.ones(3), np.ones(3), "circular")
    with pytest.raises(ValueError, match="One input must be at least as large"):
        S.fftconvolve(np.ones((2, 5)), np.ones((3, 3)), "valid")
    with pytest.raises(ValueError, match="mapped axes must have same shape"):
        S.fftconvolve(np.ones((2, 5)), np.ones((3, 3)), axes=1)


# --- detrend ---

@pytest.mark.parametrize("kind", ["linear", "constant"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_detrend_matches_scipy(kind, axis):
    x = _sig(6, 20, 3) + np.arange(20, dtype=np.float32)[None, :, None]
    _close(S.detrend(x, axis=axis, type=kind), ss.detrend(x, axis=axis, type=kind))


def test_detrend_breakpoints_ints_and_complex():
    x = _sig(3, 40)
    _close(S.detrend(x, bp=[10, 25]), ss.detrend(x, bp=[10, 25]))
    _close(S.detrend(x, bp=7), ss.detrend(x, bp=7))
    ints = np.arange(10, dtype=np.int32) ** 2
    got = S.detrend(ints)
    assert got.dtype == np.float32
    _close(got, ss.detrend(ints.astype(np.float64)))
    z = (x + 1j * _sig(3, 40)).astype(np.complex64)
    _close(S.detrend(z), ss.detrend(z))


def test_detrend_errors():
    with pytest.raises(ValueError, match="Trend type must be 'linear' or 'constant'"):
        S.detrend(np.ones(4), type="quadratic")
    with pytest.raises(ValueError, match="Breakpoints must be non-negative"):
        S.detrend(np.ones(4), bp=[9])
    with pytest.raises(NotImplementedError, match="overwrite_data"):
        S.detrend(np.ones(4), overwrite_data=True)


# --- stft / istft ---

STFT_KWARGS = [
    dict(nperseg=8), dict(nperseg=9, noverlap=3), dict(nperseg=8, nfft=12, boundary=None,
                                                       padded=False),
    dict(nperseg=8, window="hamming", detrend="linear", return_onesided=False),
    dict(nperseg=7, boundary="even"), dict(nperseg=7, boundary="odd", fs=3.0),
    dict(nperseg=7, boundary="constant", detrend="constant"),
    dict(window=np.hanning(10), nperseg=10, noverlap=4), dict(nperseg=6, window=("tukey", 0.25)),
]


@pytest.mark.parametrize("kw", STFT_KWARGS, ids=lambda kw: ",".join(kw))
def test_stft_matches_scipy(kw):
    x = _sig(3, 40)
    f1, t1, z1 = S.stft(x, **kw)
    f2, t2, z2 = ss.stft(x, **kw)
    _close(f1, f2), _close(t1, t2), _close(z1, z2)
    assert z1.dtype == np.complex64 and f1.dtype == np.float32
    _, _, z1 = S.stft(x.T, axis=0, **kw)
    _close(z1, ss.stft(x.T, axis=0, **kw)[2])


def test_stft_complex_input_and_long_window():
    z = (_sig(30) + 1j * _sig(30)).astype(np.complex64)
    with pytest.warns(UserWarning, match="Input data is complex"):
        got = S.stft(z, nperseg=8)[2]
    _close(got, ss.stft(z, nperseg=8, return_onesided=False)[2])
    x = _sig(20)
    with pytest.warns(UserWarning, match="nperseg = 256 is greater than input length"):
        got = S.stft(x)[2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(got, ss.stft(x)[2])


ISTFT_KWARGS = [dict(nperseg=8), dict(nperseg=8, noverlap=6), dict(nperseg=9, noverlap=3),
                dict(nperseg=8, window="hamming"), dict(nperseg=8, nfft=10),
                dict(nperseg=8, noverlap=0, window="boxcar")]


@pytest.mark.parametrize("kw", ISTFT_KWARGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v
                                                                     in kw.items()))
@pytest.mark.parametrize("onesided", [True, False])
def test_istft_matches_scipy_and_inverts_stft(kw, onesided):
    x = _sig(2, 40)
    _, _, z = ss.stft(x, return_onesided=onesided, **kw)
    t1, x1 = S.istft(z.astype(np.complex64), input_onesided=onesided, **kw)
    t2, x2 = ss.istft(z, input_onesided=onesided, **kw)
    _close(t1, t2), _close(x1, x2)
    _, _, zf = S.stft(x, return_onesided=onesided, **kw)
    _, back = S.istft(zf, input_onesided=onesided, **kw)
    np.testing.assert_allclose(np.real(np.asarray(back))[:, :40], x, atol=1e-4)


def test_istft_axes():
    x = _sig(3, 32)
    _, _, z = ss.stft(x, nperseg=8)  # [3, freq, time]
    zt = np.transpose(z, (2, 0, 1)).astype(np.complex64)  # [time, 3, freq]
    t1, x1 = S.istft(zt, nperseg=8, time_axis=0, freq_axis=-1)
    t2, x2 = ss.istft(np.transpose(z, (2, 0, 1)), nperseg=8, time_axis=0, freq_axis=-1)
    _close(t1, t2), _close(x1, x2)


def test_istft_errors():
    with pytest.raises(ValueError, match="Input stft must be at least 2d!"):
        S.istft(np.ones(4, np.complex64))
    with pytest.raises(ValueError, match="Must specify differing time and frequency axes!"):
        S.istft(np.ones((5, 4), np.complex64), time_axis=0, freq_axis=0)
    with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
        S.istft(np.ones((5, 4), np.complex64), noverlap=9)
    with pytest.raises(ValueError, match=r"FFT length \(4\) must be longer than nperseg"):
        S.istft(np.ones((5, 4), np.complex64), nperseg=6, nfft=4)
    with pytest.raises(ValueError, match="window must have length of 8"):
        S.istft(np.ones((5, 4), np.complex64), window=np.ones(6))


# --- csd / welch ---

WELCH_KWARGS = [
    dict(), dict(nperseg=8), dict(nperseg=9, noverlap=3, scaling="spectrum"),
    dict(nperseg=8, nfft=11, average="median"), dict(nperseg=16, average="median"),
    dict(nperseg=8, window=("tukey", 0.3), detrend="linear", return_onesided=False),
    dict(nperseg=8, detrend=False, fs=10.0), dict(window=np.hamming(12)),
    dict(nperseg=8, detrend=lambda d: d - fnp.mean(d, axis=-1, keepdims=True)),
]


@pytest.mark.parametrize("kw", WELCH_KWARGS, ids=lambda kw: ",".join(kw) or "defaults")
def test_welch_and_csd_match_scipy(kw):
    x, y = _sig(3, 60), _sig(3, 60)
    ref_kw = dict(kw)
    if callable(kw.get("detrend")):
        ref_kw["detrend"] = lambda d: d - d.mean(axis=-1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f1, p1 = S.welch(x, **kw)
        f2, p2 = ss.welch(x, **ref_kw)
        _close(f1, f2), _close(p1, p2)
        assert p1.dtype == np.float32
        f1, p1 = S.csd(x, y, **kw)
        _close(p1, ss.csd(x, y, **ref_kw)[1])
        assert p1.dtype == np.complex64
        _close(S.welch(x.T, axis=0, **kw)[1], ss.welch(x.T, axis=0, **ref_kw)[1])


def test_csd_broadcasting_and_unequal_lengths():
    x, y = _sig(3, 50), _sig(1, 50)
    _close(S.csd(x, y, nperseg=8)[1], ss.csd(x, y, nperseg=8)[1])
    x, y = _sig(3, 50), _sig(3, 40)  # the shorter one is zero-padded
    _close(S.csd(x, y, nperseg=8)[1], ss.csd(x, y, nperseg=8)[1])


def test_welch_x64_and_complex():
    with enable_x64():
        x = _sig(2, 64, dtype=np.float64)
        f, p = S.welch(x, nperseg=16)
        assert p.dtype == np.float64
        _close(p, ss.welch(x, nperseg=16)[1], 1e-12)
    z = (_sig(64) + 1j * _sig(64)).astype(np.complex64)
    with pytest.warns(UserWarning, match="Input data is complex"):
        got = S.welch(z, nperseg=16)
    _close(got[1], ss.welch(z, nperseg=16, return_onesided=False)[1])


def test_spectral_errors():
    x = np.ones(32, np.float32)
    with pytest.raises(ValueError, match="nperseg must be a positive integer"):
        S.welch(x, nperseg=0)
    with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
        S.welch(x, nperseg=8, noverlap=8)
    with pytest.raises(ValueError, match="nfft must be greater than or equal to nperseg"):
        S.welch(x, nperseg=8, nfft=4)
    with pytest.raises(ValueError, match="Unknown scaling: power"):
        S.welch(x, nperseg=8, scaling="power")
    with pytest.raises(ValueError, match='average must be "median" or "mean", got mode'):
        S.welch(x, nperseg=8, average="mode")
    with pytest.raises(ValueError, match="Unknown boundary option 'wrap'"):
        S.stft(x, nperseg=8, boundary="wrap")
    with pytest.raises(ValueError, match="value specified for nperseg is different"):
        S.welch(x, window=np.ones(8), nperseg=6)
    with pytest.raises(ValueError, match="window must be 1-D"):
        S.welch(x, window=np.ones((2, 4)))
    with pytest.raises(ValueError, match="two-arguments must have the same rank"):
        S.csd(np.ones((2, 32)), x, nperseg=8)
    with pytest.raises(ValueError, match="x and y cannot be broadcast together"):
        S.csd(np.ones((2, 32)), np.ones((3, 32)), nperseg=8)


# --- transformations ---

def test_grads():
    with enable_x64():
        x, y = _sig(40, dtype=np.float64), _sig(40, dtype=np.float64)
        check_grads(lambda v: S.welch(v, nperseg=8)[1], (x,), order=2, modes=("fwd", "rev"))
        check_grads(lambda a, b: S.csd(a, b, nperseg=8, detrend="linear")[1], (x, y),
                    order=1, modes=("fwd", "rev"))
        check_grads(lambda v: S.stft(v, nperseg=8, boundary="odd")[2], (x,), order=1,
                    modes=("fwd", "rev"))
        z = ss.stft(x, nperseg=8)[2]
        check_grads(lambda v: S.istft(v, nperseg=8)[1], (z,), order=1, modes=("fwd", "rev"))
        check_grads(lambda a, b: S.fftconvolve(a, b, "same"), (x, y[:5]), order=2,
                    modes=("fwd", "rev"))
        check_grads(lambda v: S.detrend(v, bp=[13]), (x,), order=1, modes=("fwd", "rev"))


def test_jit_and_vmap():
    x = _sig(4, 48)
    fn = lambda v: S.welch(v, nperseg=16)[1]  # noqa: E731
    _close(functrax.jit(fn)(x), ss.welch(x, nperseg=16)[1])
    _close(functrax.vmap(fn)(x), ss.welch(x, nperseg=16)[1])
    g = lambda v: S.istft(S.stft(v, nperseg=8)[2], nperseg=8)[1]  # noqa: E731
    _close(functrax.jit(functrax.vmap(g))(x), x, 1e-4)
    h = lambda a: S.fftconvolve(a, x[0, :5], "valid")  # noqa: E731
    _close(functrax.vmap(h)(x), np.stack([ss.fftconvolve(r, x[0, :5], "valid") for r in x]))


def test_traced_fs():
    x = _sig(48)
    f, p = functrax.jit(lambda fs: S.welch(x, fs=fs, nperseg=16))(fnp.asarray(4.0))
    f2, p2 = ss.welch(x, fs=4.0, nperseg=16)
    _close(f, f2), _close(p, p2)


@pytest.mark.parametrize("module", ["functrax.scipy", "functrax.scipy.signal",
                                    "functrax.scipy.signal_spectral",
                                    "functrax.scipy.signal_windows"])
def test_doctests(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
