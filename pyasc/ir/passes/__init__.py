"""IR passes and the pass manager; importing this package registers every pass.

The default pipeline is :data:`DEFAULT_PIPELINE`; :func:`run_pipeline` runs a pipeline
(a list of pass names) on a module, verifying after every pass.  The environment
variable ``PYASC_DISABLE_PASSES`` (comma separated names, e.g. ``fusion``) removes
passes from any pipeline ``run_pipeline`` runs, for differential runs with and without
them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes import (  # noqa: F401
    canonicalize,
    cse,
    dce,
    expand_math,
    fusion,
    layout,
    lower_loops,
    memplan,
)
from pyasc.ir.passes.manager import (
    PASS_REGISTRY,
    Pass,
    PassContext,
    PassManager,
    get_pass,
    register_pass,
)

DEFAULT_PIPELINE: list[str] = [
    "canonicalize",  # fold constants, apply identities, drop trivially dead ops
    "cse",           # merge repeated pure expressions
    "dce",           # drop dead ops, write-only buffers and unused loop-carried values
    "fusion",        # partition fusible tensor ops into fusion.group kernels
]

LOOP_PIPELINE: list[str] = [
    "lower-to-loops",  # tensor-level IR -> loop-level IR (the backends' input)
    "expand-math",     # exp/log/tanh/... as branch-free arithmetic, so loops vectorize
    "layout",          # inner loops over unit strides; copy re-read strided inputs once
    "memplan",         # temporaries hoisted out of loops, dead buffers reused
    "canonicalize", "cse", "dce",
]
"""Tensor-level IR (after :data:`DEFAULT_PIPELINE`) to optimized loop-level IR: what the
CPU backend runs before code generation.  Every pass but ``lower-to-loops`` is an
optimization that may be disabled."""

REQUIRED_PASSES = frozenset({"lower-to-loops"})
"""Passes the backends cannot do without; the rest may be disabled (results unchanged)."""


def run_pipeline(module: ModuleOp, pipeline: Sequence[str] = DEFAULT_PIPELINE,
                 options: dict[str, object] | None = None) -> ModuleOp:
    """Run the passes named in ``pipeline`` on ``module`` (in place) and return it;
    passes named in ``PYASC_DISABLE_PASSES`` are skipped."""
    disabled = disabled_passes()
    names = [p for p in pipeline if p not in disabled or p in REQUIRED_PASSES]
    return PassManager(names).run(module, PassContext(options=dict(options or {})))


def disabled_passes() -> frozenset[str]:
    """The pass names listed in ``PYASC_DISABLE_PASSES`` (read at every pipeline run;
    ``LLVMBackend`` puts the same list in its disk-cache key)."""
    text = os.environ.get("PYASC_DISABLE_PASSES", "")
    return frozenset(p.strip() for p in text.split(",") if p.strip())


__all__ = ["DEFAULT_PIPELINE", "LOOP_PIPELINE", "PASS_REGISTRY", "Pass", "PassContext",
           "PassManager", "REQUIRED_PASSES", "disabled_passes", "get_pass", "register_pass",
           "run_pipeline"]
