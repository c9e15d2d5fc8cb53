"""Stopping the grader cleanly when it is told to (SIGTERM from a scheduler's timeout, ``kill``, a CI job
cancelled; SIGHUP when its terminal or SSH session closes; Ctrl-C): its temporary folders removed and every
process it started for a submission ended.

SIGTERM's default action ends the process at once: no ``finally``, no ``TemporaryDirectory`` cleanup, no
``atexit``, so every temporary folder of the run stayed behind. ``on_sigterm`` (called by the entry points,
``cli.main`` and ``nbgrader_course.main``) turns it into ``SystemExit(128 + SIGTERM)`` in the main thread, which
unwinds like any error; on the way ``cli.grade`` calls ``stop``: every kernel (its sandbox) and every reader
process still running is killed (each registered itself with ``killing``), so the worker threads finish at once
and their temporary folders go too, and no submission starts after it (``stopped``).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

_STOPPING = threading.Event()
_LOCK = threading.Lock()
_LIVE: dict[int, Callable[[], None]] = {}


class Stopped(RuntimeError):
    """The grader is stopping: nothing new is started."""

    def __init__(self) -> None:
        super().__init__("the grader was stopped before this submission was graded")


def stopped() -> bool:
    return _STOPPING.is_set()


@contextlib.contextmanager
def killing(kill: Callable[[], None]) -> Iterator[None]:
    """While inside: ``stop`` calls ``kill`` (it must end what this thread waits on, and may run in another
    thread). Entered after a stop: ``kill`` is called and Stopped raised."""
    key = object()
    with _LOCK:
        _LIVE[id(key)] = kill
    try:
        if _STOPPING.is_set():
            kill()
            raise Stopped()
        yield
    finally:
        with _LOCK:
            _LIVE.pop(id(key), None)


def stop() -> None:
    """Stop the run: every registered process killed, nothing new started."""
    _STOPPING.set()
    with _LOCK:
        kills = list(_LIVE.values())
    for kill in kills:
        try:
            kill()
        except Exception:  # already gone: nothing to stop
            pass


def _terminated(signum, frame) -> None:
    signal.signal(signum, signal.SIG_DFL)  # a second signal ends the grader at once, as before
    raise SystemExit(128 + signum)


# what ends the grader from outside: a kill or a scheduler's timeout (SIGTERM), the terminal or SSH session it
# ran in closed (SIGHUP); Ctrl-C (SIGINT) is Python's KeyboardInterrupt, which unwinds the same way already
ENDING = (signal.SIGTERM, signal.SIGHUP)


def on_sigterm() -> None:
    """SIGTERM and SIGHUP become SystemExit in the main thread (the entry points call it there, before anything
    starts), unless SIGHUP is ignored (``nohup``: the grader then goes on after the terminal closes)."""
    if threading.current_thread() is threading.main_thread():
        for signum in ENDING:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, _terminated)
