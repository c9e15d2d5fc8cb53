"""The defence for plain ``nbgrader autograde`` only: checkers a learner's cell cannot have patched, and an audit.

``nbgrader autograde`` runs each checker cell's hidden tests (written by ``tools.course.verdict_code``) inside the
learner's own kernel, after the learner's cells. There the hidden tests call ``fresh()`` (a copy of
``llm_lab.exercises`` and of the llm_lab reference code it compares with, loaded from the package files under a
private name, so a cell that redefined ``check_*`` or patched ``llm_lab.exercises.grade`` or ``llm_lab.causal_mask``
cannot reach it) and its ``audit(globals())`` (what the notebook replaced: ``check_*`` names that are not ours,
patched attributes of the imported modules, replaced torch functions), and score an exercise only if both agree.

What it cannot do: it runs in the learner's process, so code that patches torch or the import system itself
before the hidden tests run can still fool it; ``audit`` catches the common cases, not a determined learner.
``make grade`` and ``make grade-nbgrader`` do not use it: they replace the checker cells (hidden tests included)
and compute every verdict outside the kernel (``llm_lab.exercises.grading``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import inspect
import itertools
import os
import sys
import types
from pathlib import Path

import torch

_counter = itertools.count()
_OWN: dict[str, types.ModuleType] = {}  # this copy's modules: "exercises._core", "masks", ...
_OWN_ROOT: list[str] = []  # this copy's package name: "llm_lab" or "_llm_lab_fresh_N"
_TORCH_DIR = os.path.dirname(torch.__file__)
# torch callables the checkers and references rely on: replacing one could make wrong code compare equal
_TORCH_NAMES = (
    "allclose",
    "equal",
    "isclose",
    "softmax",
    "triu",
    "tril",
    "where",
    "exp",
    "manual_seed",
    "randn",
    "rand",
    "Tensor.masked_fill",
    "Tensor.__eq__",
    "Tensor.allclose",
    "nn.functional.scaled_dot_product_attention",
    "nn.functional.linear",
    "nn.functional.dropout",
)


def fresh() -> types.ModuleType:
    """A new copy of ``llm_lab.exercises`` and of the llm_lab modules it uses, loaded from the package files
    under a private name (``_llm_lab_fresh_N``). ``sys.modules`` is used only while loading and holds no entry
    of the copy afterwards, so nothing the notebook did to ``llm_lab`` reaches it."""
    root = Path(__file__).resolve().parents[2]  # the llm_lab package directory
    name = f"_llm_lab_fresh_{next(_counter)}"
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(root)]
    package = importlib.util.module_from_spec(spec)  # an empty package: llm_lab/__init__.py is not run
    sys.modules[name] = package
    try:
        return importlib.import_module(f"{name}.exercises")
    finally:
        for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[key]


def remember(package_name: str) -> None:
    """Called once by ``__init__``: note this copy's modules while they are still in ``sys.modules``."""
    root = package_name.rsplit(".", 1)[0]
    _OWN_ROOT.append(root)
    _OWN.update({k[len(root) + 1 :]: m for k, m in list(sys.modules.items()) if k.startswith(root + ".")})


def _same_code(a, b) -> bool:
    return inspect.isfunction(a) and inspect.isfunction(b) and a.__code__ == b.__code__


def _methods(klass) -> dict:
    return {k: v.__code__ for k, v in vars(klass).items() if inspect.isfunction(v)}


def _same(own, imported) -> bool:
    if inspect.isfunction(own):
        if not _same_code(own, imported):
            return False
        cells = own.__closure__ or ()
        # the generated check_* share one code object: tell them apart by the exercise name they close over
        return [c.cell_contents for c in cells if isinstance(c.cell_contents, str)] == [
            c.cell_contents for c in (imported.__closure__ or ()) if isinstance(c.cell_contents, str)
        ]
    if inspect.isclass(own):
        return inspect.isclass(imported) and _methods(own) == _methods(imported)
    return True


def _is_torch(obj) -> bool:
    if isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)):
        return True
    code = getattr(obj, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(_TORCH_DIR)


def _torch_attr(dotted: str):
    obj = torch
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def audit(namespace: dict | None = None) -> list[str]:
    """What the notebook changed that grading relies on; ``[]`` if nothing. ``namespace``: the notebook's
    ``globals()``, searched for ``check_*`` names that are not llm_lab's."""
    found = []
    own_checks = {k: v for k, v in vars(_OWN["exercises"]).items() if k.startswith("check_")}
    for key, value in (namespace or {}).items():
        if key in own_checks and not _same(own_checks[key], value):
            found.append(f"`{key}` in the notebook is not llm_lab's checker (redefined or replaced)")
    for short, own in sorted(_OWN.items()):
        imported = sys.modules.get(f"llm_lab.{short}")
        if imported is None or imported is own:
            continue
        for attr, value in vars(own).items():
            if attr.startswith("__") or not (inspect.isfunction(value) or inspect.isclass(value)):
                continue
            if not getattr(value, "__module__", "").startswith(_OWN_ROOT[0]):
                continue  # torch, typing, ...: not ours to judge here
            if not _same(value, getattr(imported, attr, None)):  # re-exports too: `llm_lab.exercises.grade`
                found.append(f"`llm_lab.{short}.{attr}` was replaced or patched")
    registry = getattr(sys.modules.get("llm_lab.exercises._registry"), "REGISTRY", None)
    own_registry = _OWN["exercises._registry"].REGISTRY
    if registry is not None and registry is not own_registry:
        for name, ex in own_registry.items():
            other = registry.get(name)
            if other is None or not _same_code(ex.body, other.body) or other.points != ex.points:
                found.append(f"the exercise record `{name}` in llm_lab.exercises was changed")
    found += [f"`torch.{name}` was replaced" for name in _TORCH_NAMES if not _is_torch(_torch_attr(name))]
    return list(dict.fromkeys(found))
