"""All op families; importing this package registers every op class by name."""

from pyasc.ir.ops import arith, func, fusion, loop, math, mem, tensor

__all__ = ["arith", "func", "fusion", "loop", "math", "mem", "tensor"]
