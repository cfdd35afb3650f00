"""Op specs: the control-flow primitives (``functrax.lax`` cond / switch / scan / map /
fori_loop / while_loop) with elementwise / cumulative bodies, against numpy written with
Python ``if`` / ``for`` / ``while``.

Predicates, branch indices and trip counts are arguments (or depend on the data), so the
vmap driver batches them: lanes take different branches and finish at different iterations.
Static choices (``reverse``, ``max_steps``, ...) are kwargs. ``shift`` kwargs move a drawn
index / flip a drawn predicate so that every branch is taken in the eager cases.
"""
import numpy as np

from functrax import lax
from tests.opspec.spec import BOOL, F32, I32, OpSpec, distinct, uniform

# --- cond / switch ---


def _cond(p, x, y, flip=False):
    pred = lax.bitwise_not(p) if flip else p
    return lax.cond(pred, lambda a, b: lax.sin(a) * b + 1.0, lambda a, b: a * a - b, x, y)


def _cond_ref(p, x, y, flip=False):
    if bool(p) != flip:
        return np.sin(x) * y + np.float32(1.0)
    return x * x - y


def _cond_tree(p, x, y):
    """Pytree operands and outputs; the branches close over ``y``."""
    def true_fun(ops):
        return {"a": lax.exp(ops[0] * 0.5), "b": ops[1] * y}

    def false_fun(ops):
        return {"a": ops[0] - y, "b": lax.cos(ops[1])}
    out = lax.cond(p, true_fun, false_fun, (x, x * 2.0))
    return out["a"], out["b"]


def _cond_tree_ref(p, x, y):
    if bool(p):
        return np.exp(x * np.float32(0.5)), x * np.float32(2.0) * y
    return x - y, np.cos(x * np.float32(2.0))


_SWITCH_BRANCHES = (
    lambda a, b: lax.sin(a) + b,
    lambda a, b: a * b,
    lambda a, b: lax.tanh(a - b) * 3.0,
)
_SWITCH_REFS = (
    lambda a, b: np.sin(a) + b,
    lambda a, b: a * b,
    lambda a, b: np.tanh(a - b) * np.float32(3.0),
)


def _switch(i, x, y, shift=0):
    return lax.switch(i + shift, _SWITCH_BRANCHES, x, y)


def _switch_ref(i, x, y, shift=0):
    # as JAX, an out-of-range index is clamped to the first / last branch
    return _SWITCH_REFS[int(np.clip(int(i) + shift, 0, len(_SWITCH_REFS) - 1))](x, y)


# the index domain is [-1, 3]: whatever index is drawn, shifts -5..4 reach below 0, every
# branch, and above 2. Shift 0 comes first: drivers running one case (vmap, check_grads)
# then see indices of every branch, clamped ones included.
_SHIFTS = tuple({"shift": s} for s in (0, -5, -4, -3, -2, -1, 1, 2, 3, 4))

# --- scan: cumulative operations along the leading axis ---


def _flip0(x):
    return x[::-1]


def _running(op, ref_op):
    """(fn, ref) for the running ``op`` of x along axis 0: (final carry, every carry)."""
    def fn(x, reverse=False):
        first = x[x.shape[0] - 1] if reverse else x[0]
        rest = x[:x.shape[0] - 1] if reverse else x[1:]
        last, ys = lax.scan(lambda c, r: (op(c, r),) * 2, first, rest, reverse=reverse)
        ys = lax.concatenate([ys, first[None]] if reverse else [first[None], ys], 0)
        return last, ys

    def ref(x, reverse=False):
        xs = _flip0(x) if reverse else x
        out = ref_op.accumulate(xs, axis=0).astype(x.dtype)
        out = _flip0(out) if reverse else out
        return (out[0] if reverse else out[-1]), out
    return fn, ref


_SUM = _running(lax.add, np.add)
_PROD = _running(lax.mul, np.multiply)
_MAX = _running(lax.max, np.maximum)
_REVERSE = ({"reverse": False}, {"reverse": True})
_SCANNED = (((4,),), ((3, 2),))


def _scan_pytree(x, y, reverse=False):
    """A pytree carry (a running sum and a step counter) and pytree xs / ys."""
    def step(carry, xs):
        s, k = carry
        a, b = xs["a"], xs["b"]
        s = s * 0.5 + a * b
        return (s, k + 1.0), {"s": s, "k": k}
    (s, k), ys = lax.scan(step, (y[0] * 0.0, 0.0), {"a": x, "b": y}, reverse=reverse)
    return s, k, ys["s"], ys["k"]


def _scan_pytree_ref(x, y, reverse=False):
    n = x.shape[0]
    order = range(n - 1, -1, -1) if reverse else range(n)
    s, k = np.zeros_like(y[0]), np.float32(0.0)
    ys, ks = [None] * n, [None] * n
    for t in order:
        s = s * np.float32(0.5) + x[t] * y[t]
        ys[t], ks[t] = s, k
        k = k + np.float32(1.0)
    return s, np.float32(k), np.stack(ys), np.asarray(ks, np.float32)


# --- fori_loop / while_loop ---


def _fori_body(i, c):
    return c * 0.5 + lax.sin(c) * lax.convert_element_type(i, np.float32)


def _fori_ref_loop(x, lower, upper):
    c = x
    for i in range(lower, upper):
        c = c * np.float32(0.5) + np.sin(c) * np.float32(i)
    return c


def _fori_static(x, lower=0, upper=3):
    return lax.fori_loop(lower, upper, _fori_body, x)


def _fori_static_ref(x, lower=0, upper=3):
    return _fori_ref_loop(x, lower, upper)


def _fori_bound(n, x):
    """The upper bound is an argument: concrete eagerly (a scan), traced under make_jaxpr
    and vmap (a while; under vmap lanes finish at different iterations)."""
    return lax.fori_loop(0, n, _fori_body, x)


def _fori_bound_ref(n, x):
    return _fori_ref_loop(x, 0, int(n))


def _grow(carry):
    k, v = carry
    return k + 1, v * 1.5 + 0.25


def _below(carry):
    return lax.reduce_max(lax.abs(carry[1]), tuple(range(carry[1].ndim))) < 4.0


def _while_ref(x, max_steps=None):
    k, v = 0, x
    while np.max(np.abs(v)) < 4.0 and (max_steps is None or k < max_steps):
        k, v = k + 1, v * np.float32(1.5) + np.float32(0.25)
    return np.int32(k), v


def _while_max_steps(x, max_steps=20):
    return lax.while_loop(_below, _grow, (0, x), max_steps=max_steps)


def _while_data(x):
    return lax.while_loop(_below, _grow, (0, x))


# --- map ---


def _row_fn(r):
    return lax.tanh(r) * lax.reduce_sum(r, (0,)) + r[0]


def _map_rows(x, batch_size=None):
    return lax.map(_row_fn, x, batch_size=batch_size)


def _map_rows_ref(x, batch_size=None):
    return np.stack([np.tanh(r) * r.sum(dtype=np.float32) + r[0] for r in x])


SPECS = [
    OpSpec("cond_elementwise", _cond, _cond_ref, shapes=(((), (3,), (3,)), ((), (2, 3), (2, 3))),
           dtypes=((BOOL, F32, F32),), kwargs=({"flip": False}, {"flip": True}),
           primitives=("cond",)),
    OpSpec("cond_pytree_closure", _cond_tree, _cond_tree_ref,
           shapes=(((), (3,), (3,)), ((), (2, 3), ())), dtypes=((BOOL, F32, F32),),
           primitives=("cond",)),
    OpSpec("switch_three_branches", _switch, _switch_ref,
           shapes=(((), (3,), (3,)), ((), (2, 3), (2, 3))), dtypes=((I32, F32, F32),),
           domain=(uniform(-1, 3), uniform(), uniform()), kwargs=_SHIFTS,
           primitives=("cond",)),
    OpSpec("scan_running_sum", *_SUM, shapes=_SCANNED, kwargs=_REVERSE, primitives=("scan",)),
    OpSpec("scan_running_product", *_PROD, shapes=_SCANNED, domain=uniform(-1.5, 1.5),
           kwargs=_REVERSE, primitives=("scan",)),
    OpSpec("scan_running_max", *_MAX, shapes=_SCANNED, domain=distinct(), kwargs=_REVERSE,
           primitives=("scan",)),
    OpSpec("scan_pytree_carry", _scan_pytree, _scan_pytree_ref,
           shapes=(((4,), (4,)), ((3, 2), (3, 2))), kwargs=_REVERSE, primitives=("scan",)),
    OpSpec("fori_loop_static", _fori_static, _fori_static_ref, shapes=(((3,),), ((2, 3),)),
           kwargs=({}, {"lower": 2, "upper": 5}, {"lower": 3, "upper": 1}),
           atol=1e-5, rtol=1e-5, primitives=("scan",)),
    OpSpec("fori_loop_bound_argument", _fori_bound, _fori_bound_ref,
           shapes=(((), (3,)), ((), (2, 3))), dtypes=((I32, F32),),
           domain=(uniform(0, 4), uniform()), primitives=("scan", "while")),
    OpSpec("while_loop_max_steps", _while_max_steps, _while_ref, shapes=(((3,),), ((2, 3),)),
           domain=uniform(-2.0, 2.0), kwargs=({"max_steps": 20}, {"max_steps": 2}),
           primitives=("scan",)),
    OpSpec("while_loop_data_dependent", _while_data, _while_ref, shapes=(((3,),), ((2, 3),)),
           domain=uniform(-2.0, 2.0), primitives=("while",)),
    OpSpec("map_rows", _map_rows, _map_rows_ref, shapes=(((3, 4),), ((5, 2),)),
           kwargs=({}, {"batch_size": 2}), primitives=("scan",)),
]
