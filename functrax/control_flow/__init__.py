"""Structured control flow: cond/switch (cond.py), while_loop/fori_loop (loops.py),
scan/map (scan.py). Each public function traces its bodies and binds a primitive of
``functrax/primitives/control_flow.py`` holding sub-jaxprs; the ``*_rules.py`` modules give
those primitives their entry in every transformation's table. ``functrax.lax`` re-exports
the public functions.
"""
from functrax.control_flow import cond_rules as _cond_rules  # noqa: F401
from functrax.control_flow import loops_rules as _loops_rules  # noqa: F401
from functrax.control_flow import scan_rules as _scan_rules  # noqa: F401
from functrax.control_flow import linear_solve as _linear_solve  # noqa: F401
