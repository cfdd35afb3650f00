"""``functrax.experimental.shard_map.shard_map``: JAX's older home of ``shard_map``, which
also accepts the older keyword ``check_rep`` (an alias of ``check_vma``).

>>> import functrax
>>> from functrax.experimental.shard_map import shard_map
>>> m = functrax.make_mesh((1,), ("x",), devices=functrax.devices()[:1])
>>> shard_map(lambda b: b * 2, mesh=m, in_specs=functrax.P("x"), out_specs=functrax.P("x"),
...           check_rep=False)(functrax.numpy.ones(2))
Array([2., 2.], dtype=float32)
"""
from functrax.transforms.shard_map_api import _INFER
from functrax.transforms.shard_map_api import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f=None, /, *, mesh=None, in_specs=_INFER, out_specs, check_rep=None,
              check_vma=None, auto=frozenset(), axis_names=frozenset()):
    """``functrax.shard_map`` with JAX's older keywords: ``check_rep`` (an alias of
    ``check_vma``; default True) and ``auto`` (the mesh axes *not* handled by hand).

    Raises:
      TypeError: when both ``check_rep`` and ``check_vma`` are given.
    """
    if check_rep is not None and check_vma is not None:
        raise TypeError("shard_map: pass check_vma or check_rep (its older name), not both")
    check = True if check_rep is None and check_vma is None else bool(
        check_vma if check_vma is not None else check_rep)
    if auto:
        if mesh is None:
            raise ValueError("shard_map: auto= needs an explicit mesh")
        axis_names = frozenset(n for n in mesh.axis_names if n not in set(auto))
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                      axis_names=axis_names, check_vma=check)
