"""Tests for functrax.pretty_printer (JAX pretty_printer semantics)."""

from functrax import pretty_printer as pp

nil, text, concat, brk = pp.nil, pp.text, pp.concat, pp.brk
group, nest, join = pp.group, pp.nest, pp.join


def test_basic_docs():
  assert nil().format() == ""
  assert text("abc").format() == "abc"
  assert (text("a") + text("b")).format() == "ab"
  assert concat([text("a"), nil(), text("b")]).format() == "ab"
  assert concat([]).format() == ""
  assert str(text("x") + text("y")) == "xy"


def test_top_level_is_break_mode():
  assert (text("a") + brk() + text("b")).format(80) == "a\nb"


def test_group_flat_vs_broken():
  d = group(text("aaa") + brk() + text("bbb") + brk(", ") + text("ccc"))
  assert d.format(80) == "aaa bbb, ccc"
  assert d.format(12) == "aaa bbb, ccc"  # exactly fits
  assert d.format(11) == "aaa\nbbb\nccc"


def test_text_never_breaks():
  assert text("a" * 50).format(10) == "a" * 50


def test_nested_indentation():
  inner = group(nest(2, text("inner") + brk() + text("x") + brk() + text("y")))
  d = group(nest(2, text("outer") + brk() + inner + brk() + text("z")))
  assert d.format(80) == "outer inner x y z"
  # Outer breaks, inner still fits after indentation.
  assert d.format(12) == "outer\n  inner x y\n  z"
  # Both break; inner breaks are indented by 2 + 2.
  assert d.format(8) == "outer\n  inner\n    x\n    y\n  z"


def test_nest_only_affects_breaks():
  d = nest(4, text("a") + brk() + text("b"))
  assert d.format() == "a\n    b"
  assert (text("x") + nest(3, text("y"))).format() == "xy"


def test_group_measures_only_its_own_content():
  # The group fits in 10 columns by itself, even though the following text
  # overflows the line; it must still be laid out flat.
  d = group(text("aa") + brk() + text("bb")) + text("c" * 20)
  assert d.format(10) == "aa bb" + "c" * 20
  # ...but the current column is taken into account.
  d2 = text("123456") + group(text("aa") + brk() + text("bb"))
  assert d2.format(11) == "123456aa bb"
  assert d2.format(10) == "123456aa\nbb"


def test_flat_group_makes_inner_groups_flat():
  d = group(text("a") + group(brk() + text("b")) + brk() + text("c"))
  assert d.format(80) == "a b c"
  # Outer group broken; the inner group is measured on its own.
  assert d.format(4) == "a b\nc"
  assert d.format(3) == "a b\nc"
  assert d.format(2) == "a\nb\nc"


def test_join():
  assert join(text(", "), []).format() == ""
  assert join(text(", "), [text("a")]).format() == "a"
  assert join(text(", "), [text("a"), text("b"), text("c")]).format() == \
      "a, b, c"
  d = group(join(brk(), [text("a"), text("b"), text("c")]))
  assert d.format(5) == "a b c"
  assert d.format(4) == "a\nb\nc"


def test_deep_document_is_not_recursive():
  n = 20000
  d = text("x")
  for _ in range(n):
    d = group(nest(1, text("(") + d + text(")")))
  out = d.format(10)
  assert out == "(" * n + "x" + ")" * n
  d = nil()
  for _ in range(n):
    d = concat([d, text("a"), brk()])
  assert group(d).format(10) == "a\n" * n


def pp_vars(names):
  return nest(2, group(join(group(brk()), [text(n) for n in names])))


def jaxpr_doc(invars, eqns, outs):
  if len(outs) == 1:
    outs_s = "(" + ", ".join(outs) + ",)"
  else:
    outs_s = "(" + ", ".join(outs) + ")"
  return group(nest(2, concat([
      text("{ "), text("lambda "), text("; "), pp_vars(invars), text(". "),
      text("let"), nest(2, brk() + join(brk("; "), eqns)), brk(),
      text("in "), text(outs_s)])) + text(" }"))


def test_jaxpr_single_line():
  d = jaxpr_doc(["a:f32[]"], [text("b:f32[] = sin a")], ["b"])
  assert d.format(80) == "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }"
  assert str(d) == "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }"


def test_jaxpr_multi_line():
  d = jaxpr_doc(["a:f32[3]", "b:f32[3]"],
                [text("c:f32[3] = sin a"), text("d:f32[3] = mul c b")], ["d"])
  assert d.format(80) == (
      "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = sin a; "
      "d:f32[3] = mul c b in (d,) }")
  assert d.format(30) == (
      "{ lambda ; a:f32[3] b:f32[3]. let\n"
      "    c:f32[3] = sin a\n"
      "    d:f32[3] = mul c b\n"
      "  in (d,) }")


def test_params_group_breaks():
  params = group(nest(2, concat([
      text("["), brk(""),
      join(brk(), [text("dimension_numbers=(([1], [0]), ([], []))"),
                   text("preferred_element_type=float32")])]))
      + brk("") + text("]"))
  d = nest(4, text("    c:f32[4] = dot_general") + params)
  assert d.format(80) == (
      "    c:f32[4] = dot_general[\n"
      "      dimension_numbers=(([1], [0]), ([], []))\n"
      "      preferred_element_type=float32\n"
      "    ]")
  # With enough room the same params print on one line.
  assert d.format(200) == (
      "    c:f32[4] = dot_general[dimension_numbers=(([1], [0]), ([], [])) "
      "preferred_element_type=float32]")
