"""Moved to :mod:`llm_lab.explore.widgets`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.widgets`` gives the module ``llm_lab.explore.widgets`` itself: the same objects,
so patching one patches the other.
"""

from . import _old_path
from .explore import widgets

_old_path.alias(__name__, "llm_lab.widgets", widgets)
