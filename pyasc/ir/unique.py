"""Fresh identifiers from a base name: ``x``, ``x_1``, ``x_2``... in amortized O(1).

Printers and code generators name each value after its hint.  In a long program most
values share a few hints (``x = x * 2 + y`` a thousand times), and probing ``x_1``,
``x_2``... from 1 for each new one cost O(n) per name, O(n^2) per module.  A
:class:`UniqueNames` remembers, per base, the suffix it stopped at; since names are only
ever added, the first free suffix is never below it, so the names are exactly those of
the probing from 1.
"""

from __future__ import annotations

from collections.abc import Iterable


class UniqueNames:
    """Hands out names not taken yet (nor ``reserved``), preferring the base itself."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self.taken: set[str] = set()
        self.reserved = frozenset(reserved)
        self._next: dict[str, int] = {}

    def is_free(self, name: str) -> bool:
        return name not in self.taken and name not in self.reserved

    def fresh(self, base: str, first: int = 1) -> str:
        """``base`` if free, else ``base_k`` with the smallest free ``k >= first``."""
        name = base
        if not self.is_free(name):
            k = max(first, self._next.get(base, first))
            while not self.is_free(f"{base}_{k}"):
                k += 1
            self._next[base] = k + 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name
