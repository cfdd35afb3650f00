"""dtype names and helpers re-exported by ``functrax.numpy`` (float32, promote_types, finfo...)."""
import numpy as np

from functrax import dtypes

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
bfloat16 = dtypes.bfloat16
float_, int_, complex_ = np.float64, np.int64, np.complex128
dtype = np.dtype
generic, number, inexact, floating = np.generic, np.number, np.inexact, np.floating
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
complexfloating = np.complexfloating
promote_types = dtypes.promote_types
result_type = dtypes.result_type
finfo = dtypes.finfo
iinfo = dtypes.iinfo
issubdtype = dtypes.issubdtype
float0 = dtypes.float0


def can_cast(from_, to, casting="safe"):
    return np.can_cast(from_, to, casting)


def isdtype(dtype, kind):
    return np.isdtype(np.dtype(dtype), kind)


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("np", "dtypes")]
