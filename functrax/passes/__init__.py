"""IR passes over jaxprs, run by jit before execution: each pass is a pure function
``Jaxpr -> Jaxpr`` in its own module with its rule table keyed by primitive (``dce_rules``,
``inlinable``, the simplifier's rewrite rules, ``hoist_rules``); ``pipeline.optimize`` runs
them in order (``physicalize`` first: typed PRNG keys become their uint32 data at this
lowering boundary). Pattern rewrites for backends (``attention``, with ``pattern_terms``)
live here too: they are backend-independent and run on primitives only."""
from functrax.passes import dce_control_flow as _dce_control_flow  # noqa: F401  (dce rules)
from functrax.passes import physicalize_rules as _physical  # noqa: F401  (physical rules)
