"""The numpy backend: the CPU default and the reference every other backend is tested
against. ``numpy_rules`` (primitive -> numpy function) is filled by the modules below, in
order; ``executor.compile_jaxpr`` turns an optimized jaxpr into generated Python over those
rules. Importing the package registers the backend as ``"numpy"`` and its rules as the eager
rules of the core.

- ``rules``: the table, elementwise / reduction / shape / indexing / contraction rules;
- ``special_functions``: erf, erfc, erf_inv, lgamma, digamma on numpy arrays;
- ``gather_scatter``, ``prng``, ``linalg``, ``attention``, ``convolution``, ``windows``: those
  primitives' rules;
- ``control_flow``, ``calls``: cond/while/scan and the call-like primitives;
- ``callbacks``: the host callbacks (``debug.print``, ``pure_callback``, ...);
- ``executor``: the compiled program (buffer reuse, donation).
"""
from functrax.lowering.numpy import rules  # noqa: F401
from functrax.lowering.numpy import attention, gather_scatter, linalg, prng  # noqa: F401
from functrax.lowering.numpy import convolution  # noqa: F401
from functrax.lowering.numpy import windows  # noqa: F401
from functrax.lowering.numpy import calls, control_flow  # noqa: F401
from functrax.lowering.numpy import callbacks  # noqa: F401
from functrax.lowering.numpy.executor import compile_jaxpr
from functrax.lowering.backends import register_backend

register_backend("numpy", compile_jaxpr, aliases=("cpu",))
