"""Moved to :mod:`llm_lab.bench.benchmark`: this old path is an alias, kept for one release and removed in the next.

``import llm_lab.benchmark`` gives the module ``llm_lab.bench.benchmark`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.benchmark`` runs its ``main()`` with the same arguments.
"""

import sys

from .bench import benchmark as _moved

if __name__ == "__main__":
    sys.exit(_moved.main())
else:
    sys.modules[__name__] = _moved
