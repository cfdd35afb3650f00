"""Primitives of the PRNG (``functrax.random``): the threefry2x32 block cipher, bit-level
reinterpretation of arrays (``bitcast_convert_type``) and the typed-key primitives.

``threefry2x32(k1, k2, x1, x2) -> (y1, y2)``: the Random123 Threefry-2x32 cipher with 20
rounds, applied elementwise to the counter words ``(x1, x2)`` under the key ``(k1, k2)``.
Every operand is uint32; as for other n-ary elementwise primitives, operands have equal
shapes except that rank-0 operands may stand beside arrays (the key words usually are).

``bitcast_convert_type(x, new_dtype)``: the bits of ``x`` read as ``new_dtype``. Equal widths
keep the shape; a wider input gains a trailing axis of ``in_bits // out_bits``; a narrower
input loses its trailing axis, which must have ``out_bits // in_bits`` elements (as XLA).

The typed-key primitives (as JAX's) operate on arrays of a key dtype (``key<fry>``, whose
element is physically ``uint32[2]``); the key array's shape excludes that trailing axis:

- ``random_seed[impl](seeds)``: integer seeds of any shape -> keys of that shape;
- ``random_bits[bit_width shape](keys)``: ``uint<bit_width>[*keys.shape, *shape]``;
- ``random_split[shape](keys)``: keys of shape ``(*keys.shape, *shape)``;
- ``random_fold_in(keys, msgs)``: uint32 ``msgs`` of the keys' shape (or rank 0) folded in;
- ``random_wrap[impl](data)``: ``uint32[..., 2]`` data -> keys of shape ``data.shape[:-1]``;
- ``random_unwrap(keys)``: the keys' ``uint32[..., 2]`` data;
- ``random_clone(keys)``: the keys themselves (JAX's key-reuse checker tells clones apart).

Their algorithm on the physical data is in ``prng_impl.py``; ``passes/physicalize.py``
rewrites them (and every shape operation on keys) onto the data before lowering.
"""
from __future__ import annotations

from functrax.primitives.define import Family, ShapedArray, dtypes, new_primitive, np


threefry2x32_p = new_primitive("threefry2x32", multiple_results=True, family=Family.PRNG)


@threefry2x32_p.def_abstract_eval
def _threefry2x32_abstract(k1, k2, x1, x2):
    avals = (k1, k2, x1, x2)
    if any(a.dtype != np.uint32 for a in avals):
        got = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"threefry2x32: every operand must have dtype uint32, got {got}")
    shapes = {a.shape for a in avals if a.shape != ()}
    if len(shapes) > 1:
        got = ", ".join(str(a.shape) for a in avals)
        raise TypeError(f"threefry2x32: operands must have equal shapes (rank-0 operands may "
                        f"stand beside arrays), got shapes {got}")
    shape = shapes.pop() if shapes else ()
    return [ShapedArray(shape, np.uint32), ShapedArray(shape, np.uint32)]


bitcast_convert_type_p = new_primitive("bitcast_convert_type", family=Family.ELEMENTWISE)


def bitcast_shape(name: str, shape: tuple, old_dtype, new_dtype) -> tuple:
    """The result shape of bitcasting ``shape`` from ``old_dtype`` to ``new_dtype``.

    Raises:
      TypeError: for bool/complex dtypes of different types, or a trailing axis of the
        wrong size when the new dtype is wider.
    """
    old, new = np.dtype(old_dtype), np.dtype(new_dtype)
    if old != new and (old.kind in "bc" or new.kind in "bc"):
        raise TypeError(f"{name} does not support bool or complex values unless the operand "
                        f"and destination types match, got operand dtype={old.name} and "
                        f"new_dtype={new.name}")
    if old.itemsize == new.itemsize:
        return tuple(shape)
    if old.itemsize > new.itemsize:
        return tuple(shape) + (old.itemsize // new.itemsize,)
    ratio = new.itemsize // old.itemsize
    if not shape or shape[-1] != ratio:
        raise TypeError(f"{name}: casting {old.name} to the wider {new.name} needs an operand "
                        f"whose last axis has {ratio} elements, got shape {tuple(shape)}")
    return tuple(shape[:-1])


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_abstract(x, *, new_dtype):
    if not dtypes.is_supported(new_dtype):
        raise TypeError(f"bitcast_convert_type: unsupported new_dtype {new_dtype!r}")
    shape = bitcast_shape("bitcast_convert_type", x.shape, x.dtype, new_dtype)
    return ShapedArray(shape, new_dtype)


# --- typed PRNG keys ---

random_seed_p = new_primitive("random_seed", family=Family.PRNG)
random_bits_p = new_primitive("random_bits", family=Family.PRNG)
random_split_p = new_primitive("random_split", family=Family.PRNG)
random_fold_in_p = new_primitive("random_fold_in", family=Family.PRNG)
random_wrap_p = new_primitive("random_wrap", family=Family.PRNG)
random_unwrap_p = new_primitive("random_unwrap", family=Family.PRNG)
random_clone_p = new_primitive("random_clone", family=Family.PRNG)

UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}


def check_key_operand(name: str, keys) -> None:
    """``keys`` (an aval) must have a PRNG key dtype."""
    if not dtypes.issubdtype(keys.dtype, dtypes.prng_key):
        raise TypeError(f"{name} takes key array operand, got keys.dtype={keys.dtype}")


def check_key_data(impl, data) -> None:
    """JAX's checks of raw key data (an aval) for ``impl``, with JAX's messages."""
    n = len(impl.key_shape)
    if data.ndim < 1:
        raise TypeError("functrax encountered invalid PRNG key data: expected key_data.ndim "
                        f">= 1; got ndim={data.ndim}")
    if data.shape[-n:] != impl.key_shape:
        raise TypeError("functrax encountered invalid PRNG key data: expected key_data.shape "
                        f"to end with {impl.key_shape}; got shape={data.shape} for "
                        f"impl={impl!r}")
    if data.dtype not in (np.uint32, dtypes.float0):
        raise TypeError("functrax encountered invalid PRNG key data: expected key_data.dtype "
                        f"= uint32; got dtype={data.dtype}")


@random_seed_p.def_abstract_eval
def _random_seed_abstract(seeds, *, impl):
    if dtypes.is_extended(seeds.dtype) or seeds.dtype.kind not in "iu":
        raise TypeError(f"PRNG key seed must be an integer; got dtype {seeds.dtype.name}")
    return ShapedArray(seeds.shape, dtypes.key_dtype(impl))


@random_bits_p.def_abstract_eval
def _random_bits_abstract(keys, *, bit_width, shape):
    check_key_operand("random_bits", keys)
    if bit_width not in UINT_DTYPES:
        raise TypeError(f"requires 8-, 16-, 32- or 64-bit field width, got {bit_width}")
    return ShapedArray(keys.shape + tuple(shape), UINT_DTYPES[bit_width])


@random_split_p.def_abstract_eval
def _random_split_abstract(keys, *, shape):
    check_key_operand("random_split", keys)
    return ShapedArray(keys.shape + tuple(shape), keys.dtype)


@random_fold_in_p.def_abstract_eval
def _random_fold_in_abstract(keys, msgs):
    check_key_operand("random_fold_in", keys)
    if msgs.dtype != np.uint32:
        raise TypeError(f"random_fold_in: msgs must have dtype uint32, got {msgs.dtype.name}")
    if keys.shape and msgs.shape and keys.shape != msgs.shape:
        raise TypeError(f"random_fold_in got incompatible shapes for broadcasting: "
                        f"{keys.shape}, {msgs.shape}.")
    return ShapedArray(keys.shape or msgs.shape, keys.dtype)


@random_wrap_p.def_abstract_eval
def _random_wrap_abstract(data, *, impl):
    check_key_data(impl, data)
    return ShapedArray(data.shape[:-len(impl.key_shape)], dtypes.key_dtype(impl))


@random_unwrap_p.def_abstract_eval
def _random_unwrap_abstract(keys):
    check_key_operand("random_unwrap", keys)
    dt = keys.dtype
    return ShapedArray(keys.shape + dt.physical_shape, dt.physical_dtype)


random_clone_p.def_abstract_eval(lambda keys: keys)


# --- wrappers that bind the primitives (re-exported by functrax.lax) ---


def bitcast_convert_type(operand, new_dtype):
    """The bits of ``operand`` reinterpreted as ``new_dtype`` (``lax.bitcast_convert_type``).

    Equal widths keep the shape; a wider operand dtype adds a trailing axis of size
    ``in_bits // out_bits``; a narrower one consumes a trailing axis of ``out_bits // in_bits``.

    >>> import numpy as np
    >>> bitcast_convert_type(np.float32(1.0), np.uint32)
    Array(1065353216, dtype=uint32)
    """
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def random_seed(seeds, impl):
    """Keys of ``impl`` from integer ``seeds`` (any shape: one key per seed)."""
    return random_seed_p.bind(seeds, impl=impl)


def random_bits(keys, bit_width: int, shape):
    """``bit_width`` random bits of ``shape`` per key: ``uint<bit_width>[*keys.shape, *shape]``."""
    return random_bits_p.bind(keys, bit_width=int(bit_width), shape=tuple(shape))


def random_split(keys, shape):
    """``shape`` new keys per key: keys of shape ``(*keys.shape, *shape)``."""
    return random_split_p.bind(keys, shape=tuple(shape))


def random_fold_in(keys, msgs):
    """New keys from ``keys`` and uint32 ``msgs`` (of the keys' shape, or rank 0)."""
    return random_fold_in_p.bind(keys, msgs)


def random_wrap(data, *, impl):
    """Keys of ``impl`` over raw ``uint32[..., *impl.key_shape]`` key data."""
    return random_wrap_p.bind(data, impl=impl)


def random_unwrap(keys):
    """The raw ``uint32`` data of key arrays (trailing the keys' shape)."""
    return random_unwrap_p.bind(keys)


def random_clone(keys):
    """A clone of ``keys`` (equal keys; JAX's key-reuse checker treats it as fresh)."""
    return random_clone_p.bind(keys)


__all__ = [
    "threefry2x32_p", "bitcast_convert_type_p", "bitcast_convert_type", "bitcast_shape",
    "random_seed_p", "random_bits_p", "random_split_p", "random_fold_in_p", "random_wrap_p",
    "random_unwrap_p", "random_clone_p", "random_seed", "random_bits", "random_split",
    "random_fold_in", "random_wrap", "random_unwrap", "random_clone", "check_key_data",
    "check_key_operand",
]
