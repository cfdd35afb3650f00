"""``lax.custom_linear_solve`` and ``lax.custom_root`` (as JAX's): solves whose derivatives
are defined implicitly rather than by differentiating the solver.

- ``custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
  has_aux=False)`` binds ``custom_linear_solve``, holding the jaxprs of ``matvec``,
  ``vecmat`` (its transpose, by ``linear_transpose``; ``matvec`` itself when symmetric),
  ``solve`` and ``transpose_solve``. Its JVP solves ``A dx = db - dA x`` with ``solve``
  again; its transpose (in ``b``) solves ``A^T ct_b = ct_x`` with ``transpose_solve``.
- ``custom_root(f, initial_guess, solve, tangent_solve, has_aux=False)``: ``solve(f, x0)``
  finds a root of ``f``; its derivative by the implicit function theorem, with
  ``tangent_solve(g, y)`` solving the linearized system ``g(x) = y`` (a ``custom_jvp``
  over the closure-converted consts of ``f``, ``solve`` and the linearized solve).
"""
from __future__ import annotations

import functools

from functrax import core
from functrax import primitives as P
from functrax.core.tracing import trace_to_jaxpr
from functrax.primitives.control_flow import LinearSolveTuple, custom_linear_solve_p
from functrax.transforms.batching import batch_jaxpr, matchaxis, vmap_rules
from functrax.transforms.call_util import closure_convert
from functrax.transforms.custom_derivatives import custom_jvp
from functrax.transforms.grad import jvp, linear_transpose, linearize
from functrax.transforms.jvp import Zero, add_tangents, instantiate, jvp_rules
from functrax.transforms.transpose import is_undefined, transpose_rules
from functrax.tree_util import tree_flatten, tree_unflatten, treedef_children, treedef_tuple


def _trace(fun, in_tree, avals):
    """``fun`` (of the pytree ``in_tree``'s arguments) as a closure-converted jaxpr:
    ``(ClosedJaxpr, consts, out_tree)``."""
    box = []

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, list(leaves)))
        out_leaves, tree = tree_flatten(out)
        box.append(tree)
        return out_leaves
    closed = trace_to_jaxpr(flat, list(avals))
    closed, consts = closure_convert(closed)
    return closed, consts, box[0]


def _check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux=False):
    if has_aux:
        children = treedef_children(actual_tree)
        if len(children) != 2:
            raise ValueError(f"{func_name}() produced a pytree with structure {actual_tree}, "
                             "but a pair of output (solution, auxiliary data) was expected.")
        actual_tree = children[0]
    if actual_tree != expected_tree:
        raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, "
                        f"got {actual_tree} and {expected_tree}.")


def _check_avals(what, got, want):
    g = [(a.shape, a.dtype) for a in got]
    w = [(a.shape, a.dtype) for a in want]
    if g != w:
        raise TypeError(f"{what} must have identical types, got\n"
                        f"{[a.str_short() for a in got]}\nand\n"
                        f"{[a.str_short() for a in want]}.")


def _transpose_one_output(linear_fun, primals):
    transpose_fun = linear_transpose(linear_fun, primals)

    def transposed_fun(x):
        (y,) = transpose_fun(x)
        return y
    return transposed_fun


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """Solve ``matvec(x) = b`` with ``solve``, differentiated implicitly.

    Args:
      matvec: the linear function ``x -> A x`` (pytree in, same pytree out).
      b: the right-hand side (pytree).
      solve: ``solve(matvec, b) -> x`` (``(x, aux)`` with ``has_aux``).
      transpose_solve: ``transpose_solve(vecmat, b) -> x`` solving the transposed system;
        needed for reverse mode (with ``symmetric=True`` it defaults to ``solve``).
      symmetric: the matrix is symmetric (``vecmat`` is ``matvec``).
      has_aux: ``solve`` and ``transpose_solve`` return auxiliary data as a second output.

    Returns:
      ``x`` (the structure of ``b``), or ``(x, aux)`` with ``has_aux``.

    Raises:
      TypeError: when ``matvec`` or ``solve`` do not preserve ``b``'s structure and types,
        and (reverse mode) when ``transpose_solve`` is missing (JAX's message).

    >>> import functrax, functrax.numpy as fnp
    >>> A = fnp.array([[2.0, 0.0], [0.0, 4.0]])
    >>> x = custom_linear_solve(lambda v: A @ v, fnp.ones(2), lambda mv, b: b / fnp.diag(A),
    ...                         symmetric=True)
    >>> x
    Array([0.5 , 0.25], dtype=float32)
    """
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_flat, in_args_tree = tree_flatten((b,))
    b_avals = tuple(core.get_aval(x).strip_weak_type() for x in b_flat)
    tree, = treedef_children(in_args_tree)
    b_flat = [P.convert_element_type(x, a.dtype) if core.get_aval(x).weak_type else x
              for x, a in zip(b_flat, b_avals)]

    def _shape_checked(fun, name, has_aux):
        def f(x):
            y = fun(x)
            _check_tree(name, "b", tree_flatten(y)[1], tree, has_aux)
            return y
        return f

    matvec_jaxpr, matvec_consts, out_tree = _trace(_shape_checked(matvec, "matvec", False),
                                                   in_args_tree, b_avals)
    _check_tree("matvec", "b", out_tree, tree, False)
    _check_avals("matvec output and b", matvec_jaxpr.out_avals, b_avals)

    solve_jaxpr, solve_consts, out_tree = _trace(
        _shape_checked(functools.partial(solve, matvec), "solve", has_aux), in_args_tree,
        b_avals)
    _check_tree("solve", "b", out_tree, tree, has_aux)
    aux_tree = treedef_children(out_tree)[1] if has_aux else None

    if transpose_solve is None:
        vecmat_jaxpr = tr_solve_jaxpr = None
        vecmat_consts, tr_solve_consts = [], []
    else:
        if symmetric:
            vecmat = matvec
            vecmat_jaxpr, vecmat_consts = matvec_jaxpr, matvec_consts
        else:
            x0 = tree_unflatten(tree, [P.full(a.shape, 0, a.dtype) for a in b_avals])
            vecmat = _transpose_one_output(matvec, x0)
            vecmat_jaxpr, vecmat_consts, out_tree = _trace(vecmat, in_args_tree, b_avals)
            assert out_tree == tree
        tr_solve_jaxpr, tr_solve_consts, out_tree = _trace(
            _shape_checked(functools.partial(transpose_solve, vecmat), "transpose_solve",
                           has_aux), in_args_tree, b_avals)
        _check_tree("transpose_solve", "b", out_tree, tree, has_aux)

    all_consts = [matvec_consts, vecmat_consts, solve_consts, tr_solve_consts]
    const_lengths = LinearSolveTuple(*[len(c) for c in all_consts])
    jaxprs = LinearSolveTuple(matvec_jaxpr, vecmat_jaxpr, solve_jaxpr, tr_solve_jaxpr)
    out_flat = custom_linear_solve_p.bind(*[c for cs in all_consts for c in cs], *b_flat,
                                          const_lengths=const_lengths, jaxprs=jaxprs)
    n_x = len(b_flat)
    x = tree_unflatten(tree, out_flat[:n_x])
    if has_aux:
        return x, tree_unflatten(aux_tree, out_flat[n_x:])
    return x


def _split(args, const_lengths):
    params, start = [], 0
    for n in const_lengths:
        params.append(list(args[start:start + n]))
        start += n
    return LinearSolveTuple(*params), list(args[start:])


def _flatten(params):
    return [x for p in params for x in p]


def _n_x(jaxprs):
    return len(jaxprs.matvec.out_avals)


def _tangent_linear_map(closed, params, params_dot, x):
    """The tangent of ``matvec`` in its consts at fixed ``x``: ``dA x``."""
    n = len(params)

    def f(*ps):
        return core.eval_jaxpr(closed.jaxpr, closed.consts, *ps, *x)
    ts = [instantiate(t) for t in params_dot]
    _, out = jvp(lambda *ps: f(*ps), tuple(params), tuple(ts))
    del n
    return out


def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
    # A x - b = 0  =>  dA x + A dx - db = 0  =>  dx = A^{-1} (db - dA x)
    kw = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    outs = custom_linear_solve_p.bind(*primals, **kw)
    n_x = _n_x(jaxprs)
    x, aux = outs[:n_x], outs[n_x:]
    params, _ = _split(primals, const_lengths)
    params_dot, b_dot = _split(tangents, const_lengths)
    if all(type(t) is Zero for t in params_dot.matvec):
        rhs = b_dot
    else:
        mv = _tangent_linear_map(jaxprs.matvec, params.matvec, params_dot.matvec, x)
        rhs = [add_tangents(bd, P.neg(m)) for bd, m in zip(b_dot, mv)]
    if all(type(r) is Zero for r in rhs):
        x_dot = [Zero.from_value(v) for v in x]
    else:
        x_dot = custom_linear_solve_p.bind(*_flatten(params), *[instantiate(r) for r in rhs],
                                           **kw)[:n_x]
    return outs, list(x_dot) + [Zero.from_value(a) for a in aux]


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs):
    if jaxprs.transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        "differentiation of custom_linear_solve")
    params, b = _split(args, const_lengths)
    if any(is_undefined(x) for x in _flatten(params)):
        raise ValueError("custom_linear_solve: the consts of matvec/solve are not linear; only "
                         "b can be transposed")
    n_x = _n_x(jaxprs)
    ct_x = [instantiate(c) for c in cts[:n_x]]
    ct_b = custom_linear_solve_p.bind(*_flatten(params.transpose()), *ct_x,
                                      const_lengths=const_lengths.transpose(),
                                      jaxprs=jaxprs.transpose())[:n_x]
    return [None] * sum(const_lengths) + list(ct_b)


def _linear_solve_vmap(axis, vals, dims, *, const_lengths, jaxprs):
    # consts keep their batching (at axis 0); b, x (and the aux outputs) are batched at 0
    n_c = sum(const_lengths)
    vals = [matchaxis(axis.size, d, 0, v) if d not in (None, 0) or i >= n_c else v
            for i, (v, d) in enumerate(zip(vals, dims))]
    dims = [None if d is None and i < n_c else 0 for i, d in enumerate(dims)]
    params, b = _split(vals, const_lengths)
    pdims, _ = _split(dims, const_lengths)
    n_x = _n_x(jaxprs)

    def place(i, v, d):
        return matchaxis(axis.size, d, 0, v)
    new_jaxprs, new_params = [], []
    for closed, ps, ds in zip(jaxprs, params, pdims):
        if closed is None:
            new_jaxprs.append(None)
            new_params.append(list(ps))
            continue
        bj, _ = batch_jaxpr(closed, axis, list(ds) + [0] * n_x, place)
        bj, extra = closure_convert(bj)
        new_jaxprs.append(bj)
        new_params.append(list(extra) + list(ps))
    outs = custom_linear_solve_p.bind(
        *_flatten(new_params), *b, const_lengths=LinearSolveTuple(*map(len, new_params)),
        jaxprs=LinearSolveTuple(*new_jaxprs))
    return outs, [0] * len(outs)


jvp_rules[custom_linear_solve_p] = _linear_solve_jvp
transpose_rules[custom_linear_solve_p] = _linear_solve_transpose
vmap_rules[custom_linear_solve_p] = _linear_solve_vmap


# --- custom_root ---


class _RootJaxprs:
    """The static part of a ``custom_root`` call: the jaxprs of ``f``, ``solve`` and the
    linearized solve, and their numbers of consts (compared by identity)."""

    def __init__(self, f, solve, l_and_s, lengths, n_x):
        self.f, self.solve, self.l_and_s, self.lengths, self.n_x = f, solve, l_and_s, \
            lengths, n_x

    def split(self, args):
        a, b, c = self.lengths
        return list(args[:a]), list(args[a:a + b]), list(args[a + b:a + b + c]), \
            list(args[a + b + c:])


def _eval(closed, *args):
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _custom_root(jaxprs, *args):
    _, solve_c, _, guess = jaxprs.split(args)
    return _eval(jaxprs.solve, *solve_c, *guess)


@_custom_root.defjvp
def _root_jvp(jaxprs, primals, tangents):
    # F(m, u*(m)) = 0  =>  du* = -(d_u F)^{-1} [d_m F(m, u*) dm]
    f_c, _, ls_c, _ = jaxprs.split(primals)
    f_dot, _, _, _ = jaxprs.split(tangents)
    sol = _custom_root(jaxprs, *primals)
    solution, aux = list(sol[:jaxprs.n_x]), list(sol[jaxprs.n_x:])
    f_dot = [instantiate(t) if type(t) is Zero else t for t in f_dot]
    if f_c:
        _, rhs = jvp(lambda *ps: _eval(jaxprs.f, *ps, *solution), tuple(f_c), tuple(f_dot))
    else:
        rhs = [P.full(core.get_aval(s).shape, 0, core.get_aval(s).dtype) for s in solution]
    sol_dot = [P.neg(t) for t in _eval(jaxprs.l_and_s, *ls_c, *solution, *rhs)]
    aux_dot = [P.full(core.get_aval(a).shape, 0, core.get_aval(a).dtype) for a in aux]
    return solution + aux, sol_dot + aux_dot


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """Find a root of ``f`` with ``solve``, differentiated by the implicit function theorem.

    Args:
      f: the function whose root is sought (``initial_guess``'s structure in and out).
      initial_guess: the starting point (pytree).
      solve: ``solve(f, initial_guess) -> root`` (``(root, aux)`` with ``has_aux``); not
        differentiated.
      tangent_solve: ``tangent_solve(g, y) -> x`` solving the linear ``g(x) = y``
        (``g`` is ``f`` linearized at the root); e.g. ``lambda g, y: y / g(1.0)`` for a
        scalar.
      has_aux: ``solve`` returns auxiliary data too.

    Returns:
      The root (``(root, aux)`` with ``has_aux``).

    Raises:
      TypeError: when ``f``, ``solve`` or ``tangent_solve`` do not preserve the structure of
        ``initial_guess`` (JAX's message).

    >>> import functrax
    >>> def newton(f, x):
    ...     for _ in range(20):
    ...         x = x - f(x) / functrax.grad(f)(x)
    ...     return x
    >>> sqrt = lambda a: custom_root(lambda x: x * x - a, 1.0, newton,
    ...                              lambda g, y: y / g(1.0))
    >>> functrax.grad(sqrt)(4.0)
    Array(0.25, dtype=float32, weak_type=True)
    """
    guess_flat, in_args_tree = tree_flatten((initial_guess,))
    guess_avals = tuple(core.get_aval(x) for x in guess_flat)
    f_jaxpr, f_consts, out_tree = _trace(f, in_args_tree, guess_avals)
    in_tree, = treedef_children(in_args_tree)
    _check_tree("f", "initial_guess", out_tree, in_tree, False)
    solve_jaxpr, solve_consts, solution_tree = _trace(functools.partial(solve, f),
                                                      in_args_tree, guess_avals)
    _check_tree("solve", "initial_guess", solution_tree, in_tree, has_aux)

    def linearize_and_solve(x, b):
        _, f_jvp = linearize(f, x)
        return tangent_solve(f_jvp, b)
    ls_jaxpr, ls_consts, out_tree = _trace(linearize_and_solve,
                                           treedef_tuple((in_tree,) * 2),
                                           [a.strip_weak_type() for a in guess_avals] * 2)
    _check_tree("tangent_solve", "x", out_tree, in_tree, False)
    jaxprs = _RootJaxprs(f_jaxpr, solve_jaxpr, ls_jaxpr,
                         (len(f_consts), len(solve_consts), len(ls_consts)), len(guess_flat))
    flat = _custom_root(jaxprs, *f_consts, *solve_consts, *ls_consts, *guess_flat)
    return tree_unflatten(solution_tree, flat)


__all__ = ["custom_linear_solve", "custom_root"]
