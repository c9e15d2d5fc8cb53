"""Moved to :mod:`llm_lab.explore.induction`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.induction`` gives the module ``llm_lab.explore.induction`` itself: the same objects,
so patching one patches the other.
"""

from . import _old_path
from .explore import induction

_old_path.alias(__name__, "llm_lab.induction", induction)
