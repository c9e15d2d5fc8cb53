"""Moved to :mod:`llm_lab.explore.heads`: this old path is an alias, kept for one release and removed in the next.

``import llm_lab.heads`` gives the module ``llm_lab.explore.heads`` itself: the same objects,
so patching one patches the other.
"""

import sys

from .explore import heads as _moved

sys.modules[__name__] = _moved
