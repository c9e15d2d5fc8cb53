"""What IPython may compile in the graded kernel: the text of the cell the grader sent, and nothing else.

The grader reads every cell before it sends it (``tools/teaching/grader/source_checks.py``); the kernel's guard
(``kernel_guard``) lets IPython's compiler run only for the cell being executed. Which cell that is, the guard does
not take from anything the notebook can reach (the shell, its transformers, a frame's filename, a callback's
arguments): it reads the ``code`` that ipykernel's own ``execute_request`` received from the grader, in that
coroutine's frame, found by the identity of its code object (taken when the guard is installed; a cell with
top-level ``await`` runs in a task of its own, which is given the text of the last request seen). What may then be
compiled is that text as IPython transforms it, the Python lines of the magics it holds (``%time``, ``%timeit``,
``%%capture``: constants in the transformed text, as the grader's reading reads them), and trees built only of
statements parsed from those texts (IPython compiles a cell one statement at a time; ``%timeit`` wraps its
statements in a loop inside a function). A callback that runs later, a nested ``run_cell`` with text made at run
time, an AST transformer that writes new nodes: each asks IPython to compile something the request did not hold,
and is refused.
"""

from __future__ import annotations

import ast

_REQUEST = None  # ipykernel's Kernel.execute_request: its code object, as installed
_TRANSFORM = None  # IPython's input transformer, made at install (the notebook's shell may have others)
_MAGICS = ("run_line_magic", "run_cell_magic")
PYTHON_MAGICS = frozenset({"time", "timeit", "capture", "prun"})  # the grader's reading reads these as Python
_TIMEIT_VALUED = frozenset("nrp")  # %timeit's options that take a value (``-n 3``), as its parse_options string
_TIMEIT = (  # what %timeit adds around the timed statements (IPython's timeit_ast_template)
    "def inner(_it, _timer):\n    pass\n    _t0 = _timer()\n    for _i in _it:\n        pass\n"
    "    _t1 = _timer()\n    return _t1 - _t0\n"
)
_INNER = ["_it", "_timer"]
_LOOP = (ast.dump(ast.Name("_i", ast.Store())), ast.dump(ast.Name("_it", ast.Load())))
_cache: tuple = (None, frozenset(), frozenset())  # (request code, allowed texts, allowed nodes' dumps)


def setup() -> None:
    """Take ipykernel's request handler and a fresh IPython transformer (at install, before any learner cell)."""
    global _REQUEST, _TRANSFORM
    try:
        from ipykernel.kernelbase import Kernel
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # not a kernel: IPython compiles nothing here
        return
    _REQUEST, _TRANSFORM = Kernel.execute_request.__code__, TransformerManager()


def request_code(frame) -> str | None:
    """The code of the execute request running on this stack (ipykernel's frame, found by its code object)."""
    while frame is not None:
        if frame.f_code is _REQUEST:
            code = frame.f_locals.get("code")
            return code if type(code) is str else None
        frame = frame.f_back
    return None


def _timeit_statement(line: str) -> str:
    """%timeit's line without its options (``-n 3 -r 1 f(x)`` → ``f(x)``), as its option parser leaves it."""
    words = line.split()
    i = 0
    while i < len(words) and words[i].startswith("-") and len(words[i]) > 1:
        i += 2 if words[i][1:] in _TIMEIT_VALUED else 1
    return line.split(None, i)[i] if i < len(words) else ""


def _magic_texts(tree) -> list[str]:
    """The Python of the magics in a transformed cell, as IPython writes them and the grader's reading reads them:
    ``get_ipython().run_line_magic(name, line)`` and ``run_cell_magic(name, line, body)`` with constant arguments,
    for the magics whose text is Python (``PYTHON_MAGICS``; and ``%config``'s setting as it runs it); an ``%%html``
    body or a ``%pinfo`` line is not."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MAGICS):
            continue
        shell = node.func.value
        if not (isinstance(shell, ast.Call) and isinstance(shell.func, ast.Name) and shell.func.id == "get_ipython"):
            continue
        args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if len(args) != len(node.args) or not args or args[0] not in {*PYTHON_MAGICS, "config"}:
            continue
        if args[0] == "config" and len(args) == 2:  # %config runs "cfg." + its line (an InlineBackend setting)
            found.append("cfg." + args[1].strip())
            continue
        found.extend(args[1:])
        if args[0] == "timeit" and len(args) > 1:
            found.append(_timeit_statement(args[1]))
    return found


def _allowed(code: str) -> tuple[frozenset, frozenset]:
    texts, dumps, todo = {"pass", "pass\n"}, set(), [code]
    dumps.update(ast.dump(n) for n in ast.walk(ast.parse(_TIMEIT)) if isinstance(n, (ast.stmt, ast.expr)))
    while todo and len(texts) < 256:
        text = todo.pop()
        try:
            out = _TRANSFORM.transform_cell(text)
            tree = ast.parse(out)
        except Exception:  # noqa: BLE001 - text IPython cannot run is compiled by nothing either
            texts.add(text)
            continue
        texts.update((text, out))
        dumps.update(ast.dump(n) for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.expr)))
        todo.extend(t for t in _magic_texts(tree) if t not in texts)
    return frozenset(texts), frozenset(dumps)


def _node_ok(node, dumps) -> bool:
    """Whether ``node`` is a statement (or expression) of the request's texts, or %timeit's function or loop around
    such statements."""
    if ast.dump(node) in dumps:
        return True
    if isinstance(node, ast.FunctionDef):  # def inner(_it, _timer): ...
        wrapper = node.name == "inner" and not node.decorator_list and [a.arg for a in node.args.args] == _INNER
    elif isinstance(node, ast.For):  # for _i in _it: ...
        wrapper = ast.dump(node.target) == _LOOP[0] and ast.dump(node.iter) == _LOOP[1]
    else:
        wrapper = False
    return wrapper and all(_node_ok(s, dumps) for s in node.body)


def refusal(frame, source) -> str | None:
    """Why IPython's compiler, asked by the code at ``frame``, may not compile ``source`` (text or a tree), or
    None when it is the request's own text or built of its statements."""
    global _cache
    if _TRANSFORM is None:
        return "IPython compiles nothing outside a kernel"
    code = request_code(frame)  # None in a task of its own (a cell with top-level await): the last request's text
    if code is not None and _cache[0] is not code:
        _cache = (code, *_allowed(code))
    if _cache[0] is None:
        return "IPython compiles only the cells the grader sent (it has sent none yet)"
    texts, dumps = _cache[1], _cache[2]
    if isinstance(source, (str, bytes)):
        text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
        return None if text in texts else "text that is not in the cell the grader sent"
    body = source.body if isinstance(source, (ast.Module, ast.Interactive)) else None
    if isinstance(source, ast.Expression):
        body = [source.body]
    if body is not None and all(_node_ok(node, dumps) for node in body):
        return None
    return "a tree with statements that are not in the cell the grader sent"


__all__ = ["refusal", "request_code", "setup"]
