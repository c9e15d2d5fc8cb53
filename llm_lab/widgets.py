"""Moved to :mod:`llm_lab.explore.widgets`: this old path is an alias, kept for one release and removed in the next.

``import llm_lab.widgets`` gives the module ``llm_lab.explore.widgets`` itself: the same objects,
so patching one patches the other.
"""

import sys

from .explore import widgets as _moved

sys.modules[__name__] = _moved
