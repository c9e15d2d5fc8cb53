"""Running learner code so that nothing it does escapes a check.

``run`` wraps one check; ``call`` wraps every call into learner code inside it. Together they:

- stop code that runs past the time limit. On the main thread of a POSIX system (Jupyter, nbgrader, pytest)
  ``signal.setitimer`` raises ``Deadline`` into the running Python code and re-fires every 50 ms. Code that
  swallows it (``while True: try: ... except BaseException: pass``) is then traced: ``_deadline`` raises
  ``Deadline`` again at the first line where no handler between that line and this harness would catch it
  (read from the code's exception table, Python 3.11+), so such a loop ends too. Elsewhere (Windows, other
  threads) the same trace function runs from the start and raises at such a line once the time is up.
  Neither can interrupt one long C call: a single huge torch op (or a C extension's loop) runs to its end,
  then the limit strikes; nor code that disables tracing itself or swallows the exception in a context
  manager's ``__exit__``. In grading the kernel is also killed from outside after the whole submission's
  time limit (``tools/teaching/grader/kernel.py``). ``Deadline`` derives from ``BaseException`` so
  ``except Exception`` lets it through.
- catch ``SystemExit`` and a ``KeyboardInterrupt`` that the learner's code raises itself. A real Ctrl-C
  (SIGINT, also what Jupyter's stop button and nbclient's cell timeout send) during a check is the user
  stopping the cell: it is re-raised, as everywhere else in Python. We tell the two apart with a SIGINT
  handler installed for the duration of the check (main thread only; elsewhere every KeyboardInterrupt
  propagates).
- collect what the learner's code prints (shown with the result, never swallowed), silence its warnings.
- keep each check's record to itself: the check running is found through the thread's (or task's) own context
  (``current()``), and what a call prints goes to that check's output, so checks run at once in several threads
  (the grader's workers, one submission each) never see each other's hits, observed ops or output.
- spot llm_lab's own reference code running inside the learner's code (``sys.setprofile``), calls to
  functions an exercise rules out (e.g. ``F.scaled_dot_product_attention`` in the tiled-attention exercise),
  and, in every check, a thread or process started (``STARTERS``): the hook and the observation of
  the ops cover the calling thread only, so work handed to another thread would hide from both.
- see that the learner's code leaves those hooks alone: a call to ``sys.settrace``/``sys.setprofile`` from the
  learner's code (an audit hook, which nothing can remove, sees it even when the code puts the hooks back), or
  a hook that is not the harness's own when the call returns, is the named failure ``watch_switched_off``.
- run on the CPU in float32 with gradients off, whatever the notebook set as torch defaults, on one thread
  (the inputs are tiny: on a busy 2-core machine one thread is 10-20x faster than torch's default pool), and
  leave the notebook's random stream untouched (``fork_rng``; bodies seed their own draws: repeatable).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

import torch

from . import _deadline
from ._core import LearnerError, NotImplementedYet, Remote, TimedOut
from ._observe import observing
from ._starters import PY_STARTERS as PY_STARTERS  # what every check rules out
from ._starters import STARTERS as STARTERS
from ._watch import Watch

MAX_OUTPUT_LINES = 20
MAX_OUTPUT_CHARS = 4000


class Deadline(BaseException):
    """Raised into learner code when its time is up."""


class _CappedText(io.StringIO):
    """Keeps the first MAX_OUTPUT_CHARS characters written and counts the lines of all of them."""

    def __init__(self):
        super().__init__()
        self.lines = 0
        self.size = 0

    def write(self, text: str) -> int:
        self.lines += text.count("\n")
        if self.size < MAX_OUTPUT_CHARS:
            super().write(text[: MAX_OUTPUT_CHARS - self.size])
        self.size += len(text)
        return len(text)


class _Stdout:
    """``sys.stdout`` while learner calls run: a write goes to the output of the call running in the writing
    thread (or task), any other write to the stream that was ``sys.stdout`` before (``contextlib.redirect_stdout``
    swaps one stream for the whole process: two checks at once would print into each other's output)."""

    def __init__(self, before):
        self.before = before

    def write(self, text: str) -> int:
        out = _PRINTING.get()
        return (out if out is not None else self.before).write(text)

    def flush(self) -> None:
        if _PRINTING.get() is None:
            self.before.flush()

    def __getattr__(self, name):  # encoding, isatty, fileno, ...: the stream's own
        return getattr(self.before, name)


_PRINTING: contextvars.ContextVar[_CappedText | None] = contextvars.ContextVar("llm_lab_printing", default=None)
_stdout = {"calls": 0, "installed": None}  # how many calls print now (all threads), the _Stdout they share
_stdout_lock = threading.Lock()


@contextlib.contextmanager
def _printing(out: _CappedText):
    """What the call prints goes to ``out`` (this thread's call only); ``sys.stdout`` is as before once no call
    prints any more, whatever the learner's code set it to."""
    with _stdout_lock:
        if _stdout["calls"] == 0:
            _stdout["installed"] = _Stdout(sys.stdout)
            sys.stdout = _stdout["installed"]
        _stdout["calls"] += 1
    token = _PRINTING.set(out)
    try:
        yield
    finally:
        _PRINTING.reset(token)
        with _stdout_lock:
            _stdout["calls"] -= 1
            if _stdout["calls"] == 0:
                sys.stdout = _stdout["installed"].before


@dataclass
class _Run:
    seconds: float | None
    end: float | None
    watch: Watch
    out: _CappedText = field(default_factory=_CappedText)
    hit: tuple | None = None  # (name, hint) of the first watched code the learner's code ran
    observed: dict | None = None  # what an observed call computed (``call(..., observe=True)``)
    interrupted: bool = False
    watching: bool = False  # the learner's call runs under the watch's hooks (``_watching``)


# The checks running in this context (thread or task), innermost last: the grader checks several submissions
# at once, one per worker thread, so what one check records (the watched code it hit, its observed record, its
# output) lives in its own _Run, found through this context only, never through a list the threads share.
_RUNS: contextvars.ContextVar[tuple[_Run, ...]] = contextvars.ContextVar("llm_lab_checks", default=())
# what the last observed call outside any check recorded, in this context
_UNSCOPED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("llm_lab_observed", default=None)


def current() -> _Run | None:
    """The innermost check running in this thread (or task), None outside any check."""
    runs = _RUNS.get()
    return runs[-1] if runs else None


@contextlib.contextmanager
def checking(seconds: float | None, watch: Watch):
    """The context of one check: time budget, SIGINT watch, CPU/float32 defaults, no grad, forked RNG."""
    r = _Run(seconds, None if seconds is None else time.monotonic() + seconds, watch)
    token = _RUNS.set((*_RUNS.get(), r))
    try:
        with _sigint_watch(r), _cpu_float32(), torch.random.fork_rng(devices=[]), torch.no_grad():
            yield r
    finally:
        _RUNS.reset(token)


def call(fn, *args, case: str, seed: int | None = None, **kwargs):
    """Call learner code: collect its prints, silence its warnings, seed torch if asked, enforce the time
    limit, and turn whatever it raises into a Fail naming it. ``observe=True`` (a keyword for the harness,
    not passed on): also record the largest tensor and the torch ops of the call (``_observe``), read
    afterwards with ``last_observed()``."""
    r = current() or _Run(None, None, Watch())
    if isinstance(fn, Remote):  # grading: the learner's code runs in a sandboxed kernel, not here
        return _call_remote(r, fn, args, kwargs, case=case, seed=seed)
    observe = bool(kwargs.pop("observe", False))
    try:
        with (
            _printing(r.out),
            warnings.catch_warnings(),
            _watching(r, observe),
            _time_limit(r, case),
            _observing(r, observe),
        ):
            warnings.simplefilter("ignore")
            if seed is not None:
                torch.manual_seed(seed)
            return fn(*args, **kwargs)
    except NotImplementedError:
        raise NotImplementedYet() from None
    except Deadline:
        raise TimedOut(r.seconds, case) from None
    except TimedOut:  # the budget was spent before this call began
        raise
    except KeyboardInterrupt as exc:
        if r.interrupted:
            raise
        raise LearnerError(exc, case) from None
    except BaseException as exc:  # SystemExit included: nothing the learner's code does may end the check
        raise LearnerError(exc, case) from None


def _call_remote(r: _Run, fn: Remote, args, kwargs, *, case: str, seed):
    """``call`` for an object in another process (``grading.proxies``): the same outcomes, from the kernel's reply."""
    observe = bool(kwargs.pop("observe", False))
    left = None if r.end is None else r.end - time.monotonic()
    if left is not None and left <= 0:
        raise TimedOut(r.seconds, case)
    try:
        reply = fn.call_in_kernel(args, kwargs, case=case, seed=seed, timeout=left, observe=observe)
    except TimeoutError:
        raise TimedOut(r.seconds or 0.0, case) from None
    r.out.write(reply["printed"])
    watched = {name: hint for name, hint in r.watch.ids.values()}  # the kernel may only name what we watch
    watched.update({event: WATCH_OFF for event in _HOOK_EVENTS})  # or its own hooks switched off
    if r.hit is None and reply["hit"] and reply["hit"][0] in watched:
        r.hit = (reply["hit"][0], watched[reply["hit"][0]])
    elif r.hit is None and reply["hit"] and reply["hit"][1] == THREAD_RUNNING:  # named by the kernel's census
        r.hit = (str(reply["hit"][0])[:200], THREAD_RUNNING)
    r.observed = reply["observed"]
    error = reply.get("error")
    if error is None:
        return reply["value"]
    if isinstance(error, NotImplementedError):
        raise NotImplementedYet()
    if isinstance(error, TimeoutError):
        raise TimedOut(r.seconds or 0.0, case)
    raise LearnerError(error, case)


def last_observed() -> dict | None:
    """The record of the last ``call(..., observe=True)`` of the current check (this thread's): ``{"largest": int,
    "ops": [str], "marks": [str]}`` (``None`` if none was observed)."""
    r = current()
    return r.observed if r is not None else _UNSCOPED.get()


@contextlib.contextmanager
def _observing(r: _Run, on: bool):
    if not on:
        yield
        return
    r.observed = None
    with observing() as seen:
        try:
            yield
        finally:
            r.observed = seen.record()
            if current() is None:
                _UNSCOPED.set(r.observed)


def printed(r: _Run) -> str:
    """What the learner's code printed: its first MAX_OUTPUT_LINES lines, then how many more; ``""`` if nothing."""
    lines = r.out.getvalue().rstrip("\n").splitlines()[:MAX_OUTPUT_LINES]
    if not lines:
        return ""
    more = r.out.lines + (not r.out.getvalue().endswith("\n")) - len(lines)
    return "\n".join(lines) + (f"\n... (+{more})" if more > 0 else "")


# ---- the pieces ----------------------------------------------------------------------------------------------


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _time_limit(r: _Run, case: str):
    if r.end is None:
        yield
        return
    left = r.end - time.monotonic()
    if left <= 0:
        raise TimedOut(r.seconds, case)
    if hasattr(signal, "setitimer") and _on_main_thread():
        with _alarm(left):
            yield
    else:
        with _trace_deadline(r.end):
            yield


@contextlib.contextmanager
def _alarm(seconds: float):
    strikes = []

    def on_alarm(signum, frame):
        if strikes:  # the last Deadline was swallowed: raise the next one where nothing catches it
            _deadline.install(_deadline.tracer(Deadline, lambda: True, call.__code__), frame, call.__code__)
        strikes.append(1)
        raise Deadline()

    previous_trace = sys.gettrace()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    started = time.monotonic()
    earlier_delay, earlier_interval = signal.setitimer(signal.ITIMER_REAL, seconds, 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if strikes:
            sys.settrace(previous_trace)
        if earlier_delay > 0:  # the notebook had its own alarm running: give it back, minus the time spent
            signal.setitimer(
                signal.ITIMER_REAL, max(earlier_delay - (time.monotonic() - started), 1e-3), earlier_interval
            )


@contextlib.contextmanager
def _trace_deadline(end: float):
    previous = sys.gettrace()
    sys.settrace(_deadline.tracer(Deadline, lambda: time.monotonic() > end, call.__code__))
    try:
        yield
    finally:
        sys.settrace(previous)


# The hook functions as they were when the harness was imported: code that later replaces ``sys.settrace`` (or
# ``sys.gettrace``) with its own function does not turn the harness's calls into no-ops.
_settrace, _gettrace, _setprofile, _getprofile = sys.settrace, sys.gettrace, sys.setprofile, sys.getprofile
WATCH_OFF = "watch_switched_off"  # the hint of code that removed or replaced the watch's hooks
THREAD_RUNNING = "thread_running"  # the graded kernel's hint: a thread the notebook started ran during the call
_HOOK_EVENTS = frozenset({"sys.settrace", "sys.setprofile", "sys._settraceallthreads", "sys._setprofileallthreads"})


def _on_audit(event: str, args) -> None:
    """An audit hook (for the whole process, and not removable): a hook set by the learner's code during a
    watched call is recorded as that call's hit, whatever the code does afterwards (putting the hooks back
    included). The harness's own switches (``_OWN_SWITCHES``) are not."""
    if event in _HOOK_EVENTS:
        r = current()
        if r is not None and r.watching and r.hit is None and sys._getframe(1).f_code not in _OWN_SWITCHES:
            r.hit = (event, WATCH_OFF)


sys.addaudithook(_on_audit)


@contextlib.contextmanager
def _watching(r: _Run, observed: bool = False):
    """Note the first watched code the call runs. A profile hook sees Python calls and builtin calls alike, but
    it runs on every builtin call (each torch op, and each step of the observer's own hook). Where only code
    objects need watching (or the call is observed: the observer names a forbidden builtin itself) and the
    time limit does not need the trace hook (the main thread's alarm), a trace hook that sees only Python calls
    does the job at a fraction of the cost (``benchmarks/checker_overhead.py``). Either hook removed or replaced
    by the learner's code (``sys.settrace(None)``, ``sys.setprofile(None)``) is the hit ``watch_switched_off``:
    seen when it happens (``_on_audit``) and, whatever the code did, when the call returns."""
    ids = r.watch.ids
    if not ids:
        yield
        return

    of_code, of_builtin = r.watch.of_code, r.watch.of_builtin

    def profile(frame, event, arg):
        if r.hit is None:
            if event == "call":
                r.hit = of_code(frame.f_code)
            elif event == "c_call":
                r.hit = of_builtin(arg)

    def calls(frame, event, arg):
        if r.hit is None and event == "call":
            r.hit = of_code(frame.f_code)
        # no local trace: no line events

    builtins = any(not hasattr(obj, "co_code") for obj in r.watch.keep)
    if (observed or not builtins) and hasattr(signal, "setitimer") and _on_main_thread():
        get, put, hook, switch = _gettrace, _settrace, calls, "sys.settrace"
    else:
        get, put, hook, switch = _getprofile, _setprofile, profile, "sys.setprofile"
    previous = get()
    put(hook)
    r.watching = True
    try:
        yield
    finally:
        r.watching = False
        if get() is not hook and r.hit is None:
            r.hit = (switch, WATCH_OFF)
        put(previous)


@contextlib.contextmanager
def _sigint_watch(r: _Run):
    if not _on_main_thread():
        r.interrupted = True  # cannot tell a real Ctrl-C from a raised one here: let every one through
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def on_sigint(signum, frame):
        r.interrupted = True
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not allowed here (e.g. an embedded interpreter)
        r.interrupted = True
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _cpu_float32():
    dtype = torch.get_default_dtype()
    device = torch.get_default_device()
    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
    if dtype != torch.float32:
        torch.set_default_dtype(torch.float32)
    if device.type != "cpu":
        torch.set_default_device("cpu")
    try:
        yield
    finally:
        if threads != 1:
            torch.set_num_threads(threads)
        if dtype != torch.float32:
            torch.set_default_dtype(dtype)
        if device.type != "cpu":
            torch.set_default_device(device)


# The harness's own code that sets a hook while a learner's call is watched: the time limit's trace hook off the
# main thread, and the alarm's trace hook for code that swallowed the first interruption.
_OWN_SWITCHES = frozenset(
    {_alarm.__wrapped__.__code__, _trace_deadline.__wrapped__.__code__, _deadline.install.__code__}
)
