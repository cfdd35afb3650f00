"""Call-like primitives, each holding a sub-jaxpr: ``jit`` (a compiled call),
``custom_jvp_call`` / ``custom_vjp_call`` / ``custom_lin`` (user-defined derivatives),
``remat2`` (``checkpoint``), ``linear_call`` (a linear function with a custom transpose)
and ``xla_pmap`` (a call mapped over devices). Only their
abstract evaluation lives here; the transforms that bind them are in
``functrax/transforms/``, their backend rules in ``functrax/lowering/``.
"""
from __future__ import annotations

from functrax.core import ShapedArray
from functrax.core.fingerprint import transform_only_params
from functrax.primitives.define import Family, new_primitive

jit_p = new_primitive("jit", multiple_results=True, family=Family.CALL)
custom_jvp_call_p = new_primitive("custom_jvp_call", multiple_results=True, family=Family.CALL)
custom_vjp_call_p = new_primitive("custom_vjp_call", multiple_results=True, family=Family.CALL)
custom_lin_p = new_primitive("custom_lin", multiple_results=True, family=Family.CALL)
remat_p = new_primitive("remat2", multiple_results=True, family=Family.CALL)
xla_pmap_p = new_primitive("xla_pmap", multiple_results=True, family=Family.CALL)
linear_call_p = new_primitive("linear_call", multiple_results=True, family=Family.CALL)

# --- jit ---


@jit_p.def_abstract_eval
def _jit_abstract_eval(*avals, jaxpr, name, backend=None):
    """The inner jaxpr's output types, once the operands match its inputs."""
    j = jaxpr.jaxpr
    inner = [v.aval for v in j.constvars + j.invars] if not jaxpr.consts else \
        [v.aval for v in j.invars]
    if len(avals) != len(inner) or any(
            (a.shape, a.dtype) != (b.shape, b.dtype) for a, b in zip(avals, inner)):
        got = ", ".join(a.str_short() for a in avals)
        want = ", ".join(b.str_short() for b in inner)
        raise TypeError(f"jit[name={name}]: operands ({got}) do not match the inner jaxpr's "
                        f"inputs ({want})")
    return list(jaxpr.out_avals)


# --- custom derivatives and checkpoint ---


def _call_abstract(*avals, call_jaxpr, **_):
    return list(call_jaxpr.out_avals)


custom_jvp_call_p.def_abstract_eval(_call_abstract)


custom_vjp_call_p.def_abstract_eval(_call_abstract)

# their Python rules matter to jvp/vjp only: a compiled program evaluates call_jaxpr
transform_only_params[custom_jvp_call_p] = frozenset({"jvp"})
transform_only_params[custom_vjp_call_p] = frozenset({"fwd", "bwd"})


custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


remat_p.def_abstract_eval(lambda *avals, jaxpr, **_: list(jaxpr.out_avals))


@linear_call_p.def_abstract_eval
def _linear_call_abstract_eval(*avals, callee, transpose, num_callee_consts,
                               num_transpose_consts, num_res):
    """``callee``'s outputs; the operands are the consts of ``callee`` and of ``transpose``,
    then the residuals and the linear operands (``callee`` takes all but the transpose's)."""
    ins = avals[:num_callee_consts] + avals[num_callee_consts + num_transpose_consts:]
    inner = callee.in_avals
    if len(ins) != len(inner) or any((a.shape, a.dtype) != (b.shape, b.dtype)
                                     for a, b in zip(ins, inner)):
        got = ", ".join(a.str_short() for a in ins)
        want = ", ".join(b.str_short() for b in inner)
        raise TypeError(f"linear_call: operands ({got}) do not match the callee's inputs "
                        f"({want})")
    return list(callee.out_avals)


# --- pmap: the per-device avals drop the mapped axis ---


def unmapped_aval(aval: ShapedArray, ax) -> ShapedArray:
    """The per-device aval of a global one mapped along ``ax`` (None: unchanged)."""
    if ax is None:
        return aval
    return aval.update(shape=aval.shape[:ax] + aval.shape[ax + 1:])


def mapped_aval(aval: ShapedArray, size: int, ax) -> ShapedArray:
    """The global aval of a per-device one, the mapped axis (of ``size``) at ``ax``."""
    if ax is None:
        return aval
    shape = list(aval.shape)
    shape.insert(ax, size)
    return aval.update(shape=tuple(shape))


@xla_pmap_p.def_abstract_eval
def _pmap_abstract_eval(*avals, call_jaxpr, axis_size, in_axes, out_axes, name, **_):
    inner = call_jaxpr.in_avals
    if len(avals) != len(inner) or len(in_axes) != len(avals):
        raise TypeError(f"xla_pmap[name={name}]: {len(avals)} operands for a jaxpr of "
                        f"{len(inner)} inputs and {len(in_axes)} in_axes")
    for i, (a, ax, b) in enumerate(zip(avals, in_axes, inner)):
        if ax is not None and (not 0 <= ax < a.ndim or a.shape[ax] != axis_size):
            raise TypeError(f"xla_pmap[name={name}]: operand {i} of type {a.str_short()} has "
                            f"no axis {ax} of the mapped size {axis_size}")
        u = unmapped_aval(a, ax)
        if (u.shape, u.dtype) != (b.shape, b.dtype):
            raise TypeError(f"xla_pmap[name={name}]: operand {i} is {u.str_short()} per "
                            f"device but the inner jaxpr takes {b.str_short()}")
    return [mapped_aval(a, axis_size, ax) for a, ax in zip(call_jaxpr.out_avals, out_axes)]

__all__ = [
    "jit_p", "custom_jvp_call_p", "custom_vjp_call_p", "custom_lin_p", "remat_p", "xla_pmap_p",
    "linear_call_p",
    "unmapped_aval", "mapped_aval",
]
