"""Moved to :mod:`llm_lab.dev.env`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.env`` gives the module ``llm_lab.dev.env`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.env`` prints the same block.
"""

import sys
import warnings

from .dev import env as _moved

warnings.warn(
    "llm_lab.env is deprecated and removed in 0.3.0: use llm_lab.dev.env",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,  # python -m: the warning is the command's own
)
if __name__ == "__main__":
    _moved.show_versions()
else:
    sys.modules[__name__] = _moved
