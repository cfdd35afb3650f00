"""Error types raised by functrax, each saying what happened, where, and how to fix it."""
from __future__ import annotations

_DOCS = "https://docs.jax.dev/en/latest/errors.html"

__all__ = [
    "JAXTypeError", "JAXIndexError", "JaxRuntimeError", "InconclusiveDimensionOperation",
    "KeyReuseError", "FunctraxTypeError", "ConcretizationTypeError", "TracerBoolConversionError",
    "TracerIntegerConversionError", "TracerArrayConversionError", "NonConcreteBooleanIndexError",
    "UnexpectedTracerError", "JaxprTypeError", "MissingRuleError",
]


class JAXTypeError(TypeError):
    """Base class of JAX's TypeErrors about traced values (the tracer-conversion errors,
    leaked tracers, reused keys), as ``jax.errors.JAXTypeError``."""


class JAXIndexError(IndexError):
    """Base class of JAX's IndexErrors about traced values (boolean-mask indexing with a
    traced mask), as ``jax.errors.JAXIndexError``."""


class JaxRuntimeError(RuntimeError):
    """An error of the runtime executing a compiled program (a failed CUDA call or kernel
    launch), as ``jax.errors.JaxRuntimeError``."""


class InconclusiveDimensionOperation(Exception):
    """An operation on symbolic dimensions whose result is not determined (JAX's shape
    polymorphism; functrax's shapes are concrete, so it raises none itself)."""


class KeyReuseError(JAXTypeError):
    """A PRNG key was used twice (JAX's key-reuse checker, ``jax_debug_key_reuse``)."""


# functrax's historical name of the base class
FunctraxTypeError = JAXTypeError


def _origin(tracer) -> str:
    describe = getattr(getattr(tracer, "_trace", None), "describe_origin", None)
    return describe(tracer) if describe is not None else ""


class ConcretizationTypeError(FunctraxTypeError):
    """A traced (abstract) value was used where a concrete Python value is needed."""

    def __init__(self, tracer, context: str = ""):
        msg = (f"Abstract tracer value encountered where concrete value is expected: {tracer}\n"
               f"{context}{_origin(tracer)}\n"
               "If the value is a static quantity (a shape, a size, a Python flag), pass it as a "
               "static argument (static_argnums / static_argnames) or compute it with numpy "
               "outside the traced function; for data-dependent control flow use "
               "functrax.lax.cond, while_loop or fori_loop.\n"
               f"See {_DOCS}#jax.errors.ConcretizationTypeError")
        super().__init__(msg)


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` (an ``if``, ``while``, ``and``/``or``) applied to a traced value."""

    def __init__(self, tracer):
        msg = (f"Attempted boolean conversion of traced array with shape "
               f"{tracer.aval.str_short()}.\n{_origin(tracer)}\n"
               "A Python `if`/`while`/`and`/`or` cannot branch on a traced value: use "
               "functrax.lax.cond / functrax.lax.switch (or functrax.numpy.where) for "
               "data-dependent branches, or mark the argument static (static_argnums).\n"
               f"See {_DOCS}#jax.errors.TracerBoolConversionError")
        FunctraxTypeError.__init__(self, msg)


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()`` / ``__index__`` applied to a traced value."""

    def __init__(self, tracer):
        msg = (f"The __index__() method was called on traced array with shape "
               f"{tracer.aval.str_short()}.\n{_origin(tracer)}\n"
               "A traced value cannot be used as a Python integer (an index, a size, a "
               "range bound): mark the argument static (static_argnums) or use "
               "functrax.lax.dynamic_slice / fori_loop.\n"
               f"See {_DOCS}#jax.errors.TracerIntegerConversionError")
        FunctraxTypeError.__init__(self, msg)


class TracerArrayConversionError(FunctraxTypeError):
    """``np.asarray`` (or another numpy conversion) applied to a traced value."""

    def __init__(self, tracer):
        msg = (f"The numpy.ndarray conversion method __array__() was called on traced array "
               f"with shape {tracer.aval.str_short()}.\n{_origin(tracer)}\n"
               "numpy functions cannot run on traced values: use the functrax.numpy "
               "equivalent (import functrax.numpy as fnp) inside transformed functions.\n"
               f"See {_DOCS}#jax.errors.TracerArrayConversionError")
        super().__init__(msg)


class NonConcreteBooleanIndexError(JAXIndexError):
    """Boolean-mask indexing with a traced mask (its result shape would be data-dependent)."""

    def __init__(self, tracer):
        msg = (f"Array boolean indices must be concrete; got {tracer.aval.str_short()}\n"
               "The result shape of boolean-mask indexing depends on the mask's values. Use "
               "functrax.numpy.where(mask, x, fill) to keep the shape, or compute the mask "
               "outside the traced function.\n"
               f"See {_DOCS}#jax.errors.NonConcreteBooleanIndexError")
        super().__init__(msg)


class UnexpectedTracerError(JAXTypeError):
    """A tracer was used outside the transformation that created it (it leaked).

    ``UnexpectedTracerError(message)`` (a str) carries ``message`` as it is (the tracer-leak
    check's report)."""

    def __init__(self, tracer, detail: str = ""):
        if isinstance(tracer, str):
            super().__init__(tracer)
            return
        info = getattr(tracer._trace, "debug_info", None)
        where = (f"The function being traced when the value leaked was {info.func_src()} "
                 f"traced for {info.traced_for}.\n") if info is not None else ""
        msg = (f"Encountered an unexpected tracer. A function transformed by functrax had a side "
               f"effect that let a traced value escape its transformation, e.g. by storing it "
               f"in a global, a closure or an object attribute. {detail}\n{where}"
               f"The escaped tracer: {tracer} (created by {tracer._trace.describe()}).\n"
               "Fix: return the value from the transformed function instead of storing it, or "
               "pass it in as an explicit argument.\n"
               f"See {_DOCS}#jax.errors.UnexpectedTracerError")
        super().__init__(msg)


class JaxprTypeError(TypeError):
    """An ill-typed jaxpr (raised by ``check_jaxpr``)."""


class MissingRuleError(NotImplementedError):
    """A transform or backend has no rule for a primitive."""

    def __init__(self, table: str, prim):
        super().__init__(f"{table} has no rule for '{prim}'. Register one in the {table} "
                         f"rule table, or avoid '{prim}' under this transformation.")
