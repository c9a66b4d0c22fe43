"""docs/ir.md lists every registered op (so the op table cannot drift)."""

from __future__ import annotations

import re
from pathlib import Path

from pyasc.ir.core import OP_REGISTRY

DOC = Path(__file__).resolve().parents[2] / "docs" / "ir.md"


def documented_ops() -> set[str]:
    names: set[str] = set()
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| `(\w+)` \| (.*) \|$", line)
        if not m:
            continue
        family, cell = m.groups()
        for word in re.findall(r"`([^`]+)`", cell):
            for name in word.split():
                names.add(name if "." in name else f"{family}.{name}")
    return names


def test_every_registered_op_is_documented():
    import pyasc.ir.ops  # noqa: F401

    missing = sorted(set(OP_REGISTRY) - documented_ops())
    assert not missing, f"add these ops to docs/ir.md: {missing}"
