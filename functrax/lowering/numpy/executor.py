"""A fast CPU executor for the numpy backend.

An (optimized, first-order) jaxpr is compiled once into a single generated Python function:
one line per equation, calling the numpy ufunc or the numpy rule (params pre-bound) on local
variables. Running it does no dict lookups, no rule dispatch and no per-step function calls
beyond the numpy calls themselves.

On the way the compiler

- calls numpy ufuncs directly for elementwise primitives whose rule is exactly that ufunc,
  and skips the result check where numpy's type resolution already gives the right dtype;
- reuses buffers: an elementwise step whose input buffer is dead after the step and owned
  by the program (allocated by an earlier step, never an input, a const or a view that
  something else may still read) writes its result into it with the ufunc's ``out=``;
  donated inputs (see :meth:`Executable.run_consuming`) are owned too;
- evaluates ``select_n`` with a boolean predicate branch-free (bitwise blend, exact);
- lets numpy broadcast a ufunc's ``broadcast_in_dim`` operand when that is equivalent;
- computes ``transpose(dot_general(a, b))`` of a 2-D product as one product with the
  operands swapped, so the result is C-contiguous instead of a transposed view;
- deletes every local after its last use, so dead intermediates are freed at once.

``Executable.source`` holds the generated code (for debugging).
"""
from __future__ import annotations

import functools
import sys

import numpy as np

from functrax import core
from functrax import primitives as P
from functrax.core import Literal, has_effects
from functrax.errors import MissingRuleError
from functrax.lowering.numpy.rules import numpy_rules, numpy_ufuncs
from functrax.passes.explicit_broadcast import explicit_broadcasts
from functrax.passes.physicalize import physicalize

_NUMERIC = "biufc"  # builtin numpy dtype kinds (ml_dtypes types such as bfloat16 are 'V')


class Executable:
    """A compiled program: call with numpy arrays, get a list of numpy arrays.

    ``exe(*args)`` never writes into its arguments. ``exe.run_consuming(args)`` may reuse
    the buffers of the donated arguments (``exe.donated``, flat input positions).
    """

    __slots__ = ("run", "run_donating", "source", "source_donating", "out_avals", "n_eqns",
                 "donated", "n_in_place", "n_in_place_donating", "__weakref__")

    def __call__(self, *args):
        return self.run(*args)

    def run_consuming(self, args: list):
        """Run on ``args`` (a list), taking ownership of it: the list is emptied.

        Each donated argument's buffer is reused in place when the program holds the only
        reference to it (it owns its data, is writeable, and no other array, view or object
        refers to it); otherwise the call runs without reusing any donated buffer.
        """
        fn = self.run_donating
        if fn is not self.run and not all(_sole_owner(args, i) for i in self.donated):
            fn = self.run
        vals = tuple(args)
        args.clear()
        return fn(*vals)


def _refs_in_list(lst, i):
    return sys.getrefcount(lst[i])


def _sole_owner(lst, i):
    """Whether ``lst[i]`` is an array owning its memory that only ``lst`` refers to."""
    v = lst[i]
    if type(v) is not np.ndarray or v.base is not None or not v.flags.writeable:
        return False
    del v
    return _refs_in_list(lst, i) <= _SOLE_REFS


# what _refs_in_list reports for an array referenced by a list only (the count includes
# the call's own references, which vary between Python versions: measured, not assumed)
_SOLE_REFS = _refs_in_list([np.empty(1)], 0)


# --- implementations chosen at compile time ---

def _ufunc_for(eqn):
    """The ufunc computing ``eqn`` exactly as its numpy rule does, or None."""
    prim = eqn.primitive
    dt = eqn.invars[0].aval.dtype if eqn.invars else None
    if dt is None or dt.kind not in _NUMERIC:
        return None
    if prim is P.add_p:
        return np.logical_or if dt == np.bool_ else np.add
    if prim is P.mul_p:
        return np.logical_and if dt == np.bool_ else np.multiply
    if prim is P.div_p:
        return np.true_divide if dt.kind in "fc" else None
    if prim is P.rem_p:
        return np.fmod if dt.kind in "fc" else None
    if prim is P.pow_p and eqn.invars[1].aval.dtype != dt:
        return None  # an integer exponent: the rule converts it first
    return numpy_ufuncs.get(prim)


def _exact_ufunc_dtype(ufunc, eqn):
    """Whether numpy's type resolution gives exactly the equation's output dtype."""
    try:
        res = ufunc.resolve_dtypes(tuple(v.aval.dtype for v in eqn.invars) + (None,))
    except Exception:  # noqa: BLE001 -- no loop, or an older numpy: keep the result check
        return False
    return res[-1] == eqn.outvars[0].aval.dtype


_INT_OF_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def select2(pred, c0, c1):
    """``where(pred, c1, c0)`` for a boolean ``pred``, exactly and without branches: on the
    bits, ``c0 ^ ((c1 ^ c0) * pred)`` (an integer times 0 or 1 cannot overflow)."""
    it = _INT_OF_SIZE[c0.dtype.itemsize]
    b = c0.view(it)
    t = np.bitwise_xor(c1.view(it), b)
    np.multiply(t, pred, out=t)
    np.bitwise_xor(t, b, out=t)
    return t.view(c0.dtype)


def select2_zero_false(pred, c1):
    """``where(pred, c1, 0)`` where the 0 has all bits clear."""
    return np.multiply(c1.view(_INT_OF_SIZE[c1.dtype.itemsize]), pred).view(c1.dtype)


def select2_zero_true(pred, c0):
    """``where(pred, 0, c0)`` where the 0 has all bits clear."""
    return np.multiply(c0.view(_INT_OF_SIZE[c0.dtype.itemsize]),
                       np.logical_not(pred)).view(c0.dtype)


def _blendable(eqn):
    if eqn.primitive is not P.select_n_p or len(eqn.invars) != 3:
        return False
    pred, c0, c1 = eqn.invars
    out = eqn.outvars[0].aval
    return (pred.aval.dtype == np.bool_ and pred.aval.shape == out.shape and out.shape != ()
            and type(c0) is not Literal and type(c1) is not Literal
            and out.dtype.kind in _NUMERIC and out.dtype.itemsize in _INT_OF_SIZE)


# rules that always return a new array nothing else refers to (given their params)
def _fresh_rule(eqn):
    prim = eqn.primitive
    if prim in (P.convert_element_type_p, P.copy_p, P.dot_general_p, P.logistic_p,
                P.rsqrt_p, P.argmax_p, P.argmin_p, P.conv_general_dilated_p):
        return True
    if prim in (P.reduce_sum_p, P.reduce_max_p, P.reduce_min_p, P.reduce_prod_p):
        return bool(eqn.params.get("axes"))
    return prim is P.integer_pow_p and eqn.params.get("y") not in (0, 1)


def _bind_rule(prim, params):
    rule = numpy_rules.get(prim)
    if rule is None:
        raise MissingRuleError("the numpy backend (jit executor)", prim)
    return functools.partial(rule, **params) if params else rule


# --- the plan: one _Op per equation to run, after the executor's own rewrites ---


class _Op:
    __slots__ = ("eqn", "ins", "outs", "kind", "fn", "typed", "fresh", "inplace_ok")

    def __init__(self, eqn, ins=None, params=None):
        self.eqn = eqn
        self.ins = list(eqn.invars if ins is None else ins)
        self.outs = list(eqn.outvars)
        params = eqn.params if params is None else params
        self.inplace_ok = False
        ufunc = _ufunc_for(eqn) if params is eqn.params else None
        if ufunc is not None:
            self.kind, self.fn = "ufunc", ufunc
            self.typed = bool(eqn.outvars[0].aval.shape) and _exact_ufunc_dtype(ufunc, eqn)
            self.fresh = True
            self.inplace_ok = self.typed
        elif eqn.primitive is P.integer_pow_p and params.get("y") == 2 \
                and eqn.invars[0].aval.dtype.kind in _NUMERIC:
            self.kind, self.fn = "square", np.multiply  # the rule computes x * x
            self.ins = [self.ins[0], self.ins[0]]
            self.typed = bool(eqn.outvars[0].aval.shape)
            self.fresh = True
            self.inplace_ok = self.typed
        elif _blendable(eqn):
            self.kind, self.fn, self.typed, self.fresh = "call", select2, True, True
        else:
            multiple = eqn.primitive.multiple_results
            self.kind = "multi" if multiple else "call"
            self.fn = _bind_rule(eqn.primitive, params)
            if multiple:
                self.fn = _checked_multi(self.fn, [v.aval.dtype for v in eqn.outvars])
            self.fresh = not multiple and _fresh_rule(eqn)
            self.typed = multiple  # the multi wrapper fixes results; single ones are checked


def _checked_multi(fn, dts):
    def multi(*args):
        return [_fix(r, dt) for r, dt in zip(fn(*args), dts)]
    return multi


def _fix(r, dt):
    """A numpy array of dtype ``dt`` (numpy may return scalars or another dtype)."""
    r = np.asarray(r)
    return r if r.dtype == dt else r.astype(dt)


def _is_var(v):
    return type(v) is not Literal


def _uses(eqns, outvars):
    n = {}
    for e in eqns:
        for v in e.invars:
            if _is_var(v):
                n[v] = n.get(v, 0) + 1
    for v in outvars:
        if _is_var(v):
            n[v] = n.get(v, 0) + 1
    return n


def _zero_bits_literal(v):
    if type(v) is not Literal:
        return False
    a = np.asarray(v.val, v.aval.dtype)
    return a.dtype.kind in _NUMERIC and not a.tobytes().strip(b"\0")


def _plan(jaxpr):
    """Equations -> ops, with the dot-transpose fusion and zero-select specializations."""
    eqns = list(jaxpr.eqns)
    uses = _uses(eqns, jaxpr.outvars)
    producer = {v: e for e in eqns for v in e.outvars}
    consumer = {}
    for e in eqns:
        for v in e.invars:
            if _is_var(v):
                consumer.setdefault(v, e)
    ops, skip = [], set()
    for eqn in eqns:
        if id(eqn) in skip:
            continue
        fused = _fuse_dot_transpose(eqn, consumer, uses)
        if fused is not None:
            op, tr = fused
            skip.add(id(tr))
            ops.append(op)
            continue
        op = _Op(eqn)
        if op.kind == "ufunc":
            _skip_broadcasts(op, producer)
        if op.fn is select2:
            pred, c0, c1 = eqn.invars
            for i, c, fn in ((1, c0, select2_zero_false), (2, c1, select2_zero_true)):
                src = producer.get(c)
                if (src is not None and src.primitive is P.broadcast_in_dim_p
                        and _zero_bits_literal(src.invars[0])):
                    op.fn = fn
                    op.ins = [pred, c1] if i == 1 else [pred, c0]
                    break
        ops.append(op)
    return _drop_dead(ops, jaxpr.outvars)


def _skip_broadcasts(op, producer):
    """Read a ``broadcast_in_dim`` operand of a ufunc before the broadcast when numpy's own
    broadcasting gives the same values (the operand's dims map to the trailing dims) and
    the result keeps its shape: no broadcast view to build, and often no broadcast at all.
    """
    out_shape = op.outs[0].aval.shape
    for k, v in enumerate(op.ins):
        src = producer.get(v) if _is_var(v) else None
        if src is None or src.primitive is not P.broadcast_in_dim_p or len(src.invars) != 1:
            continue
        x = src.invars[0]
        nd, xnd = len(out_shape), len(x.aval.shape)
        if tuple(src.params["broadcast_dimensions"]) != tuple(range(nd - xnd, nd)):
            continue
        ins = op.ins[:k] + [x] + op.ins[k + 1:]
        if np.broadcast_shapes(*(u.aval.shape for u in ins)) == tuple(out_shape):
            op.ins = ins


def _fuse_dot_transpose(eqn, consumer, uses):
    """``t = transpose[(1, 0)](dot_general(a, b))`` with the product used only there ->
    ``t = dot_general(b, a)`` (contractions swapped): a C-contiguous result."""
    if eqn.primitive is not P.dot_general_p:
        return None
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    d = eqn.outvars[0]
    lhs, rhs = eqn.invars
    if (lb or rb or uses.get(d) != 1 or len(d.aval.shape) != 2
            or lhs.aval.ndim - len(lc) != 1 or rhs.aval.ndim - len(rc) != 1):
        return None
    tr = consumer.get(d)
    if tr is None or tr.primitive is not P.transpose_p or \
            tuple(tr.params["permutation"]) != (1, 0):
        return None
    params = dict(eqn.params, dimension_numbers=((tuple(rc), tuple(lc)), ((), ())))
    op = _Op(eqn, ins=[rhs, lhs], params=params)
    op.outs = list(tr.outvars)
    return op, tr


def _drop_dead(ops, outvars):
    live = {v for v in outvars if _is_var(v)}
    kept = []
    for op in reversed(ops):
        if any(v in live for v in op.outs) or has_effects(op.eqn):
            kept.append(op)
            live.update(v for v in op.ins if _is_var(v))
    kept.reverse()
    return kept


# --- buffer reuse analysis ---


def _assign_in_place(ops, jaxpr, owned_inputs):
    """For each op, the input var whose buffer it may overwrite (or None).

    Memory is tracked as ids: a fresh result gets a new id, an in-place result the id of the
    buffer it wrote into, any other result every id of its inputs (it may be a view of any).
    A buffer may be overwritten when it is a private full array (``fresh``) and every
    variable that may refer to it is dead after this op (program outputs never are).
    """
    end = len(ops)
    last = {}
    for i, op in enumerate(ops):
        for v in op.ins:
            if _is_var(v):
                last[v] = i
    for v in jaxpr.outvars:
        if _is_var(v):
            last[v] = end
    mems, fresh, mem_last = {}, set(), {}

    def new_mem(v, is_fresh):
        m = len(mem_last)
        mems[v] = (m,)
        mem_last[m] = last.get(v, -1)
        if is_fresh:
            fresh.add(v)

    for v in jaxpr.constvars:
        new_mem(v, False)
    for i, v in enumerate(jaxpr.invars):
        new_mem(v, i in owned_inputs)
    # a var must be owned and private to be a target: an input passed twice is two vars
    targets = []
    for i, op in enumerate(ops):
        target = None
        if op.inplace_ok:
            out = op.outs[0].aval
            in_vars = [v for v in op.ins if _is_var(v)]
            for v in in_vars:
                if (v in fresh and v.aval.shape == out.shape and v.aval.dtype == out.dtype
                        and mem_last[mems[v][0]] <= i
                        and not any(u is not v and mems[v][0] in mems[u]
                                    for u in in_vars)):
                    target = v
                    break
        targets.append(target)
        for o in op.outs:
            if target is not None:
                m = mems[target][0]
                mems[o] = (m,)
                mem_last[m] = max(mem_last[m], last.get(o, i))
                fresh.add(o)
            elif op.fresh:
                new_mem(o, True)
                mem_last[mems[o][0]] = max(mem_last[mems[o][0]], i)
            else:
                ms = tuple(sorted({m for v in op.ins if _is_var(v) for m in mems[v]}))
                if not ms:  # made from literals and params only (iota, ...): not shared
                    new_mem(o, False)
                    continue
                mems[o] = ms
                for m in ms:
                    mem_last[m] = max(mem_last[m], last.get(o, i))
    return targets


# --- code generation ---


def _generate(ops, jaxpr, consts, targets, name):
    # named after this module, so numpy's floating-point warnings are filtered as the
    # backend's (inf/nan results are values, as in JAX: see numpy_backend)
    env = {"_nd": np.ndarray, "_fix": _fix, "__name__": __name__}
    names = {}

    def bind(obj, prefix):
        key = f"{prefix}{len(env)}"
        env[key] = obj
        return key

    for v, c in zip(jaxpr.constvars, consts):
        names[v] = bind(c, "c")
    params = []
    for i, v in enumerate(jaxpr.invars):
        names[v] = params_name = f"a{i}"
        params.append(params_name)

    def ref(v):
        if type(v) is Literal:
            return bind(np.asarray(v.val, v.aval.dtype), "k")
        return names[v]

    last = {}
    for i, op in enumerate(ops):
        for v in op.ins:
            if _is_var(v):
                last[v] = i
    outset = {v for v in jaxpr.outvars if _is_var(v)}
    constvars = set(jaxpr.constvars)
    lines = [f"def run({', '.join(params)}):"]
    n_var = 0
    for i, op in enumerate(ops):
        args = ", ".join(ref(v) for v in op.ins)
        outs = []
        for v in op.outs:
            names[v] = f"v{n_var}"
            n_var += 1
            outs.append(names[v])
        fn = bind(op.fn, "f")
        if targets[i] is not None:
            args += f", out={names[targets[i]]}"
        lhs = outs[0] if op.kind != "multi" else (", ".join(outs) + ("," if len(outs) == 1
                                                                     else ""))
        lines.append(f"    {lhs} = {fn}({args})" if outs else f"    {fn}({args})")
        if op.kind != "multi" and not op.typed:
            dt = bind(op.outs[0].aval.dtype, "d")
            o = outs[0]
            lines.append(f"    if type({o}) is not _nd or {o}.dtype != {dt}: {o} = _fix({o}, {dt})")
        dead = [names[v] for v in dict.fromkeys(op.ins)
                if _is_var(v) and last[v] == i and v not in outset
                and v not in constvars]
        dead += [names[v] for v in op.outs if v not in last and v not in outset]
        if dead:
            lines.append(f"    del {', '.join(dead)}")
    lines.append(f"    return [{', '.join(ref(v) for v in jaxpr.outvars)}]")
    src = "\n".join(lines) + "\n"
    code = compile(src, f"<functrax executor: {name}>", "exec")
    exec(code, env)  # noqa: S102 -- our own generated code
    return env["run"], src


def compile_jaxpr(closed: core.ClosedJaxpr, donated=()) -> Executable:
    """Compile a closed, first-order jaxpr (call primitives already inlined).

    ``donated``: flat input positions whose buffers :meth:`Executable.run_consuming` may
    reuse.
    """
    closed = physicalize(closed)  # typed PRNG keys -> their uint32 data (no-op if optimized)
    closed = explicit_broadcasts(closed)  # size-1 broadcasts -> broadcast_in_dim (likewise)
    jaxpr = closed.jaxpr
    ops = _plan(jaxpr)
    consts = [_np(c) for c in closed.consts]
    name = getattr(jaxpr.debug_info, "func_name", None) or "jaxpr"
    exe = Executable()
    targets = _assign_in_place(ops, jaxpr, set())
    exe.run, exe.source = _generate(ops, jaxpr, consts, targets, name)
    exe.n_in_place = sum(t is not None for t in targets)
    exe.donated = tuple(sorted(set(donated)))
    if exe.donated:
        d_targets = _assign_in_place(ops, jaxpr, set(exe.donated))
        exe.run_donating, exe.source_donating = _generate(ops, jaxpr, consts, d_targets,
                                                          name)
        exe.n_in_place_donating = sum(t is not None for t in d_targets)
    else:
        exe.run_donating, exe.source_donating = exe.run, exe.source
        exe.n_in_place_donating = exe.n_in_place
    exe.out_avals = [v.aval for v in jaxpr.outvars]
    exe.n_eqns = len(jaxpr.eqns)
    return exe


def _np(c):
    return c._value if type(c) is core.Array else np.asarray(c)
