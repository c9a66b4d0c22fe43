"""All op families; importing this package registers every op class by name."""

from pyasc.ir.ops import arith, func, fusion, loop, math, mem, scatter, sort, tensor

__all__ = ["arith", "func", "fusion", "loop", "math", "mem", "scatter", "sort", "tensor"]
