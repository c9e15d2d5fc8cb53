"""What a check watches for in the learner's calls (``_harness``): llm_lab's references and the callables an exercise
rules out, by object and, for code, by content too."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field

import torch


@functools.lru_cache(maxsize=4096)
def code_content(code) -> tuple:
    """What a code object computes, and the file it came from: its bytecode, constants (nested code by their own
    content), global and attribute names and argument counts, not its name, line numbers or local names. A
    function rebuilt from a reference's code (``types.FunctionType(f.__code__.replace(co_name=...), ...)``) has
    the reference's content; the same source compiled anew (a notebook cell: a fixed find-the-bug function can be
    the reference line for line) has another file, and is the learner's own."""
    consts = tuple(code_content(c) if hasattr(c, "co_code") else (type(c).__name__, repr(c)) for c in code.co_consts)
    counts = (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags)
    return (code.co_filename, code.co_code, code.co_names, consts, counts)


@dataclass
class Watch:
    """Code the learner's calls must not run: ``{id(code or builtin): (name, hint)}``, objects kept alive, and the
    watched code objects by content (``code_content``), so that a copy of one is seen too."""

    ids: dict = field(default_factory=dict)
    keep: list = field(default_factory=list)
    contents: dict = field(default_factory=dict)
    _looked_up: dict = field(default_factory=dict)  # id(code) -> (code, what its content matched)
    methods: dict = field(default_factory=dict)  # a builtin method's name -> (name, hint): called bound, as x.f()

    def add(self, obj, name: str, hint: str) -> None:
        if inspect.isfunction(obj):  # a Python function (torch's own helpers): its calls are seen by their code
            obj = obj.__code__
        if inspect.ismethoddescriptor(obj):  # torch.Tensor.log_softmax: each x.log_softmax is a new bound object
            self.methods.setdefault(obj.__name__, (name, hint))
        self.keep.append(obj)
        self.ids.setdefault(id(obj), (name, hint))  # the first name wins: a base class before its subclass
        if hasattr(obj, "co_code"):
            self.contents.setdefault(code_content(obj), (name, hint))

    def of_builtin(self, fn):
        """``(name, hint)`` of a watched builtin that ``fn`` is, or a watched method bound to a tensor."""
        hit = self.ids.get(id(fn))
        if hit is None and self.methods and isinstance(getattr(fn, "__self__", None), torch.Tensor):
            hit = self.methods.get(getattr(fn, "__name__", None))
        return hit

    def of_code(self, code):
        """``(name, hint)`` of watched code that ``code`` is, or is a copy of; None if none."""
        hit = self.ids.get(id(code))
        if hit is not None or not self.contents:
            return hit
        known = self._looked_up.get(id(code))
        if known is None or known[0] is not code:  # the code object is kept: its id is not reused
            known = self._looked_up[id(code)] = (code, self.contents.get(code_content(code)))
        return known[1]


def codes_run_first(obj):
    """Code objects that running ``obj`` executes first: a function's, or every method a class defines."""
    if inspect.isclass(obj):
        for klass in obj.__mro__:
            if klass.__module__.split(".")[0] not in ("torch", "builtins"):
                yield from (f.__code__ for f in vars(klass).values() if inspect.isfunction(f))
    elif inspect.isfunction(obj):
        yield obj.__code__
