"""Writes into argument arrays that may be the same array as what the statement reads
(issue 17: ``o[...] = f(x)`` stores straight into ``o`` when a run-time test shows that
no read can see a written element, else through a temporary).

Every case is run compiled (``cpu``) and on ``interpret`` with arguments that alias in
the ways numpy users meet: the same array, shifted, reversed, transposed, a row or a
column of the input, a broadcast read of the destination, on odd sizes and several
dtypes; the compiled result must equal numpy's.  Then the loop IR: the direct store is
a branch with no temporary, and the IR interpreter runs it without allocating when the
arguments are disjoint."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.llvm.backend import lower_to_loops
from pyasc.ir import semantics
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.ops import loop, mem


@hybrid
def scale(x, o):
    o[...] = x * 2


@hybrid
def shift(x, o):
    o[1:] = x[:-1] + 1


@hybrid
def copy_to(x, o):
    o[...] = x


@hybrid
def shift_copy(x, o):
    o[1:] = x[:-1]


@hybrid
def plus_self(x, o):
    o[...] = o * 3 - x


@hybrid
def rows(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2 + 1


@hybrid
def row_sums(x, out):
    out[:] = x.sum(axis=1)


@hybrid
def first_row(x, o):
    o[...] = x[0] * 2


@hybrid
def normalize(x, out):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    out[...] = e / e.sum(axis=1, keepdims=True)


@hybrid
def column_acc(x, out):
    for j in range(x.shape[1]):
        out[:, j] += x[:, j] * 2


Build = Callable[[np.ndarray], tuple[np.ndarray, ...]]
"""Arguments made from one fresh array (which the kernel may write)."""

SQUARE: dict[str, Build] = {
    "apart": lambda a: (a, a.copy()),
    "same": lambda a: (a, a),
    "reversed": lambda a: (a, a[::-1]),
    "reversed_cols": lambda a: (a, a[:, ::-1]),
    "transposed": lambda a: (a, a.T),
    "o_is_xT": lambda a: (a.T, a),
}
SHIFTED: dict[str, Build] = {
    "down": lambda a: (a[1:], a[:-1]),
    "up": lambda a: (a[:-1], a[1:]),
    "cols": lambda a: (a[:, 1:], a[:, :-1]),
}
CASES: list[tuple[object, str, Build]] = [
    *[(f, k, b) for f in (scale, copy_to, plus_self, rows, first_row, normalize,
                          column_acc)
      for k, b in {**SQUARE, **SHIFTED}.items()],
    *[(f, k, b) for f in (shift, shift_copy) for k, b in {
        "same": lambda a: (a.ravel(), a.ravel()),
        "reversed": lambda a: (a.ravel(), a.ravel()[::-1]),
        "apart": lambda a: (a.ravel(), a.ravel().copy())}.items()],
    *[(row_sums, k, b) for k, b in {
        "column0": lambda a: (a, a[:, 0]),
        "last_column": lambda a: (a, a[:, -1]),
        "row0": lambda a: (a, a[0]),
        "reversed_row": lambda a: (a, a[-1, ::-1]),
        "apart": lambda a: (a, np.zeros(a.shape[0], a.dtype))}.items()],
]


def _values(dtype: type, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n)) * 3
    return (np.round(a) if np.dtype(dtype).kind == "i" else a).astype(dtype)


def _run(fn: object, build: Build, dtype: type, n: int, how: str) -> np.ndarray:
    a = _values(dtype, n)
    args = build(a)
    if how == "numpy":
        fn.__wrapped__(*args)
    elif how == "interpret":
        hybrid(target="interpret")(fn.__wrapped__)(*args)
    else:
        fn(*args)
    return a


@pytest.mark.parametrize("n", [1, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].__name__}-{c[1]}")
def test_aliasing_arguments_equal_numpy(case, dtype, n):
    fn, _, build = case
    if fn is normalize and np.dtype(dtype).kind == "i":
        pytest.skip("normalize computes in floating point only")
    try:
        expected = _run(fn, build, dtype, n, "numpy")
    except (IndexError, ValueError):
        pytest.skip("numpy itself rejects it (x[0] or the max of an empty view)")
    for how in ("cpu", "interpret"):
        got = _run(fn, build, dtype, n, how)
        if fn is normalize:  # exp: within the documented ulp bound, not bit-identical
            np.testing.assert_allclose(got, expected, rtol=1e-5, err_msg=how)
        else:
            np.testing.assert_array_equal(got, expected, err_msg=how)


def _loops(fn: object, *args: np.ndarray) -> object:
    return lower_to_loops(fn.specialize(*args))


def _versioned_ifs(module: object) -> list[loop.IfOp]:
    return [op for op in module.walk() if isinstance(op, loop.IfOp)
            and any(isinstance(o, mem.DisjointOp) for o in _feeding(op.cond))]


def _feeding(v: object) -> list[object]:
    """The ops computing ``v`` (through ``arith.or``/``and``)."""
    out, work = [], [v]
    while work:
        op = getattr(work.pop(), "op", None)
        if op is not None:
            out.append(op)
            work.extend(op.operand_values)
    return out


@pytest.mark.parametrize("fn, shape", [(scale, (64, 33)), (rows, (64, 33)),
                                       (row_sums, (64, 33)), (copy_to, (64, 33))])
def test_the_direct_branch_stores_into_the_argument_without_a_temporary(fn, shape):
    x = np.ones(shape, np.float32)
    out = np.ones(shape[:1] if fn is row_sums else shape, np.float32)
    module = _loops(fn, x, out)
    (branch,) = _versioned_ifs(module)
    then_ops = _ops(branch.then_region)
    dest = module.get(fn.__name__).entry.args[1]
    stores = [op for op in then_ops if isinstance(op, mem.StoreOp)]
    written = {op.dest for op in stores}
    assert any(_base(v) is dest for v in written), "the result is stored into `out`"
    assert all(_base(v) is dest or np.prod(v.type.shape) <= 16 for v in written), \
        "nothing but `out` and a 16-lane buffer is written"
    allocs = [op for op in then_ops if isinstance(op, mem.AllocOp)]
    assert all(np.prod(op.result.type.shape) <= 16 for op in allocs), \
        "no temporary of the result in the direct branch (a 16-lane buffer at most)"
    else_allocs = [op for op in _ops(branch.else_region) if isinstance(op, mem.AllocOp)]
    assert fn is rows or else_allocs, "the other branch keeps the temporary"


def _ops(region: object) -> list[object]:
    return [o for block in region.blocks for op in block.ops for o in op.walk()]


def _base(v: object) -> object:
    while getattr(v, "op", None) is not None and v.op.has_trait("view"):
        v = v.op.operand_values[0]
    return v


def test_disjoint_arguments_run_without_allocating(monkeypatch):
    """Timing-free: the loop-level IR, run by the interpreter, allocates nothing for
    ``scale(x, o)`` with two arrays and one temporary when ``o`` is ``x`` reversed."""
    x = np.arange(35, dtype=np.float32).reshape(7, 5)
    module = _loops(scale, x, np.empty_like(x))
    sizes: list[int] = []
    alloc = semantics.EVALUATORS[mem.AllocOp]

    def counting(op, *dims):
        buf = alloc(op, *dims)
        sizes.append(buf.size)
        return buf
    monkeypatch.setitem(semantics.EVALUATORS, mem.AllocOp, counting)
    o = np.zeros_like(x)
    Interpreter(module).call("scale", x, o)
    assert sizes == [] and np.array_equal(o, x * 2)
    y = x.copy()
    Interpreter(module).call("scale", y, y[::-1])
    assert sizes == [35] and np.array_equal(y, (x * 2)[::-1])
    z = x.copy()
    Interpreter(module).call("scale", z, z)  # the same view: direct again
    assert sizes == [35] and np.array_equal(z, x * 2)


def test_without_alias_checks_the_temporary_stays():
    """``alias_checks=False`` (what the AscendC scalar kernels ask): no run-time test,
    the group fills a temporary that is copied into the argument, as before."""
    from pyasc.ir.passes import run_pipeline

    x = np.ones((4, 6), np.float32)
    module = scale.specialize(x, x.copy()).module.clone()
    run_pipeline(module, ["lower-to-loops"], {"alias_checks": False})
    ops = list(module.walk())
    assert not any(isinstance(op, mem.DisjointOp | mem.SameViewOp) for op in ops)
    assert any(isinstance(op, mem.AllocOp) for op in ops)
