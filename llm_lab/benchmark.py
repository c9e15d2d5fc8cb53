"""Moved to :mod:`llm_lab.bench.benchmark`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.benchmark`` gives the module ``llm_lab.bench.benchmark`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.benchmark`` runs its ``main()`` with the same arguments.
"""

import sys
import warnings

from .bench import benchmark as _moved

warnings.warn(
    "llm_lab.benchmark is deprecated and removed in 0.3.0: use llm_lab.bench.benchmark",
    DeprecationWarning,
    stacklevel=1 if __name__ == "__main__" else 2,  # python -m: the warning is the command's own
)
if __name__ == "__main__":
    sys.exit(_moved.main())
else:
    sys.modules[__name__] = _moved
