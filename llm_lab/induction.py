"""Moved to :mod:`llm_lab.explore.induction`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.induction`` gives the module ``llm_lab.explore.induction`` itself: the same objects,
so patching one patches the other.
"""

import sys
import warnings

from .explore import induction as _moved

warnings.warn(
    "llm_lab.induction is deprecated and removed in 0.3.0: use llm_lab.explore.induction",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
