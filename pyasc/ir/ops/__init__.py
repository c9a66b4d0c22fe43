"""All op families; importing this package registers every op class by name.

It also gives ``str(op)`` its printer (``pyasc.ir.core.install_printer``): every op
family imports this package first, so any op built from one prints in the text format,
while ``core`` stays below the printer."""

from pyasc.ir import core, printer
from pyasc.ir.ops import (
    arith,
    autodiff,
    func,
    fusion,
    loop,
    math,
    mem,
    scatter,
    sort,
    tensor,
)

core.install_printer(printer.print_op)

__all__ = ["arith", "autodiff", "func", "fusion", "loop", "math", "mem", "scatter", "sort",
           "tensor"]
