"""``gelu`` and ``silu`` as ``@hybrid`` functions with PyTorch's semantics: elementwise
chains that fuse with what surrounds them.  float16 is computed in float32."""

from __future__ import annotations

import numpy as np

from pyasc.frontend import require, static
from pyasc.jit import hybrid
from pyasc.ops._common import opmath
from pyasc.ops.special import erf


@hybrid
def gelu(x, approximate="none"):
    """``x * Phi(x)``: with ``approximate="none"`` through ``erf`` (``pyasc.ops.erf``,
    an array function: vectorized on the CPU and the vector unit), with ``"tanh"``
    through PyTorch's tanh formula."""
    xa = opmath(x)
    if static(approximate) == "tanh":
        inner = 0.7978845608028654 * (xa + 0.044715 * xa * xa * xa)
        return (0.5 * xa * (1.0 + np.tanh(inner))).astype(x.dtype)
    require(approximate == "none", "gelu: approximate must be 'none' or 'tanh'",
            "argument")
    return (0.5 * xa * (1.0 + erf(xa * 0.7071067811865476))).astype(x.dtype)


@hybrid
def silu(x):
    """``x * sigmoid(x)``, as ``x / (1 + exp(-x))`` (which is ``-0.0`` rather than
    a tiny negative number where ``exp(-x)`` overflows)."""
    xa = opmath(x)
    return (xa / (1.0 + np.exp(-xa))).astype(x.dtype)
