"""IR passes and the pass manager; importing this package registers every pass."""

from pyasc.ir.passes.manager import (
    PASS_REGISTRY,
    Pass,
    PassContext,
    PassManager,
    get_pass,
    register_pass,
)

__all__ = ["PASS_REGISTRY", "Pass", "PassContext", "PassManager", "get_pass", "register_pass"]
