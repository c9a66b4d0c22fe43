"""What happens when a user calls a ``@hybrid`` function: argument checks, call
signatures and keys, the specialization and kernel caches, choosing a target, and
the inspection methods (``fn.ir``, ``fn.kernel``, ``fn.ascendc``...).

It sits above the frontend (which it asks for IR) and the backends (which it asks for
kernels); neither imports it.
"""

from pyasc.jit.backward import grad, value_and_grad
from pyasc.jit.decorator import HybridFunction, hybrid
from pyasc.jit.fusion_group import fusion_group
from pyasc.jit.operator import AscendOperator

__all__ = ["AscendOperator", "HybridFunction", "fusion_group", "grad", "hybrid",
           "value_and_grad"]
