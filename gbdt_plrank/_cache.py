"""Values computed once per object a booster hands over (a training set, an eval set)."""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["ReferenceCache"]


class ReferenceCache:
    """Values computed for objects (a training set, an eval set), kept while the object lives.

    Keyed by identity through a weak reference, so that numpy arrays (not hashable) can be keys
    and nothing is kept alive. A pickled cache comes back empty.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, key: Any) -> Any:
        """The value stored for ``key``, or None."""
        entry = self._entries.get(id(key))
        return entry[1] if entry is not None and entry[0]() is key else None

    def put(self, key: Any, value: Any) -> Any:
        """Store ``value`` for ``key`` (dropped when ``key`` is collected); return it."""
        ident = id(key)
        self._entries[ident] = (weakref.ref(key, lambda _: self._entries.pop(ident, None)), value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._entries = {}
