"""Moved to :mod:`llm_lab.explore.induction`: this old path is an alias, kept for one release and removed in the next.

``import llm_lab.induction`` gives the module ``llm_lab.explore.induction`` itself: the same objects,
so patching one patches the other.
"""

import sys

from .explore import induction as _moved

sys.modules[__name__] = _moved
