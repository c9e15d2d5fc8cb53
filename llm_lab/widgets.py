"""Moved to :mod:`llm_lab.explore.widgets`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.widgets`` gives the module ``llm_lab.explore.widgets`` itself: the same objects,
so patching one patches the other.
"""

import sys
import warnings

from .explore import widgets as _moved

warnings.warn(
    "llm_lab.widgets is deprecated and removed in 0.3.0: use llm_lab.explore.widgets",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
