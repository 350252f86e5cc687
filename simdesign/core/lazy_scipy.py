"""``scipy.stats``, imported when first used rather than when a module that uses it is imported.

Importing ``scipy.stats`` costs about 0.7 CPU s (it pulls in scipy.optimize, scipy.spatial and the
distribution classes), a large part of what a worker process of the engine spends before its first
trial; the classical tests of the Figure-4 grid never call it in a worker (their t p-values come from
``scipy.special``). Modules that use it in function bodies import :data:`stats` from here instead, and
the first attribute looked up imports the real module (through the ordinary import machinery, so it
is thread-safe). The standard library's ``importlib.util.LazyLoader`` would do the same for the whole
module object, but on Python 3.11 its first use from two threads at once can fail (CPython issue
114763); joblib's threading backend runs chunks in threads.
"""
from __future__ import annotations

import importlib


class _LazyModule:
    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<lazily imported module {self._name!r}>"


stats = _LazyModule("scipy.stats")
"""Stands for ``scipy.stats``: ``stats.norm``, ``stats.wilcoxon`` and so on import it on first use."""
