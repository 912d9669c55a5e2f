"""Values computed once per object a booster hands over (a training set, an eval set)."""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["ReferenceCache"]


class ReferenceCache:
    """Values computed for objects (a training set, an eval set), kept while the object lives.

    Keyed by identity through a weak reference, so that numpy arrays (not hashable) can be keys
    and nothing is kept alive. A pickled cache comes back empty; a deep copy keeps the entries,
    or, for a ``shared`` cache, is the cache itself.

    Parameters
    ----------
    shared : bool, default False
        Whether deep copies share the entries both ways: for facts about the keys that hold for
        every copy of the owner, such as the item groups of a data set (LightGBM deep-copies a
        callable objective, and what its copy learns about the training set the original's
        evaluation metric needs).
    """

    def __init__(self, *, shared: bool = False) -> None:
        self._entries: dict[int, tuple[weakref.ref, Any]] = {}
        self._shared = shared

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

    def __deepcopy__(self, memo: dict[int, Any]) -> ReferenceCache:
        """A copy with the same entries: in one process the keys are the same live objects.

        LightGBM deep-copies its ``params``, a callable objective included, so the objective it
        calls keeps what was stored for the data objects it will be handed (their item groups).
        The values are shared, not copied.
        """
        if self._shared:
            return self
        copy = ReferenceCache()
        for ref, value in list(self._entries.values()):
            key = ref()
            if key is not None:
                copy.put(key, value)
        return copy

    def __getstate__(self) -> dict[str, Any]:
        return {"shared": self._shared}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._entries = {}
        self._shared = state.get("shared", False)
