"""``lower-to-loops``: the cache-blocked, register-tiled matmul (``lower_matmul_tiled``)
against the interpreter, with the block sizes shrunk so that small operands cross every
block edge (k blocks, column blocks, row and column tails)."""

from __future__ import annotations

import numpy as np
import pytest
from loops_harness import build, check, kernel, memref_of, run_both, to_tensor

from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import mem, tensor
from pyasc.ir.passes import lower_matmul_tiled as tiled
from pyasc.ir.types import f32, scalar_from_numpy

RNG = np.random.default_rng(7)
RTOL = {"float32": 2e-6, "float64": 1e-13}


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """k blocks of 4 and column blocks of one register tile's width (the harness compiles
    for 256-bit vectors: a micro-panel row of NR elements is 64 bytes for every type)."""
    monkeypatch.setattr(tiled, "MICRO_PANEL_BYTES", 4 * 64)
    monkeypatch.setattr(tiled, "PANEL_BYTES", 1)  # the minimum: one NR-wide panel


def rand(shape, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return RNG.uniform(-1.5, 1.5, shape).astype(dt)
    return RNG.integers(-9, 10, shape).astype(dt)


def matmul(bld, x, y):
    return [bld.insert(tensor.MatmulOp.new(x, y)).result]


def packs(lowered) -> bool:
    """Whether the lowered module took the tiled path (it allocates the packed panel)."""
    return any(op.name == "mem.alloc" and op.result.name_hint == "packed"
               for op in lowered.walk())


def sequential(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` as a plain sequential sum over k in the element type (one rounding per
    multiply and per add, as the loops do)."""
    out = np.zeros(a.shape[:-1] + b.shape[-1:], a.dtype)
    for k in range(a.shape[-1]):
        out = out + a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("m,k,n", [(6, 1, 16), (7, 3, 17), (13, 9, 33), (1, 5, 40),
                                   (12, 10, 3)])
def test_sizes_and_dtypes(m, k, n, dtype):
    a, b = rand((m, k), dtype), rand((k, n), dtype)
    for dynamic in (False, True):
        mod = kernel([a, b], matmul, dynamic)
        low = check(mod, [a, b], RTOL.get(np.dtype(dtype).name, 0.0))
        # a static size below one register tile keeps the plain loops
        tile = tiled.tiling(scalar_from_numpy(np.dtype(dtype)))
        assert packs(low) == (dynamic or (m >= tile.mr and n >= tile.nr))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_result_is_the_sequential_sum(dtype):
    a, b = rand((14, 11), dtype), rand((11, 37), dtype)
    low = check(kernel([a, b], matmul), [a, b], RTOL[np.dtype(dtype).name])
    assert packs(low)
    (got,) = Interpreter(low).call("f", a, b)
    np.testing.assert_array_equal(got, sequential(a, b), strict=True)


def test_strided_and_transposed_operands():
    base = rand((40, 50), np.float32)
    cases = [(base[::2, 1:20:2], base[3:13, ::3]),            # non-unit strides
             (base[:9, :17].T, base[10:30, 30:39].T),          # both transposed
             (base[::-3, 5:12], np.asfortranarray(base[:7, :18]))]  # negative, F order
    for a, b in cases:
        mod = build([memref_of(a, True), memref_of(b, True)], lambda bld, x, y: matmul(
            bld, to_tensor(bld, x), to_tensor(bld, y)))
        assert packs(check(mod, [a, b], 2e-6))


@pytest.mark.parametrize("sa,sb", [((3, 7, 5), (5, 18)), ((2, 1, 6, 4), (3, 4, 17)),
                                   ((8, 6), (2, 6, 16)), ((2, 9, 3), (2, 3, 20))])
def test_batched_with_broadcasting(sa, sb):
    a, b = rand(sa, np.float32), rand(sb, np.float32)
    for dynamic in (False, True):
        assert packs(check(kernel([a, b], matmul, dynamic), [a, b], 2e-6))


def test_mismatch_still_raises():
    a, b = rand((8, 5), np.float32), rand((5, 16), np.float32)
    mod = kernel([a, b], matmul, dynamic=True)
    with pytest.raises(ValueError, match="mismatch"):
        run_both(mod, [a, rand((4, 16), np.float32)])


def test_other_dtypes_keep_plain_loops():
    for dtype in (np.int8, np.uint16, np.bool_, np.float16):
        a, b = rand((8, 5), dtype), rand((5, 64), dtype)
        low = check(kernel([a, b], matmul), [a, b], 2e-3 if dtype == np.float16 else 0.0)
        assert not packs(low)


def test_micro_kernel_keeps_the_tile_in_registers():
    """The accumulators are carried by the micro-kernel's k loop: it stores nothing and
    never loads the output."""
    a, b = rand((12, 9), np.float32), rand((9, 32), np.float32)
    low = check(kernel([a, b], matmul), [a, b], 2e-6)
    out = low.get("f").entry.terminator.operand_values[0]
    carried = [op for op in low.walk() if op.name == "loop.for" and op.result_values]
    assert carried and all(len(op.result_values) == tiled.tiling(f32).mr * 16
                           for op in carried)
    for op in carried:
        inner = list(op.walk())
        assert not any(isinstance(x, mem.StoreOp) for x in inner)
        assert not any(isinstance(x, mem.LoadOp) and x.operand_values[0] is out for x in inner)


def _loops_storing_to(low, buf) -> list:
    return [op for op in low.walk() if op.name == "loop.for" and any(
        isinstance(x, mem.StoreOp) and x.operand_values[1] is buf for x in op.walk())]


def test_output_is_not_zeroed_before_the_nest():
    """The first k block starts its accumulators at zero: no pass zeroes the output
    (a batched product's output, larger than the caches, was written, then read back)."""
    a, b = rand((3, 16, 9), np.float32), rand((3, 9, 40), np.float32)  # 3 k blocks
    low = check(kernel([a, b], matmul), [a, b], 2e-6)
    fn = low.get("f")
    out = fn.entry.terminator.operand_values[0]
    top = [op for op in fn.entry.ops if op in _loops_storing_to(low, out)]
    assert len(top) == 1  # the product's nest, no zero fill before it
    assert not any(op.name == "mem.fill" for op in low.walk())


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_empty_k_gives_zeros(dynamic, dtype):
    """With ``k = 0`` no k block runs: the output is still all zeros (the interpreter
    poisons fresh buffers)."""
    a, b = rand((9, 0), dtype), rand((0, 35), dtype)
    check(kernel([a, b], matmul, dynamic), [a, b])
    if dynamic:  # the same kernel with k > 0 (a zero fill only when k is 0)
        mod = kernel([a, b], matmul, dynamic)
        check(mod, [rand((9, 6), dtype), rand((6, 35), dtype)], 2e-6)


def test_b_is_packed_row_by_row():
    """The packing reads ``b`` along its rows: the loop over ``k`` encloses the loop
    over column panels (panel by panel, every row of ``b`` is another page and the
    prefetcher does not follow), and a panel row's loads all come before its stores."""
    a, b = rand((8, 12), np.float32), rand((12, 70), np.float32)
    low = check(kernel([a, b], matmul), [a, b], 2e-6)
    packed = next(op.result for op in low.walk()
                  if op.name == "mem.alloc" and op.result.name_hint == "packed")
    stores = [op for op in low.walk()
              if isinstance(op, mem.StoreOp) and op.operand_values[1] is packed]
    block = stores[0].parent
    assert all(s.parent is block for s in stores)
    panel_loop = block.parent_op
    k_loop = panel_loop.parent.parent_op
    jr, k = stores[0].operand_values[2], stores[0].operand_values[3]
    assert jr is panel_loop.body.blocks[0].args[0] and k is k_loop.body.blocks[0].args[0]
    first_store = block.index_of(stores[0])
    assert not any(isinstance(op, mem.LoadOp) for op in block.ops[first_store:])
