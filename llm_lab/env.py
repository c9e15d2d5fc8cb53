"""Moved to :mod:`llm_lab.dev.env`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.env`` gives the module ``llm_lab.dev.env`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.env`` prints the same block.
"""

from . import _old_path
from .dev import env

_old_path.alias(__name__, "llm_lab.env", env, main=env.show_versions)
