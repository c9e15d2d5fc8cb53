"""Grading a learner's object that lives in another process: the protocol, one module per side.

The grader (``tools/teaching/grader``, whose package docstring draws the whole round trip) runs a submission in a
sandboxed kernel and llm_lab's checkers in its own process. The kernel only ever answers with DATA: the grader asks
it to call the learner's function (or build and call the learner's class) on inputs the grader chose, and the
kernel sends back what came out. The checker, the reference and the comparison never run where the learner's code
runs, so a kernel that patches ``json``, ``print``, ``torch.allclose``, IPython's input transformers or the checker
modules can only change what it says its own function returns.

The modules, by the process they run in; imports go one way (``answering`` uses the checkers' harness, never their
records or references: each request names what to watch; the ``proxies`` subclass the harness's marker
``_core.Remote``, and the harness imports nothing from here; both sides use ``wire``; nothing here imports
``answering``). In the sandbox the kernel runs on llm_lab sealed for the assignment
(``tools/teaching/grader/sealing.py``), which keeps of the exercises package only what ``answering`` imports:

- ``wire``: the encoding both sides speak (JSON, tensors as raw bytes, no pickle); it imports nothing of llm_lab.
- ``proxies`` (the grader's process): stand-ins for the kernel's objects, ``KernelLink``, ``RemoteObject`` and
  ``RemoteModule``; the harness sends a checker's call on one to the kernel.
- ``answering`` (the learner's kernel): the answering side, ``KERNEL_MODULE``, reached by the cells ``kernel_cell``
  writes; it captures the learner's objects and answers the grader's requests.
- ``autograde_guard`` (the learner's kernel, under plain ``nbgrader autograde`` only): ``fresh()`` and
  ``audit()``, which the hidden tests of the instructor notebooks call; that module says what it stops and what it
  cannot. The grader above does not use it.
"""

from __future__ import annotations

KERNEL_MODULE = f"{__name__}.answering"  # the module the grader's cells import in the learner's kernel
KERNEL_ALIAS = "_llm_lab_kernel"  # the name those cells bind it to in the notebook's namespace


def kernel_cell(call: str) -> str:
    """The source of a cell that runs ``KERNEL_MODULE.<call>`` in the learner's kernel, e.g.
    ``kernel_cell("capture('causal_mask', lambda: causal_mask)")``."""
    return f"import {KERNEL_MODULE} as {KERNEL_ALIAS}\n{KERNEL_ALIAS}.{call}"
