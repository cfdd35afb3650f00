"""A small Wadler/Lindig-style pretty-printing library.

Mirrors the semantics of JAX's ``jax._src.pretty_printer``: documents are
built from ``text``, ``concat``, ``brk``, ``group``, ``nest`` and ``join``,
then laid out to a target width with ``Doc.format``. Layout is iterative
(explicit agenda stack), so arbitrarily deep documents are fine.
"""

from __future__ import annotations

import enum
from typing import Iterable, List, Sequence, Tuple

__all__ = ["Doc", "nil", "text", "concat", "brk", "group", "nest", "join"]


class Doc:
  """Base class of pretty-printer documents."""
  __slots__ = ()

  def format(self, width: int = 80) -> str:
    return _format(self, width)

  def __str__(self) -> str:
    return self.format()

  def __add__(self, other: "Doc") -> "Doc":
    return concat([self, other])


class _NilDoc(Doc):
  __slots__ = ()

  def __repr__(self) -> str:
    return "nil()"


class _TextDoc(Doc):
  __slots__ = ("text",)

  def __init__(self, text: str):
    assert isinstance(text, str), text
    self.text = text

  def __repr__(self) -> str:
    return f"text({self.text!r})"


class _ConcatDoc(Doc):
  __slots__ = ("children",)

  def __init__(self, children: Sequence[Doc]):
    self.children = list(children)
    assert all(isinstance(d, Doc) for d in self.children), self.children

  def __repr__(self) -> str:
    return f"concat({self.children!r})"


class _BreakDoc(Doc):
  __slots__ = ("text",)

  def __init__(self, text: str):
    assert isinstance(text, str), text
    self.text = text

  def __repr__(self) -> str:
    return f"brk({self.text!r})"


class _GroupDoc(Doc):
  __slots__ = ("child",)

  def __init__(self, child: Doc):
    assert isinstance(child, Doc), child
    self.child = child

  def __repr__(self) -> str:
    return f"group({self.child!r})"


class _NestDoc(Doc):
  __slots__ = ("n", "child")

  def __init__(self, n: int, child: Doc):
    assert isinstance(child, Doc), child
    self.n = n
    self.child = child

  def __repr__(self) -> str:
    return f"nest({self.n}, {self.child!r})"


class _BreakMode(enum.Enum):
  FLAT, BREAK = 1, 2


_State = Tuple[int, _BreakMode, Doc]


def _fits(width: int, agenda: List[_State]) -> bool:
  """Whether the documents on ``agenda`` fit in ``width`` columns.

  Stops as soon as the remaining width goes negative, or at the first break
  laid out in BREAK mode (everything up to there fit on the line).
  """
  while width >= 0 and agenda:
    i, m, doc = agenda.pop()
    if isinstance(doc, _TextDoc):
      width -= len(doc.text)
    elif isinstance(doc, _ConcatDoc):
      agenda.extend((i, m, d) for d in reversed(doc.children))
    elif isinstance(doc, _BreakDoc):
      if m == _BreakMode.BREAK:
        return True
      width -= len(doc.text)
    elif isinstance(doc, _NestDoc):
      agenda.append((i + doc.n, m, doc.child))
    elif isinstance(doc, _GroupDoc):
      agenda.append((i, _BreakMode.FLAT, doc.child))
    elif not isinstance(doc, _NilDoc):
      raise TypeError(f"Unknown document type: {type(doc)}")
  return width >= 0


def _format(doc: Doc, width: int) -> str:
  out: List[str] = []
  k = 0  # current column
  agenda: List[_State] = [(0, _BreakMode.BREAK, doc)]
  while agenda:
    i, m, doc = agenda.pop()
    if isinstance(doc, _TextDoc):
      out.append(doc.text)
      k += len(doc.text)
    elif isinstance(doc, _ConcatDoc):
      agenda.extend((i, m, d) for d in reversed(doc.children))
    elif isinstance(doc, _BreakDoc):
      if m == _BreakMode.BREAK:
        out.append("\n" + " " * i)
        k = i
      else:
        out.append(doc.text)
        k += len(doc.text)
    elif isinstance(doc, _NestDoc):
      agenda.append((i + doc.n, m, doc.child))
    elif isinstance(doc, _GroupDoc):
      # Lindig's paper passes the remainder of the document to the fits check;
      # like JAX we only ask whether the group's own content fits.
      if m == _BreakMode.FLAT or _fits(width - k,
                                       [(i, _BreakMode.FLAT, doc.child)]):
        agenda.append((i, _BreakMode.FLAT, doc.child))
      else:
        agenda.append((i, _BreakMode.BREAK, doc.child))
    elif not isinstance(doc, _NilDoc):
      raise TypeError(f"Unknown document type: {type(doc)}")
  return "".join(out)


_NIL = _NilDoc()


def nil() -> Doc:
  """An empty document."""
  return _NIL


def text(s: str) -> Doc:
  """Literal text; never broken."""
  return _TextDoc(s)


def concat(docs: Iterable[Doc]) -> Doc:
  """Concatenation of documents."""
  docs = list(docs)
  if not docs:
    return _NIL
  if len(docs) == 1:
    return docs[0]
  return _ConcatDoc(docs)


def brk(text: str = " ") -> Doc:
  """A break: ``text`` when flat, a newline plus indentation when broken."""
  return _BreakDoc(text)


def group(doc: Doc) -> Doc:
  """Lays ``doc`` out flat if its own content fits, else breaks it."""
  return _GroupDoc(doc)


def nest(n: int, doc: Doc) -> Doc:
  """Increases the indentation of breaks within ``doc`` by ``n``."""
  return _NestDoc(n, doc)


def join(sep: Doc, docs: Iterable[Doc]) -> Doc:
  """Concatenates ``docs`` with ``sep`` between consecutive elements."""
  parts: List[Doc] = []
  for d in docs:
    if parts:
      parts.append(sep)
    parts.append(d)
  return concat(parts)
