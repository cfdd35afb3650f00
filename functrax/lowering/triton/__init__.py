"""The Triton backend: fusion groups rendered as Triton kernels.

- ``rules``: the ``triton_rules`` table (primitive -> Triton expression template) and the
  row-reduction rules;
- ``codegen``: a FusionGroup -> deterministic kernel source (``generate``);
- ``cache``: sources written to a cache directory keyed by content hash and imported;
- ``runtime``: launching (Triton's CPU interpreter, or a registered GPU launcher);
- ``compile``: AOT compilation to PTX/cubin for sm_90 (``compile_for_sm90``).

Importing this package registers the backend as ``"triton"`` (``functrax.lowering.backends``);
it does not import triton: ``runtime`` and ``compile`` do, lazily.
"""
from functrax.lowering import backends as _backends
from functrax.lowering.triton.backend import compile_triton as _compile_triton
from functrax.lowering.triton.gpu_program import compile_for_placement as _compile_for_placement

_backends.register_backend("triton", _compile_for_placement, _compile_triton)
