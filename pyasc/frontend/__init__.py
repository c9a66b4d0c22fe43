"""The frontend: a ``@hybrid`` function's AST and argument specs to typed IR.

Its entry point is :func:`pyasc.frontend.compiler.build_module`; ``pyasc.jit`` (the
layer above) calls it.  Public names: :func:`supported_numpy` and the fusion marker
:func:`fusion_scope`, :func:`static` and :func:`require`.
"""

from pyasc.frontend.compile_time import require, static
from pyasc.frontend.fusion import fusion_scope


def supported_numpy() -> dict[str, str]:
    """Every supported numpy function, array method and attribute with its arguments.

    Keys are spelled as in user code (``np.sum``, ``x.reshape``, ``x.shape``,
    ``math.sqrt``); values are the accepted arguments.
    """
    from pyasc.frontend.rules import supported_numpy as listing  # the rules load on use

    return listing()


__all__ = ["fusion_scope", "require", "static", "supported_numpy"]
