"""functrax.stages and pmap's ahead-of-time stages (trace / lower / compile, as jit's)."""
import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax, stages


def test_jit_stages_and_dialects():
    lowered = functrax.jit(lambda x: fnp.sin(x) * 2.0).lower(1.0)
    assert isinstance(lowered, stages.Lowered)
    text = lowered.as_text()
    assert lowered.as_text(dialect="stablehlo") == text == lowered.as_text("hlo")
    with pytest.raises(ValueError, match="dialect"):
        lowered.as_text(dialect="llvm")
    assert isinstance(lowered.compile(), stages.Compiled)
    assert isinstance(functrax.jit(fnp.sin).trace(1.0), stages.Traced)
    assert isinstance(functrax.jit(fnp.sin), stages.Wrapped)


def test_pmap_trace_lower_compile():
    n = functrax.local_device_count()
    f = functrax.pmap(lambda x: lax.psum(x * 2.0, "i"), axis_name="i")
    x = fnp.ones((n, 3))
    traced = f.trace(x)
    assert isinstance(traced, stages.Traced) and "psum" in str(traced.jaxpr)
    assert traced.out_info.shape == (n, 3)
    lowered = f.lower(x)
    assert isinstance(lowered, stages.Lowered)
    assert "psum" in lowered.as_text() and lowered.as_text("stablehlo") == lowered.as_text()
    compiled = lowered.compile()
    assert isinstance(compiled, stages.Compiled)
    np.testing.assert_allclose(compiled(x), np.full((n, 3), 2.0 * n))
    with pytest.raises(TypeError, match="compiled for different input types"):
        compiled(fnp.ones((n, 4)))
    assert isinstance(f, stages.Wrapped)


def test_shape_dtype_struct_like_and_arg_info():
    s = functrax.ShapeDtypeStruct.like(np.zeros((2, 3), np.int32))
    assert (s.shape, s.dtype) == ((2, 3), np.int32)
    assert functrax.ShapeDtypeStruct.like(1.0).weak_type
    assert s.update(shape=(4,)).shape == (4,)
    info = stages.ArgInfo(functrax.core.ShapedArray((2,), np.float32), donated=True)
    assert info.shape == (2,) and info.donated
    assert stages.CompilerOptions is dict
