"""Test-suite configuration: hypothesis profiles (and a guard against a plugin bug, below).

No deadlines anywhere (timings on a shared 2-core machine are not what these tests check).
Under CI (``CI=true``) hypothesis is derandomized, so a submission is judged on the same
examples every run; locally it explores new examples each run.

``jit`` without a backend runs on the numpy backend here (``FUNCTRAX_CPU_BACKEND=numpy``
unless the environment sets it): the default ``"auto"`` would compile every jitted program
of the suite in the background and switch to C at a moment that depends on timing, so a
test comparing two calls could see numpy's result, then C's. The C and ``"auto"`` backends
have their own tests (``test_c_*``), which name them.
"""
import os

os.environ.setdefault("FUNCTRAX_CPU_BACKEND", "numpy")  # before functrax is imported

import pytest

from hypothesis import settings

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# hypothesis's pytest plugin (6.170) re-wraps the settings of a parametrized @given test in a
# new settings object per test item, on the one function all its items share: after ~1,000
# items the chain of parents overflows the recursion limit (RecursionError in
# settings.database). Each item starts again from the settings the test was decorated with.
_ORIGINAL_SETTINGS: dict = {}


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    fn = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
    current = getattr(fn, "_hypothesis_internal_use_settings", None)
    if current is not None:
        fn._hypothesis_internal_use_settings = _ORIGINAL_SETTINGS.setdefault(id(fn), current)
    yield
