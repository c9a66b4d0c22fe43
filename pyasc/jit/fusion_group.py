"""``@fusion_group``: compile a composition of ``@hybrid`` functions as one program."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyasc.callsite import public_api
from pyasc.jit.decorator import HybridFunction, hybrid


@public_api
def fusion_group(fn: Callable | None = None, /, **options: Any) -> Any:
    """Compile a function that calls ``@hybrid`` functions as ONE program.

    ``@fusion_group`` (or ``@fusion_group(target=..., ...)`` with ``@hybrid``'s options)
    returns a ``HybridFunction``: the ``@hybrid`` callees are inlined into it, so the
    fusion pass fuses their ops across the call boundaries, and the call returns what
    the function returns.  The function is marked (``__pyasc_fusion_group__``, part of
    its cache fingerprint).  A function that is already ``@hybrid`` is marked only.
    """

    @public_api
    def wrap(f: Callable) -> Any:
        if isinstance(f, HybridFunction):
            f.__wrapped__.__pyasc_fusion_group__ = True  # type: ignore[attr-defined]
            return f
        f.__pyasc_fusion_group__ = True  # type: ignore[attr-defined]
        return hybrid(f, **options)
    return wrap if fn is None else wrap(fn)


fusion_group.__pyasc_marker__ = "fusion_group"  # type: ignore[attr-defined]
