"""What each old module path at the top level does (``heads.py``, ``env.py``, ...): warn, then be the moved module;
and what an old function name does (:func:`renamed`): warn, then call the new one."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from types import ModuleType


def alias(name: str, old: str, moved: ModuleType, main: Callable[[], object] | None = None) -> None:
    """Called by the module at the old path ``old`` (``name``: its ``__name__``) with the module it moved to.

    Imported, it raises a ``DeprecationWarning`` naming the new path (at the importing line) and makes ``old`` the
    moved module itself in ``sys.modules``: the same objects, so patching one patches the other. Run as
    ``python -m old``, the warning is the command's own and ``main`` runs as the moved module's command does
    (``sys.exit`` with what it returns)."""
    command = name == "__main__"
    warnings.warn(
        f"{old} is deprecated and removed in 0.3.0: use {moved.__name__}",
        DeprecationWarning,
        stacklevel=2 if command else 3,  # the shim's own line when run, else the line that imports it
    )
    if not command:
        sys.modules[name] = moved
    elif main is not None:
        sys.exit(main())


def renamed(old: str, new: Callable) -> Callable:
    """A function's old name ``old`` (its full dotted path) for ``new``, its new one: calling it raises a
    ``DeprecationWarning`` naming the new name (at the calling line), then returns what ``new`` returns."""

    def call(*args, **kwargs):
        warnings.warn(
            f"{old} is deprecated and removed in 0.3.0: use {new.__module__}.{new.__name__}",
            DeprecationWarning,
            stacklevel=2,
        )
        return new(*args, **kwargs)

    call.__name__ = call.__qualname__ = old.rsplit(".", 1)[-1]
    call.__doc__ = f"Deprecated old name of :func:`{new.__module__}.{new.__name__}` (removed in 0.3.0)."
    return call
