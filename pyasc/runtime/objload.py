"""Loading a kernel's relocatable object file into executable memory, without LLVM.

The CPU backend emits x86-64 ELF objects in LLVM's large code model, so the code refers
to everything (constant pools, its own functions, libm/libc) through absolute 64-bit
relocations.  Loading one is then a small, fully checked job: map the allocated
sections (code, read-only data, data, zero-filled data) into fresh pages, resolve
symbols (the object's own, pyasc's thread pool, or ``dlsym`` in libm, libc, libgcc_s
and the process), apply the relocations, make code pages read+execute and read-only
data read-only.  This is
what MCJIT does for these objects, at a fraction of the cost: no ``llvmlite.binding``
import (~30-80 ms) and no execution engine per kernel, so a disk-cache hit in a fresh
process costs about a millisecond.

Every offset, size and index is checked against the file before use: a malformed
object raises :class:`ObjectFormatError`.  A well-formed object using anything else (a
relocation type, a section kind, TLS, common symbols, another machine or OS) raises
:class:`UnsupportedObject`, and the caller falls back to MCJIT.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS = 1, 2, 3, 4, 8
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 0x1, 0x2, 0x4, 0x400
SHN_UNDEF, SHN_ABS, SHN_COMMON, SHN_LORESERVE = 0, 0xFFF1, 0xFFF2, 0xFF00
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
PAGE = 4096

_RELOCATIONS = {1: ("abs", 8), 2: ("pc", 4), 4: ("pc", 4), 10: ("abs", 4), 11: ("abs", -4),
                24: ("pc", 8)}
"""x86-64 relocation types: R_X86_64_64, PC32, PLT32, 32, 32S, PC64 -> (kind, width);
a negative width is a signed 32-bit field."""

LIBRARIES = ("libm.so.6", "libc.so.6", "libgcc_s.so.1")
"""Where undefined symbols of generated code live (libm functions, aligned_alloc/free,
``__truncdfhf2``), searched in order, then the process itself."""

RUNTIME_PREFIX = "pyasc.rt."
"""Undefined symbols with this prefix are pyasc's runtime functions (the thread pool)."""


class ObjectFormatError(ValueError):
    """The object file is malformed (truncated, inconsistent, out of bounds)."""


class UnsupportedObject(Exception):  # noqa: N818 - a condition, handled by falling back
    """A well-formed object this loader does not handle (use MCJIT instead)."""


@dataclass
class _Section:
    name: str
    kind: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int


def supported() -> bool:
    """Whether this platform can use the loader at all (Linux on x86-64)."""
    return sys.platform.startswith("linux") and os.uname().machine == "x86_64" and \
        ctypes.sizeof(ctypes.c_void_p) == 8


class LoadedObject:
    """An object file mapped into memory; ``addresses[name]`` for the requested symbols.
    The pages are unmapped when this object is collected: keep it alive while calling."""

    def __init__(self, obj: bytes, symbols: Sequence[str]) -> None:
        if not _platform_ok():
            raise UnsupportedObject("not Linux on x86-64")
        sections = _sections(obj)
        allocated = [i for i, s in enumerate(sections) if s.flags & SHF_ALLOC and s.size]
        for i in allocated:
            s = sections[i]
            if s.kind not in (SHT_PROGBITS, SHT_NOBITS) or s.flags & SHF_TLS:
                raise UnsupportedObject(f"section {s.name} of type {s.kind}")
        layout, self.size = _layout(sections, allocated)
        self._munmap = _libc().munmap  # held: module globals may be gone at exit
        self.base = _libc().mmap(None, self.size, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if self.base in (None, ctypes.c_void_p(-1).value):
            self.base = None
            raise MemoryError("cannot map memory for a kernel")
        bases = {i: self.base + off for i, off in layout.items()}
        for i, addr in bases.items():
            s = sections[i]
            if s.kind == SHT_PROGBITS:
                ctypes.memmove(addr, obj[s.offset:s.offset + s.size], s.size)
        symtab = _symbols(obj, sections)
        for s in sections:
            if s.kind == SHT_RELA and s.info in bases:
                _relocate(obj, s, sections[s.info], bases[s.info], symtab, bases)
        self._protect(sections, layout)
        exported = {name: bases[shndx] + value for name, shndx, value, _ in symtab
                    if name and shndx in bases}
        missing = [name for name in symbols if name not in exported]
        if missing:
            raise ObjectFormatError(f"symbols {missing} are not defined in the object")
        self.addresses = {name: exported[name] for name in symbols}

    def _protect(self, sections: list[_Section], layout: dict[int, int]) -> None:
        for group, prot in ((_CODE, PROT_READ | PROT_EXEC), (_RODATA, PROT_READ)):
            offsets = [layout[i] for i in layout if _group(sections[i]) == group]
            if not offsets:
                continue
            start = min(offsets) // PAGE * PAGE
            end = max(layout[i] + sections[i].size for i in layout
                      if _group(sections[i]) == group)
            length = (end - start + PAGE - 1) // PAGE * PAGE
            if _libc().mprotect(self.base + start, length, prot) != 0:
                raise UnsupportedObject("mprotect refused (W^X policy?)")

    def __del__(self) -> None:
        base = getattr(self, "base", None)
        if base:
            self.base = None
            self._munmap(base, self.size)


_CODE, _RODATA, _DATA = 0, 1, 2


def _group(s: _Section) -> int:
    if s.flags & SHF_EXECINSTR:
        return _CODE
    return _DATA if s.flags & SHF_WRITE else _RODATA


def _layout(sections: list[_Section], allocated: list[int]) -> tuple[dict[int, int], int]:
    """Offsets of the allocated sections: code, then read-only data, then data, each
    group starting on its own page (so each can get its own protection)."""
    layout: dict[int, int] = {}
    offset = 0
    for group in (_CODE, _RODATA, _DATA):
        offset = (offset + PAGE - 1) // PAGE * PAGE
        for i in allocated:
            s = sections[i]
            if _group(s) == group:
                align = max(1, s.align)
                offset = (offset + align - 1) // align * align
                layout[i] = offset
                offset += s.size
    return layout, max(PAGE, (offset + PAGE - 1) // PAGE * PAGE)


def _sections(obj: bytes) -> list[_Section]:
    if len(obj) < _EHDR.size:
        raise ObjectFormatError("truncated ELF header")
    (ident, e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum,
     shstrndx) = _EHDR.unpack_from(obj)
    if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        raise ObjectFormatError("not a 64-bit little-endian ELF file")
    if e_type != 1 or machine != 62:
        raise UnsupportedObject(f"ELF type {e_type}, machine {machine}")
    if shentsize != _SHDR.size or not 0 < shnum < 4096 or shstrndx >= shnum or \
            shoff + shnum * _SHDR.size > len(obj):
        raise ObjectFormatError("bad section header table")
    raw = [_SHDR.unpack_from(obj, shoff + i * _SHDR.size) for i in range(shnum)]
    names = raw[shstrndx]
    out = []
    for name, kind, flags, _, offset, size, link, info, align, _ in raw:
        if kind != SHT_NOBITS and offset + size > len(obj) or align > PAGE or \
                link >= shnum:
            raise ObjectFormatError("section out of bounds")
        out.append(_Section(_string(obj, names[4], names[5], name), kind, flags, offset,
                            size, link, info, align))
    return out


def _string(obj: bytes, table_offset: int, table_size: int, index: int) -> str:
    if index >= table_size or table_offset + table_size > len(obj):
        raise ObjectFormatError("string out of bounds")
    end = obj.find(b"\0", table_offset + index, table_offset + table_size)
    if end < 0:
        raise ObjectFormatError("unterminated string")
    return obj[table_offset + index:end].decode("utf-8", "replace")


def _symbols(obj: bytes, sections: list[_Section]) -> list[tuple[str, int, int, int]]:
    """(name, section index, value, type) of every symbol in the symbol table."""
    tables = [s for s in sections if s.kind == SHT_SYMTAB]
    if len(tables) != 1:
        raise ObjectFormatError("expected one symbol table")
    table = tables[0]
    strings = sections[table.link]
    out = []
    for k in range(table.size // _SYM.size):
        name, info, _, shndx, value, _ = _SYM.unpack_from(obj, table.offset + k * _SYM.size)
        if shndx == SHN_COMMON or info & 0xF == 6:  # STT_TLS
            raise UnsupportedObject("common or thread-local symbols")
        if shndx != SHN_UNDEF and shndx < SHN_LORESERVE and shndx >= len(sections):
            raise ObjectFormatError("symbol in a missing section")
        out.append((_string(obj, strings.offset, strings.size, name), shndx, value,
                    info & 0xF))
    return out


def _relocate(obj: bytes, rela: _Section, target: _Section, base: int,
              symtab: list[tuple[str, int, int, int]], bases: dict[int, int]) -> None:
    for k in range(rela.size // _RELA.size):
        offset, info, addend = _RELA.unpack_from(obj, rela.offset + k * _RELA.size)
        kind = _RELOCATIONS.get(info & 0xFFFFFFFF)
        if kind is None:
            raise UnsupportedObject(f"relocation type {info & 0xFFFFFFFF}")
        index = info >> 32
        if index >= len(symtab) or offset + abs(kind[1]) > target.size:
            raise ObjectFormatError("relocation out of bounds")
        value = _symbol_address(symtab[index], bases) + addend
        place = base + offset
        if kind[0] == "pc":
            value -= place
        _patch(place, value, kind[1])


def _symbol_address(sym: tuple[str, int, int, int], bases: dict[int, int]) -> int:
    name, shndx, value, _ = sym
    if shndx == SHN_ABS:
        return value
    if shndx == SHN_UNDEF:
        return _external(name)
    if shndx not in bases:
        raise UnsupportedObject(f"a relocation refers to an unloaded section ({name})")
    return bases[shndx] + value


def _patch(place: int, value: int, width: int) -> None:
    if width == 8:
        ctypes.c_uint64.from_address(place).value = value & (2 ** 64 - 1)
        return
    if width == 4 and 0 <= value < 2 ** 32:
        ctypes.c_uint32.from_address(place).value = value
    elif -(2 ** 31) <= value < 2 ** 31:
        ctypes.c_int32.from_address(place).value = value
    else:
        raise UnsupportedObject("a 32-bit relocation does not reach its target")


@functools.cache
def _external(name: str) -> int:
    """The address of an undefined symbol: pyasc's own runtime functions (the thread
    pool, ``pyasc.runtime.threads``), then libm, libc, libgcc_s and the process."""
    if name.startswith(RUNTIME_PREFIX):
        from pyasc.runtime import threads  # loads the pool's code on first need

        address = threads.runtime_symbol(name)
        if address:
            return address
    for lib in _libraries():
        try:
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
        except AttributeError:
            continue
    raise UnsupportedObject(f"undefined symbol {name}")


@functools.cache
def _libraries() -> tuple[ctypes.CDLL, ...]:
    found = []
    for soname in (*LIBRARIES, None):
        try:
            found.append(ctypes.CDLL(soname))
        except OSError:  # pragma: no cover - depends on the system
            continue
    return tuple(found)


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return libc


@functools.cache
def _platform_ok() -> bool:
    return supported()
