"""``functrax.debug.print`` and ``functrax.debug.callback``: Python run on the host with the
runtime values of a (jitted, transformed) program, as ``jax.debug.print`` / ``callback``.

Both bind a primitive with an effect (``debug_print`` / ``debug_callback``, JAX's jaxpr
forms), so jit never drops, merges or reorders them: eagerly they run at once, under ``jit``
every call of the compiled program runs them, under ``vmap`` once per example (in order),
under ``grad`` / ``jvp`` they see the primal values, in a ``scan`` / ``while_loop`` / ``cond``
body once per iteration taken.
"""
from __future__ import annotations

import functools
import inspect
import logging
import string

import numpy as np

from functrax import core
from functrax.primitives.callbacks import (
    debug_callback_p, debug_effect, debug_print_p, ordered_debug_effect,
)
from functrax.tree_util import tree_flatten, tree_unflatten

__all__ = ["print", "callback"]


def _split_static(flat):
    """``(dynamic leaves, ((index, static leaf), ...))``: arrays (and Python scalars) are
    runtime values, anything else (a string, an object) is passed as it is."""
    dyn, static = [], []
    for i, x in enumerate(flat):
        if core.is_arraylike(x):
            dyn.append(x)
        else:
            static.append((i, x))
    return dyn, tuple(static)


def _merge(dyn, static, n):
    it, table = iter(dyn), dict(static)
    return [table[i] if i in table else next(it) for i in range(n)]


# --- debug.callback ---

def callback(callback=None, *args, ordered: bool = False, partitioned: bool = False,
             **kwargs):
    """Call ``callback(*args, **kwargs)`` on the host with the runtime values of ``args``.

    Works eagerly and in staged programs (jit), under vmap (once per example), grad/jvp
    (with the primal values) and in control-flow bodies (once per iteration). Array
    arguments (and Python scalars) arrive as concrete ``Array`` s; other leaves as they are.
    Its return value is ignored. Called with only options (``callback(ordered=True)``) it
    returns a function taking ``(callback, *args, **kwargs)`` (JAX's two-call form).

    Args:
      callback: a Python callable; its result is ignored.
      *args, **kwargs: pytrees of arrays (and static values) passed to it.
      ordered: run in program order with the other ordered callbacks.
      partitioned: accepted (JAX: print local shards only; one device here).

    Raises:
      TypeError: when ``callback`` is not callable.

    >>> import functrax
    >>> f = functrax.jit(lambda x: functrax.debug.callback(print, x) or x * 2)
    >>> _ = f(3.0)
    3.0
    """
    if callback is None:
        if args or kwargs:
            raise TypeError("functrax.debug.callback(ordered=..., partitioned=...) (the "
                            "two-call form) takes options only; pass the callback and its "
                            "arguments to the function it returns")
        return functools.partial(debug_callback, ordered=ordered, partitioned=partitioned)
    debug_callback(callback, *args, ordered=ordered, partitioned=partitioned, **kwargs)


def debug_callback(callback, *args, ordered=False, partitioned=False, **kwargs):
    if not callable(callback):
        raise TypeError("first argument to functrax.debug.callback must be callable, but got "
                        f"an object of type {type(callback)}")
    flat, in_tree = tree_flatten((args, kwargs))
    dyn, static = _split_static(flat)
    n = len(flat)

    def _flat_callback(*dyn_args):
        a, kw = tree_unflatten(in_tree, _merge(dyn_args, static, n))
        callback(*a, **kw)
        return ()

    effect = ordered_debug_effect if ordered else debug_effect
    debug_callback_p.bind(*dyn, callback=_flat_callback, effect=effect,
                          partitioned=bool(partitioned))


# --- debug.print ---

class _FormatChecker(string.Formatter):
    """Checks ``fmt`` against the arguments without formatting them (JAX's checker)."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [a for i, a in enumerate(args) if i not in used_args]
        unused_kw = [k for k in kwargs if k not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `functrax.debug.print`: {unused}")
        if unused_kw:
            raise ValueError(
                f"Unused keyword arguments to `functrax.debug.print`: {unused_kw}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `functrax.debug.print` and instead "
                "should pass in a regular string.")


_CHECKER = _FormatChecker()


def _has_placeholders(fmt: str) -> bool:
    return any(field is not None for _, field, _, _ in string.Formatter().parse(fmt))


class _LogSite:
    """Where ``debug.print(..., _use_logging=True)`` was called: the log record it emits."""

    __slots__ = ("pathname", "lineno", "func")

    def __init__(self, frame):
        self.pathname, self.lineno, self.func = frame.filename, frame.lineno, frame.function

    def __call__(self, text):
        log = logging.getLogger("functrax")
        log.handle(log.makeRecord(log.name, logging.INFO, self.pathname, self.lineno, text,
                                  (), None, self.func))

    def __repr__(self):
        return f"LogSite({self.pathname}:{self.lineno})"


def print(fmt=None, *args, ordered: bool = False, partitioned: bool = False,  # noqa: A001
          skip_format_check: bool = False, _use_logging: bool = False, **kwargs):
    """Print ``fmt.format(*args, **kwargs)`` with the runtime values, also in staged code.

    ``fmt`` is a ``str.format`` template (positional ``{}`` / ``{0}`` and named ``{x}``
    fields, format specs such as ``{x:.2f}``), formatted when the program runs, with the
    numpy print options of the call. Not an f-string: ``print("x={x}", x=x)``. Runs as
    :func:`callback` does (once per example under vmap, primal values under grad, once per
    iteration in loops). Called with only options (``print(ordered=True)``) it returns a
    printer (JAX's two-call form).

    Args:
      fmt: the format string.
      *args, **kwargs: pytrees of arrays (and static values) to format.
      ordered: print in program order with the other ordered prints / callbacks.
      partitioned: accepted (JAX: print local shards only; one device here).
      skip_format_check: do not check ``fmt`` against the arguments now.

    Raises:
      ValueError: for arguments ``fmt`` does not use (an f-string passed by mistake).

    >>> import functrax, functrax.numpy as fnp
    >>> @functrax.jit
    ... def f(x):
    ...     functrax.debug.print("x = {}", x)
    ...     return x
    >>> _ = f(fnp.arange(3.0))
    x = [0. 1. 2.]
    """
    options = dict(ordered=ordered, partitioned=partitioned,
                   skip_format_check=skip_format_check, _use_logging=_use_logging)
    if fmt is None:
        if args or kwargs:
            raise TypeError("functrax.debug.print(ordered=..., ...) (the two-call form) "
                            "takes options only; pass the format string and its arguments "
                            "to the function it returns")
        return functools.partial(_print, **options)
    if _use_logging:
        options["_site"] = _LogSite(inspect.stack()[1])
    _print(fmt, *args, **options, **kwargs)


def _print(fmt, *args, ordered=False, partitioned=False, skip_format_check=False,
           _use_logging=False, _site=None, **kwargs):
    if not isinstance(fmt, str):
        raise TypeError(f"functrax.debug.print: fmt must be a format string (str), got "
                        f"{type(fmt).__name__} {fmt!r}; print a value with "
                        "functrax.debug.print(\"{}\", x)")
    if not skip_format_check:
        _CHECKER.format(fmt, *args, **kwargs)
    if _use_logging and _site is None:
        _site = _LogSite(inspect.stack()[1])
    flat, in_tree = tree_flatten((args, kwargs))
    dyn, static = _split_static(flat)
    debug_print_p.bind(
        *dyn, fmt=fmt, has_placeholders=_has_placeholders(fmt), in_tree=in_tree,
        logging_record=_site, np_printoptions=tuple(np.get_printoptions().items()),
        ordered=bool(ordered), partitioned=bool(partitioned), static_args=static)
