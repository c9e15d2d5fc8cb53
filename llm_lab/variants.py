"""Moved to :mod:`llm_lab.bench.variants`: this old path is an alias, kept for one release and removed in the next.

``import llm_lab.variants`` gives the module ``llm_lab.bench.variants`` itself: the same objects,
so patching one patches the other.
"""

import sys

from .bench import variants as _moved

sys.modules[__name__] = _moved
