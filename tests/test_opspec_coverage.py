"""Every public functrax.numpy function is checked by the op-spec table (or listed here with
the test that covers it instead)."""
import types

import functrax.numpy as fnp
from tests.opspec import all_specs

# function -> where it is tested instead, and why it is not an op-spec entry
EXEMPT = {
    # dtype helpers: not array functions; tested against JAX's tables
    "can_cast": "tests/test_promotion.py", "finfo": "tests/test_promotion.py",
    "iinfo": "tests/test_promotion.py", "isdtype": "tests/test_promotion.py",
    "issubdtype": "tests/test_promotion.py", "promote_types": "tests/test_promotion.py",
    "result_type": "tests/test_promotion.py",
    # functions of static integers / shapes returning tuples of index arrays
    "broadcast_shapes": "tests/test_shape_creation_errors.py (returns a shape tuple)",
    "diag_indices": "tests/test_indexing.py::test_index_helpers",
    "diag_indices_from": "tests/test_indexing.py::test_index_helpers",
    "tril_indices": "tests/test_indexing.py::test_index_helpers",
    "tril_indices_from": "tests/test_indexing.py::test_index_helpers",
    "triu_indices": "tests/test_indexing.py::test_index_helpers",
    "triu_indices_from": "tests/test_indexing.py::test_index_helpers",
    "indices": "tests/test_indexing.py::test_index_helpers",
    "ix_": "tests/test_indexing.py::test_index_helpers",
    "extract": "tests/test_indexing.py::test_compress_extract_select (concrete-only)",
    # not array functions of array arguments: tested in tests/test_numpy_extra.py
    "einsum_path": "tests/test_numpy_extra.py (returns the contraction path, not arrays)",
    "from_dlpack": "tests/test_numpy_extra.py (io round trips)",
    "frombuffer": "tests/test_numpy_extra.py (io round trips)",
    "fromstring": "tests/test_numpy_extra.py (io round trips)",
    "load": "tests/test_numpy_extra.py (io round trips)",
    "fromfile": "tests/test_numpy_extra.py (JAX's NotImplementedError)",
    "fromiter": "tests/test_numpy_extra.py (JAX's NotImplementedError)",
    "iscomplexobj": "tests/test_numpy_extra.py (returns a Python bool)",
    "isrealobj": "tests/test_numpy_extra.py (returns a Python bool)",
    "isscalar": "tests/test_numpy_extra.py (returns a Python bool)",
    "trim_zeros": "tests/test_numpy_extra.py (concrete-only: the output size is the data's)",
    # packed together in the 'shape_info' spec of tests/opspec/shape_ops.py
    "ndim": "tests/opspec/shape_ops.py (shape_info)",
    "size": "tests/opspec/shape_ops.py (shape_info)",
}


def _public_functions(mod):
    return sorted(n for n in dir(mod) if not n.startswith("_")
                  and isinstance(getattr(mod, n), types.FunctionType)
                  and getattr(mod, n).__module__.startswith("functrax.numpy"))


def _covered(name, fn, specs, prefix=""):
    ids = {id(s.fn) for s in specs}
    names = {s.name for s in specs}
    full = prefix + name
    return id(fn) in ids or any(n == full or n.startswith(full + "_") for n in names)


def test_every_numpy_function_has_an_op_spec():
    specs = all_specs()
    missing = [n for n in _public_functions(fnp)
               if n not in EXEMPT and not _covered(n, getattr(fnp, n), specs)
               and not _covered(n, getattr(fnp, n), specs, "linalg_")]
    assert not missing, f"functrax.numpy functions without an op spec: {missing}"


def test_every_linalg_function_has_an_op_spec():
    specs = all_specs()
    missing = [n for n in _public_functions(fnp.linalg)
               if n in getattr(fnp.linalg, "__all__", ())
               and not _covered(n, getattr(fnp.linalg, n), specs, "linalg_")]
    assert not missing, f"functrax.numpy.linalg functions without an op spec: {missing}"


def test_exemptions_are_real_functions():
    stale = [n for n in EXEMPT if not hasattr(fnp, n)]
    assert not stale, f"EXEMPT lists names functrax.numpy does not have: {stale}"
