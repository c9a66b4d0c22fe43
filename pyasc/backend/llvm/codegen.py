"""Loop-level IR -> LLVM IR: the module context, the function emitter and the op table.

Each IR op class maps to one emit function ``fn(fe, op)`` in :data:`EMITTERS` (assembled
from the per-family tables in ``emit_*.py``).  An emit function reads its operands with
``fe.get(v)`` / ``fe.memref(v)`` and binds its results with ``fe.set(r, x)``.  Structured
regions are emitted by their parent op's emitter (loops, ifs); terminators are read, not
emitted, by that parent.

Run-time failures (asserts, zero loop steps, allocation failures) branch to a block that
frees the kernel's live temporaries and returns the error's code (see
``pyasc.runtime.abi``); the messages are collected in :attr:`ModuleContext.errors`.  A
check that reports run-time values (a bounds check's index and axis size) stores them in
the error record first (``errrecord.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from llvmlite import ir

from pyasc.backend.llvm.errrecord import record_error
from pyasc.backend.llvm.lltypes import I32, PTR, compute_type, opaque
from pyasc.backend.llvm.memref import MemRef
from pyasc.errors import InternalCompilerError
from pyasc.failures import Site
from pyasc.ir.core import Block, Operation, Value
from pyasc.ir.types import MemRefType, ScalarType, Type
from pyasc.runtime.abi import ErrorSpec

EmitFn = Callable[["FunctionEmitter", Operation], None]


def where(op: Operation) -> str:
    """``file:line:col`` of an op for messages (the form Python tracebacks use)."""
    loc = op.loc
    return f"{loc.file}:{loc.line}:{loc.col}" if loc.known else "<unknown location>"


def site_of(op: Operation) -> Site:
    """Where a run-time error raised by ``op`` is in the user's source (the source line
    is read now, when the kernel is compiled)."""
    loc = op.loc
    return Site.of(loc.file, loc.line, loc.col) if loc.known else Site()


FAST_FLAGS = ("reassoc", "nsz", "arcp", "contract", "afn")
"""Fast-math flags used with ``fastmath=True`` (no ``nnan``/``ninf``: isnan must work)."""


class ModuleContext:
    """Per-LLVM-module state: declarations, constants and the error table."""

    def __init__(self, name: str, fastmath: bool = False) -> None:
        self.module = ir.Module(name=name)
        self.errors: list[ErrorSpec] = []
        self.fastmath: tuple[str, ...] = FAST_FLAGS if fastmath else ()
        self.callees: dict[str, tuple[ir.Function, ir.LiteralStructType]] = {}
        self.record_values = 0  # value slots of the error record (errrecord.py); 0: none
        self.module_asm: list[str] = []  # module-level assembly (the poll stub on x86-64)
        self._n_globals = 0

    def text(self) -> str:
        """The module's LLVM IR text, with its module-level assembly."""
        lines = str(self.module).split("\n")
        header = next(i for i, line in enumerate(lines) if line.startswith("target datalayout"))
        asm = [f'module asm "{line}"' for chunk in self.module_asm
               for line in chunk.splitlines()]
        return "\n".join(lines[:header + 1] + asm + lines[header + 1:])

    def error_code(self, kind: str, message: str, values: int = 0,
                   site: Site | None = None) -> int:
        """Register a run-time error site; returns its (1-based) code."""
        site = site or Site()
        spec = ErrorSpec(kind, message, values, site.file, site.line, site.col, site.source)
        if spec in self.errors:
            return self.errors.index(spec) + 1
        self.errors.append(spec)
        return len(self.errors)

    def function(self, name: str, ret: ir.Type, args: Sequence[ir.Type],
                 attrs: Sequence[str] = ()) -> ir.Function:
        """Declare (once) an external function or intrinsic."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name=name)
        for a in attrs:
            fn.attributes.add(a)
        return fn

    def global_bytes(self, data: bytes, align: int = 64) -> ir.GlobalVariable:
        """A private read-only global holding ``data``."""
        ty = ir.ArrayType(ir.IntType(8), max(1, len(data)))
        g = ir.GlobalVariable(self.module, ty, name=f"__pyasc_const{self._n_globals}")
        self._n_globals += 1
        g.global_constant = True
        g.linkage = "private"
        g.unnamed_addr = True
        g.align = align
        g.initializer = ir.Constant(ty, bytearray(data or b"\0"))
        return opaque(g)


class AllocTracker:
    """Kernel-owned allocations that dominate the current point (freed on error exits).

    Conservative in one direction only: an error exit may leak, never double-free.
    Structured scopes snapshot the set, and an allocation freed anywhere inside a scope
    counts as freed after it.  Loops :meth:`forget` what they carry or free (a later
    iteration may run after an earlier one freed it).
    """

    def __init__(self) -> None:
        self.live: dict[Value, ir.Value] = {}
        self._freed: list[set[Value]] = [set()]

    def add(self, v: Value, ptr: ir.Value) -> None:
        self.live[v] = ptr

    def free(self, v: Value) -> None:
        """``v`` was deallocated (or handed to the caller) at this point."""
        self.live.pop(v, None)
        for s in self._freed:
            s.add(v)

    def forget(self, values: Iterable[Value]) -> None:
        """Stop freeing ``values`` on error exits from here on."""
        for v in values:
            self.free(v)

    @contextmanager
    def scope(self) -> Iterator[None]:
        saved = dict(self.live)
        self._freed.append(set())
        try:
            yield
        finally:
            freed = self._freed.pop()
            self.live = {v: p for v, p in saved.items() if v not in freed}


class FunctionEmitter:
    """Emits one function body: value map, builder, error exits."""

    def __init__(self, mc: ModuleContext, fn: ir.Function,
                 emitters: dict[type, EmitFn]) -> None:
        self.mc = mc
        self.fn = fn
        self.emitters = emitters
        # stack slots live in a block of their own, so adding one never moves the builder
        self._allocas = fn.append_basic_block("allocas")
        entry = fn.append_basic_block("entry")
        ir.IRBuilder(self._allocas).branch(entry)
        self.b = ir.IRBuilder(entry)
        self.values: dict[Value, Any] = {}
        self.allocs = AllocTracker()
        self.prealloc: dict[Operation, ir.Value] = {}  # alloc op -> runtime's buffer
        self.tracked: set[Operation] = set()  # allocs linked into the call's list (tracking)
        self.track_head: ir.Value | None = None  # stack slot: that list's head
        self.exit_hooks: list[Callable[[FunctionEmitter], None]] = []  # run on error exits
        self.on_stack: set[Value] = set()  # small private buffers in stack slots (emit_mem)
        self.in_parallel = False  # emitting an outlined parallel loop body (parallel.py)
        self.error_record: ir.Value | None = None  # see pyasc.runtime.abi; None: none
        self.iteration: ir.Value | None = None  # the outlined parallel loop's counter
        self.poll_state: ir.Value | None = None  # {snap, budget} of the call (emit_poll)
        self.poll_budget: ir.Value | None = None  # this function's countdown (emit_poll)
        self.polling = False  # has poll sites: loops without one count their trips
        self.carried_buffers: list[list[ir.Value]] = []  # per enclosing loop (emit_control)

    # -- values
    def get(self, v: Value) -> ir.Value:
        x = self.values.get(v)
        if x is None:
            raise InternalCompilerError(f"value of type {v.type} used before definition")
        if isinstance(x, MemRef):
            raise InternalCompilerError(f"expected a scalar, got memref {v.type}")
        return x

    def memref(self, v: Value) -> MemRef:
        x = self.values.get(v)
        if not isinstance(x, MemRef):
            raise InternalCompilerError(f"expected a memref value, got {v.type}")
        return x

    def set(self, v: Value, x: Any) -> None:
        self.values[v] = x

    # -- structure
    def new_block(self, name: str) -> ir.Block:
        return self.fn.append_basic_block(name)

    def emit_block(self, block: Block) -> Operation | None:
        """Emit every op of ``block`` but its terminator, which is returned."""
        for op in block.ops:
            if op.has_trait("terminator"):
                return op
            self.emit_op(op)
        return None

    def emit_op(self, op: Operation) -> None:
        fn = self.emitters.get(type(op))
        if fn is None:
            raise InternalCompilerError(f"the CPU backend cannot lower '{op.name}' at {where(op)}"
                                        " (expected loop-level IR)")
        strict = bool(op.attributes.get("strict")) and bool(self.mc.fastmath)
        saved = self.mc.fastmath
        if strict:
            self.mc.fastmath = ()  # see arith.ElementwiseOp: no reassociation here
        try:
            fn(self, op)
        except InternalCompilerError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise InternalCompilerError(f"lowering '{op.name}' at {where(op)} failed: {exc}") \
                from exc
        finally:
            self.mc.fastmath = saved

    # -- run-time failures
    def check(self, ok: ir.Value, kind: str, message: str, values: Sequence[ir.Value] = (),
              site: Site | None = None) -> None:
        """Continue if ``ok`` (i1) holds, else return the error ``kind``/``message``
        (a template for the int64 ``values``, stored in the error record first)."""
        code = ir.Constant(I32, self.mc.error_code(kind, message, len(values), site))
        if not values:
            self.exit_unless(ok, code)
            return
        fail, cont = self.new_block("fail"), self.new_block("cont")
        self.b.cbranch(ok, cont, fail).set_weights([1000000, 1])
        self.b.position_at_end(fail)
        record_error(self, values)
        self.return_error(code)
        self.b.position_at_end(cont)

    def propagate(self, rc: ir.Value) -> None:
        """Continue if a callee's return code ``rc`` is 0, else return it."""
        self.exit_unless(self.b.icmp_signed("==", rc, ir.Constant(I32, 0)), rc)

    def exit_unless(self, ok: ir.Value, code: ir.Value) -> None:
        """Branch (marked unlikely) to an exit returning ``code`` unless ``ok``."""
        fail, cont = self.new_block("fail"), self.new_block("cont")
        self.b.cbranch(ok, cont, fail).set_weights([1000000, 1])
        self.b.position_at_end(fail)
        self.return_error(code)
        self.b.position_at_end(cont)

    def entry_alloca(self, ty: ir.Type) -> ir.Value:
        """A stack slot allocated once in the entry block (not per loop iteration)."""
        return opaque(self.entry_builder().alloca(ty))

    def entry_builder(self) -> ir.IRBuilder:
        """A builder for code run once on function entry, before anything else."""
        b = ir.IRBuilder(self._allocas)
        b.position_before(self._allocas.terminator)
        return b

    def return_error(self, code: ir.Value) -> None:
        """Free the live kernel-owned allocations (and the buffers the enclosing loops
        carry and own, ``carried_buffers``) and return ``code``."""
        free = self.mc.function("free", ir.VoidType(), [PTR], ("nounwind",))
        for ptr in [*self.allocs.live.values(), *(p for g in self.carried_buffers for p in g)]:
            self.b.call(free, [ptr])
        for hook in self.exit_hooks:
            hook(self)
        self.b.ret(code)


# ------------------------------------------------------------- flattening for phis


def flatten(fe: FunctionEmitter, v: Value) -> list[ir.Value]:
    """The SSA parts of a value (one for scalars, ``1 + 2r`` for memrefs)."""
    x = fe.values[v]
    return x.components() if isinstance(x, MemRef) else [x]


def part_types(t: Type) -> list[ir.Type]:
    if isinstance(t, MemRefType):
        return MemRef.component_types(t)
    if isinstance(t, ScalarType):
        return [compute_type(t)]
    raise InternalCompilerError(f"cannot carry a value of type {t} in generated code")


def unflatten(fe: FunctionEmitter, t: Type, parts: Sequence[ir.Value]) -> Any:
    if isinstance(t, MemRefType):
        return MemRef.from_components(fe.b, t, parts)
    return parts[0]


def n_parts(t: Type) -> int:
    return len(part_types(t))
