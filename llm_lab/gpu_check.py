"""Moved to :mod:`llm_lab.dev.gpu_check`: this old path is an alias, kept for one release and removed in the next.

``import llm_lab.gpu_check`` gives the module ``llm_lab.dev.gpu_check`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.gpu_check`` runs its ``main()`` with the same arguments.
"""

import sys

from .dev import gpu_check as _moved

if __name__ == "__main__":
    sys.exit(_moved.main())
else:
    sys.modules[__name__] = _moved
