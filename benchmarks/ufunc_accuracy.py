"""Measure the float32 accuracy of the ufuncs composed in the frontend
(``pyasc/frontend/composed.py``) and print the table of ``docs/math-accuracy.md``'s
section "Composed ufuncs".

    python benchmarks/ufunc_accuracy.py [--stride 257]

Unary functions: every ``stride``-th float32 bit pattern (both signs, every binade,
zeros, denormals, infinities, NaNs).  Binary functions: as many pairs of random float32
bit patterns plus the same number of pairs of normal-range values.  The kernels are
compiled for the CPU backend; the reference is numpy's float64 function; errors are
float32 ulps of the reference (``mathlib.accuracy.ulp_error``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyasc import hybrid  # noqa: E402
from pyasc.ir.passes.mathlib.accuracy import float32_steps, ulp_error  # noqa: E402

UNARY = ("arctan", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "cbrt", "sinh",
         "cosh")
BINARY = ("arctan2", "hypot", "logaddexp", "logaddexp2")


def _kernel(name: str, arity: int):
    """A one-call kernel (pyasc reads the source of a file, hence no ``exec``)."""
    fn = getattr(np, name)
    if arity == 1:
        @hybrid
        def one(x):
            return fn(x)
        return one

    @hybrid
    def two(x, y):
        return fn(x, y)
    return two


Row = tuple[float, float, str, int]


def _max(name: str, got: np.ndarray, args: tuple[np.ndarray, ...]) -> Row:
    """Largest error, numpy's own largest error, the worst input, and the largest
    distance from numpy's float32 result in float32 steps."""
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        ref = f(*(a.astype(np.float64) for a in args))
        ours = ulp_error(got, ref)
        np32 = f(*args).astype(np.float32)
        theirs = ulp_error(np32, ref)
    i = int(np.argmax(ours))
    worst = ", ".join(f"{float(a[i]):.9g}" for a in args)
    return float(ours[i]), float(theirs.max()), worst, int(float32_steps(got, np32).max())


def measure_unary(name: str, stride: int) -> Row:
    x = np.arange(0, 1 << 32, stride, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return _max(name, _kernel(name, 1)(x), (x,))


def measure_binary(name: str, count: int) -> Row:
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 1 << 32, (2, count), dtype=np.uint64).astype(np.uint32)
    normal = (rng.standard_normal((2, count)) * np.exp2(rng.integers(-20, 20, (2, count))))
    x, y = (np.concatenate([b, n.astype(np.float32)]) for b, n in
            zip(bits.view(np.float32), normal, strict=True))
    return _max(name, _kernel(name, 2)(x, y), (x, y))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stride", type=int, default=257)
    args = parser.parse_args()
    count = (1 << 32) // args.stride
    print(f"stride {args.stride}: {count} inputs per unary function, {2 * count} pairs "
          "per binary one")
    print("| function | max measured (ulp) | worst input | numpy (ulp) | steps from numpy |")
    print("|---|---|---|---|---|")
    for name in UNARY + BINARY:
        ours, theirs, worst, steps = (measure_unary(name, args.stride) if name in UNARY
                                      else measure_binary(name, count))
        print(f"| `{name}` | {ours:.3f} | {worst} | {theirs:.3f} | {steps} |", flush=True)


if __name__ == "__main__":
    main()
