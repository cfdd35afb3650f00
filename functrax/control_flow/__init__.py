"""Structured control flow: cond/switch (cond.py), while_loop/fori_loop (loops.py),
scan/map (scan.py). Each is a primitive holding sub-jaxprs with a rule in every table;
the public functions are re-exported by ``functrax.lax``."""
from functrax.control_flow.cond import *  # noqa: F401,F403
from functrax.control_flow.scan import *  # noqa: F401,F403
from functrax.control_flow.loops import *  # noqa: F401,F403

from functrax import lax as _lax  # noqa: E402
from functrax.control_flow import cond as _cond, loops as _loops, scan as _scan  # noqa: E402

for _mod in (_cond, _scan, _loops):
    for _name in _mod.__all__:
        setattr(_lax, _name, getattr(_mod, _name))
