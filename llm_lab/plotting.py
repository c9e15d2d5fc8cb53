"""Moved to :mod:`llm_lab.explore.plotting`: this old path is an alias, kept for one release and removed in the next.

``import llm_lab.plotting`` gives the module ``llm_lab.explore.plotting`` itself: the same objects,
so patching one patches the other.
"""

import sys

from .explore import plotting as _moved

sys.modules[__name__] = _moved
