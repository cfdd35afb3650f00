"""``functrax.numpy.fft`` and ``functrax.lax.fft``: numpy equality (complex64 and, with
x64, complex128), norms, shapes and errors, Parseval's identity through ``grad``, vmap,
jit, the transpose rules (``linear_transpose`` against the bilinear pairing and dense DFT
matrices), the cost rule and the printed jaxpr. The op-spec table (tests/opspec/fft.py)
covers eager/jit/vmap/order-2 gradients/Triton of every transform too.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.lowering.cost import cost_analysis
from functrax.test_util import check_grads, enable_x64
from tests.opspec import all_specs

F = fnp.fft
RNG = np.random.default_rng(0)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)


def _real(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _cplx(shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _close(got, want, tol=1e-4):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


COMPLEX_IN = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "irfft", "irfft2", "irfftn",
              "hfft"]
REAL_IN = ["rfft", "rfft2", "rfftn", "ihfft"]
ONE_D = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}
NORMS = [None, "backward", "ortho", "forward"]


def _kwargs(name):
    if name in ONE_D:
        return [{}, {"n": 5}, {"n": 9, "axis": 0}]
    if name.endswith("2"):
        return [{}, {"s": (3, 5)}, {"axes": (0, 2)}, {"axes": (2, 0), "s": (4, 3)}]
    return [{}, {"axes": (0, 2)}, {"s": (2, 3, 5)}, {"axes": (-1, 0), "s": (6, 2)}]


# --- numpy equality ---

@pytest.mark.parametrize("name", COMPLEX_IN + REAL_IN)
@pytest.mark.parametrize("norm", NORMS)
def test_matches_numpy_complex64(name, norm):
    x = _cplx((3, 4, 6)) if name in COMPLEX_IN else _real((3, 4, 6))
    for kw in _kwargs(name):
        got = getattr(F, name)(fnp.asarray(x), norm=norm, **kw)
        want = getattr(np.fft, name)(x, norm=norm, **kw)
        assert got.dtype == want.dtype, (name, kw, got.dtype, want.dtype)
        _close(got, want)


@pytest.mark.parametrize("name", COMPLEX_IN + REAL_IN)
def test_matches_numpy_complex128_with_x64(name):
    with enable_x64():
        x = _cplx((3, 4, 6), np.complex128) if name in COMPLEX_IN else _real((3, 4, 6),
                                                                             np.float64)
        for norm in ("ortho", "forward"):
            for kw in _kwargs(name):
                got = getattr(F, name)(fnp.asarray(x), norm=norm, **kw)
                want = getattr(np.fft, name)(x, norm=norm, **kw)
                assert got.dtype == want.dtype, (name, kw, got.dtype)
                _close(got, want, 1e-12)


def test_result_dtypes():
    f32, i32, c64 = fnp.ones(4), fnp.ones(4, dtype=np.int32), fnp.ones(4, dtype=C64)
    assert F.fft(f32).dtype == C64 and F.fft(i32).dtype == C64 and F.fft(c64).dtype == C64
    assert F.rfft(f32).dtype == C64 and F.rfft(i32).dtype == C64
    assert F.irfft(c64).dtype == np.float32 and F.hfft(c64).dtype == np.float32
    assert F.ifft(fnp.ones(4, dtype=bool)).dtype == C64
    with enable_x64():
        assert F.fft(fnp.ones(4, dtype=np.float64)).dtype == C128
        assert F.fft(fnp.ones(4, dtype=np.int32)).dtype == C128
        assert F.irfft(fnp.ones(3, dtype=C128)).dtype == np.float64
        assert F.rfft(fnp.ones(4, dtype=np.float32)).dtype == C64


def test_more_than_three_axes_chain_transforms():
    x = _cplx((2, 3, 2, 2, 3))
    for name in ("fftn", "ifftn"):
        _close(getattr(F, name)(fnp.asarray(x)), getattr(np.fft, name)(x))
    r = _real((2, 3, 2, 2, 4))
    _close(F.rfftn(fnp.asarray(r), axes=(4, 0, 1, 2)), np.fft.rfftn(r, axes=(4, 0, 1, 2)))
    _close(F.irfftn(fnp.asarray(x)), np.fft.irfftn(x))
    jaxpr = functrax.make_jaxpr(F.fftn)(fnp.asarray(x))
    lengths = [e.params["fft_lengths"] for e in jaxpr.jaxpr.eqns if e.primitive.name == "fft"]
    assert lengths == [(2, 2, 3), (2, 3)]  # as JAX: a 3-D transform, then the rest


def test_hermitian_round_trip():
    x = _real((2, 7))
    _close(F.hfft(F.ihfft(fnp.asarray(x)), n=7), x, 1e-5)
    _close(F.irfft(F.rfft(fnp.asarray(x)), n=7), x, 1e-5)


def test_zero_rank_and_empty_axes():
    x = fnp.asarray(_real((2, 3)))
    out = F.fftn(x, axes=())
    assert out.dtype == C64 and out.shape == (2, 3)
    _close(out, np.asarray(x).astype(C64))
    assert lax.fft(x, "fft", ()).dtype == C64


# --- frequencies and shifts ---

@pytest.mark.parametrize("n", [1, 4, 5, 8])
@pytest.mark.parametrize("d", [1.0, 0.1])
def test_fftfreq_rfftfreq(n, d):
    _close(F.fftfreq(n, d), np.fft.fftfreq(n, d), 1e-6)
    _close(F.rfftfreq(n, d), np.fft.rfftfreq(n, d), 1e-6)
    assert F.fftfreq(n, d).dtype == np.float32
    assert F.fftfreq(n, dtype=np.float16).dtype == np.float16
    with enable_x64():
        assert F.rfftfreq(n, d).dtype == np.float64
        np.testing.assert_allclose(F.fftfreq(n, d), np.fft.fftfreq(n, d), rtol=1e-15)


def test_fftfreq_traced_spacing():
    got = functrax.jit(lambda d: F.fftfreq(6, d))(fnp.asarray(0.5))
    _close(got, np.fft.fftfreq(6, 0.5), 1e-6)


def test_fftfreq_errors():
    with pytest.raises(ValueError, match="The n argument of functrax.numpy.fft.fftfreq only "
                                         "takes an int"):
        F.fftfreq([4])
    with pytest.raises(ValueError, match="The d argument of functrax.numpy.fft.rfftfreq only "
                                         "takes a single value"):
        F.rfftfreq(4, [1.0, 2.0])


def test_shifts():
    x = _real((4, 5))
    for axes in (None, 0, 1, (0, 1), (1,)):
        _close(F.fftshift(fnp.asarray(x), axes), np.fft.fftshift(x, axes))
        _close(F.ifftshift(fnp.asarray(x), axes), np.fft.ifftshift(x, axes))
    _close(F.ifftshift(F.fftshift(fnp.asarray(x))), x)


# --- errors ---

def test_errors_of_numpy_fft():
    x = fnp.ones((2, 3, 4))
    with pytest.raises(ValueError, match="does not support repeated axes"):
        F.fftn(x, axes=(0, 0))
    with pytest.raises(ValueError, match="does not support repeated axes"):
        F.fftn(x, axes=(-1, 2))
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        F.fftn(x, s=(2, 2), axes=(0,))
    with pytest.raises(ValueError, match="Shape should be non-negative"):
        F.fft(x, n=-1)
    with pytest.raises(ValueError, match="does not support multiple axes. Please use "
                                         "functrax.numpy.fft.fftn"):
        F.fft(x, axis=(0, 1))
    with pytest.raises(ValueError, match="only supports 2 axes"):
        F.fft2(x, axes=(0, 1, 2))
    with pytest.raises(ValueError, match="axis 3 is out of bounds for an array of dimension 3"):
        F.rfft(x, axis=3)
    with pytest.raises(ValueError, match="only real valued inputs supported for rfft"):
        F.rfft(fnp.ones(4, dtype=C64))
    with pytest.raises(ValueError, match='Invalid norm value bad; should be "backward",'
                                         '"ortho" or "forward".'):
        F.fft(x, norm="bad")
    with pytest.raises(ValueError, match="must have at least as many input dimensions"):
        F.fftn(fnp.ones(4), s=(2, 2))
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        F.fft([1.0, 2.0])


def test_errors_of_lax_fft():
    x = fnp.ones((2, 4), dtype=C64)
    with pytest.raises(ValueError, match="Unknown FFT type 'Fft'"):
        lax.fft(x, "Fft", (4,))
    with pytest.raises(TypeError, match="Unknown FFT type value '0'"):
        lax.fft(x, 0, (4,))
    with pytest.raises(ValueError, match=r"FFT input shape \(2, 4\) minor dimensions must be "
                                         r"equal to fft_lengths \(3,\)"):
        lax.fft(x, "fft", (3,))
    with pytest.raises(ValueError, match="must have at least as many input dimensions"):
        lax.fft(x, "fft", (1, 2, 4))
    with pytest.raises(ValueError, match="the last dimension must be fft_lengths"):
        lax.fft(x, "irfft", (4,))
    with pytest.raises(ValueError, match="IRFFT input shape .* all except the last"):
        lax.fft(x, "irfft", (3, 6))
    with pytest.raises(ValueError, match="FFT input must be complex64 or complex128, got "
                                         "float32"):
        lax.fft_p.bind(fnp.ones(4), fft_type=lax.FftType.FFT, fft_lengths=(4,))
    with pytest.raises(ValueError, match="RFFT input must be float32 or float64"):
        lax.fft_p.bind(x, fft_type=lax.FftType.RFFT, fft_lengths=(4,))


def test_fft_type_enum_and_names():
    assert [t.name for t in lax.FftType] == ["FFT", "IFFT", "RFFT", "IRFFT"]
    assert [int(t) for t in lax.FftType] == [0, 1, 2, 3]
    x = fnp.asarray(_cplx((4,)))
    for name in ("fft", "FFT", lax.FftType.FFT):
        _close(lax.fft(x, name, (4,)), np.fft.fft(np.asarray(x)))
    _close(lax.fft(fnp.ones(4, dtype=np.float16), "rfft", (4,)), np.fft.rfft(np.ones(4)))


# --- autodiff ---

def test_parseval_through_grad_real():
    """d/dx sum |fft(x)|^2 = 2 N x, since sum |fft(x)|^2 = N sum x^2."""
    x = _real((3, 8))
    n = 8
    g = functrax.grad(lambda v: fnp.sum(fnp.abs(F.fft(v)) ** 2))(fnp.asarray(x))
    _close(g, 2 * n * x)
    g = functrax.grad(lambda v: fnp.sum(fnp.abs(F.fft2(v)) ** 2))(fnp.asarray(x))
    _close(g, 2 * x.size * x, 1e-3)
    g = functrax.grad(lambda v: fnp.sum(fnp.abs(F.fft(v, norm="ortho")) ** 2))(fnp.asarray(x))
    _close(g, 2 * x)


@pytest.mark.parametrize("n", [7, 8])
def test_parseval_through_grad_rfft(n):
    """The half spectrum with the dropped conjugate twins counted twice:
    sum w |rfft(x)|^2 = N sum x^2, so the gradient is 2 N x."""
    x = _real((2, n))
    w = np.full(n // 2 + 1, 2.0, np.float32)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    g = functrax.grad(lambda v: fnp.sum(w * fnp.abs(F.rfft(v)) ** 2))(fnp.asarray(x))
    _close(g, 2 * n * x, 1e-3)


def test_parseval_through_grad_complex():
    """For complex z, JAX's convention: grad of sum |fft(z)|^2 = N sum |z|^2 is 2 N conj(z)."""
    z = _cplx((6,))
    g = functrax.grad(lambda v: fnp.sum(fnp.abs(F.fft(v)) ** 2))(fnp.asarray(z))
    _close(g, 2 * 6 * np.conj(z))
    g = functrax.grad(lambda v: fnp.sum(fnp.abs(F.ifft(v)) ** 2))(fnp.asarray(z))
    _close(g, 2 / 6 * np.conj(z))


def test_parseval_through_grad_irfft():
    """x = irfft(X) for a consistent half spectrum X: sum x^2 = (1/N) sum w |X|^2, so the
    gradient (JAX's convention, conj) is (2/N) w conj(X) on those entries."""
    n = 8
    spec = np.fft.rfft(_real((n,))).astype(C64)
    w = np.array([1, 2, 2, 2, 1], np.float32)
    g = functrax.grad(lambda v: fnp.sum(F.irfft(v, n=n) ** 2))(fnp.asarray(spec))
    _close(g, 2 / n * w * np.conj(spec), 1e-4)


@pytest.mark.parametrize("fn, dtype", [
    (lambda v: F.fftn(v, s=(3, 5), axes=(1, 0), norm="ortho"), C128),
    (lambda v: F.rfftn(v, s=(4, 5)), np.float64),
    (lambda v: F.irfftn(v, s=(3, 7)), C128),
    (lambda v: F.hfft(v, n=5, norm="forward"), C128),
    (lambda v: F.ihfft(v, axis=0), np.float64),
    (lambda v: F.fftshift(F.fft(v)), C128),
])
def test_check_grads_x64(fn, dtype):
    with enable_x64():
        x = _cplx((3, 4), dtype) if np.dtype(dtype).kind == "c" else _real((3, 4), dtype)
        check_grads(fn, (x,), order=2, modes=("fwd", "rev"))


# --- transpose rules ---

def _dft(n, inverse=False):
    k = np.arange(n)
    m = np.exp((2j if inverse else -2j) * np.pi * np.outer(k, k) / n)
    return m / n if inverse else m


TRANSPOSE_CASES = [("fft", (2, 6), (6,)), ("ifft", (2, 3, 4), (3, 4)), ("rfft", (2, 7), (7,)),
                   ("rfft", (3, 6), (3, 6)), ("irfft", (2, 4), (6,)), ("irfft", (2, 4), (7,)),
                   ("irfft", (3, 3), (3, 5)), ("irfft", (3, 4), (3, 6))]


@pytest.mark.parametrize("typ, shape, lengths", TRANSPOSE_CASES)
def test_linear_transpose_matches_bilinear_pairing(typ, shape, lengths):
    """<ct, f(x)> = <f^T(ct), x> with JAX's pairing Re(sum a * b)."""
    x = _real(shape) if typ == "rfft" else _cplx(shape)
    f = lambda v: lax.fft(v, typ, lengths)  # noqa: E731
    out = np.asarray(f(fnp.asarray(x)))
    ct = _cplx(out.shape) if out.dtype.kind == "c" else _real(out.shape)
    (xt,) = functrax.linear_transpose(f, x)(fnp.asarray(ct))
    assert xt.dtype == x.dtype and xt.shape == x.shape
    lhs = np.real(np.sum(ct.astype(C128) * out))
    rhs = np.real(np.sum(np.asarray(xt).astype(C128) * x))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4, atol=1e-4)


def test_fft_transposes_are_the_dense_transposes():
    n = 6
    ct = _cplx((n,))
    for typ, mat in (("fft", _dft(n)), ("ifft", _dft(n, True))):
        (xt,) = functrax.linear_transpose(lambda v: lax.fft(v, typ, (n,)), ct)(fnp.asarray(ct))
        _close(xt, mat.T @ ct)
    # rfft as a real-linear map R^n -> C^(n//2+1): the rows of the DFT it keeps
    m = _dft(n)[: n // 2 + 1]
    ct = _cplx((n // 2 + 1,))
    (xt,) = functrax.linear_transpose(lambda v: lax.fft(v, "rfft", (n,)), _real((n,)))(
        fnp.asarray(ct))
    _close(xt, np.real(m.T @ ct))


def test_grad_equals_vjp_of_transpose():
    x = _real((4, 6))
    f = lambda v: fnp.sum(fnp.real(F.rfft2(v)) * fnp.imag(F.rfft2(v) + 1j))  # noqa: E731
    g1 = functrax.grad(f)(fnp.asarray(x))
    _, vjp = functrax.vjp(f, fnp.asarray(x))
    _close(g1, vjp(np.float32(1.0))[0])


# --- vmap, jit ---

@pytest.mark.parametrize("name, kw, in_axis", [
    ("fft", {}, 1), ("ifft", {"n": 5}, 0), ("rfft", {"axis": 0}, 2), ("irfft", {}, 1),
    ("fft2", {}, 2), ("rfftn", {"axes": (1, 0)}, 1), ("irfft2", {"s": (3, 4)}, 0),
    ("hfft", {}, 2), ("ihfft", {}, 1),
])
def test_vmap_matches_loop(name, kw, in_axis):
    x = _cplx((3, 4, 5)) if name in COMPLEX_IN else _real((3, 4, 5))
    fn = lambda v: getattr(F, name)(v, **kw)  # noqa: E731
    got = functrax.vmap(fn, in_axes=in_axis)(fnp.asarray(x))
    want = np.stack([np.asarray(fn(fnp.asarray(np.take(x, i, axis=in_axis))))
                     for i in range(x.shape[in_axis])])
    _close(got, want)


def test_vmap_moves_the_batch_axis_first():
    x = fnp.asarray(_cplx((4, 3)))
    jaxpr = functrax.make_jaxpr(functrax.vmap(lambda v: lax.fft(v, "fft", (4,)), in_axes=1))(x)
    eqns = [e.primitive.name for e in jaxpr.jaxpr.eqns]
    assert eqns == ["transpose", "fft"]
    assert jaxpr.jaxpr.eqns[1].invars[0].aval.shape == (3, 4)


def test_jit_matches_eager():
    x = fnp.asarray(_real((3, 8)))
    for fn in (lambda v: F.rfft(v, n=6, norm="ortho"), lambda v: F.irfftn(F.rfftn(v)),
               lambda v: F.fftshift(F.fft2(v, s=(4, 4)), axes=1),
               functrax.grad(lambda v: fnp.sum(fnp.abs(F.hfft(v)) ** 2))):
        _close(functrax.jit(fn)(x), fn(x), 1e-5)


def test_jvp_is_the_transform_of_the_tangent():
    x, t = _cplx((5,)), _cplx((5,))
    out, tout = functrax.jvp(F.ifft, (fnp.asarray(x),), (fnp.asarray(t),))
    _close(out, np.fft.ifft(x))
    _close(tout, np.fft.ifft(t))


# --- printing, cost, coverage ---

def test_printed_jaxpr():
    text = str(functrax.make_jaxpr(lambda v: lax.fft(v, lax.FftType.RFFT, (8,)))(fnp.ones(8)))
    assert "fft[fft_lengths=(8,) fft_type=2]" in text, text  # str(IntEnum), as JAX prints
    assert "c64[5]" in text


@pytest.mark.parametrize("shape, lengths, typ", [((3, 8), (8,), "fft"), ((16,), (16,), "rfft"),
                                                 ((2, 4, 8), (4, 8), "ifft")])
def test_cost_is_5_n_log2_n_per_transform(shape, lengths, typ):
    x = fnp.ones(shape, dtype=np.float32 if typ == "rfft" else C64)
    closed = functrax.make_jaxpr(lambda v: lax.fft(v, typ, lengths))(x)
    n = int(np.prod(lengths))
    batch = int(np.prod(shape)) // n
    assert cost_analysis(closed)["flops"] == 5 * batch * n * np.log2(n)


def test_every_numpy_fft_function_has_an_op_spec_or_a_test_here():
    names = {s.name for s in all_specs()}
    tested_here = {"fftfreq", "rfftfreq"}
    public = [n for n in F.__all__ if isinstance(getattr(F, n), types.FunctionType)]
    assert len(public) == 18
    missing = [n for n in public if n not in tested_here and f"fft_{n}" not in names]
    assert not missing, missing


@pytest.mark.parametrize("module", ["functrax.numpy.fft", "functrax.primitives.fft",
                                    "functrax.lowering.numpy.fft"])
def test_doctests(module):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
