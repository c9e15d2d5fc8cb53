"""Moved to :mod:`llm_lab.bench.variants`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.variants`` gives the module ``llm_lab.bench.variants`` itself: the same objects,
so patching one patches the other.
"""

from . import _old_path
from .bench import variants

_old_path.alias(__name__, "llm_lab.variants", variants)
