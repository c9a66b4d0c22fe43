"""``pyasc.torch``: PyTorch tensors in and out of ``@hybrid`` functions, and autograd.

* Any ``@hybrid`` function takes torch CPU tensors without copies and returns tensors
  when given tensors (``pyasc.torch.tensors``; this works without importing
  ``pyasc.torch``: the ``pyasc`` package registers the adapter).
* :func:`autograd_op` (or ``fn.as_torch_op()``): a differentiable torch op whose
  backward is ``fn.vjp`` (``pyasc.torch.autograd``).
* :func:`custom_op`: the op registered with ``torch.library`` so that
  ``torch.compile`` keeps it in its graph (``pyasc.torch.library``).

Needs torch (``pip install 'pyasc-hybrid[torch]'``); ``docs/torch.md`` is the guide.
"""

from __future__ import annotations

from pyasc.torch.autograd import AutogradOp, PyascFunction, autograd_op
from pyasc.torch.library import CustomOp, custom_op
from pyasc.torch.tensors import skip_in_dynamo

skip_in_dynamo(load=True)  # torch.compile: run pyasc's frames, never trace them

__all__ = ["AutogradOp", "CustomOp", "PyascFunction", "autograd_op", "custom_op"]
