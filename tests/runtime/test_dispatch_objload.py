"""The object loader: kernels it loads behave exactly like MCJIT-loaded ones; malformed
objects are rejected before anything is written to memory; unsupported ones fall back."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from cpukit import REPEAT2, SCALE_INPLACE, program, relu_text

from pyasc.backend.llvm import LLVMBackend, backend, build, jit
from pyasc.runtime import objload
from pyasc.runtime.cpu import CPUKernel

pytestmark = pytest.mark.skipif(not objload.supported(), reason="Linux x86-64 only")


def _built(text: str, entry: str):
    return build(program(text, entry, f"objload-{entry}", cache=False))


@pytest.mark.parametrize("text, entry", [(relu_text("?"), "relu"), (REPEAT2, "repeat2"),
                                         (SCALE_INPLACE, "scale")])
def test_loaded_kernels_match_mcjit(text, entry):
    b = _built(text, entry)
    symbols = backend._symbols(b.abi)
    ours = objload.LoadedObject(b.obj, symbols)
    theirs = jit.LoadedCode(b.obj, symbols, entry)
    assert set(ours.addresses) == set(symbols)
    x = np.linspace(-2, 2, 11)
    if entry == "scale":
        args = lambda: [np.arange(12.0).reshape(4, 3), 3, 0.5, True]  # noqa: E731
    else:
        args = lambda: [x.astype(np.float32)]  # noqa: E731
    a = CPUKernel(b.abi, ours.addresses, keepalive=ours)(args())
    m = CPUKernel(b.abi, theirs.addresses, keepalive=theirs)(args())
    for got, want in zip(a, m, strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_backend_uses_the_loader_for_compiles_and_cache_hits():
    first = LLVMBackend().compile(program(relu_text("?"), "relu", "objload-backend"))
    second = LLVMBackend().compile(program(relu_text("?"), "relu", "objload-backend"))
    assert second.from_cache
    for k in (first, second):
        assert isinstance(k._keepalive, objload.LoadedObject)
        x = np.linspace(-1, 1, 9, dtype=np.float32)
        np.testing.assert_array_equal(k([x])[0], np.maximum(x, 0))


def test_unsupported_objects_fall_back_to_mcjit(monkeypatch):
    def refuse(obj, symbols):
        raise objload.UnsupportedObject("test")

    monkeypatch.setattr(objload, "LoadedObject", refuse)
    k = LLVMBackend().compile(program(relu_text("?"), "relu", "objload-fallback"))
    assert isinstance(k._keepalive, jit.LoadedCode)
    x = np.linspace(-1, 1, 9, dtype=np.float32)
    np.testing.assert_array_equal(k([x])[0], np.maximum(x, 0))


def _patched(obj: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(obj)
    struct.pack_into(fmt, out, offset, value)
    return bytes(out)


def _section_header(obj: bytes, name: str) -> int:
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", obj, 0x3C)
    names_off, = struct.unpack_from("<Q", obj, shoff + 64 * shstrndx + 0x18)
    for i in range(shnum):
        name_idx, = struct.unpack_from("<I", obj, shoff + 64 * i)
        end = obj.index(b"\0", names_off + name_idx)
        if obj[names_off + name_idx:end].decode() == name:
            return shoff + 64 * i
    raise KeyError(name)


def test_malformed_objects_are_rejected():
    b = _built(relu_text("?"), "relu")
    symbols = backend._symbols(b.abi)
    rela = _section_header(b.obj, ".rela.ltext")
    rela_off, = struct.unpack_from("<Q", b.obj, rela + 0x18)
    broken = [
        b.obj[:40],  # truncated header
        b"\x7fELF\x01" + b.obj[5:],  # 32-bit class
        _patched(b.obj, 0x28, "<Q", len(b.obj)),  # section table past the end
        _patched(b.obj, rela + 0x20, "<Q", 10 ** 6),  # relocations past the end
        _patched(b.obj, rela_off, "<Q", 10 ** 6),  # a relocation outside its section
        b.obj[:len(b.obj) // 2],  # truncated body
    ]
    for obj in broken:
        with pytest.raises(objload.ObjectFormatError):
            objload.LoadedObject(obj, symbols)
    with pytest.raises(objload.ObjectFormatError):
        objload.LoadedObject(b.obj, [*symbols, "no.such.symbol"])


def test_unknown_relocations_and_machines_are_unsupported():
    b = _built(relu_text("?"), "relu")
    symbols = backend._symbols(b.abi)
    rela = _section_header(b.obj, ".rela.ltext")
    rela_off, = struct.unpack_from("<Q", b.obj, rela + 0x18)
    info, = struct.unpack_from("<Q", b.obj, rela_off + 8)
    odd_type = _patched(b.obj, rela_off + 8, "<Q", (info >> 32) << 32 | 42)  # REX_GOTPCRELX
    other_machine = _patched(b.obj, 0x12, "<H", 183)  # aarch64
    for obj in (odd_type, other_machine):
        with pytest.raises(objload.UnsupportedObject):
            objload.LoadedObject(obj, symbols)
