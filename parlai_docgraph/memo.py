"""
:class:`LRUMemo`: the one bounded in-process memo of the package (standard library only).

The graph selector's pools, the teachers' attached graphs, the dependency parser's
sentences, the embedding cache's states, the sentence splitter's texts and the knowledge
graphs of triple files all keep their recent items in one of these.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Generic, Hashable, Optional, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUMemo(Generic[K, V]):
    """
    At most ``size`` items, the least recently used dropped first; ``size <= 0`` keeps
    nothing. ``hits`` / ``misses`` count :meth:`get` calls.
    """

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self.hits = 0
        self.misses = 0
        self._items: "OrderedDict[K, V]" = OrderedDict()

    def get(self, key: K) -> Optional[V]:
        """The value of ``key`` (now the most recent), or ``None``."""
        value = self._items.get(key)
        if value is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` as the most recent item; return it."""
        if self.size > 0:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value of ``key``; on a miss, ``make()``'s value, remembered."""
        value = self.get(key)
        return self.put(key, make()) if value is None else value

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        """Forget every item."""
        self._items.clear()
