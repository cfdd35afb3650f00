"""IR passes over jaxprs, run by jit before execution: each pass is a pure function
``Jaxpr -> Jaxpr`` in its own module; ``pipeline.optimize`` runs them in order."""
from functrax.passes import dce_control_flow as _dce_control_flow  # noqa: F401  (dce rules)
