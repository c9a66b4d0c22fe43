"""Plain C versions of the kernels, built at run time with gcc and called through ctypes.

``CLibrary(fastmath)`` compiles every kernel in ``benchmarks/c/`` into one shared library
in a temporary directory with ``gcc -O3 -march=native -shared -fPIC`` (plus
``-ffast-math`` for the rows where pyasc runs with ``fastmath=True``).  ``lib.kernel(name)``
returns a Python callable with the kernel's signature: like numpy, it allocates the output
array, so the C column pays for the same allocation as the others.
"""

from __future__ import annotations

import ctypes
import subprocess
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

C_DIR = Path(__file__).resolve().parent / "c"
BASE_FLAGS = ("-O3", "-march=native", "-shared", "-fPIC")

_P, _I64, _F32, _F64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_double
# name: (restype, argtypes) of the C function ``name`` defined in ``c/<name>.c``.
SIGNATURES = {
    "relu": (None, [_P, _P, _I64]),
    "gelu_tanh": (None, [_P, _P, _I64]),
    "softmax": (None, [_P, _P, _I64, _I64]),
    "layernorm": (None, [_P, _P, _P, _F32, _P, _I64, _I64]),
    "bilateral_filter": (None, [_P, _P, _I64, _I64, _F64, _F64]),
    "adaptive_avg_pool": (None, [_P, _P, _I64, _I64, _I64, _I64, _I64]),
    "sq_error_loss": (_F32, [_P, _P, _I64]),
    "conv2d": (None, [_P, _P, _P] + [_I64] * 7),
    "nms": (_I64, [_P, _P, _I64, _F32, _P]),
    "embedding_matmul": (None, [_P, _P, _P, _P, _I64, _I64, _I64]),
    "matmul": (None, [_P, _P, _P, _I64, _I64, _I64]),
    "fir": (None, [_P, _P, _P, _I64, _I64]),
}
# More C versions of a kernel, defined in the same file: kernel -> {label: function}.
EXTRA = {"adaptive_avg_pool": {"window by window, as written": "adaptive_avg_pool_windows"},
         # the scalar-loop formulations' own order: one sequential float32 accumulator
         "sq_error_loss": {"same order": "sq_error_loss_sequential"},
         "layernorm": {"same order": "layernorm_sequential"},
         "softmax": {"same order": "softmax_sequential"}}


def gcc_version() -> str:
    """The first line of ``gcc --version``."""
    return subprocess.run(["gcc", "--version"], capture_output=True, text=True,
                          check=True).stdout.splitlines()[0]


def compile_shared(sources: list[Path], output: Path, flags: tuple[str, ...]) -> None:
    """Compile C sources into a shared library; raise with gcc's message on failure."""
    cmd = ["gcc", *BASE_FLAGS, *flags, "-o", str(output), *map(str, sources), "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr}")


def _ptr(a: np.ndarray) -> int:
    # The C kernels index densely; a strided view would silently give wrong results.
    if not a.flags.c_contiguous:
        raise ValueError("C kernels take C-contiguous arrays")
    return a.ctypes.data


def _unary(fn, x):
    out = np.empty_like(x)
    fn(_ptr(x), _ptr(out), x.size)
    return out


def _rows(fn, x):
    out = np.empty_like(x)
    fn(_ptr(x), _ptr(out), x.size // x.shape[-1], x.shape[-1])
    return out


def _layernorm(fn, x, gamma, beta, eps=1e-5):
    out = np.empty_like(x)
    fn(_ptr(x), _ptr(gamma), _ptr(beta), eps, _ptr(out), x.size // x.shape[-1], x.shape[-1])
    return out


def _bilateral(fn, img, sigma_space=10, sigma_color=0.1):
    out = np.empty_like(img)
    fn(_ptr(img), _ptr(out), img.shape[0], img.shape[1], sigma_space, sigma_color)
    return out


def _pool(fn, x, output_size):
    n, c, h, w = x.shape
    out = np.empty((n, c, *output_size), dtype=x.dtype)
    fn(_ptr(x), _ptr(out), n * c, h, w, *output_size)
    return out


def _loss(fn, pred, target):
    return np.float32(fn(_ptr(pred), _ptr(target), pred.size))


def _conv2d(fn, x, w):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    out = np.empty((n, k, h - r + 1, wd - s + 1), dtype=x.dtype)
    fn(_ptr(x), _ptr(w), _ptr(out), n, c, h, wd, k, r, s)
    return out


def _nms(fn, boxes, scores, iou_threshold):
    keep = np.empty(scores.size, dtype=np.int64)
    return keep[: fn(_ptr(boxes), _ptr(scores), scores.size, iou_threshold, _ptr(keep))]


def _embedding_matmul(fn, ids, table, w):
    out = np.empty((ids.size, w.shape[1]), dtype=table.dtype)
    fn(_ptr(ids), _ptr(table), _ptr(w), _ptr(out), ids.size, table.shape[1], w.shape[1])
    return out


def _matmul(fn, a, b):
    out = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    fn(_ptr(a), _ptr(b), _ptr(out), a.shape[0], a.shape[1], b.shape[1])
    return out


def _fir(fn, x, w):
    out = np.empty(x.size - w.size + 1, dtype=x.dtype)
    fn(_ptr(x), _ptr(w), _ptr(out), x.size, w.size)
    return out


WRAPPERS = {
    "relu": _unary, "gelu_tanh": _unary, "softmax": _rows, "layernorm": _layernorm,
    "bilateral_filter": _bilateral, "adaptive_avg_pool": _pool, "sq_error_loss": _loss,
    "conv2d": _conv2d, "nms": _nms, "embedding_matmul": _embedding_matmul, "matmul": _matmul,
    "fir": _fir,
}


class CLibrary:
    """The kernels compiled into one shared library; use as a context manager."""

    def __init__(self, fastmath: bool = False) -> None:
        self.flags = ("-ffast-math",) if fastmath else ()
        self._tmp = tempfile.TemporaryDirectory(prefix="pyasc-bench-c-")
        path = Path(self._tmp.name) / "libbench.so"
        compile_shared([C_DIR / f"{name}.c" for name in SIGNATURES], path, self.flags)
        self._lib = ctypes.CDLL(str(path))
        for name, (restype, argtypes) in SIGNATURES.items():
            for symbol in (name, *EXTRA.get(name, {}).values()):
                fn = getattr(self._lib, symbol)
                fn.restype, fn.argtypes = restype, argtypes

    def kernel(self, name: str, symbol: str | None = None) -> Callable:
        """A callable with the signature of ``kernels.<name>`` running the C version
        (``symbol``: one of its ``EXTRA`` versions)."""
        return partial(WRAPPERS[name], getattr(self._lib, symbol or name))

    def close(self) -> None:
        """Delete the build directory (the loaded library stays mapped)."""
        self._tmp.cleanup()

    def __enter__(self) -> CLibrary:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
