"""The C backend: fusion groups rendered as C functions, compiled by the system compiler.

- ``toolchain``: the C compiler, found and probed once per process (OpenMP, CPU features);
- ``rules``: the ``c_rules`` table (primitive -> C expression template) and the
  row-reduction rules;
- ``indexing``: how layout primitives transform indices (C text);
- ``codegen``: a FusionGroup -> a deterministic C function (``generate``);
- ``cache``: compiled shared libraries on disk, keyed by source, compiler and CPU;
- ``backend``: ``compile_c`` (a program: one translation unit, numpy fallbacks per group).

Importing this package registers the backend as ``"c"`` (``functrax.lowering.backends``);
it runs no compiler until a program needs one.
"""
from functrax.lowering import backends as _backends
from functrax.lowering.c.backend import compile_c as _compile_c

_backends.register_backend("c", _compile_c)
