"""Host callbacks: Python functions run on the host from inside a (jitted, transformed)
program, as JAX's ``debug_callback``, ``debug_print``, ``pure_callback`` and ``io_callback``.

- ``debug_callback`` (``functrax.debug.callback``) and ``debug_print``
  (``functrax.debug.print``) return nothing and have the effect ``Debug`` (``OrderedDebug``
  when ``ordered=True``);
- ``io_callback`` (``functrax.experimental.io_callback``) returns arrays and has the effect
  ``IO`` (``OrderedIO``);
- ``pure_callback`` (``functrax.pure_callback``) returns arrays and has no effect: it may be
  dropped when its results are unused.

The effects are declared in the IR's ``effect_rules`` (``functrax/core/jaxpr.py``), so every
pass keeps an effectful equation (never dropped, merged, folded or duplicated) and the
executors keep the ordered ones in program order. The callbacks run through the numpy rules
(``functrax/lowering/numpy/callbacks.py``); the Triton backend runs them on the host between
its kernels.

>>> import functrax
>>> print(functrax.make_jaxpr(lambda x: functrax.debug.callback(print, x) or x)(1.0))
... # doctest: +ELLIPSIS
{ lambda ; a:f32[]. let
    debug_callback[callback=<function ...> effect=Debug partitioned=False] a
  in (a,) }
"""
from __future__ import annotations

from functrax.core import Effect, effect_rules, no_abstract_eval_cache
from functrax.core.jaxpr import pp_kv_pairs, pp_param_rules, sorted_params
from functrax.primitives.define import Family, new_primitive
from functrax.tree_util import tree_leaves, tree_unflatten

__all__ = [
    "debug_callback_p", "debug_print_p", "pure_callback_p", "io_callback_p", "DebugEffect",
    "OrderedDebugEffect", "IOEffect", "OrderedIOEffect", "debug_effect",
    "ordered_debug_effect", "io_effect", "ordered_io_effect", "FlatCallback",
    "VMAP_METHODS",
]


# --- effects (printed as JAX prints them) ---

class DebugEffect(Effect):
    """The effect of ``debug.callback`` / ``debug.print``."""
    __slots__ = ()
    name = "Debug"


class OrderedDebugEffect(Effect):
    """``debug.callback(..., ordered=True)``: runs in program order with other ordered ones."""
    __slots__ = ()
    name = "OrderedDebug"
    ordered = True


class IOEffect(Effect):
    """The effect of ``io_callback``."""
    __slots__ = ()
    name = "IO"


class OrderedIOEffect(Effect):
    """``io_callback(..., ordered=True)``."""
    __slots__ = ()
    name = "OrderedIO"
    ordered = True


debug_effect, ordered_debug_effect = DebugEffect(), OrderedDebugEffect()
io_effect, ordered_io_effect = IOEffect(), OrderedIOEffect()

debug_callback_p = new_primitive("debug_callback", multiple_results=True, family=Family.CALLBACK)
debug_print_p = new_primitive("debug_print", multiple_results=True, family=Family.CALLBACK)
pure_callback_p = new_primitive("pure_callback", multiple_results=True, family=Family.CALLBACK)
io_callback_p = new_primitive("io_callback", multiple_results=True, family=Family.CALLBACK)

no_abstract_eval_cache.update((debug_callback_p, debug_print_p, pure_callback_p, io_callback_p))

# JAX's pure_callback vmap_method values (None: vmap raises)
VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")


class FlatCallback:
    """A Python function called with flat arguments, returning flat results (the ``callback``
    param of ``pure_callback`` / ``io_callback``): ``in_tree`` is the ``(args, kwargs)``
    structure of the user's call. Equal for the same function and structure (as JAX's
    ``_FlatCallback``).
    """

    __slots__ = ("callback_func", "in_tree")

    def __init__(self, callback_func, in_tree):
        self.callback_func = callback_func
        self.in_tree = in_tree

    def __call__(self, *flat_args) -> list:
        args, kwargs = tree_unflatten(self.in_tree, flat_args)
        return tree_leaves(self.callback_func(*args, **kwargs))

    def __eq__(self, other):
        return (type(other) is FlatCallback and self.callback_func == other.callback_func
                and self.in_tree == other.in_tree)

    def __hash__(self):
        return hash((self.callback_func, self.in_tree))

    def __repr__(self):
        return f"_FlatCallback(callback_func={self.callback_func!r}, in_tree={self.in_tree})"


# --- abstract evaluation: the result types the caller declared ---

@debug_callback_p.def_abstract_eval
def _debug_callback_abstract_eval(*avals, callback, effect, partitioned):
    return []


@debug_print_p.def_abstract_eval
def _debug_print_abstract_eval(*avals, fmt, has_placeholders, in_tree, logging_record,
                               np_printoptions, ordered, partitioned, static_args):
    return []


@pure_callback_p.def_abstract_eval
def _pure_callback_abstract_eval(*avals, callback, result_avals, sharding, vmap_method):
    return list(result_avals)


@io_callback_p.def_abstract_eval
def _io_callback_abstract_eval(*avals, callback, result_avals, sharding, ordered):
    return list(result_avals)


effect_rules[debug_callback_p] = lambda params: frozenset({params["effect"]})
effect_rules[debug_print_p] = lambda params: frozenset(
    {ordered_debug_effect if params["ordered"] else debug_effect})
effect_rules[io_callback_p] = lambda params: frozenset(
    {ordered_io_effect if params["ordered"] else io_effect})


# --- printing: JAX prints the callback param with its repr ---

def _pp_callback(eqn, ctx):
    params = dict(eqn.params)
    params["callback"] = _Repr(params["callback"])
    return pp_kv_pairs(sorted_params(params), ctx)


class _Repr:
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __str__(self):
        return repr(self.obj)


for _p in (debug_callback_p, pure_callback_p, io_callback_p):
    pp_param_rules[_p] = _pp_callback
del _p
