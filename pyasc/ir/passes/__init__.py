"""IR passes and the pass manager; importing this package registers every pass.

The default pipeline is :data:`DEFAULT_PIPELINE`; :func:`run_pipeline` runs a pipeline
(a list of pass names) on a module, verifying after every pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes import canonicalize, cse, dce, expand_math, lower_loops  # noqa: F401
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
]


def run_pipeline(module: ModuleOp, pipeline: Sequence[str] = DEFAULT_PIPELINE,
                 options: dict[str, object] | None = None) -> ModuleOp:
    """Run the passes named in ``pipeline`` on ``module`` (in place) and return it."""
    return PassManager(pipeline).run(module, PassContext(options=dict(options or {})))


__all__ = ["DEFAULT_PIPELINE", "PASS_REGISTRY", "Pass", "PassContext", "PassManager",
           "get_pass", "register_pass", "run_pipeline"]
