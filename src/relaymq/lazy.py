"""A package's public names imported when first used (PEP 562), not when the package is.

Why: importing any module of a package runs the package's ``__init__`` first, and an
``__init__`` that re-exports its public names eagerly imports every module that defines one.
``relaymq serve`` would then carry every message format, the selector language and the flow
node library because one module of each was needed (issue 16: a smaller base process, rows 9
and 6 of bench/compare). A package lists its names here instead; ``from relaymq.message import
Message`` still works and imports ``relaymq.message.message`` (and what it needs) only. The
same names stay imported under ``TYPE_CHECKING`` in the ``__init__`` for the type checker.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, modules: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name in ``modules`` (submodule -> the
    names it defines) is imported from ``package.<submodule>`` on first access and kept."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
