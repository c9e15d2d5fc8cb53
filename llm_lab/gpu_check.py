"""Moved to :mod:`llm_lab.dev.gpu_check`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.gpu_check`` gives the module ``llm_lab.dev.gpu_check`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.gpu_check`` runs its ``main()`` with the same arguments.
"""

import sys
import warnings

from .dev import gpu_check as _moved

warnings.warn(
    "llm_lab.gpu_check is deprecated and removed in 0.3.0: use llm_lab.dev.gpu_check",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,  # python -m: the warning is the command's own
)
if __name__ == "__main__":
    sys.exit(_moved.main())
else:
    sys.modules[__name__] = _moved
