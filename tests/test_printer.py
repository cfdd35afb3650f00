"""The jaxpr printer against JAX's own text (../shared/vectors/jax_jaxprs.md) and unit cases."""
from __future__ import annotations

import re

import numpy as np
import pytest

import functrax
import functrax.numpy as fnp
from functrax import lax
from functrax import primitives as P
from functrax.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Primitive, ShapedArray, Var
from tests.vectors import vector_path

VECTORS = vector_path("jax_jaxprs.md")


def _load_vectors() -> dict:
    """Section title -> JAX's printed jaxpr, with the ``out_sharding=None`` param removed."""
    if not VECTORS.exists():
        return {}
    text = VECTORS.read_text()
    out = text.split("## output", 1)[1]
    sections, title, lines = {}, None, []
    for line in out.splitlines():
        if not line.strip():
            continue
        line = line[4:] if line.startswith("    ") else line
        if line.startswith("=== "):
            if title is not None:
                sections[title] = "\n".join(lines)
            title, lines = line[4:].strip(), []
        else:
            lines.append(line)
    if title is not None:
        sections[title] = "\n".join(lines)
    return {k: _strip_out_sharding(v) for k, v in sections.items()}


def _strip_out_sharding(s: str) -> str:
    s = re.sub(r"\[out_sharding=None\]", "", s)
    return re.sub(r" out_sharding=None", "", s)


JAX_TEXT = _load_vectors()
needs_vectors = pytest.mark.skipif(not JAX_TEXT, reason=f"{VECTORS} is absent")


def jax_text(title):
    assert title in JAX_TEXT, f"section '=== {title}' not in {VECTORS}"
    return JAX_TEXT[title]


# --- programs traced by functrax vs JAX's text ---


def _f(x, y):
    z = fnp.sin(x) * y + 2.0
    return fnp.sum(z ** 2)


@needs_vectors
def test_make_jaxpr_f_matches_jax():
    closed = functrax.make_jaxpr(_f)(fnp.ones(3), fnp.arange(3.0))
    assert str(closed) == jax_text("make_jaxpr(f)")


@needs_vectors
@pytest.mark.parametrize("arg", [np.int8(1), fnp.asarray(np.int8(1))], ids=["numpy", "Array"])
def test_int_weak_type_matches_jax(arg):
    closed = functrax.make_jaxpr(lambda x: x + 1)(arg)
    assert str(closed) == jax_text("int/ weak types")


@needs_vectors
def test_dot_general_matches_jax_vmap_shape():
    closed = functrax.make_jaxpr(lambda a, b: fnp.dot(a, b))(fnp.ones((4, 3)), fnp.arange(3.0))
    assert str(closed) == jax_text("vmap")


# --- round trip: parse JAX's text into a jaxpr, print it, get the same text ---


class _Raw:
    """A param value printed exactly as JAX printed it."""

    def __init__(self, s):
        self.s = s

    def __str__(self):
        return self.s


_DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i8": np.int8,
           "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32,
           "bool": np.bool_, "c64": np.complex64}
_TYPE = re.compile(r"([a-z0-9]+)\[([0-9,]*)\]")


def _aval(s):
    m = _TYPE.fullmatch(s)
    assert m, s
    dims = tuple(int(d) for d in m.group(2).split(",") if d)
    return ShapedArray(dims, _DTYPES[m.group(1)])


class _JaxprParser:
    """Parses JAX's printed jaxpr text (enough for the vectors file), with fake primitives."""

    def __init__(self, text):
        self.s, self.i = text, 0
        self.prims = {}

    def ws(self):
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self, tok):
        self.ws()
        return self.s.startswith(tok, self.i)

    def expect(self, tok):
        assert self.peek(tok), f"expected {tok!r} at {self.s[self.i:self.i + 30]!r}"
        self.i += len(tok)

    def token(self, pattern=r"[^\s;()\[]+(?:\[[0-9,]*\])?"):
        self.ws()
        m = re.compile(pattern).match(self.s, self.i)
        assert m, self.s[self.i:self.i + 30]
        self.i = m.end()
        return m.group(0)

    def jaxpr(self) -> Jaxpr:
        env = {}
        self.expect("{")
        self.expect("lambda")
        constvars = self.binders(env, ";")
        self.expect(";")
        invars = self.binders(env, ".")
        self.expect(".")
        self.expect("let")
        eqns = []
        while not self.peek("in ") and not self.peek("in("):
            eqns.append(self.eqn(env))
            if self.peek(";"):
                self.expect(";")
        self.expect("in")
        self.expect("(")
        outs = []
        while not self.peek(")"):
            outs.append(self.atom(env, self.token(r"[^\s,()]+")))
            if self.peek(","):
                self.expect(",")
        self.expect(")")
        self.expect("}")
        return Jaxpr(constvars, invars, outs, eqns)

    def binders(self, env, end):
        vs = []
        while not self.peek(end):
            name, ty = self.token(r"[a-z_]+:[a-z0-9]+\[[0-9,]*\]").split(":")
            v = Var(_aval(ty))
            if name != "_":
                env[name] = v
            vs.append(v)
        return vs

    def atom(self, env, tok):
        if ":" in tok:  # a literal such as 2.0:f32[]
            val, ty = tok.split(":")
            aval = _aval(ty)
            return Literal(np.asarray(val == "True" if aval.dtype == np.bool_ else
                                      float(val), aval.dtype)[()], aval)
        return env[tok]

    def eqn(self, env) -> JaxprEqn:
        outs = []
        while not self.peek("="):
            name, ty = self.token(r"[a-z_]+:[a-z0-9]+\[[0-9,]*\]").split(":")
            outs.append((name, Var(_aval(ty))))
        self.expect("=")
        name = self.token(r"[A-Za-z_][\w\-]*")
        params = self.params() if self.s.startswith("[", self.i) else {}
        ins = []
        while True:
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] in ";}" or self.peek("in ") or \
                    self.peek("in("):
                break
            if re.compile(r"[a-z_]+:[a-z]").match(self.s, self.i) and \
                    not re.compile(r"True:|False:").match(self.s, self.i):
                break  # the next equation's binder
            ins.append(self.atom(env, self.token()))
        for n, v in outs:
            if n != "_":
                env[n] = v
        prim = self.prims.setdefault(name, Primitive(name, multiple_results=len(outs) > 1))
        return JaxprEqn(ins, [v for _, v in outs], prim, params)

    def params(self) -> dict:
        self.expect("[")
        params = {}
        while not self.peek("]"):
            key = self.token(r"[A-Za-z_]\w*")
            self.expect("=")
            if self.peek("{"):
                params[key] = self.jaxpr()
            elif self.peek("(") and re.compile(r"\(\s*\{").match(self.s, self.i):
                self.expect("(")
                subs = []
                while not self.peek(")"):
                    subs.append(self.jaxpr())
                self.expect(")")
                params[key] = tuple(subs)
            else:
                params[key] = _Raw(self.raw_value())
        self.expect("]")
        return params

    def raw_value(self):
        depth, start = 0, self.i
        while True:
            c = self.s[self.i]
            if depth == 0 and (c.isspace() or c == "]"):
                return self.s[start:self.i]
            depth += c in "([{"
            depth -= c in ")]}"
            self.i += 1


def parse_jaxpr(text) -> Jaxpr:
    p = _JaxprParser(text)
    jaxpr = p.jaxpr()
    p.ws()
    assert p.i == len(text), f"unparsed text: {text[p.i:]!r}"
    return jaxpr


# jit's inner jaxpr restarts naming at `a` in JAX's text: that is jit's own print rule.
ROUND_TRIP = [t for t in JAX_TEXT if t != "jit inside"]


@needs_vectors
@pytest.mark.parametrize("title", ROUND_TRIP)
def test_printer_reproduces_jax_layout(title):
    text = jax_text(title)
    assert parse_jaxpr(text).pretty_print() == text


def test_parser_round_trip_can_fail():
    text = "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }"
    assert parse_jaxpr(text).pretty_print() == text
    jaxpr = parse_jaxpr(text)
    jaxpr.outvars = [jaxpr.invars[0]]
    assert jaxpr.pretty_print() != text


# --- unit cases ---

F32 = ShapedArray((), np.float32)
F32_3 = ShapedArray((3,), np.float32)


def test_var_names_continue_past_z():
    x = Var(F32)
    eqns, prev = [], x
    for _ in range(30):
        v = Var(F32)
        eqns.append(JaxprEqn([prev], [v], P.neg_p, {}))
        prev = v
    text = Jaxpr([], [x], [prev], eqns).pretty_print()
    assert "a:f32[]." in text
    assert "z:f32[] = neg y" in text
    assert "ba:f32[] = neg z" in text
    assert "bb:f32[] = neg ba" in text
    assert "be:f32[] = neg bd" in text
    assert text.rstrip().endswith("in (be,) }")


def test_unused_outputs_print_as_underscore():
    def f(x):
        y = fnp.sin(x)  # unused
        del y
        k, v = lax.sort((x, fnp.cos(x)), num_keys=1)
        return k
    text = str(functrax.make_jaxpr(f)(fnp.ones(3)))
    assert "_:f32[3] = sin a" in text
    # `_` takes no name: a, (sin unused), b = cos, c = sorted keys
    assert "c:f32[3] _:f32[3] = sort[dimension=0 is_stable=True num_keys=1] a b" in text


def test_literals_print_with_type():
    text = str(functrax.make_jaxpr(lambda x: x * 2.0)(fnp.ones(3)))
    assert "mul a 2.0:f32[]" in text
    text = str(functrax.make_jaxpr(lambda i: lax.add(i, 1))(fnp.asarray(np.int32(3))))
    assert "add a 1:i32[]" in text
    text = str(functrax.make_jaxpr(lambda b: lax.bitwise_and(b, True))(fnp.asarray([True])))
    assert "and a True:bool[]" in text
    text = str(functrax.make_jaxpr(lambda x: x - 0.5)(np.float16(1)))
    assert "sub a 0.5:f16[]" in text


def test_constvars_print_before_semicolon():
    c = fnp.arange(3.0)
    text = str(functrax.make_jaxpr(lambda x: x + c)(fnp.ones(3)))
    assert text.startswith("{ lambda a:f32[3]; b:f32[3]. let")
    assert "add b a" in text
    text = str(functrax.make_jaxpr(lambda x: x + 1.0)(fnp.ones(3)))
    assert text.startswith("{ lambda ; a:f32[3]. let")


def _fake_eqn(prim_name, params, width_ins=1):
    x = Var(F32)
    out = Var(F32)
    eqn = JaxprEqn([x] * width_ins, [out], Primitive(prim_name), params)
    return Jaxpr([], [x], [out], [eqn])


def test_params_sorted_with_name_first():
    jaxpr = _fake_eqn("f", {"z": 1, "b": (0, 1), "name": "g", "m": None})
    assert jaxpr.pretty_print() == (
        "{ lambda ; a:f32[]. let b:f32[] = f[name=g b=(0, 1) m=None z=1] a in (b,) }")


def test_long_params_break_over_lines():
    jaxpr = _fake_eqn("fake", {"first_long_parameter": "x" * 30,
                               "second_long_parameter": "y" * 30})
    assert jaxpr.pretty_print() == "\n".join([
        "{ lambda ; a:f32[]. let",
        "    b:f32[] = fake[",
        "      first_long_parameter=" + "x" * 30,
        "      second_long_parameter=" + "y" * 30,
        "    ] a",
        "  in (b,) }",
    ])


def test_sub_jaxpr_indented_and_names_continue():
    inner_x, inner_y = Var(F32_3), Var(F32_3)
    inner = Jaxpr([], [inner_x], [inner_y], [JaxprEqn([inner_x], [inner_y], P.sin_p, {})])
    x, y, z = Var(F32_3), Var(F32_3), Var(F32_3)
    call = Primitive("fake_call")
    eqns = [JaxprEqn([x], [y], call, {"jaxpr": inner, "n": 1}),
            JaxprEqn([y, Literal(np.float32(1.0), F32)], [z], P.add_p, {})]
    outer = Jaxpr([], [x], [z], eqns)
    assert outer.pretty_print() == "\n".join([
        "{ lambda ; a:f32[3]. let",
        "    b:f32[3] = fake_call[",
        "      jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }",
        "      n=1",
        "    ] a",
        "    e:f32[3] = add b 1.0:f32[]",
        "  in (e,) }",
    ])
    # a ClosedJaxpr param prints the same way
    eqns[0] = JaxprEqn([x], [y], call, {"jaxpr": ClosedJaxpr(inner, []), "n": 1})
    assert Jaxpr([], [x], [z], eqns).pretty_print() == outer.pretty_print()


def test_long_sub_jaxpr_breaks_inside():
    xs = [Var(F32) for _ in range(8)]
    eqns = [JaxprEqn([xs[i]], [xs[i + 1]], P.sin_p, {}) for i in range(7)]
    inner = Jaxpr([], [xs[0]], [xs[-1]], eqns)
    x, y = Var(F32), Var(F32)
    outer = Jaxpr([], [x], [y], [JaxprEqn([x], [y], Primitive("fake_call"), {"jaxpr": inner})])
    lines = outer.pretty_print().splitlines()
    assert lines[:3] == ["{ lambda ; a:f32[]. let", "    b:f32[] = fake_call[",
                         "      jaxpr={ lambda ; c:f32[]. let"]
    assert lines[3] == "          d:f32[] = sin c"
    assert "        in (j,) }" in lines
    assert lines[-2:] == ["    ] a", "  in (b,) }"]


def test_multiple_outputs_and_empty_jaxpr():
    x, y = Var(F32), Var(F32)
    jaxpr = Jaxpr([], [x, y], [y, x], [])
    assert jaxpr.pretty_print() == "{ lambda ; a:f32[] b:f32[]. let  in (b, a) }"
    closed = functrax.make_jaxpr(lambda: 1.0)()
    assert str(closed) == "{ lambda ; . let  in (1.0:f32[],) }"


def test_eqn_repr_is_its_text():
    closed = functrax.make_jaxpr(lambda x: fnp.sin(x))(1.0)
    # on its own, an equation names its outputs first (as JAX's JaxprEqn.__repr__)
    assert repr(closed.eqns[0]) == "a:f32[] = sin b"


# --- shared sub-jaxprs, jit binder names, literal values (JAX 0.10's printer) ---


def _chain(n):
    """A jaxpr of ``n`` sin equations."""
    xs = [Var(F32) for _ in range(n + 1)]
    return Jaxpr([], [xs[0]], [xs[-1]],
                 [JaxprEqn([xs[i]], [xs[i + 1]], P.sin_p, {}) for i in range(n)])


def _caller(*subs, name="f"):
    x = Var(F32)
    outs, eqns, cur = [], [], x
    for sub in subs:
        y = Var(F32)
        eqns.append(JaxprEqn([cur], [y], Primitive("fake_call"), {"jaxpr": sub, "name": name}))
        cur = y
        outs.append(y)
    return Jaxpr([], [x], [cur], eqns)


def test_sub_jaxpr_of_more_than_10_eqns_is_printed_once_first():
    text = _caller(_chain(11), name="<lambda>").pretty_print()
    assert text.startswith("let lambda = { lambda ; a:f32[]. let\n    b:f32[] = sin a\n")
    assert text.splitlines()[12] == "  in (l,) } in"
    assert "    n:f32[] = fake_call[name=<lambda> jaxpr=lambda] m" in text
    # 10 equations stay inline
    assert not _caller(_chain(10)).pretty_print().startswith("let")


def test_sub_jaxpr_used_twice_is_shared_and_names_are_numbered():
    small, other = _chain(1), _chain(2)
    text = _caller(small, small, other, other).pretty_print()
    lines = text.splitlines()
    assert lines[0] == "let f = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in"
    assert lines[1].startswith("let f1 = { lambda ; c:f32[]. let")
    assert text.count("[name=f jaxpr=f]") == 2 and text.count("[name=f jaxpr=f1]") == 2


def test_variable_names_skip_shared_jaxpr_names():
    # a shared jaxpr named "c" takes that name from the variables
    j = _chain(1)
    text = _caller(j, j, name="c").pretty_print()
    assert text.splitlines()[0] == "let c = { lambda ; a:f32[]. let b:f32[] = sin a in (b,) } in"
    assert "{ lambda ; d:f32[]. let" in text


def test_jit_binders_print_with_the_outer_names():
    inner = functrax.jit(lambda a, b: (fnp.sin(a) * b, a))

    def f(x, y):
        p, q = inner(x, y)
        return p + q
    text = str(functrax.make_jaxpr(f)(1.0, 2.0))
    assert "jaxpr={ lambda ; a:f32[] b:f32[]. let" in text
    assert "in (c, a) }" in text  # the inner outputs take the outer results' names


def test_literals_print_their_value_as_jax_does():
    text = str(functrax.make_jaxpr(lambda x: x * 0.1)(1.0))
    assert "mul a 0.1:f32[]" in text  # a weakly typed literal as written
    text = str(functrax.make_jaxpr(lambda x: x * np.float32(0.1))(np.float32(1)))
    assert "mul a 0.10000000149011612:f32[]" in text  # a float32 one: its value, as a float
    lo = np.nextafter(np.float32(-1), np.float32(0))
    text = str(functrax.make_jaxpr(lambda x: lax.max(x, lo))(np.float32(0)))
    assert "-0.9999999403953552:f32[]" in text
    text = str(functrax.make_jaxpr(lambda x: x * 3)(np.uint8(1)))
    assert "mul a 3:u8[]" in text
