"""``pyasc.ops``: neural-network operators written as ``@hybrid`` functions.

Each is callable directly (compiled for the target like any ``@hybrid`` function) and
inside ``@hybrid`` functions and ``AscendOperator.compute``, where it is inlined and its
result fuses with the elementwise code around it.  Semantics are PyTorch's
(``torch.nn.functional``); ``docs/ops.md`` lists the differences.
"""

from pyasc.ops.activation import gelu, silu
from pyasc.ops.conv import conv2d
from pyasc.ops.normalization import layer_norm, log_softmax, rms_norm, softmax
from pyasc.ops.pool import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from pyasc.ops.special import erf, stop_gradient

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "conv2d", "erf", "gelu", "layer_norm",
           "log_softmax", "max_pool2d", "rms_norm", "silu", "softmax", "stop_gradient"]
