"""The C backend: fusion groups rendered as C functions, compiled by the system compiler.

- ``toolchain``: the C compiler, found and probed once per process (OpenMP, CPU features);
- ``rules``: the ``c_rules`` table (primitive -> C expression template) and the
  row-reduction rules;
- ``indexing``: how layout primitives transform indices (C text);
- ``codegen``: a FusionGroup -> a deterministic C function (``generate``);
- ``cache``: compiled shared libraries on disk, keyed by source, compiler and CPU;
- ``blas``, ``matmul``, ``blocks``: matrix products through numpy's BLAS with fused
  epilogues, and control flow as C loops;
- ``backend``: ``compile_c`` (a program: one translation unit, numpy fallbacks per group);
- ``program_cache``: compiled programs on disk keyed by the traced program (a new process
  skips the passes, the planner and the code generator);
- ``tiered``: the default CPU backend ``"auto"`` (numpy first, C once compiled).

Importing this package registers the backends ``"c"`` and ``"auto"``
(``functrax.lowering.backends``) and, unless ``config.cpu_backend`` is ``"numpy"``, starts
``program_cache.warm_up`` (a daemon thread that reads the compiler probe's record, probing
the compiler once per machine, and hashes the package's files for the program cache).
"""
from functrax.config import config as _config
from functrax.lowering import backends as _backends
from functrax.lowering.c.backend import compile_c as _compile_c
from functrax.lowering.c.program_cache import compile_traced as _compile_c_traced
from functrax.lowering.c.program_cache import warm_up as _warm_up
from functrax.lowering.c.tiered import compile_tiered as _compile_tiered
from functrax.lowering.c.tiered import compile_tiered_traced as _compile_tiered_traced
from functrax.lowering.numpy.executor import compile_jaxpr as _compile_jaxpr

_backends.register_backend("c", _compile_c, compile_traced=_compile_c_traced)
_backends.register_backend("auto", _compile_tiered, _compile_jaxpr,
                           compile_traced=_compile_tiered_traced)
if _config.cpu_backend != "numpy" and _config.c_program_cache:
    _warm_up()
