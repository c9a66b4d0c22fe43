"""What ``PYASC_DUMP_PATH`` gets from the AscendC targets (``pyasc.ir.stage_dumps``).

For each SoC a program is lowered for: ``<target>/<SoC>/<function>.cpp`` (the AscendC
source, as bisheng or the host model compiles it) and ``<target>/<SoC>/host.ir`` (the
host program that launches its kernels, in the IR text format).  On ``ascend`` with
bisheng, ``ascend/<SoC>/bisheng.sh`` holds the compile and link command lines, and says
whether they ran in this process or the object came from the disk cache.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from pyasc.backend.ascendc.bisheng import Toolchain
from pyasc.backend.ascendc.codegen import AscendProgram, KernelObject
from pyasc.backend.base import Program


def dump_variants(program: Program, target: str, variants: Sequence[AscendProgram]) -> None:
    """The AscendC source and host program of every SoC variant (when dumping)."""
    site = program.dump_site()
    if site.folder() is None:
        return
    for ap in variants:
        site.write(f"{target}/{ap.soc.name}/{ap.filename}", ap.source)
        site.write(f"{target}/{ap.soc.name}/host.ir", str(ap.host))


def dump_bisheng(program: Program, tc: Toolchain, ap: AscendProgram, obj: KernelObject,
                 ran: bool) -> None:
    """``ascend/<SoC>/bisheng.sh`` (``bisheng_<core>.sh`` when ``ap`` has kernels of two
    core types): the commands that build the kernel object ``obj`` of ``ap``."""
    site = program.dump_site()
    if site.folder() is None:
        return
    out = "kernel.o"
    how = "ran in this process" if ran else \
        "NOT run in this process: the object came from the disk cache"
    lines = [f"# bisheng commands of {program.entry} for {ap.soc.name}, {obj.core} kernels "
             f"({how}).",
             f"# Run in a directory holding {obj.filename}; the link writes {out} in place.",
             shlex.join(tc.compile_command(obj.filename, out, obj.arch)),
             "# (a failed compile is retried once with: -mllvm -disable-machine-licm)",
             shlex.join(tc.link_command(out, out))]
    name = "bisheng.sh" if len(ap.objects) == 1 else f"bisheng_{obj.core}.sh"
    site.write(f"ascend/{ap.soc.name}/{name}", "\n".join(lines))
