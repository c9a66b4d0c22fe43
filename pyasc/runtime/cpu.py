"""Calling a compiled CPU kernel from Python: ``CPUKernel(flat_args) -> flat_results``.

Normally the kernel's fast entry is called through a caller generated for its ABI
(``caller.py``): arrays go in as ``PyObject*`` and are validated natively, only exact
type and dtype are checked in Python, static-shape outputs are ``np.empty`` arrays made
here.  If numpy's array struct ever differs from the offsets the fast entry reads (see
:func:`fast_abi_supported`), the descriptor entry is used instead (``descriptor.py``):
each call then validates arguments fully in Python and writes descriptors into slots.

Both keep per-call slot arrays in a small pool, so concurrent calls from several
threads never share them; ctypes releases the GIL while the kernel runs.

An :class:`ArgumentError` found on the way (the Python-side checks, or ``ERR_ARGS``
from the fast entry explained by ``marshal``) is located at the user's call
(:func:`pyasc.callsite.at_caller`) as it leaves :meth:`CPUKernel.__call__`: the frames
are walked only then, so a successful call pays nothing for it.

A kernel compiled with a native entry (``abi.native``) also offers it as a Python
builtin (:meth:`CPUKernel.native_entry`, see ``pycall.py``), which the frontend calls
directly with the user's arguments.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from pyasc.callsite import at_caller
from pyasc.errors import ArgumentError, InternalCompilerError
from pyasc.failures import Site, check_failure
from pyasc.runtime import interrupt
from pyasc.runtime.abi import ERR_ARGS, ERR_INTERRUPT, PYARRAY_OFFSETS, KernelABI
from pyasc.runtime.caller import make_caller
from pyasc.runtime.descriptor import DescriptorCaller
from pyasc.runtime.marshal import explain
from pyasc.runtime.pycall import make_native


@functools.cache
def fast_abi_supported() -> bool:
    """True if numpy's array struct has the field offsets the fast entry reads."""
    if sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    a = np.zeros((4, 6), np.float32)[::2, 1:]
    b = np.zeros(3, np.int8)
    b.flags.writeable = False

    def read(arr: np.ndarray, field: str, ctype: type) -> int:
        return ctype.from_address(id(arr) + PYARRAY_OFFSETS[field]).value or 0

    try:
        dims = (ctypes.c_int64 * 2).from_address(read(a, "dims", ctypes.c_void_p))
        strides = (ctypes.c_int64 * 2).from_address(read(a, "strides", ctypes.c_void_p))
        return (read(a, "data", ctypes.c_void_p) == a.ctypes.data
                and read(a, "nd", ctypes.c_int32) == 2 and tuple(dims) == a.shape
                and tuple(strides) == a.strides
                and read(a, "flags", ctypes.c_int32) & 0x0500 == 0x0500
                and read(b, "flags", ctypes.c_int32) & 0x0400 == 0)
    except (ValueError, OverflowError):  # pragma: no cover - exotic builds
        return False


def raise_kernel_error(abi: KernelABI, rc: int, args: Sequence[Any],
                       values: Sequence[int] = ()) -> NoReturn:
    """Raise the Python exception for a kernel's non-zero return code ``rc``; ``values``
    are those of the error record (see ``abi.py``)."""
    if rc == ERR_INTERRUPT:  # a signal handler raised while the kernel ran
        interrupt.raise_pending()
    if rc == ERR_ARGS:
        explain(abi, args)
        raise InternalCompilerError("the kernel rejected arguments that the runtime "
                                    "accepts; please report this")
    if not 1 <= rc <= len(abi.errors):
        raise InternalCompilerError(f"kernel {abi.symbol} returned unknown error code {rc}")
    err = abi.errors[rc - 1]
    site = Site(err.file, err.line, err.col, err.source)
    raise check_failure(err.kind, err.message, list(values)[:err.values], site)


class CPUKernel:
    """A loaded kernel: ``kernel(flat_args) -> list`` of flat results."""

    def __init__(self, abi: KernelABI, addresses: dict[str, int], keepalive: Any = None,
                 fast: bool | None = None) -> None:
        self.abi = abi
        self.fast = fast_abi_supported() if fast is None else fast
        self._keepalive = keepalive  # the loaded machine code must outlive the callers
        self._native_address = addresses.get(abi.native.symbol, 0) if abi.native else 0

        def fail(rc: int, args: Sequence[Any], values: Sequence[int] = ()) -> NoReturn:
            raise_kernel_error(abi, rc, args, values)

        if self.fast:
            self._call = make_caller(abi, addresses[abi.py_symbol], fail)
        else:
            self._call = DescriptorCaller(abi, addresses[abi.symbol], fail)

    def __call__(self, flat_args: Sequence[Any]) -> list[Any]:
        try:  # free unless raised (3.11+ zero-cost exceptions)
            return self._call(flat_args)
        except ArgumentError as exc:
            raise at_caller(exc) from None

    def native_entry(self, defaults: Sequence[object] = ()) -> Callable[..., Any] | None:
        """The native entry as a builtin taking the Python call (``defaults``: values of
        the trailing parameters a call may omit), or ``None`` if there is none."""
        native = self.abi.native
        if native is None or not self.fast:
            return None
        abi = self.abi

        def raiser(rc: int, *values: int) -> NoReturn:
            raise_kernel_error(abi, rc, (), values)

        return make_native(native, self._native_address, raiser, defaults, keepalive=self)
