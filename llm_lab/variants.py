"""Moved to :mod:`llm_lab.bench.variants`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.variants`` gives the module ``llm_lab.bench.variants`` itself: the same objects,
so patching one patches the other.
"""

import sys
import warnings

from .bench import variants as _moved

warnings.warn(
    "llm_lab.variants is deprecated and removed in 0.3.0: use llm_lab.bench.variants",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
