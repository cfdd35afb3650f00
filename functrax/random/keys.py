"""PRNG keys, as JAX 0.10 has them: typed key arrays and raw ``uint32`` keys.

- ``key(seed)`` makes a *typed* key array: an Array of dtype ``key<fry>`` (an extended dtype,
  ``functrax.dtypes.KeyDType``) whose shape excludes the key's data; ``key_data`` gives the
  ``uint32[..., 2]`` data, ``wrap_key_data`` wraps data into keys.
- ``PRNGKey(seed)`` makes a *raw* key: the ``uint32[2]`` data itself.

Every function of ``functrax.random`` accepts both: a raw key is wrapped
(``random_wrap``, checked with JAX's messages) on the way in, and functions returning keys
(``split``, ``fold_in``) return raw keys for raw keys, so the two kinds give the same bits.

>>> k = key(0)
>>> k
Array((), dtype=key<fry>) overlaying:
[0 0]
>>> split(k).shape, split(PRNGKey(0)).shape
((2,), (2, 2))
>>> bool((key_data(split(k)) == split(PRNGKey(0))).all())
True
"""
from __future__ import annotations

from collections.abc import Sequence

import warnings

import numpy as np

from functrax import core, dtypes, lax
from functrax.config import config
from functrax.core import Array, Tracer
from functrax.primitives import prng as P
from functrax.random.prng import UINT_DTYPES, canonicalize_shape

__all__ = ["PRNGSpec", "PRNGKey", "bits", "check_key", "check_prng_key", "clone",
           "default_prng_impl", "fold_in", "key", "key_data", "key_dtype", "key_impl",
           "random_bits", "resolve_prng_impl", "return_keys", "split", "split_key",
           "wrap_key_data"]


# --- implementations ---


def default_prng_impl() -> dtypes.PRNGImpl:
    """The default PRNG implementation (``config.default_prng_impl``: threefry2x32, the only
    one functrax has)."""
    return dtypes.PRNG_IMPLS[config.default_prng_impl]


class PRNGSpec:
    """Specifies a PRNG key implementation (JAX's ``random.PRNGSpec``).

    >>> PRNGSpec(default_prng_impl())
    PRNGSpec('threefry2x32')
    """

    __slots__ = ("_impl",)

    def __init__(self, impl):
        self._impl = impl

    def __repr__(self):
        return f"PRNGSpec({self._impl.name!r})"

    def __str__(self):
        return str(self._impl)

    def __hash__(self):
        return hash(self._impl)

    def __eq__(self, other):
        return isinstance(other, PRNGSpec) and self._impl == other._impl


def resolve_prng_impl(impl_spec) -> dtypes.PRNGImpl:
    """The implementation named by ``impl_spec`` (None, a name, a PRNGSpec or an impl).

    Raises:
      ValueError: for an unknown name. TypeError: for another kind of value.
    """
    if impl_spec is None:
        return default_prng_impl()
    if type(impl_spec) is dtypes.PRNGImpl:
        return impl_spec
    if type(impl_spec) is PRNGSpec:
        return impl_spec._impl
    if type(impl_spec) is str:
        if impl_spec in dtypes.PRNG_IMPLS:
            return dtypes.PRNG_IMPLS[impl_spec]
        names = ", ".join(f'"{s}"' for s in dtypes.PRNG_IMPLS)
        raise ValueError(f'unrecognized PRNG implementation "{impl_spec}". Did you mean one '
                         f"of: {names}?")
    raise TypeError(f"unrecognized type {type(impl_spec)} for specifying PRNG "
                    "implementation.")


# --- argument checking ---


def _arraylike(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic)) or type(x) in (
        bool, int, float, complex)


def _is_typed_key(x) -> bool:
    return isinstance(x, (Array, Tracer)) and dtypes.issubdtype(x.dtype, dtypes.prng_key)


def check_prng_key(name: str, key, *, allow_batched: bool = False):
    """``(typed_key, wrapped)``: ``key`` as a typed key array (a raw ``uint32[..., 2]`` key is
    wrapped, with JAX's checks of its data), and whether it was raw.

    Raises:
      TypeError: for values that are not arrays, or invalid raw key data.
      ValueError: for a batch of keys where one key is expected.
    """
    if _is_typed_key(key):
        typed, wrapped = key, False
    elif _arraylike(key):
        _legacy_key_check()
        typed, wrapped = P.random_wrap(key, impl=default_prng_impl()), True
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if not allow_batched and core.get_aval(typed).ndim:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{np.shape(key)} != (). Use functrax.vmap for batching.")
    return typed, wrapped


_LEGACY_KEY_MESSAGE = (
    "Legacy uint32 key array passed as key to functrax.random function. Please create keys "
    "using functrax.random.key(). If use of a raw key array was intended, set "
    "functrax.config.update(\"jax_legacy_prng_key\", \"allow\").")


def _legacy_key_check():
    """``config.legacy_prng_key``: a raw key warns or raises when it says so (as JAX)."""
    mode = config.legacy_prng_key
    if mode == "warn":
        warnings.warn(_LEGACY_KEY_MESSAGE, UserWarning, stacklevel=4)
    elif mode == "error":
        raise ValueError(_LEGACY_KEY_MESSAGE)


def check_key(name: str, key, allow_batched: bool = False):
    """``key`` (typed or raw) as a typed key array (see :func:`check_prng_key`)."""
    return check_prng_key(name, key, allow_batched=allow_batched)[0]


def return_keys(wrapped: bool, keys):
    """Keys to return: raw data when the caller passed a raw key, else the typed keys."""
    return P.random_unwrap(keys) if wrapped else keys


def random_bits(key, bit_width: int, shape):
    """Uniform random bits of ``bit_width`` (8, 16, 32 or 64) and ``shape`` from a typed key."""
    if bit_width not in UINT_DTYPES:
        raise TypeError(f"random_bits requires 8-, 16-, 32- or 64-bit field width, got "
                        f"{bit_width}")
    if bit_width == 64 and not dtypes.x64_enabled():
        raise TypeError("64-bit random bits need functrax.config.update('enable_x64', True)")
    return P.random_bits(key, bit_width, shape)


def split_key(key, shape=(2,)):
    """``shape`` new typed keys from one typed key."""
    return P.random_split(key, tuple(shape))


# --- public API: keys ---


def _seed_operand(seed):
    """The seed as an integer scalar array (Python ints wrap as ``np.int64(seed)`` would)."""
    if type(seed) in (int, bool):
        if not -2 ** 63 <= seed < 2 ** 63:
            raise OverflowError(f"PRNGKey: seed {seed} does not fit in int64")
        return np.asarray(np.int64(seed)).astype(dtypes.default_int_dtype())
    if isinstance(seed, (np.ndarray, np.generic)):
        return np.asarray(seed).astype(dtypes.canonicalize_dtype(np.asarray(seed).dtype))
    if isinstance(seed, (Array, Tracer)):
        return seed
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r} of type "
                    f"{type(seed).__name__}")


def _key(ctor_name: str, seed, impl_spec):
    impl = resolve_prng_impl(impl_spec)
    if hasattr(seed, "dtype") and dtypes.issubdtype(seed.dtype, dtypes.prng_key):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed):
        raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use functrax.vmap for batching")
    return P.random_seed(_seed_operand(seed), impl)


def key(seed, *, impl=None):
    """A typed PRNG key (a scalar key array of dtype ``key<fry>``) from an integer seed.

    The key's data is ``[hi32(seed), lo32(seed)]`` of the seed as a canonical integer, as
    for :func:`PRNGKey`.

    Args:
      seed: an integer scalar (Python int, numpy integer, or integer array, possibly traced).
      impl: optional, the PRNG implementation: None or ``"threefry2x32"`` (the only one).
    Returns:
      A key array of shape ``()``.
    Raises:
      TypeError: for a non-scalar, non-integer or key seed. ValueError: for an unknown impl.

    >>> key(42)
    Array((), dtype=key<fry>) overlaying:
    [ 0 42]
    """
    return _key("key", seed, impl)


def PRNGKey(seed, *, impl=None):
    """A raw (legacy) PRNG key, the ``uint32[2]`` array ``[hi32(seed), lo32(seed)]``.

    With x64 off a Python int seed wraps to 32 bits, so the first word is 0.

    Args:
      seed: an integer scalar (Python int, numpy integer, or integer array, possibly traced).
      impl: optional, the PRNG implementation: None or ``"threefry2x32"``.
    Returns:
      A uint32 array of shape (2,).
    Raises:
      TypeError: for a non-integer or non-scalar seed. OverflowError: for a Python int
        outside int64.

    >>> PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    return P.random_unwrap(_key("PRNGKey", seed, impl))


def key_data(keys):
    """The ``uint32`` data of (a batch of) keys: shape ``keys.shape + (2,)`` for typed keys.

    >>> key_data(key(3))
    Array([0, 3], dtype=uint32)
    """
    typed, _ = check_prng_key("key_data", keys, allow_batched=True)
    return P.random_unwrap(typed)


def wrap_key_data(key_bits_array, *, impl=None):
    """Typed keys over ``uint32[..., 2]`` key data: a key array of shape ``data.shape[:-1]``.

    Raises:
      TypeError: for data that is not a uint32 array whose shape ends in (2,).

    >>> wrap_key_data(np.array([[0, 1], [2, 3]], np.uint32)).shape
    (2,)
    """
    impl_obj = resolve_prng_impl(impl)
    if not all(hasattr(key_bits_array, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError("functrax encountered invalid PRNG key data: expected key_data to have "
                        f"ndim, shape, and dtype attributes. Got {key_bits_array}")
    return P.random_wrap(key_bits_array, impl=impl_obj)


def key_impl(keys):
    """The name of the implementation of (typed or raw) keys: ``"threefry2x32"``.

    >>> key_impl(key(0))
    'threefry2x32'
    """
    typed, _ = check_prng_key("key_impl", keys, allow_batched=True)
    impl = typed.dtype.impl
    return impl.name if impl.name in dtypes.PRNG_IMPLS else PRNGSpec(impl)


def key_dtype(impl_spec=None) -> dtypes.KeyDType:
    """The dtype of typed keys of an implementation (default: threefry2x32's ``key<fry>``).

    >>> key_dtype()
    key<fry>
    """
    return dtypes.key_dtype(resolve_prng_impl(impl_spec))


def clone(key):
    """A clone of ``key`` (typed or raw): equal keys, bound as ``random_clone`` (JAX's
    key-reuse checker counts a clone as a fresh key)."""
    return P.random_clone(key)


def split(key, num=2):
    """Split a key into ``num`` new keys (``num`` may be a shape tuple).

    Args:
      key: a single key (typed or raw).
      num: the number of keys, or a shape.
    Returns:
      Typed keys of shape ``(num,)`` (or ``num``) for a typed key; raw keys
      (``uint32[num, 2]``) for a raw one.

    >>> split(PRNGKey(0))
    Array([[1797259609, 2579123966],
           [ 928981903, 3453687069]], dtype=uint32)
    """
    typed, wrapped = check_prng_key("split", key)
    shape = canonicalize_shape("split", num if isinstance(num, Sequence) else (num,))
    return return_keys(wrapped, split_key(typed, shape))


def _fold_data(data):
    if type(data) in (int, bool):
        if not 0 <= data < 2 ** 32:
            raise OverflowError(f"fold_in: data {data} does not fit in uint32 (0 <= data < "
                                "2**32)")
        return np.asarray(data, np.uint32)
    if not isinstance(data, (Array, Tracer, np.ndarray, np.generic)):
        raise TypeError(f"fold_in: data must be an integer scalar, got "
                        f"{type(data).__name__}")
    aval = core.get_aval(data)
    if aval.shape:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{aval.shape} != (). Use functrax.vmap for batching.")
    if dtypes.is_extended(aval.dtype) or aval.dtype.kind not in "iub":
        raise TypeError(f"fold_in: data must be an integer scalar, got dtype "
                        f"{aval.dtype.name}")
    return lax.convert_element_type(data, np.uint32)


def fold_in(key, data):
    """A new key from ``key`` (typed or raw) and the 32-bit integer ``data``.

    >>> fold_in(PRNGKey(0), 7)
    Array([2716826189,  292468403], dtype=uint32)
    """
    typed, wrapped = check_prng_key("fold_in", key)
    return return_keys(wrapped, P.random_fold_in(typed, _fold_data(data)))


def bits(key, shape=(), dtype=None):
    """Uniform random bits of an unsigned dtype (default ``uint``: uint32 unless x64).

    >>> bits(PRNGKey(0), (3,))
    Array([4070199207, 4202968722, 1427181096], dtype=uint32)
    """
    key = check_key("bits", key)
    dtype = dtypes.canonicalize_dtype(np.uint64 if dtype is None else dtype)
    if dtype.kind != "u":
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got "
                         f"{dtype.name}")
    shape = canonicalize_shape("bits", shape)
    return random_bits(key, 8 * dtype.itemsize, shape)
