"""Moved to :mod:`llm_lab.dev.gpu_check`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.gpu_check`` gives the module ``llm_lab.dev.gpu_check`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.gpu_check`` runs its ``main()`` with the same arguments.
"""

from . import _old_path
from .dev import gpu_check

_old_path.alias(__name__, "llm_lab.gpu_check", gpu_check, main=gpu_check.main)
