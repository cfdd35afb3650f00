"""Why jit traced a function again: the text ``functrax.explain_cache_misses`` logs (JAX's
``jax_explain_cache_misses`` report, in JAX's words).

A jit cache key is ``(input pytree, input avals, static arguments)`` under one trace
context (the trace-context config flags). On a miss the report names the call site and the
function, then the first of: a function never traced before, a different trace context, a
new input pytree, new static argument values, or the input types that differ from the
closest key seen (argument by argument, weak types marked).
"""
from __future__ import annotations

import os
import sys

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def callsite() -> str:
    """``file:line (function)`` of the innermost frame outside functrax (the user's call)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"


def _type_str(aval, other) -> str:
    s = aval.str_short()
    return s + f"{{weak_type={aval.weak_type}}}" if aval.weak_type != other.weak_type else s


def _static_label(k, pos_names):
    return pos_names[k] if isinstance(k, int) and k < len(pos_names) else k


def _explain_types(lines, seen, key, arg_names):
    """The input-type part: the closest seen signature and its mismatches."""
    _, avals, _ = key
    names = list(arg_names) + [f"args[{i}]" for i in range(len(arg_names), len(avals))]
    closest = min(seen, key=lambda k: sum(a != b for a, b in zip(k[1], avals)))[1]
    diffs = [(n, a, b) for n, a, b in zip(names, closest, avals) if a != b]
    lines.append("  never seen input type signature:")
    lines += [f"    {n}: {a.str_short()}" for n, a in zip(names, avals)]
    lines.append(f"  closest seen input type signature has {len(diffs)} mismatches, "
                 "including:")
    lines += [f"    * at {n}, seen {_type_str(a, b)}, but now given {_type_str(b, a)}"
              for n, a, b in diffs]
    if any(a.weak_type != b.weak_type for _, a, b in diffs):
        lines += ["where weak_type=True often means a Python builtin numeric value, and ",
                  "weak_type=False means a functrax.Array.",
                  "See https://docs.jax.dev/en/latest/type_promotion.html#weak-types."]


def explain_cache_miss(name, source, fun_id, key, seen, other_contexts_seen, arg_names,
                       pos_names=()) -> str:
    """The report of one tracing cache miss.

    Args:
      name, source, fun_id: the function's name, ``file:line`` and ``id``.
      key: the new cache key ``(in_tree, avals, statics)``.
      seen: the keys traced before under the same trace context (not ``key``).
      other_contexts_seen: whether the function was traced under another trace context.
      arg_names: one name per flat input leaf (``x``, ``params['w']``).
      pos_names: the positional parameter names (to name static arguments).
    """
    lines = [f"TRACING CACHE MISS at {callsite()} because:"]
    defined = f" defined at {source}" if source else ""
    if not seen:
        if other_contexts_seen:
            lines += [f"  for {name}{defined}",
                      "  tracing context doesn't match, e.g. due to config or context manager"]
        else:
            lines += ["  never seen function:", f"    {name} id={fun_id}{defined}"]
        return "\n".join(lines)
    lines.append(f"  for {name}{defined}")
    tree, _, statics = key
    same_tree = [k for k in seen if k[0] == tree]
    if not same_tree:
        lines += [f"  never seen input pytree: {tree}",
                  f"  the closest seen input pytree: {seen[-1][0]}"]
        return "\n".join(lines)
    same_statics = [k for k in same_tree if k[2] == statics]
    if not same_statics:
        old = dict(same_tree[-1][2])
        lines.append("  never seen static argument values:")
        lines += [f"    * at {_static_label(k, pos_names)}, seen "
                  f"{repr(old[k]) if k in old else '<not passed>'}, but now given {v!r}"
                  for k, v in statics if k not in old or old[k] != v]
        now = dict(statics)
        lines += [f"    * at {_static_label(k, pos_names)}, seen {v!r}, but now not passed"
                  for k, v in old.items() if k not in now]
        return "\n".join(lines)
    _explain_types(lines, same_statics, key, arg_names)
    return "\n".join(lines)
