"""Structured control flow: cond/switch (cond.py), while_loop/fori_loop (loops.py),
scan/map (scan.py). Each is a primitive holding sub-jaxprs with a rule in every table;
the public functions are re-exported by ``functrax.lax``."""
from functrax.control_flow.cond import *  # noqa: F401,F403
from functrax.control_flow.scan import *  # noqa: F401,F403
from functrax.control_flow.loops import *  # noqa: F401,F403

import importlib as _importlib  # noqa: E402

from functrax import lax as _lax  # noqa: E402

# (the star imports above bind the *functions* cond and scan over the submodule names)
for _mod in (_importlib.import_module(f"functrax.control_flow.{_m}")
             for _m in ("cond", "scan", "loops")):
    for _name in _mod.__all__:
        setattr(_lax, _name, getattr(_mod, _name))
