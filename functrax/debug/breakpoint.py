"""``functrax.debug.breakpoint``: a debugger on the concrete values of a (jitted,
transformed) program, as ``jax.debug.breakpoint``.

When ``breakpoint()`` is called (while tracing, or eagerly) it records the Python frames of
the call (the user's, without functrax's own when ``filter_frames``); their array locals
(tracers included) become the arguments of a ``debug_callback``. When the program runs, the
callback rebuilds the frames with the concrete values and hands them to a debugger backend:
``"cli"`` (the default: a pdb-like prompt ``(jdb)`` with ``p``, ``pp``, ``up``, ``down``,
``list``, ``where``, ``continue``, ``quit``; ``stdin`` / ``stdout`` keyword arguments
redirect it) or one registered with :func:`register_debugger` (tests use a stub).
"""
from __future__ import annotations

import cmd
import inspect
import os
import pprint
import sys
import threading
import traceback

from functrax.core import Array, Tracer, is_concrete_array
from functrax.debug.printing import callback as debug_callback
from functrax.tree_util import tree_flatten, tree_unflatten

__all__ = ["breakpoint", "DebuggerFrame", "register_debugger", "CliDebugger"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class DebuggerFrame:
    """One Python frame of a breakpoint: its file, locals (concrete values at run time),
    globals, source lines and the line of the call."""

    __slots__ = ("filename", "locals", "globals", "code_context", "source", "lineno",
                 "offset")

    def __init__(self, filename, locals, globals, code_context, source, lineno, offset):
        self.filename, self.locals, self.globals = filename, locals, globals
        self.code_context, self.source = code_context, source
        self.lineno, self.offset = lineno, offset

    @classmethod
    def from_frameinfo(cls, info) -> DebuggerFrame:
        try:
            lines, start = inspect.getsourcelines(info.frame)
            source, offset = [ln.rstrip("\n") for ln in lines], info.lineno - max(start, 1)
        except (OSError, TypeError):
            source, offset = [], None
        return cls(info.filename, dict(info.frame.f_locals), info.frame.f_globals,
                   info.code_context, source, info.lineno, offset)

    def flatten(self):
        """``(array locals, rebuild)``: the runtime values and a function of them."""
        names = sorted(self.locals)
        arrays = [n for n in names if _is_array(self.locals[n])]
        others = {n: v for n, v in self.locals.items() if n not in arrays}

        def rebuild(values):
            return DebuggerFrame(self.filename, {**others, **dict(zip(arrays, values))},
                                 self.globals, self.code_context, self.source, self.lineno,
                                 self.offset)
        return [self.locals[n] for n in arrays], rebuild

    def __repr__(self):
        return f"DebuggerFrame({self.filename}:{self.lineno})"


def _is_array(x) -> bool:
    import numpy as np
    return isinstance(x, (Tracer, np.ndarray)) or is_concrete_array(x) or isinstance(x, Array)


# --- debugger backends ---

_DEBUGGERS: dict = {}  # name -> (priority, fn(frames, thread_id, **kwargs))


def register_debugger(name: str, debugger, priority: int = 0) -> None:
    """Register ``debugger(frames, thread_id, **kwargs)`` as the backend ``name``; without a
    ``backend=`` argument ``breakpoint`` uses the registered one of highest priority."""
    _DEBUGGERS[name] = (priority, debugger)


def get_debugger(backend=None):
    """The debugger function of ``backend`` (None: the highest priority).

    Raises:
      ValueError: for a backend nobody registered, listing the registered ones.
    """
    if backend is None:
        return max(_DEBUGGERS.values(), key=lambda pd: pd[0])[1]
    if backend not in _DEBUGGERS:
        raise ValueError(f"functrax.debug.breakpoint: unknown debugger backend {backend!r}; "
                         f"registered: {sorted(_DEBUGGERS)}")
    return _DEBUGGERS[backend][1]


_LOCK = threading.Lock()


def breakpoint(*, backend=None, filter_frames: bool = True, num_frames=None,  # noqa: A001
               ordered: bool = False, token=None, **kwargs):
    """Enter a debugger with the concrete values of the current frames when the program
    runs (at once eagerly; at every run of a jitted function; once per example under vmap).

    Args:
      backend: the debugger backend: ``"cli"`` (the default) or one registered with
        :func:`register_debugger`.
      filter_frames: leave out functrax's own frames.
      num_frames: show only this many frames (innermost first).
      ordered: run in program order with other ordered callbacks.
      token: JAX's token argument: returned unchanged.
      **kwargs: passed to the debugger (``stdin``, ``stdout`` for ``"cli"``).

    Returns:
      ``token`` (None when not given).

    >>> import io, functrax
    >>> out = io.StringIO()
    >>> def f(x):
    ...     functrax.debug.breakpoint(stdin=io.StringIO("p x\\nc\\n"), stdout=out)
    ...     return x
    >>> _ = functrax.jit(f)(2.0)
    >>> print(out.getvalue())
    Entering jdb:
    (jdb) Array(2., dtype=float32)
    (jdb)
    """
    infos = inspect.stack()[1:]
    if filter_frames:
        infos = [fi for fi in infos if not os.path.abspath(fi.filename).startswith(
            _PACKAGE_DIR + os.sep)]
    if num_frames is not None:
        infos = infos[:num_frames]
    frames = [DebuggerFrame.from_frameinfo(fi) for fi in infos]
    del infos
    parts = [f.flatten() for f in frames]
    values, tree = tree_flatten([v for v, _ in parts])
    rebuilds = [r for _, r in parts]

    def _breakpoint_callback(*flat):
        per_frame = tree_unflatten(tree, list(flat))
        live = [r(v) for r, v in zip(rebuilds, per_frame)]
        thread = None if threading.current_thread() is threading.main_thread() else \
            threading.get_ident()
        with _LOCK:
            get_debugger(backend)(live, thread, **kwargs)

    debug_callback(_breakpoint_callback, *values, ordered=ordered)
    return token


# --- the command-line debugger ---

class CliDebugger(cmd.Cmd):
    """A pdb-like prompt over :class:`DebuggerFrame` s (JAX's ``jdb``)."""

    prompt = "(jdb) "

    def __init__(self, frames, thread_id, stdin=None, stdout=None, completekey="tab"):
        super().__init__(stdin=stdin, stdout=stdout, completekey=completekey)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.frame_index = 0
        self.thread_id = thread_id
        self.intro = "Entering jdb:"

    def current_frame(self) -> DebuggerFrame:
        return self.frames[self.frame_index]

    def evaluate(self, expr):
        frame = self.current_frame()
        env = dict(frame.globals)
        env.update(frame.locals)
        return eval(expr, {}, env)  # noqa: S307 - the user's debugging expression

    def _error(self):
        exc_type, exc, _ = sys.exc_info()
        print("".join(traceback.format_exception_only(exc_type, exc)).rstrip("\n"),
              file=self.stdout)

    def default(self, arg):
        """Evaluate an expression and print its repr."""
        try:
            print(repr(self.evaluate(arg)), file=self.stdout)
        except Exception:  # noqa: BLE001 - shown to the user
            self._error()

    def emptyline(self):
        return False

    def do_p(self, arg):
        """p expression: evaluate and print its repr."""
        self.default(arg)

    def do_pp(self, arg):
        """pp expression: evaluate and pretty-print it."""
        try:
            print(pprint.pformat(self.evaluate(arg)), file=self.stdout)
        except Exception:  # noqa: BLE001 - shown to the user
            self._error()

    def print_context(self, num_lines=2):
        frame = self.current_frame()
        print(f"> {frame.filename}({frame.lineno})", file=self.stdout)
        if frame.offset is None or not frame.source:
            return
        lo, hi = max(frame.offset - num_lines, 0), frame.offset + num_lines + 1
        for i in range(lo, min(hi, len(frame.source))):
            mark = "->" if i == frame.offset else "  "
            print(f"{mark} {frame.source[i]}", file=self.stdout)

    def do_up(self, _):
        """u(p): one frame up (towards the caller)."""
        if self.frame_index == len(self.frames) - 1:
            print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
            self.print_context()

    do_u = do_up

    def do_down(self, _):
        """d(own): one frame down."""
        if self.frame_index == 0:
            print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
            self.print_context()

    do_d = do_down

    def do_list(self, _):
        """l(ist): the source around the current line."""
        self.print_context(num_lines=5)

    do_l = do_list

    def do_where(self, _):
        """w(here) / bt: the frames, the current one marked."""
        for i, f in reversed(list(enumerate(self.frames))):
            mark = "> " if i == self.frame_index else "  "
            print(f"{mark}{f.filename}({f.lineno})", file=self.stdout)

    do_w = do_bt = do_where

    def do_continue(self, _):
        """c(ont(inue)): leave the debugger and run on."""
        return True

    do_c = do_cont = do_continue

    def do_quit(self, _):
        """q(uit) / exit: stop the program (SystemExit)."""
        sys.exit("Exiting debugger due to `quit` command.")

    do_q = do_exit = do_quit

    def do_EOF(self, _):  # noqa: N802 - cmd's name for end of input
        print(file=self.stdout)
        return True

    def run(self):
        while True:
            try:
                self.cmdloop()
                break
            except KeyboardInterrupt:
                print("--Keyboard-Interrupt--", file=self.stdout)


def _run_cli(frames, thread_id, **kwargs):
    CliDebugger(frames, thread_id, **kwargs).run()


register_debugger("cli", _run_cli, -1)
