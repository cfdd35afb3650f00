"""The numpy backend: the CPU default and the reference every other backend is tested
against. ``numpy_rules`` (primitive -> numpy function) is filled by the modules below, in
order; ``executor.compile_jaxpr`` turns an optimized jaxpr into generated Python over those
rules. Importing the package registers the backend as ``"numpy"`` and its rules as the eager
rules of the core.

- ``rules``: the table, elementwise / reduction / shape / indexing / contraction rules;
- ``special_functions``: erf, erfc, erf_inv, lgamma, digamma on numpy arrays;
- ``elementwise_extra``: clz, complex, reduce_precision;
- ``special_rules``: the rules of the special-function primitives (incomplete gamma and
  beta, zeta, polygamma, scaled Bessel: ``special_igamma``, ``special_betainc``,
  ``special_zeta_bessel``);
- ``gather_scatter``, ``prng``, ``linalg``, ``attention``, ``convolution``, ``windows``, ``fft``:
  those primitives' rules;
- ``control_flow``, ``calls``: cond/while/scan and the call-like primitives;
- ``executor``: the compiled program (buffer reuse, donation).
"""
from functrax.lowering.numpy import rules  # noqa: F401
from functrax.lowering.numpy import elementwise_extra  # noqa: F401
from functrax.lowering.numpy import special_rules  # noqa: F401
from functrax.lowering.numpy import attention, gather_scatter, linalg, prng  # noqa: F401
from functrax.lowering.numpy import convolution  # noqa: F401
from functrax.lowering.numpy import windows  # noqa: F401
from functrax.lowering.numpy import fft  # noqa: F401
from functrax.lowering.numpy import calls, control_flow  # noqa: F401
from functrax.lowering.numpy.executor import compile_jaxpr
from functrax.lowering.backends import register_backend

register_backend("numpy", compile_jaxpr, aliases=("cpu",))
