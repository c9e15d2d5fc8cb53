"""Moved to :mod:`llm_lab.dev.env`: this old path is an alias, kept for one release and removed in the next.

``import llm_lab.env`` gives the module ``llm_lab.dev.env`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.env`` prints the same block.
"""

import sys

from .dev import env as _moved

if __name__ == "__main__":
    _moved.show_versions()
else:
    sys.modules[__name__] = _moved
