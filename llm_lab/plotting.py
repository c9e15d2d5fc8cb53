"""Moved to :mod:`llm_lab.explore.plotting`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.plotting`` gives the module ``llm_lab.explore.plotting`` itself: the same objects,
so patching one patches the other.
"""

from . import _old_path
from .explore import plotting

_old_path.alias(__name__, "llm_lab.plotting", plotting)
