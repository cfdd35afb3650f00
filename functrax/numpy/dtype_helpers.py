"""dtype names and helpers re-exported by ``functrax.numpy`` (float32, promote_types, finfo...)."""
import ml_dtypes as _ml_dtypes
import numpy as np

from functrax import dtypes



class _ScalarMeta(type):
    """The metaclass of ``functrax.numpy``'s scalar types (``fnp.float32`` ...), as JAX's.

    A scalar type stands for its dtype wherever a dtype is accepted (``np.dtype(fnp.float32)``,
    ``x.astype(fnp.int8)``, ``x.dtype == fnp.float32``), and calling it makes an array:
    ``fnp.float32(x)`` is ``fnp.asarray(x, dtype=float32)``, so it works on tracers too.
    """

    def __call__(cls, x):
        if not dtypes.is_supported(cls.dtype):
            raise TypeError(
                f"functrax.numpy.{cls.__name__}: functrax arrays do not support dtype "
                f"{cls.dtype.name} (an ml_dtypes storage type); the name stands for the dtype "
                f"(np.dtype(functrax.numpy.{cls.__name__})), e.g. to build numpy arrays with "
                f"np.asarray(x, dtype=functrax.numpy.{cls.__name__}).")
        from functrax.numpy.creation import asarray
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type is other

    def __ne__(cls, other):
        return not cls == other

    def __hash__(cls):
        return hash(cls.dtype.type)


def _scalar_type(np_type):
    """The ``functrax.numpy`` scalar type of numpy scalar type ``np_type``."""
    name = np.dtype(np_type).name
    return _ScalarMeta(name if name != "bool" else "bool_", (object,),
                       {"dtype": np.dtype(np_type), "__module__": "functrax.numpy"})


bool_ = _scalar_type(np.bool_)
int8, int16, int32, int64 = (_scalar_type(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t)
                                 for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = _scalar_type(np.complex64), _scalar_type(np.complex128)
bfloat16 = _scalar_type(dtypes.bfloat16) if dtypes.bfloat16 is not None else None
float_, int_, complex_ = float64, int64, complex128
# numpy's C-style aliases, as JAX has them (``uint`` is uint64, canonicalized like int_)
bool = bool_  # noqa: A001
single, double, csingle, cdouble, uint = float32, float64, complex64, complex128, uint64
object_, flexible, character = np.object_, np.flexible, np.character
ComplexWarning = np.exceptions.ComplexWarning

# the narrow ml_dtypes types (sub-byte integers, 8/6/4-bit floats): names for their dtypes
_NARROW = ("int1", "int2", "int4", "uint1", "uint2", "uint4", "float8_e3m4", "float8_e4m3",
           "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
           "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
           "float4_e2m1fn")
globals().update({n: _scalar_type(getattr(_ml_dtypes, n)) for n in _NARROW
                  if hasattr(_ml_dtypes, n)})
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
# ``bool`` shadows the builtin inside ``from ... import *``: exported explicitly by __init__
__all__.remove("bool")
