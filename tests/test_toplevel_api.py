"""The top-level names of issue 15's "toplevel" part: ``functrax.Device`` / ``Shard`` /
``process_indices``, ``functrax.typing``, ``dtypes.itemsize_bits`` / ``scalar_type_of``, the
error classes of ``functrax.errors`` (JAX's hierarchy), ``enable_checks`` (every jaxpr a
trace, partial evaluation or pass produces is type-checked) and ``explain_cache_misses``
(jit logs why it traces again)."""
from __future__ import annotations

import logging
import typing

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import core, dtypes, errors, lax
from functrax.passes import pipeline

# --- devices ---


def test_device_is_the_class_of_the_devices():
    assert all(isinstance(d, functrax.Device) for d in functrax.devices())
    assert functrax.process_indices() == list(range(functrax.process_count()))


def test_shard_of_a_pmap_output():
    x = functrax.pmap(lambda v: v * 2)(np.arange(1.0, dtype=np.float32)[None][:1])
    shard, = x.addressable_shards
    assert isinstance(shard, functrax.Shard)
    assert shard.device == functrax.devices()[0] and shard.replica_id == 0
    assert repr(shard).startswith("Shard(device=CpuDevice(id=0), index=(0,), replica_id=0,")


# --- functrax.typing ---


def test_typing_aliases_annotate():
    from functrax.typing import ArrayLike, DTypeLike

    def f(x: ArrayLike, dtype: DTypeLike = None) -> functrax.Array:
        return fnp.asarray(x, dtype)

    assert f(3, np.float32).dtype == np.float32
    args = typing.get_args(ArrayLike)
    assert functrax.Array in args and np.ndarray in args and float in args
    assert np.dtype in typing.get_args(DTypeLike) and str in typing.get_args(DTypeLike)
    assert isinstance(fnp.ones(2), functrax.typing.SupportsDType)


# --- dtypes ---


@pytest.mark.parametrize("dtype,bits", [
    (np.float32, 32), ("bfloat16", 16), (np.float16, 16), (bool, 8), (np.int8, 8),
    (np.uint64, 64), (np.complex64, 64), (np.complex128, 128), (np.dtype("int16"), 16),
])
def test_itemsize_bits(dtype, bits):
    assert dtypes.itemsize_bits(dtype) == bits


def test_itemsize_bits_of_none():
    with pytest.raises(ValueError, match="dtype cannot be None"):
        dtypes.itemsize_bits(None)


@pytest.mark.parametrize("x,typ", [
    (1.0, float), (1, int), (True, bool), (1j, complex), (np.float16(1), float),
    (np.uint8(1), int), (np.arange(3), int), (np.bool_(True), bool),
    (fnp.ones(2, "bfloat16"), float), (fnp.ones(2, "complex64"), complex),
])
def test_scalar_type_of(x, typ):
    assert dtypes.scalar_type_of(x) is typ


def test_scalar_type_of_a_tracer():
    seen = []
    functrax.jit(lambda x: seen.append(dtypes.scalar_type_of(x)) or x)(np.int32(1))
    assert seen == [int]


def test_scalar_type_of_a_bad_value():
    with pytest.raises(TypeError, match="Invalid scalar value"):
        dtypes.scalar_type_of(np.array(["a"]))


# --- errors ---


def test_error_hierarchy_is_jaxs():
    assert issubclass(errors.JAXTypeError, TypeError)
    assert issubclass(errors.JAXIndexError, IndexError)
    assert issubclass(errors.JaxRuntimeError, RuntimeError)
    assert issubclass(errors.KeyReuseError, errors.JAXTypeError)
    assert issubclass(errors.InconclusiveDimensionOperation, Exception)
    for cls in (errors.ConcretizationTypeError, errors.TracerArrayConversionError,
                errors.TracerBoolConversionError, errors.TracerIntegerConversionError,
                errors.UnexpectedTracerError):
        assert issubclass(cls, errors.JAXTypeError), cls
    assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
    assert functrax.errors is errors


def test_library_raises_the_jax_classes():
    with pytest.raises(errors.JAXTypeError):
        functrax.jit(lambda x: 1 if x > 0 else 2)(1.0)
    with pytest.raises(errors.JAXIndexError):
        functrax.jit(lambda x: x[x > 0])(fnp.ones(3))


# --- enable_checks ---


def _programs():
    def loss(w, x):
        y = lax.scan(lambda c, v: (c * v + 1.0, c), 0.5, x * w)[0]
        return lax.cond(y > 0, lambda y: fnp.sin(y), lambda y: y * y, y)
    x = np.linspace(0.1, 1.0, 4).astype(np.float32)
    yield lambda: functrax.jit(functrax.grad(loss))(1.5, x)
    yield lambda: functrax.vmap(functrax.grad(loss), (0, None))(np.ones(3, np.float32), x)
    yield lambda: functrax.jacrev(functrax.jit(lambda v: fnp.tanh(v) @ v))(x)
    yield lambda: functrax.make_jaxpr(functrax.hessian(lambda v: fnp.sum(v ** 3)))(x)


def test_enable_checks_passes_on_well_typed_programs():
    with functrax.enable_checks(True):
        assert functrax.config.enable_checks
        for run in _programs():
            run()
    assert not functrax.config.enable_checks


def test_enable_checks_catches_an_ill_typed_pass(monkeypatch):
    def bad_pass(closed):  # retype the first equation's output: an ill-typed program
        j = closed.jaxpr
        eqn = j.eqns[0]
        v = core.Var(eqn.outvars[0].aval.update(shape=(7,)))
        eqns = [eqn.replace(outvars=[v])] + j.eqns[1:]
        return core.ClosedJaxpr(core.Jaxpr(j.constvars, j.invars, [v], eqns), closed.consts)

    monkeypatch.setattr(pipeline, "PASSES", [("broken", bad_pass)])
    f = functrax.make_jaxpr(lambda x: fnp.sin(x))(np.ones(3, np.float32))
    assert pipeline.optimize(f) is not f  # unchecked: accepted silently
    with functrax.enable_checks():
        with pytest.raises(errors.JaxprTypeError,
                           match="enable_checks: the jaxpr produced by the pass 'broken'"):
            pipeline.optimize(f)


def test_enable_checks_is_a_trace_context_flag():
    f = functrax.jit(lambda x: x + 1)
    f(1.0)
    with functrax.enable_checks():
        f(1.0)  # traced again: the checks run on the new trace
    assert f._cache_size() == 1  # (the cache of the current context)


def test_enable_checks_restores_on_exception():
    with pytest.raises(ZeroDivisionError):
        with functrax.enable_checks(True):
            1 / 0
    assert functrax.config.enable_checks is False
    with pytest.raises(TypeError, match="must be a bool"):
        functrax.enable_checks("yes")


# --- explain_cache_misses ---


def _misses(caplog, calls):
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="functrax"):
        with functrax.explain_cache_misses():
            calls()
    return [r.getMessage() for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]


def test_explain_cache_misses(caplog):
    def f(x, y, n=2):
        return x * y + n
    g = functrax.jit(f, static_argnames="n")

    def calls():
        g(fnp.ones(3), 2.0)
        g(fnp.ones(3), 3.0)  # a hit: no report
        g(fnp.ones(4), 2.0)
        g(fnp.ones(4), fnp.float32(2.0))
        g(fnp.ones(4), 2.0, n=3)
        h((1.0,))
        h((1.0, 2.0))
    h = functrax.jit(lambda t: t[0])
    first, shape, weak, static, _, tree = _misses(caplog, calls)
    here = "test_toplevel_api.py"
    assert first.startswith("TRACING CACHE MISS at ") and here in first.splitlines()[0]
    assert first.splitlines()[1:3] == ["  never seen function:",
                                       first.splitlines()[2]]
    assert first.splitlines()[2].startswith(f"    f id={id(f)} defined at ")
    assert shape.splitlines()[1].startswith("  for f defined at ")
    assert shape.splitlines()[2:] == [
        "  never seen input type signature:", "    x: f32[4]", "    y: f32[]",
        "  closest seen input type signature has 1 mismatches, including:",
        "    * at x, seen f32[3], but now given f32[4]"]
    assert "    * at y, seen f32[]{weak_type=True}, but now given f32[]{weak_type=False}" in \
        weak.splitlines()
    assert static.splitlines()[2:] == ["  never seen static argument values:",
                                       "    * at n, seen <not passed>, but now given 3"]
    assert tree.splitlines()[2].startswith("  never seen input pytree: PyTreeDef(")


def test_explain_cache_misses_names_a_context_change(caplog):
    g = functrax.jit(lambda x: x * 2)

    def calls():
        g(1.0)
        with functrax.enable_checks():
            g(1.0)
    first, ctx = _misses(caplog, calls)
    assert ctx.splitlines()[2] == ("  tracing context doesn't match, e.g. due to config or "
                                   "context manager")


def test_no_report_without_the_flag(caplog):
    g = functrax.jit(lambda x: x * 2)
    with caplog.at_level(logging.WARNING, logger="functrax"):
        g(1.0)
        g(fnp.ones(2))
    assert not [r for r in caplog.records if "TRACING CACHE MISS" in r.getMessage()]


def test_prng_flags_legacy_key_default_impl_and_custom_prng():
    import warnings
    from functrax import random
    raw = random.PRNGKey(0)
    want = np.asarray(random.normal(raw))
    with functrax.legacy_prng_key("warn"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            np.testing.assert_array_equal(np.asarray(random.normal(raw)), want)
        assert any("Legacy uint32 key array" in str(w.message) for w in caught)
    with functrax.legacy_prng_key("error"):
        with pytest.raises(ValueError, match="Legacy uint32 key array passed as key"):
            random.normal(raw)
        with pytest.raises(ValueError, match="Legacy uint32 key array"):
            functrax.jit(random.normal)(raw)
        random.normal(random.key(0))  # typed keys are fine
    random.normal(raw)  # restored: allow
    assert functrax.default_prng_impl.value == "threefry2x32"
    assert str(random.key_impl(random.key(1))) == "threefry2x32"
    with pytest.raises(ValueError, match="implements the 'threefry2x32' PRNG only"):
        functrax.config.update("jax_default_prng_impl", "rbg")
    with pytest.raises(ValueError, match="new enum value must be in"):
        functrax.legacy_prng_key("sometimes")
    with functrax.enable_custom_prng():
        assert functrax.config.enable_custom_prng is True
    assert functrax.config.enable_custom_prng is False
