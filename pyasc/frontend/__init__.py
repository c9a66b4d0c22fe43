"""The frontend: ``@hybrid`` Python functions to typed IR.

Public names: :func:`hybrid`, :class:`HybridFunction`, :func:`supported_numpy`, and the
fusion markers :func:`fusion_scope` / :func:`fusion_group`.
"""

from pyasc.frontend.decorator import HybridFunction, hybrid
from pyasc.frontend.fusion import fusion_group, fusion_scope
from pyasc.frontend.numpy_registry import supported_numpy

__all__ = ["HybridFunction", "fusion_group", "fusion_scope", "hybrid", "supported_numpy"]
