"""torch CPU tensors as ``@hybrid`` arguments and results, without copies.

The jit's tensor interface (``pyasc.jit.tensors``) asks this adapter, registered by the
``pyasc`` package under ``"torch"``, to turn a tensor argument into an ndarray over the
tensor's own memory (``tensor.numpy()``: same data pointer, same strides, writable) and
result arrays into tensors over the arrays' memory (``torch.from_numpy``).  A kernel
writing into an argument therefore writes into the tensor; the tensors it may write get
their autograd version counter bumped, as a torch in-place operation does, so a tensor
saved for a backward pass and then overwritten is reported by torch, not used stale.

Taken: tensors on the CPU with the strided layout, of any dtype pyasc computes with
(bool, the ints and uints, float16/32/64), any strides, any rank (0-d too); a tensor
whose elements share memory (``expand``, ``unfold``) is taken read-only, so a kernel
writing into it is refused (E50040), as torch refuses in-place writes there. Refused
with an ``ArgumentError`` (E50040) naming the argument: other devices (CUDA, meta; NPU
tensors have their own rule on ``target="ascend"``), sparse and other layouts, complex,
quantized and float8 dtypes, bfloat16 unless ml_dtypes is installed (numpy has no
bfloat16; with ml_dtypes a bfloat16 tensor is seen, without a copy, as an ml_dtypes
``bfloat16`` array, and bfloat16 results come back as bfloat16 tensors), and a tensor
that requires grad while grad mode is on (the result would be cut off from autograd: use
``pyasc.torch.autograd_op(fn)``, or ``x.detach()`` / ``torch.no_grad()`` to drop the
gradient knowingly; under ``no_grad`` it is detached, as torch's own operations do).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import torch

from pyasc.errors import ArgumentError
from pyasc.jit.arguments import Path, describe

NUMPY_DTYPES: dict[torch.dtype, np.dtype] = {
    getattr(torch, name): np.dtype(name) for name in (
        "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
        "float16", "float32", "float64")}
"""The torch dtypes whose ``.numpy()`` is a numpy dtype pyasc computes with ."""


def _ml_bfloat16() -> np.dtype | None:
    """ml_dtypes' ``bfloat16`` if that package is installed (numpy has none)."""
    try:
        import ml_dtypes  # noqa: PLC0415 - optional dependency
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def skip_in_dynamo(load: bool = False) -> None:
    """Make ``torch.compile`` (TorchDynamo) run pyasc's own frames as Python instead of
    tracing them (it would trace pyasc's numpy bookkeeping as torch code): a call of a
    ``@hybrid`` function or an ``autograd_op`` in a compiled function is then a graph
    break, run eagerly.  Dynamo costs ~1 s to import: ``load=False`` registers only if
    it is imported already."""
    if not load and "torch._dynamo" not in sys.modules:
        return
    try:
        from torch._dynamo import trace_rules
        trace_rules.add("pyasc")
    except (ImportError, AttributeError):  # (a torch without that private hook)
        pass


class TorchAdapter:
    """The ``pyasc.jit.tensors.Adapter`` of torch tensors (see the module docstring)."""

    def __init__(self) -> None:
        skip_in_dynamo()

    def takes(self, value: Any) -> bool:
        """torch tensors but those on an NPU (``arguments.prepare``'s own rule)."""
        return isinstance(value, torch.Tensor) and value.device.type != "npu"

    def to_array(self, value: torch.Tensor, path: Path) -> np.ndarray:
        """The ndarray over ``value``'s memory, or an ``ArgumentError`` saying why not."""
        _check(value, path)
        try:  # (detach only when needed: it costs as much as numpy())
            plain = value.detach() if value.requires_grad else value
            a = plain.view(torch.int16).numpy().view(_ml_bfloat16()) \
                if value.dtype == torch.bfloat16 else plain.numpy()
        except (RuntimeError, TypeError) as exc:  # e.g. a FakeTensor under torch.compile
            raise ArgumentError(f"argument {describe(path)}: this tensor has no host "
                                f"memory numpy can see ({exc})",
                                hint="pass a plain CPU tensor") from None
        if may_self_overlap(a):  # expand()ed, unfold()ed: elements share memory
            a.flags.writeable = False  # (this view's flag only): writes are refused
        return a

    def wrap(self, result: Any) -> torch.Tensor:
        """A tensor over the result array (a numpy scalar: a 0-d tensor)."""
        a = np.asarray(result)
        if not a.flags.writeable or any(s < 0 for s in a.strides):
            a = a.copy()  # torch takes neither read-only memory nor negative strides
        if a.dtype.name == "bfloat16":  # (ml_dtypes': torch.from_numpy does not know it)
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(a)

    def autograd_op(self, fn: Any) -> Any:
        """``pyasc.torch.autograd_op(fn)`` (for ``fn.as_torch_op()``)."""
        from pyasc.torch.autograd import autograd_op

        return autograd_op(fn)

    def written(self, value: torch.Tensor) -> None:
        """Bump ``value``'s version counter: a kernel may have written into it."""
        if not value.is_inference():
            torch.autograd.graph.increment_version(value)


def may_self_overlap(a: np.ndarray) -> bool:
    """Whether two elements of ``a`` may share memory (a stride 0 of an expanded tensor,
    the windows of ``unfold``): torch refuses in-place writes into such a tensor, and a
    kernel writing one would write an element several times.  Conservative: a layout
    whose dimensions do not nest (each stride past the extent of the smaller ones)
    counts as overlapping."""
    if a.flags.c_contiguous or a.flags.f_contiguous or a.size == 0:
        return False  # (the common case, checked first: a call pays for this rule)
    extent = a.itemsize
    dims = zip(a.strides, a.shape, strict=True)
    for stride, n in sorted((abs(s), n) for s, n in dims if n > 1):
        if stride < extent:
            return True
        extent += stride * (n - 1)
    return False


def _check(t: torch.Tensor, path: Path) -> None:
    if t.device.type != "cpu":
        raise ArgumentError(f"{_where(path)} is a torch tensor on '{t.device}': pyasc reads "
                            "host memory here", hint="pass tensor.cpu() (a copy), or a CPU "
                            "tensor")
    if t.layout != torch.strided:
        raise ArgumentError(f"{_where(path)} is a torch tensor of layout {t.layout}: pyasc "
                            "takes dense (strided) tensors", hint="pass tensor.to_dense()")
    if t.dtype == torch.bfloat16 and _ml_bfloat16() is not None:
        pass  # an ml_dtypes bfloat16 array over the same memory
    elif t.dtype not in NUMPY_DTYPES:
        hint = ("install ml_dtypes (numpy has no bfloat16; pyasc takes ml_dtypes' "
                "bfloat16 arrays), or pass tensor.float()" if t.dtype == torch.bfloat16
                else "pass a real tensor: bool, int, uint or float16/32/64")
        raise ArgumentError(f"{_where(path)} is a torch tensor of dtype {t.dtype}, which "
                            "pyasc does not compute with", hint=hint)
    if t.requires_grad and torch.is_grad_enabled():
        raise ArgumentError(f"{_where(path)} is a torch tensor that requires grad: the "
                            "result would not be part of its autograd graph",
                            hint="use pyasc.torch.autograd_op(fn) to differentiate through "
                            "fn; or pass x.detach(), or call under torch.no_grad()")


def _where(path: Path) -> str:
    return f"argument {describe(path)}"
