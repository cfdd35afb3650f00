"""Eager control flow and grad-of-jit reuse their traces (as JAX's trace caches do)."""
from __future__ import annotations

import gc

import numpy as np

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax.transforms import call_util


def _count_calls(fn):
    calls = []

    def wrapped(*args):
        calls.append(1)
        return fn(*args)
    return wrapped, calls


def test_eager_cond_traces_each_branch_once():
    true_fn, t_calls = _count_calls(lambda x: x * 2.0)
    false_fn, f_calls = _count_calls(lambda x: -x)
    for i in range(4):
        out = lax.cond(i % 2 == 0, true_fn, false_fn, fnp.arange(3.0) + i)
        np.testing.assert_allclose(out, (np.arange(3.0) + i) * (2.0 if i % 2 == 0 else -1.0))
    assert (len(t_calls), len(f_calls)) == (1, 1)
    lax.cond(True, true_fn, false_fn, fnp.arange(4.0))  # a new shape traces again
    assert (len(t_calls), len(f_calls)) == (2, 2)


def test_eager_scan_and_loops_trace_once_and_results_stay_right():
    body, calls = _count_calls(lambda c, x: (c + x, c * x))
    for k in range(3):
        c, ys = lax.scan(body, fnp.float32(k), fnp.arange(4.0))
        want_c = k + np.arange(4.0).sum()
        np.testing.assert_allclose(c, want_c)
        np.testing.assert_allclose(ys, (k + np.concatenate([[0], np.cumsum(np.arange(3.0))]))
                                   * np.arange(4.0))
    assert len(calls) == 1
    cond_fn, c_calls = _count_calls(lambda c: c < 10.0)
    body_fn, b_calls = _count_calls(lambda c: c * 2.0)
    for start in (1.0, 3.0):
        assert float(lax.while_loop(cond_fn, body_fn, fnp.float32(start))) == \
            (16.0 if start == 1.0 else 12.0)
    assert (len(c_calls), len(b_calls)) == (1, 1)
    fori_body, fb_calls = _count_calls(lambda i, c: c + i)
    for _ in range(2):
        assert int(lax.fori_loop(0, 5, fori_body, 0)) == 10
    assert len(fb_calls) == 1


def test_cache_entries_die_with_their_function():
    import weakref

    def body(c, x):
        return c + x, x

    lax.scan(body, 0.0, fnp.ones(3))
    assert body in call_util._trace_cache.next  # cached, keyed by the function...
    ref = weakref.ref(body)
    del body
    gc.collect()
    assert ref() is None  # ...held weakly: the cache does not keep it alive


def test_fresh_lambdas_still_give_fresh_results():
    for k in range(3):  # a new closure per call: each sees its own k
        out = lax.cond(True, lambda x: x + k, lambda x: x, fnp.zeros(2))
        np.testing.assert_allclose(out, [k, k])


def test_grad_of_jit_does_not_retrace_or_re_split():
    traced = []

    @functrax.jit
    def f(x):
        traced.append(1)
        return fnp.sum(fnp.sin(x) * x)

    g = functrax.grad(f)
    x = fnp.arange(3.0)
    want = np.cos(np.arange(3.0)) * np.arange(3.0) + np.sin(np.arange(3.0))
    np.testing.assert_allclose(g(x), want, rtol=1e-6)
    first = len(traced)
    jaxprs = {str(functrax.make_jaxpr(g)(x)) for _ in range(2)}
    for _ in range(3):
        np.testing.assert_allclose(g(x + 0.0), want, rtol=1e-6)
    assert len(traced) == first and len(jaxprs) == 1
