"""Where learner code can be stopped for good: raising the time limit's exception at a line no handler swallows.

A ``while True: try: ... except BaseException: pass`` loop swallows an exception raised at a random moment (most
moments are inside the ``try``). Python 3.11+ keeps, per code object, an exception table: which instruction
ranges a handler covers, and the handler's code says what it catches. ``swallows(code, offset)`` reads it, so
a trace function can wait for a line where neither the running frame nor any frame between it and the
harness would catch the exception (the ``try:`` line of such a loop, its ``while`` line, the ``pass`` in the
handler), and raise there. Handlers that catch: a bare ``except:``, and ``except`` naming ``BaseException`` or
the exception itself (alone or in a tuple). ``except Exception``, ``finally`` and ``with`` blocks pass it on
(a context manager that suppresses every exception, ``contextlib.suppress(BaseException)``, is not seen). On
Python 3.10 (no exception table) every line counts as unprotected: the raise is then where the next line
starts, as before.
"""

from __future__ import annotations

import dis
import functools
import sys

CATCHING = frozenset({"BaseException", "Deadline"})
_SKIP = frozenset({"CACHE", "NOP", "EXTENDED_ARG", "PUSH_EXC_INFO"})
_PASS_ON = frozenset({"WITH_EXCEPT_START", "COPY", "POP_EXCEPT", "RERAISE"})


@functools.lru_cache(maxsize=1024)
def _table(code):
    parse = getattr(dis, "_parse_exception_table", None)
    if parse is None:
        return None
    instructions = [i for i in dis.get_instructions(code) if i.opname not in _SKIP]
    return parse(code), instructions


def _catches(instructions, target: int) -> bool:
    """Does the handler starting at ``target`` catch a ``BaseException`` that is not an ``Exception``?"""
    names = []
    for ins in [i for i in instructions if i.offset >= target][:12]:
        if ins.opname == "POP_TOP" and not names:
            return True  # a bare `except:` drops the exception at once
        if ins.opname in _PASS_ON:
            return False  # a with block's exit, or the cleanup that re-raises
        if ins.opname.startswith("LOAD_"):
            names.append(str(ins.argval))
        if ins.opname == "CHECK_EXC_MATCH":
            return any(name in CATCHING for name in names)
    return False  # a finally block: it re-raises


def swallows(code, offset: int) -> bool | None:
    """Would an exception raised at instruction ``offset`` of ``code`` be caught in that frame? ``None``: this
    Python keeps no exception table (3.10), so it cannot tell."""
    table = _table(code)
    if table is None:
        return None
    entries, instructions = table
    seen = set()
    while True:
        entry = next((e for e in entries if e.start <= offset < e.end), None)
        if entry is None or entry.target in seen:
            return False
        seen.add(entry.target)
        if _catches(instructions, entry.target):
            return True
        offset = entry.target  # the handler passes it on: what covers the handler's own code?


def protected(frame, stop) -> bool:
    """Would a raise at ``frame``'s current line be caught before it reaches the frame running ``stop`` (a code
    object: the harness's call)?"""
    while frame is not None and frame.f_code is not stop:
        if swallows(frame.f_code, frame.f_lasti):
            return True
        frame = frame.f_back
    return False


def tracer(exc_type, due, stop):
    """A trace function raising ``exc_type`` at the first line, once ``due()`` is true, where it escapes."""

    def trace(frame, event, arg):
        if event == "line" and due() and not protected(frame, stop):
            raise exc_type()
        return trace

    return trace


def install(trace, frame, stop) -> None:
    """Trace the running frames from ``frame`` up to the one running ``stop``, and every frame started from now."""
    while frame is not None and frame.f_code is not stop:
        frame.f_trace = trace
        frame = frame.f_back
    sys.settrace(trace)
