"""What the graded kernel refuses once it is warmed up, in every thread, whatever the grader's reading missed.

The grader reads every learner cell before it runs (``tools/teaching/grader/source_checks.py``): code it cannot
read is not run. That reading is a list of routes, and each red team round found one more way to run code it
never read (a readable module that evaluates a string, a module reached by a name in a string, a shared object
loaded by a readable API). ``install()`` adds a layer that does not depend on how the code was reached: an audit
hook (PEP 578), which nothing in the process can remove, refuses the *operations* that run unread code, whoever
asks for them:

- **code from text**: ``compile``/``exec``/``eval`` of anything but the notebook's own cells (run by IPython, or by
  its ``%time``/``%timeit``/``%%capture`` magics, whose lines the reading reads; and IPython compiles only the text
  of the cell the grader sent, ``sent_text``, whoever asks it), the modules imported from the
  installed files (and what their code runs while they are imported), and the standard library's code generators
  that build code from checked identifiers (``dataclasses``, ``collections.namedtuple``; ``ast.parse`` makes a tree
  only);
- **code from bytes or objects**: ``marshal.loads`` outside the import of an installed file, new code or function
  objects (``types.CodeType``, ``code.replace``, ``types.FunctionType``), a function's ``__code__`` replaced;
- **native code and raw memory**: every ``ctypes`` operation (loading a library, a pointer, an address);
- **unpickling**: ``pickle``'s ``find_class`` (the only way a pickle names code to run);
- **imports of written files**: a module from a file outside the installed folders (``/tmp``, the working
  folder), or through a changed ``sys.meta_path``/``sys.path_hooks``;
- **walking the heap or other threads' frames**: ``gc.get_objects``/``get_referrers``/``get_referents``,
  ``sys._current_frames`` (this module's census of threads, ``notebook_threads``, is the one caller allowed).

What it is not: a boundary inside the process. Code that runs unread anyway (through a route both the reading
and the guard miss) can replace the guard's own functions and the kernel's answering code, and make the kernel
report what it likes about the call; the guard narrows how such code could start, the verdict's other inputs
(outputs on the grader's inputs) still have to be right.

A refused operation raises ``PermissionError`` in the code that asked, with what was refused and why: an honest
notebook never needs these (the course's notebooks run under the guard in the grader's tests), and a refusal costs
at most the cell that asked. In the sandbox, native code from a written file is also impossible below Python:
``/tmp`` and ``/dev/shm`` are mounted ``noexec`` and ``memfd_create`` is denied (``tools/teaching/grader``).
"""

from __future__ import annotations

import ast
import dis
import keyword
import os
import site
import sys
import threading
import types

from . import sent_text

_TRUSTED: tuple[str, ...] = ()  # folders of installed code (set by install): not written by the notebook
_HOOKS: tuple = ()  # sys.meta_path and sys.path_hooks as installed
_BASE: tuple = ()  # the outer frames of the process that are not installed code, as at install (kept running)
_KERNEL_THREADS: frozenset = frozenset()  # the threads running Python when the guard was installed: the kernel's own
_MAGICS = frozenset({"time", "timeit", "capture", "prun", "config"})  # IPython magics whose text the reading reads
_GENERATORS = ("/collections/__init__.py", "/ast.py")  # namedtuple checks its names; ast.parse makes a tree
_IMPORTLIB = "<frozen importlib._bootstrap"  # both _bootstrap and _bootstrap_external
_installed = False


class Refused(PermissionError):
    """An operation the graded kernel does not run (``install``)."""


def trusted(path: str | None) -> bool:
    """Whether ``path`` is a file of the installed code (the interpreter's, the site packages', the sealed
    ``llm_lab``'s), not one the notebook could have written."""
    if not path:
        return False
    if path.startswith("<frozen "):
        return True
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + os.sep) for root in _TRUSTED)


def _learner_frames(frame) -> list:
    """The frames of code that is not installed code, innermost first (the notebook's cells, code they built),
    but the kernel's own outer frames (``_BASE``: the ``python -c`` that started it, below its event loop)."""
    found = []
    while frame is not None:
        if not trusted(frame.f_code.co_filename) and not any(frame is base for base in _BASE):
            found.append(frame)
        frame = frame.f_back
    return found


def _in_magic(frame) -> bool:
    """Whether ``frame`` runs inside IPython's ``%time``/``%timeit``/``%%capture`` (an installed file of IPython's
    magics) with no notebook code between them: the magic's own compiling, not code the timed line calls."""
    while frame is not None:
        code = frame.f_code
        if not trusted(code.co_filename) and not any(frame is base for base in _BASE):
            return False
        if code.co_name in _MAGICS and f"{os.sep}IPython{os.sep}core{os.sep}magics{os.sep}" in code.co_filename:
            return True
        frame = frame.f_back
    return False


def _loader_path(frame) -> str | None:
    """The file an import of installed code is loading, read from importlib's own frame (``get_code`` or
    ``exec_module`` of a plain file loader), or None when the loader is not one of importlib's."""
    from importlib import machinery

    plain = (machinery.SourceFileLoader, machinery.SourcelessFileLoader, machinery.ExtensionFileLoader)
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORTLIB) and frame.f_code.co_name in ("get_code", "exec_module"):
            loader = frame.f_locals.get("self")
            return loader.path if type(loader) in plain else None
        if not trusted(frame.f_code.co_filename) and not any(frame is base for base in _BASE):
            return None  # notebook code between the caller and any import: not the imported module's own code
        frame = frame.f_back
    return None


def _dataclass_ok(caller) -> str | None:
    """``dataclasses`` writes its methods as text from the class's field names: allowed when every one is an
    identifier (a crafted ``__annotations__`` key would be code in that text), or when no notebook code asks."""
    frame = caller
    while frame is not None and not (
        frame.f_code.co_name == "_process_class" and frame.f_code.co_filename == caller.f_code.co_filename
    ):
        frame = frame.f_back
    if frame is None:
        return "dataclasses runs text as code" if _learner_frames(caller) else None
    names = vars(frame.f_locals.get("cls", object)).get("__annotations__", {})
    if type(names) is not dict:  # dataclasses reads .items(): a mapping of the notebook's own may give other names
        return "a dataclass whose annotations are not a plain dict"
    if all(type(n) is str and n.isidentifier() and not keyword.iskeyword(n) for n in dict.keys(names)):
        return None
    return "a dataclass field name that is not an identifier (it would be code in the text dataclasses writes)"


_TYPE_NODES = (ast.Expression, ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Constant, ast.Load,
               ast.BinOp, ast.BitOr, ast.Starred)  # fmt: skip


_TYPE_OPS = frozenset(
    "RESUME RETURN_VALUE LOAD_NAME LOAD_ATTR LOAD_CONST BINARY_SUBSCR BINARY_OP BUILD_TUPLE BUILD_LIST LIST_EXTEND "
    "LIST_TO_TUPLE".split()
)


def _type_code(code) -> bool:
    """Whether ``code`` (typing's compiled annotation, run by ``eval``) only looks names up: no call, no nested code."""
    if not isinstance(code, types.CodeType) or any(isinstance(c, types.CodeType) for c in code.co_consts):
        return False
    return all(op.opname in _TYPE_OPS for op in dis.get_instructions(code))


def _type_expression(source) -> bool:
    """Whether ``source`` is a type written as text (``"torch.Tensor"``, ``Optional["x"]``, ``int | None``):
    names, attributes, subscripts, tuples, constants and ``|``; never a call."""
    if isinstance(source, bytes):  # the compile event sees the text as UTF-8
        source = source.decode("utf-8", "replace")
    if not isinstance(source, str) or len(source) > 1000:
        return False
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        return False
    return all(isinstance(node, _TYPE_NODES) for node in ast.walk(tree))


def _code_ok(caller, event: str, args) -> str | None:
    """Why ``compile``/``exec``/``marshal.loads`` asked by ``caller`` is refused, or None to allow it."""
    where = caller.f_code.co_filename if caller is not None else "<no Python caller>"
    if where.startswith(_IMPORTLIB):
        path = _loader_path(caller)
        if path is not None and trusted(path):
            return None
        if path is None and event == "exec" and trusted(getattr(args[0], "co_filename", None)):
            return None  # a frozen module's own code
        return f"a module loaded from {path or 'a loader of its own'}, not from the installed files"
    if not trusted(where):
        return "the notebook's code builds code from text or bytes"
    if event == "marshal.loads":
        return f"bytes turned into code by {os.path.basename(where)}"
    if where.endswith("/dataclasses.py"):
        return _dataclass_ok(caller)
    if where.endswith("/typing.py"):  # a string annotation evaluated (torch's, NamedTuple's, get_type_hints)
        typed = _type_code(args[0]) if event == "exec" else _type_expression(args[0])
        return None if typed else "typing.py evaluates text that is not a type"
    if where.endswith(_GENERATORS):
        return None
    if where.endswith("/timeit.py") and _in_magic(caller):
        return None  # IPython's %timeit times the line through timeit.Timer
    if where.endswith(("/cProfile.py", "/profile.py")) and _in_magic(caller):  # %prun: the line, run by the profiler
        return sent_text.refusal(caller, args[0]) if event == "compile" else None
    if trusted(_loader_path(caller)):
        return None  # an installed module's own code, while it is imported (torch's, typing's at import time)
    kernel = "/IPython/" in where or "/ipykernel/" in where or where.endswith("/codeop.py")  # IPython's compiler
    if kernel and (not _learner_frames(caller) or _in_magic(caller)):  # a cell run by the kernel, or a magic's line
        return sent_text.refusal(caller, args[0]) if event == "compile" else None  # text: the cell the grader sent
    return f"{os.path.basename(where)} runs text as code"


def _import_ok(args) -> str | None:
    """Why an import (``import`` event: name, file, sys.path, meta_path, path_hooks) is refused, or None."""
    name, filename = args[0], args[1]
    if filename is not None:
        return None if trusted(filename) else f"{filename} is a file the notebook wrote"
    if tuple(sys.meta_path) != _HOOKS[0] or tuple(sys.path_hooks) != _HOOKS[1]:
        return "sys.meta_path or sys.path_hooks was changed"
    parent, _, last = name.rpartition(".")
    search = sys.path if not parent else getattr(sys.modules.get(parent), "__path__", None) or ()
    for entry in search:
        folder = os.path.realpath(entry or os.getcwd()) if isinstance(entry, str) else None
        if folder is None:
            return f"a search path entry that is not a folder ({type(entry).__name__})"
        if trusted(folder):
            continue
        try:
            written = [f for f in os.listdir(folder) if f == last or f.startswith(last + ".")]
        except OSError:
            if os.path.isfile(folder):
                return f"{folder} (a file, as an archive to import from) is not an installed folder"
            continue
        if written:
            return f"{os.path.join(folder, written[0])} is a file the notebook wrote"
    return None


def _refusal(event: str, args) -> str | None:
    if event in ("compile", "exec", "marshal.loads"):
        return _code_ok(sys._getframe(2), event, args)
    if event == "import":
        return _import_ok(args)
    if event.startswith("ctypes."):
        return "ctypes reaches native code and raw memory"
    if event == "pickle.find_class":
        return f"unpickling names code to run ({args[0]}.{args[1]})"
    if event in ("code.__new__", "function.__new__"):
        return "new code or function objects are built from parts"
    if event == "object.__setattr__" and args[1] == "__code__":
        return "a function's code is replaced"
    if event.startswith("gc.get_"):
        return "the heap is walked for objects"
    if event == "sys._current_frames":
        return None if sys._getframe(2).f_code.co_filename == __file__ else "other threads' frames are read"
    return None


_EVENTS = frozenset(
    """compile exec marshal.loads import pickle.find_class code.__new__ function.__new__ object.__setattr__
    gc.get_objects gc.get_referrers gc.get_referents sys._current_frames""".split()
)


def _on_audit(event: str, args) -> None:
    if event not in _EVENTS and not event.startswith("ctypes."):
        return
    why = _refusal(event, args)
    if why is not None:
        raise Refused(f"the graded kernel refused {event}: {why}. Graded code runs only the notebook's own cells.")


def notebook_threads() -> list[str]:
    """The threads running the notebook's code now (a frame of it on their stack; not there when the guard was
    installed), other than the caller's, by name: a check cannot watch what they compute (``answering.answer_call``).
    A library's own thread (tqdm's monitor) is not one; a thread waiting inside a library for work the notebook
    hands it is not seen either. Empty before ``install``."""
    if not _installed:
        return []
    me = threading.get_ident()
    frames = sys._current_frames()
    others = [i for i, f in frames.items() if i != me and i not in _KERNEL_THREADS and _learner_frames(f)]
    return sorted(getattr(threading._active.get(ident), "name", f"thread {ident}") for ident in others)


def install() -> None:
    """Turn the guard on for the rest of this process (it cannot be turned off). Call it once the kernel's
    imports are done: the threads running then are the kernel's own."""
    global _TRUSTED, _HOOKS, _KERNEL_THREADS, _BASE, _installed
    if _installed:
        return
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # llm_lab's folder
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()}
    roots.add(os.path.dirname(package))  # where llm_lab was imported from: the sealed copy's folder, a checkout
    # and every folder on the path this process may not write (the sandbox's /opt/site/N site-packages, read-only)
    roots.update(p for p in sys.path if p and os.path.isdir(p) and not os.access(p, os.W_OK))
    _TRUSTED = tuple(sorted({os.path.realpath(r) for r in roots if r and r != os.sep}))
    _HOOKS = (tuple(sys.meta_path), tuple(sys.path_hooks))
    _KERNEL_THREADS = frozenset(sys._current_frames())
    sent_text.setup()
    outer = _learner_frames(sys._getframe(1))
    _BASE = tuple(outer[1:])  # all but the innermost: the cell (or script) that installs the guard is not the kernel
    _installed = True
    sys.addaudithook(_on_audit)


def installed() -> bool:
    return _installed


__all__ = ["Refused", "install", "installed", "notebook_threads", "trusted"]
