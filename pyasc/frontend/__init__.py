"""The frontend: a ``@hybrid`` function's AST and argument specs to typed IR.

Its entry point is :func:`pyasc.frontend.compiler.build_module`; ``pyasc.jit`` (the
layer above) calls it.  Public names: :func:`supported_numpy` and the fusion marker
:func:`fusion_scope`.
"""

from pyasc.frontend.fusion import fusion_scope
from pyasc.frontend.numpy_registry import supported_numpy

__all__ = ["fusion_scope", "supported_numpy"]
