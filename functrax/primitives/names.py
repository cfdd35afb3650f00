"""``name``: the identity that tags a value for ``checkpoint`` policies
(``functrax.ad_checkpoint.checkpoint_name``), printed as JAX prints it: ``name[name=x]``.

>>> import functrax
>>> print(functrax.make_jaxpr(lambda x: checkpoint_name(x, "h"))(1.0))
{ lambda ; a:f32[]. let b:f32[] = name[name=h] a in (b,) }
"""
from __future__ import annotations

from functrax import core
from functrax.core import ShapedArray
from functrax.primitives.define import Family, new_primitive
from functrax.tree_util import tree_map

name_p = new_primitive("name", family=Family.ELEMENTWISE)


@name_p.def_abstract_eval
def _name_abstract_eval(x, *, name):
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def checkpoint_name(x, name):
    """``x`` (a pytree of arrays) unchanged, each leaf tagged ``name`` for the policies of
    ``checkpoint`` (``save_only_these_names``, ...).

    Raises:
      TypeError: when ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a str, got {type(name).__name__}")
    return tree_map(lambda v: name_p.bind(v if isinstance(v, core.Tracer) else core.as_array(v),
                                          name=name), x)


__all__ = ["name_p", "checkpoint_name"]
