"""``pyasc.poll``: the stub a polling loop calls when its countdown runs out.

The stub calls the runtime's ``pyasc.rt.poll`` and must leave every register the loop
keeps live as it was: the call is declared ``preserve_allcc``, so LLVM keeps loop
values in registers across it instead of spilling them in the hot path (measured: a
sort's outer loops ran ~5% slower with a plain C call).

On x86-64 with AVX, LLVM's own ``preserve_allcc`` function is *not* that stub: it saves
ymm0-15 (not zmm0-15's upper halves, zmm16-31 or the mask registers AVX-512 code keeps
values in) and ends with ``vzeroupper``, which clears the upper halves of every ymm
register on return.  A vectorized loop that kept a broadcast constant in a ymm register
then computed half of each vector wrong after the first poll (``x * 0.5 + 1.0`` on
2000x2000 float64: 1.9M zeros, issue 15).  So there the stub is written here, in module
assembly: it saves the caller-saved general registers and the whole SSE/AVX/AVX-512
state (x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM) with ``xsave``, calls the runtime and
restores everything with ``xrstor`` -- more than the convention asks, never less.
AVX implies an OS that enabled ``xsave`` (OSXSAVE), so the instruction is available
wherever this stub is used.  On aarch64, LLVM's ``preserve_allcc`` saves all of
x0-x28 and q0-q31 (the NEON registers LLVM vectorizes with) and is used as is; other
machines, and x86-64 without AVX, call the runtime with the C convention.
"""

from __future__ import annotations

import platform

NAME = "pyasc.poll"

XSAVE_MASK = 0xE7
"""x87 | SSE | AVX | opmask | ZMM_Hi256 | Hi16_ZMM (XCR0 bits 0, 1, 2, 5, 6, 7)."""

AREA = 4096
"""Bytes reserved for the XSAVE area (its standard layout ends at 2688 for the
components in :data:`XSAVE_MASK`)."""

_SAVED = ("rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")  # caller-saved but rax


def x86_64_stub(runtime_poll: str) -> str:
    """The AT&T assembly of the stub (a local symbol of the kernel's object)."""
    push = "".join(f"\tpushq %{r}\n" for r in _SAVED)
    pop = "".join(f"\tpopq %{r}\n" for r in reversed(_SAVED))
    header = "".join(f"\tmovq $0, {512 + 8 * i}(%rsp)\n" for i in range(8))
    return (
        "\t.text\n\t.p2align 4\n"
        f"{NAME}:\n\tpushq %rbp\n\tmovq %rsp, %rbp\n{push}"
        f"\tsubq ${AREA}, %rsp\n\tandq $-64, %rsp\n"
        f"{header}"  # XRSTOR refuses a header with non-zero reserved bytes
        f"\tmovl ${XSAVE_MASK}, %eax\n\txorl %edx, %edx\n\txsave (%rsp)\n"
        f"\tmovabsq ${runtime_poll}, %rax\n\tcallq *%rax\n\tmovl %eax, %r11d\n"
        f"\tmovl ${XSAVE_MASK}, %eax\n\txorl %edx, %edx\n\txrstor (%rsp)\n"
        f"\tmovl %r11d, %eax\n\tleaq -{8 * len(_SAVED)}(%rbp), %rsp\n{pop}"
        "\tpopq %rbp\n\tretq\n"
    )


def kind(features: str) -> str:
    """How this machine's stub is made: ``"asm"`` (x86-64 with AVX), ``"llvm"``
    (LLVM's ``preserve_allcc`` on aarch64) or ``"c"`` (a plain call)."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return "asm" if "+avx" in features.split(",") else "c"
    return "llvm" if machine in ("aarch64", "arm64") else "c"
