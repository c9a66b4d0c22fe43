"""How IR scalar types live in LLVM: a storage type (in memory) and a compute type.

* ``i1`` is one byte in memory (numpy ``bool``) and an ``i1`` in registers; a loaded byte
  is ``!= 0``, so a numpy bool array holding other bytes still reads as True.
* ``index`` is ``i64``; ``ui*`` share the ``i*`` LLVM types (signedness lives in the ops).
* ``f16`` is ``half`` in memory and ``float`` in registers; ``bf16`` is ``i16`` bits in
  memory (llvmlite has no ``bfloat``) and ``float`` in registers.  A value of either type is
  always rounded to its precision after each operation, which is what numpy does for
  ``float16`` ufuncs (compute in float32, round the result) and ml_dtypes for bfloat16.
"""

from __future__ import annotations

from llvmlite import ir

from pyasc.ir.types import ScalarType

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()

_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "ui8": 8, "ui16": 16, "ui32": 32,
             "ui64": 64, "index": 64}


def storage_type(t: ScalarType) -> ir.Type:
    """The LLVM type of one element of ``t`` in memory."""
    if t.is_bool:
        return I8
    if t.name == "f16":
        return F16
    if t.name == "bf16":
        return I16
    return compute_type(t)


def compute_type(t: ScalarType) -> ir.Type:
    """The LLVM type of a value of ``t`` in registers."""
    if t.is_bool:
        return I1
    if t.name in ("f16", "bf16", "f32"):
        return F32
    if t.name == "f64":
        return F64
    return ir.IntType(_INT_BITS[t.name])


def is_narrow_float(t: ScalarType) -> bool:
    """``f16``/``bf16``: computed in ``float`` and rounded after each op."""
    return t.name in ("f16", "bf16")


def const(t: ScalarType, value: object) -> ir.Constant:
    """An LLVM constant of compute type for an IR scalar constant."""
    ty = compute_type(t)
    if t.is_bool:
        return ir.Constant(I1, int(bool(value)))
    if t.is_float:
        return ir.Constant(ty, float(value))  # type: ignore[arg-type]
    return ir.Constant(ty, _signed(int(value), ty.width))  # type: ignore[call-overload]


def _signed(v: int, bits: int) -> int:
    """``v`` wrapped to ``bits`` and read as two's complement: constants stay signed, so
    code that inspects them (``.constant < 0``) sees the real sign."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def i64(value: int) -> ir.Constant:
    """An ``i64`` constant (wrapped like the run-time arithmetic would)."""
    return ir.Constant(I64, _signed(value, 64))


def opaque(value: ir.Value) -> ir.Value:
    """Retype an llvmlite alloca/global (typed ``T*`` in llvmlite) as an opaque ``ptr``,
    the only pointer type LLVM 22 has; loads and GEPs then name their element types."""
    value.type = PTR
    return value


def round_to(b: ir.IRBuilder, value: ir.Value, t: ScalarType) -> ir.Value:
    """Round a ``float`` register value to the precision of ``t`` (no-op unless narrow)."""
    if t.name == "f16":
        return b.fpext(b.fptrunc(value, F16), F32)
    if t.name == "bf16":
        return _bf16_bits_to_float(b, _float_to_bf16_bits(b, value))
    return value


def from_storage(b: ir.IRBuilder, raw: ir.Value, t: ScalarType) -> ir.Value:
    """Convert a loaded storage value to its compute value."""
    if t.is_bool:
        return b.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    if t.name == "f16":
        return b.fpext(raw, F32)
    if t.name == "bf16":
        return _bf16_bits_to_float(b, raw)
    return raw


def to_storage(b: ir.IRBuilder, value: ir.Value, t: ScalarType) -> ir.Value:
    """Convert a compute value to the storage value written to memory."""
    if t.is_bool:
        return b.zext(value, I8)
    if t.name == "f16":
        return b.fptrunc(value, F16)
    if t.name == "bf16":
        return _float_to_bf16_bits(b, value)
    return value


def _bf16_bits_to_float(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    wide = b.shl(b.zext(bits, I32), ir.Constant(I32, 16))
    return b.bitcast(wide, F32)


def _float_to_bf16_bits(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """Round-to-nearest-even float -> bfloat16 bits; NaNs stay (quiet) NaNs."""
    bits = b.bitcast(value, I32)
    lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.add(bits, b.add(ir.Constant(I32, 0x7FFF), lsb))
    quiet_nan = b.or_(bits, ir.Constant(I32, 0x00400000))
    is_nan = b.fcmp_unordered("uno", value, value)
    chosen = b.select(is_nan, quiet_nan, rounded)
    return b.trunc(b.lshr(chosen, ir.Constant(I32, 16)), I16)


def natural_align(t: ScalarType) -> int:
    """Alignment used on loads/stores: the element size (numpy arrays are aligned)."""
    return t.itemsize


class Callee(ir.Value):
    """A function pointer used as a callee (llvmlite reads the callee's
    ``function_type``): calls through pointers the runtime fills in."""

    def __init__(self, ptr: ir.Value, fnty: ir.FunctionType) -> None:
        self.ptr, self.type, self._fnty = ptr, ptr.type, fnty

    @property
    def function_type(self) -> ir.FunctionType:
        return self._fnty

    def get_reference(self) -> str:
        return self.ptr.get_reference()


def store_atomic(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, order: str) -> None:
    """An atomic 8-byte store (llvmlite's builder method wants a typed pointer)."""
    b._insert(ir.instructions.StoreAtomicInstr(b.block, value, ptr, order, 8))


def declare(module: ir.Module, name: str, ret: ir.Type, params: list[ir.Type]) -> ir.Function:
    """An external ``nounwind`` function of ``module`` (declared once)."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(ret, params), name=name)
    fn.attributes.add("nounwind")
    return fn


def cold_function(module: ir.Module, name: str, ret: ir.Type, params: list[ir.Type],
                  external: bool = False) -> tuple[ir.Function, ir.IRBuilder]:
    """A runtime function defined in ``module``: cold code, kept as written
    (``noinline optnone``: the thread pool and the interrupt runtime are not hot)."""
    fn = ir.Function(module, ir.FunctionType(ret, params), name=name)
    fn.linkage = "external" if external else "internal"
    for attribute in ("nounwind", "noinline", "optnone"):
        fn.attributes.add(attribute)
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))
