"""``parallel_safe``: which user loops may be split over threads, in particular loops
whose temporaries are allocated, written and freed inside one iteration."""

from __future__ import annotations

from pyasc.ir import parse_module
from pyasc.ir.ops import loop
from pyasc.ir.passes.loop_cost import iteration_cost
from pyasc.ir.passes.parallel_safe import independent, splittable

# A user loop over %i writing %out[%i]; @BODY is pasted inside it, where %tmp is either
# allocated per iteration (@ALLOC inside) or once before the loop (@OUTER).
LOOP = '''"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<8xf32>):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c4 = "arith.constant"() {value = 4} : () -> index
    %c8 = "arith.constant"() {value = 8} : () -> index
    %out = "mem.alloc"() : () -> memref<8xf32>
    @OUTER
    "loop.for"(%c0, %c8, %c1) ({
    ^bb0(%i: index):
      @ALLOC
      %a = "mem.load"(%x, %i) : (memref<8xf32>, index) -> f32
      "mem.fill"(%a, %tmp) : (f32, memref<4xf32>) -> ()
      "mem.store"(%a, %tmp, %c1) : (f32, memref<4xf32>, index) -> ()
      %b = "mem.load"(%tmp, %c0) : (memref<4xf32>, index) -> f32
      "mem.store"(%b, %out, %i) : (f32, memref<8xf32>, index) -> ()
      @FREE
      "loop.yield"() : () -> ()
    }) : (index, index, index) -> ()
    @OUTER_FREE
    "func.return"(%out) : (memref<8xf32>) -> ()
  }) {function_type = (memref<8xf32>) -> memref<8xf32>, sym_name = "f"} : () -> ()
}) : () -> ()'''

ALLOC = '%tmp = "mem.alloc"() : () -> memref<4xf32>'
FREE = '"mem.dealloc"(%tmp) : (memref<4xf32>) -> ()'


def user_loop(alloc: str, free: str, outer: str = "", outer_free: str = "") -> loop.ForOp:
    text = (LOOP.replace("@OUTER_FREE", outer_free).replace("@OUTER", outer)
            .replace("@ALLOC", alloc).replace("@FREE", free))
    fn = next(iter(parse_module(text).functions))
    return next(op for op in fn.walk() if isinstance(op, loop.ForOp))


def test_loop_private_buffers_are_private_even_when_filled_and_freed() -> None:
    op = user_loop(ALLOC, FREE)
    assert independent(op) and splittable(op)


def test_a_buffer_shared_by_the_iterations_makes_the_loop_dependent() -> None:
    op = user_loop("", "", ALLOC, FREE)
    assert not independent(op) and not splittable(op)


def test_freeing_a_buffer_defined_outside_is_never_split() -> None:
    # allocated before the loop, freed in an iteration: a write no iteration owns
    op = user_loop("", FREE, ALLOC)
    assert not independent(op) and not splittable(op)


def test_iteration_cost_counts_the_allocation_and_the_free() -> None:
    private, shared = user_loop(ALLOC, FREE), user_loop("", "", ALLOC, FREE)
    assert iteration_cost(private) == iteration_cost(shared) + 64 + 16
