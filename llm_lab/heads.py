"""Moved to :mod:`llm_lab.explore.heads`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.heads`` gives the module ``llm_lab.explore.heads`` itself: the same objects,
so patching one patches the other.
"""

import sys
import warnings

from .explore import heads as _moved

warnings.warn(
    "llm_lab.heads is deprecated and removed in 0.3.0: use llm_lab.explore.heads",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
