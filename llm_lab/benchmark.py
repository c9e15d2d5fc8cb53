"""Moved to :mod:`llm_lab.bench.benchmark`: this old path is an alias that warns
(``DeprecationWarning``), kept for one release and removed in the next.

``import llm_lab.benchmark`` gives the module ``llm_lab.bench.benchmark`` itself: the same objects,
so patching one patches the other, and ``python -m llm_lab.benchmark`` runs its ``main()`` with the same arguments.
"""

from . import _old_path
from .bench import benchmark

_old_path.alias(__name__, "llm_lab.benchmark", benchmark, main=benchmark.main)
