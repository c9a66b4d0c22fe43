"""Write ``docs/numpy-support.md`` from the numpy registry.

    python -m pyasc.frontend.docgen [path]

The page is generated so that it cannot drift from what the compiler accepts; a test
checks that the committed file equals :func:`numpy_support_markdown`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyasc.frontend import rules  # noqa: F401 - fills the registry
from pyasc.frontend.numpy_registry import entries

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "docs" / "numpy-support.md"

INTRO = """\
# numpy support

Generated from the registry in `pyasc/frontend/numpy_registry.py` by
`python -m pyasc.frontend.docgen`; do not edit by hand (a test checks it).
`pyasc.supported_numpy()` returns the same list as a dict.

## Rules

- **Arguments.** Only the arguments listed are accepted; any other argument, and any
  function or method not listed, raises `UnsupportedNumpyError` (E50011) located at
  the call.  `axis`, `keepdims`, `dtype`, `decimals`, `ddof`, slice steps and tuple
  indices must be known at compile time.
- **What a call takes** (`pyasc/jit/arguments.py`). numpy arrays and
  `np.memmap`s; Python and numpy scalars; tuples and lists of these (a list stays a
  list in the function; used where numpy wants an array, a tuple or list of numbers
  becomes one by numpy's rules: `np.sum((1, 2.5))` is a float64 sum); `None`, strings
  and dtypes (compile-time values).  Converted, read-only: arrays with non-native byte
  order (a native copy), and objects with the buffer protocol or `__array__`
  (`np.asarray(x)`: memoryview, array.array, ctypes arrays...); an operator writing
  into a converted argument is refused (E50040), since the write would be lost.
  Refused with E50040 naming the argument and what to pass: masked arrays (the mask
  would be dropped), `np.matrix`, structured and record dtypes, other ndarray
  subclasses, `bytes`/`bytearray`, dicts, sets, complex numbers.  **bfloat16**: numpy
  has none; arrays of ml_dtypes' `bfloat16` (`pip install 'pyasc-hybrid[bfloat16]'`)
  are taken like any float array, on every target, and bfloat16 results are ml_dtypes
  arrays (other ml_dtypes types, the float8 and int4 ones, are refused);
  `ml_dtypes.bfloat16(x)` and `a.dtype.type(x)` of a bfloat16 `a` are bfloat16 scalars
  (each operation on them rounded to bfloat16, as ml_dtypes does).  A negative size
  (`np.zeros(n)`, `n < 0`) raises numpy's `ValueError`.
- **Value specialization.** A scalar argument of the `@hybrid` function that is used
  where a compile-time value is needed (for example `np.sum(x, axis=k)`) makes pyasc
  specialize the function on that argument's value: each value gets its own kernel.
  All other Python `int`/`float`/`bool` arguments are run-time scalars (one kernel for
  all values).  Arrays are specialized on dtype, rank, layout (C-contiguous, unit
  inner stride, general strides) and shape (not the shape with `dynamic_shape=True`).
- **Types (NEP 50).** Result dtypes are numpy 2's, computed by numpy itself
  (`ufunc.resolve_dtypes`, `np.result_type`, or the reduction run on a tiny sample).
  Python `int`/`float`/`bool` values (literals, arguments, `len()`, shapes, loop
  indices) are weak: `float32_array * 2.5` stays `float32`, `int8_array + 1` stays
  `int8`.  Operators between Python numbers follow Python (`7 / 2 == 3.5`,
  `True + True == 2`).  `sum`/`prod` of small integers and bools accumulate in
  `int64`/`uint64`; `mean`/`var`/`std` of integers are `float64`; `argmax`/`argmin`
  are `int64`.  With ml_dtypes' bfloat16 the dtypes are still numpy's own: `a @ b` of
  two bfloat16 arrays is `float32` (ml_dtypes' matmul), `np.dot` of them `bfloat16`,
  elementwise operations compute in float32 and round each result to bfloat16, as
  ml_dtypes does.  One stated difference: **bfloat16 reductions** (`sum`, `mean`,
  `var`, `prod`, ...) accumulate in float32 and round once (as torch, JAX and the NPU
  do), where numpy with ml_dtypes rounds every partial sum to bfloat16 (300 values in
  [-2, 2]: its sums are up to 1.0 away from the exact ones).  `array ** 2` is
  `np.square(array)`, as numpy's `ndarray.__pow__`
  computes it (a bool array squared is `int8`; `np.power(x, 2)` is `int64`); numpy
  decides that by the exponent's value, so a bool array to a *run-time* power is
  `int64` in pyasc even when the exponent is 2.  An integer to a negative integer
  power raises numpy's `ValueError` (for a compile-time exponent).
- **Overflow and casts.** Integer arithmetic wraps around like numpy.  A Python int
  that does not fit the integer dtype it is converted to is an error, as numpy 2
  raises `OverflowError` for it: a compile-time int when compiling (E50001), a
  run-time one (an argument, a loop counter) raises `OverflowError` with numpy's text
  ("Python integer 300 out of bounds for int8") at the user's line: in arithmetic with
  an array, in-place operators, ufunc calls, scalar-type calls (`np.uint8(s)`), stores
  (`x[i] = s`, slices, fancy and boolean indexes), `np.full` and `x.fill`.  A range
  check that does not depend on the loop leaves it (the loop is versioned), so hot
  loops keep no check.  As in numpy, comparisons with such ints are exact and
  `np.where` wraps them.  `astype`, and assignment or scalar-type calls of arrays and
  numpy scalars, cast unsafely like numpy (float to int truncates toward zero;
  out-of-range float to int is undefined, as in C).  One difference: numpy 2 also
  raises `OverflowError` when a *numpy integer* stored into an integer array element
  does not fit (`int8_array[i] = np.int64(200)`, `int8_array[i] += np.int64(200)`);
  pyasc wraps those, as numpy does for an array value.  In-place operators and `out=`
  use `same_kind` casting: `int_array += 1.5` is an error (E50001), as in numpy.
- **Division by zero** follows numpy for arrays and numpy scalars (inf/nan for floats,
  0 for integers) and also for run-time Python scalars (Python would raise
  `ZeroDivisionError`).
- **Python ints to int powers** follow Python: `n ** -2` (a constant negative exponent)
  is a float.  The type cannot depend on a run-time exponent, so `n ** k` is an int and
  raises `ValueError` when `k` turns out negative (write `float(n) ** k`); numpy
  integers to negative powers raise numpy's `ValueError` on every target.
- **Control-flow joins.** A variable assigned different kinds of numbers on different
  paths (an `if`, a loop) takes the promoted type (`k = 1 if c else 2.5` is a float on
  both paths).  A scalar joined with an array is broadcast to the array's shape.
- **Views.** Basic slicing, `.T`, `np.transpose`, `reshape` of a contiguous buffer and
  `np.ascontiguousarray` of a contiguous buffer alias their argument like numpy;
  writes through them are seen by every alias.  A view that is *returned* comes back
  as a view sharing the argument's memory, as in numpy (`np.shares_memory(f(x), x)`);
  a parameter returned unchanged comes back as the caller's object.
  One array returned twice (`return r, r`) is one object; results computed in the
  function that are different arrays never share memory (numpy's `y.reshape(-1), y`
  would; pyasc's first result is a copy).
  Every array pyasc creates is C-contiguous, while numpy gives the results of
  elementwise operations, `*_like` and `np.copy` the memory order of their inputs
  (`order="K"`): for an input that is not C-ordered (a transposed array), numpy's
  `reshape`/`ravel` of such a result is a copy where pyasc's is a view, so writing
  through it (or into the array after it) differs (found by the fuzzer; use `.copy()`
  or `np.ascontiguousarray` first to get the same result everywhere).
- **Views chosen at run time.** A name that holds a view (of a parameter or of an
  array the function made) on one path of an `if`, a conditional expression or a
  loop and another array on another (`r = t[1:] if c else np.zeros(7, t.dtype)`, `v =
  v[1:]` in a loop, `a, b = (t[1:], t[:2]) if c else (...)`) is still that view
  where numpy's is: writes through it (`r[0] = 5`, `r += 1`, a `@hybrid` callee writing
  into it) change `t`, writes into `t` are seen through it, and returned, it shares
  `t`'s memory.  This holds wherever a write can reach it (names written through or
  aliasing an array written to) and, after an `if` or a conditional expression, for
  names returned or passed to a callee.  A loop-carried name that is not written
  (`m = x[0]` then `m = np.maximum(m, x[i])`: no buffer per iteration) is a value:
  returned after a loop that ran zero times, it is a copy of `x[0]`, not the view;
  passed to a callee that writes into it, E50001.
  When the paths' arrays differ in dtype (a float32 view or a float64 `np.zeros(7)`)
  no one array can be both; writing through such a name or into the viewed array is
  then an error (E50001, "cannot stay a view"; give both the view's dtype, or copy the
  view), and reading it is a value of the promoted dtype.
  On `ascend-sim`/`ascend`, device code keeps arrays chosen by a branch or carried by a
  loop in copies, so a chosen array that may be a view and is written, or outlives the
  device code (returned, read later), is refused (E50010) at its line.
- **Indexing.** Integers, slices (steps, negative bounds), `...` and `None` give
  elements and views.  Integer arrays (several at once, broadcast together, mixed with
  integers and slices) and boolean masks (also with other indices: a mask stands for
  its `nonzero()` coordinates) follow numpy's rules for reading, including where the
  indexed dims go when the array indices are not adjacent.  Assignment works through
  all of these: `x[idx] = v` writes in index order, so the last of repeated indices
  wins; `x[mask] = arr` takes `mask.sum()` values; `x[idx] += v` updates a repeated
  index once, as in numpy.  Not supported: `None` in an index that has an array
  (E50011).
- **Bounds.** Every integer index and index array is checked (on every target, unless
  `@hybrid(boundscheck=False)`): an index out of bounds raises `IndexOutOfBoundsError`
  (E50004), an `IndexError` with numpy's message plus the array's name and the line
  (`index 10 is out of bounds for axis 0 with size 10 (array 'a')`); a constant index
  on an axis of static size is reported when the function compiles.  Slices clamp, as
  in numpy, and are never out of bounds.  Checks in loops cost next to nothing when the
  index is affine in the loop counters (see [cpu-backend.md](cpu-backend.md#bounds-checks)).
- **Sorting.** `np.sort`/`argsort`/`x.sort()` accept every `kind` numpy accepts and
  always give numpy's `kind="stable"` result (NaN last): an `O(n log n)` merge sort.
- **Globals.** Module-level (and closure) numbers, tuples, lists, dtypes, numpy scalars
  and arrays of up to 65536 elements are read once, when a specialization is compiled:
  a specialization already compiled does not see a later change (a list is mutable:
  its contents when compiled are what the kernel uses; the disk cache's key covers
  them, as it covers an array's bytes).
- **Constant tables.** A tuple or list of numbers, or of tuples/lists of numbers,
  indexed by a run-time value (`GAUSS3[di][dj]` in a loop, `COEF[k]`) is embedded as a
  constant array in numpy's dtype of `np.array(table)` and indexed like one (negative
  indices wrap; out of range raises `IndexError`, E50004).  An item keeps Python's
  kind: an item of a table of Python ints is a weak `int` (`GAUSS3[i][j] * img` keeps
  `img`'s float16), of a table of `np.float32` a `float32`.  Refused: a table mixing
  kinds (`(1, 0.5)`: an `int` or a `float` by the index, E50001), a ragged table
  (E50002), and a run-time index into a tuple of arrays or other values (E50010).
- **Helper functions.** A function without `@hybrid` that compiled code calls is
  compiled as if decorated, inlined at the call: a `def` of your own code (a global, a
  closure cell, `mymodule.helper`), a `def` nested in the function and a `lambda`
  (assigned to a name and called, or called directly).  A nested function reads the
  enclosing function's names when it is called (Python's late binding) and may write
  into its arrays, but cannot rebind its names (`nonlocal` is not supported).  An
  error inside a helper is reported at the helper's line, with a `note:` naming the
  call.  Functions of the standard library and of installed packages (and pyasc's
  own) are not compiled (E50010): decorate one with `@hybrid` to have it compiled.
  The disk cache's key covers a helper's source and what it captures (also a helper
  reached as `mymodule.helper`): after an edit, a new process or a newly decorated
  caller compiles again; a specialization already compiled in this process keeps the
  helper it was compiled with, as it keeps a global's value (re-run the cell that
  defines the `@hybrid` caller).  Recursion is refused (E50010).
- **`raise`.** `raise ValueError("...")` (or `IndexError`, `RuntimeError`, `TypeError`,
  `ZeroDivisionError`, `OverflowError`, `NotImplementedError`, `AssertionError`,
  `ArithmeticError`, `FloatingPointError`, `LookupError`, `Exception`) raises that
  exception at the call on every target (the device kernel reports it in its status
  word, as a failed assertion), its text prefixed with `file:line:col` of the `raise`
  and followed by its source line.  The message may be an f-string: compile-time parts
  are formatted when compiling, run-time scalars (ints, bools, floats but bfloat16)
  by Python from the values the kernel reports, with their format spec and `!r`, so the
  text is Python's.  Refused (E50010): other exception classes, a bare `raise`,
  `raise ... from ...`, more than one argument, an array in the message.
- **Loop nests.** `for i, j in np.ndindex(h, w)` (or `np.ndindex(shape)`, one tuple
  target) and `for a, b in itertools.product(range(h), xs, ...)` (`repeat=` included)
  compile to one nested loop per factor, the last varying fastest; `break` leaves the
  whole nest, `continue` goes to the next tuple and `else` runs after it, as in Python.
- **Lists and tuples of arrays.** `parts = []; for k in range(3):
  parts.append(f(x, k))` then `np.stack(parts)`/`np.concatenate(parts)`, a list
  comprehension `[f(x, k) for k in range(3)]`, and a list or tuple of arrays passed as
  one argument and indexed by a loop variable (`for k in range(len(xs)): acc +=
  xs[k]`) work when the length is known at compile time: such a loop is unrolled (at
  most 256 iterations; a bound computed from a scalar argument specializes on its
  value).  A list grows only where it was made or in such a loop; `append` under a
  run-time `if` or loop is refused (E50010), since the number of items would be a
  run-time value.
- **Composed functions.** `np.einsum` is transposes, sums and one `matmul` per pair of
  operands (the cube unit's `Mmad` on the device); `np.add.at` (and `subtract`,
  `multiply`, `maximum`, `minimum` `.at`) and `np.bincount` are the loop one would
  write (repeated indices apply again; the device runs it on its scalar unit);
  `median`/`quantile`/`percentile` sort along the axis (`q` known at compile time)
  and use numpy's own indices and weights; `searchsorted` and `interp`
  count with a broadcast comparison (`O(len(a) * len(v))`); `interp` and an array `q`
  compute in float64 as numpy does, which the device does not have (E50041 there).
- **Not supported yet** (E50011 naming the argument):
  `np.repeat` with an array of counts (its size depends on the data); `np.pad` modes
  other than `constant`, `edge` and `reflect` (`reflect_type="even"`);
  `np.linalg.norm` of a matrix with `ord=2, -2, 'nuc'` (singular values);
  `np.interp(period=)`; quantile methods other than `linear`, and `weights`;
  `np.linspace` of array `start`/`stop`; `ufunc.at` with slices in the indices;
  `nanvar`, `nanstd`, `nanmedian`, `nanquantile`, `nanpercentile`, `nancumsum`,
  `nancumprod`.
"""


def numpy_support_markdown() -> str:
    """The text of ``docs/numpy-support.md``."""
    lines = [INTRO]
    sections = (("Functions", "function"), ("Array methods", "method"),
                ("Array attributes", "attribute"))
    for title, kind in sections:
        lines += [f"## {title}", "", "| call | notes |", "|---|---|"]
        lines += [f"| `{e.display}` | {e.note} |" for e in entries() if e.kind == kind]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write the generated page to ``argv[0]`` (default ``docs/numpy-support.md``)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT_PATH
    path.write_text(numpy_support_markdown())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
