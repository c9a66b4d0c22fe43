"""Whether a program fits each SoC of ``device_type``.

``@hybrid(device_type=[...])`` promises that the function runs on every SoC listed, so
an ascend target lowers it once per SoC (``codegen.lower_variants``) and refuses it when one
variant does not fit, naming the SoC, the operation and the user's line:

* Unified Buffer: the tiling of each vector kernel must fit the SoC's InitBuffer budget
  (``vec_alloc.choose_tile``, E50003, checked while lowering; a dynamic row length is
  checked at run time by the variant's host program, naming the SoC too);
* element types: a kernel may only hold types the SoC's AI Core has
  (``SoC.element_types``; no bf16 on dav-m200 and dav-c100, float64 nowhere:
  ``scalar_f64``) -- :func:`check_fit`,
  :class:`SocFitError` (E50041), run by every ``lower_program``;
* vector APIs and their dtypes (``SoC.dtypes``, ``SoC.casts``): an API a SoC lacks for a
  type makes that group a scalar kernel on that SoC only; the performance warning then
  names the SoC (``codegen.lower_variants``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pyasc.backend.ascendc.scalar_plan import ScalarKernel
from pyasc.backend.ascendc.soc import SoC
from pyasc.backend.ascendc.vec_kernel import VectorKernel
from pyasc.errors import InvalidOptionError
from pyasc.ir.core import Operation
from pyasc.ir.types import ScalarType, ShapedType, Type


class SocFitError(InvalidOptionError):
    """A function that does not fit one of the SoCs it is compiled for (E50041)."""

    title = "the function does not fit a requested SoC"


class DeviceFloat64Error(SocFitError):
    """float64 in device code: no SoC's AI Core has it (``soc.py``, E50041); the fix is
    a float32 cast or ``device_float64="demote"``."""


def _element(t: Type) -> ScalarType | None:
    if isinstance(t, ScalarType):
        return t
    return t.element if isinstance(t, ShapedType) else None


def _types_of(op: Operation) -> Iterator[ScalarType]:
    for v in (*op.operand_values, *op.result_values):
        elem = _element(v.type)
        if elem is not None:
            yield elem


def _dtype_name(t: ScalarType) -> str:
    """The numpy name users know (``bfloat16`` needs no ml_dtypes here)."""
    return "bfloat16" if t.name == "bf16" else str(t.to_numpy())


def _kernel_ops(kernels: Sequence[object]) -> Iterator[Operation]:
    # cube kernels are made only on SoCs with a verified cube unit (dav-c220), whose
    # element types include every operand type the cube plan accepts
    for k in kernels:
        if isinstance(k, ScalarKernel):
            yield from k.fn.walk()
        elif isinstance(k, VectorKernel):
            yield from k.group.walk()


# Ops that move or hold values: on a line that also computes, the computation is named.
_PLUMBING = ("mem.", "loop.", "func.", "fusion.", "arith.constant")


def _first_in_source(found: list[tuple[Operation, ScalarType]]) -> tuple[Operation, ScalarType]:
    """The offender the user reads first (kernels hoist constants and buffers above
    their uses, so walk order is not source order)."""
    def key(item: tuple[Operation, ScalarType]) -> tuple[bool, int, bool, int]:
        op = item[0]
        loc = op.loc
        return (not (loc.known and loc.line > 0), loc.line, op.name.startswith(_PLUMBING),
                loc.col)
    return min(found, key=key)


def check_fit(kernels: Sequence[object], soc: SoC) -> None:
    """Raise :class:`SocFitError` at the kernel operation (first in the source) on an
    element type that ``soc`` does not have (``lower_program`` calls it every time)."""
    found = [(op, t) for op in _kernel_ops(kernels) for t in _types_of(op)
             if not soc.has_element(t.name)]
    if not found:
        return
    op, bad = _first_in_source(found)
    loc = op.loc
    known = loc.known and loc.line > 0
    hint = f"remove {soc.name!r} from device_type, or compute in a type it has " \
        "(e.g. .astype(np.float32))"
    error: type[SocFitError] = SocFitError
    if bad.name == "f64":  # no SoC has it (soc.py): the fix is in the program
        error = DeviceFloat64Error
        hint = ("cast the float64 data to float32 (x.astype(np.float32), np.float32(s)), or "
                "let the device compute it in float32: @hybrid(device_float64='demote')")
    raise error(
        f"'{op.name}' on {_dtype_name(bad)} values does not fit {soc.name}: its AI Core "
        f"({soc.aicore_arch}) has no {_dtype_name(bad)} type",
        filename=loc.file if known else None, lineno=loc.line if known else None,
        col_offset=max(loc.col - 1, 0) if known else None, hint=hint)


__all__ = ["DeviceFloat64Error", "SocFitError", "check_fit"]
