"""IR passes and the pass manager; importing this package registers every pass.

The default pipeline is :data:`DEFAULT_PIPELINE`; :func:`run_pipeline` runs a pipeline
(a list of pass names) on a module, verifying after every pass.  The environment
variable ``PYASC_DISABLE_PASSES`` (comma separated names, e.g. ``fusion``) removes
passes from any pipeline ``run_pipeline`` runs, for differential runs with and without
them.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

from pyasc.errors import InvalidEnvironmentWarning
from pyasc.ir.dumps import content_key, dump_dir, dumping, write_dump
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes import (  # noqa: F401
    batch_loops,
    canonicalize,
    channel_interchange,
    cse,
    dce,
    dead_fills,
    distribute_reductions,
    expand_math,
    forward_writes,
    fusion,
    hoist_checks,
    interrupt_poll,
    layout,
    lower_loops,
    memplan,
    output_accumulators,
    reduce_to_memory,
    select_chains,
    speculate_guards,
    stencil_windows,
    sum_lanes,
)
from pyasc.ir.passes.manager import (
    PASS_REGISTRY,
    Pass,
    PassContext,
    PassManager,
    get_pass,
    register_pass,
)
from pyasc.ir.stage_dumps import write_file

DEFAULT_PIPELINE: list[str] = [
    "canonicalize",  # fold constants, apply identities, drop trivially dead ops
    "cse",           # merge repeated pure expressions
    "forward-writes",  # a local buffer written whole and read whole: its last value
                       # (an in-place update of an array value, wts /= wts.sum())
    "hoist-checks",  # index checks of user loops: proven ones dropped, affine ones hoisted
                     # (before fusion: a check between ops keeps them apart)
    "dce",           # drop dead ops, write-only buffers and unused loop-carried values
    "fusion",        # partition fusible tensor ops into fusion.group kernels
]

LOOP_PIPELINE: list[str] = [
    "dead-fills",      # fills of fresh arrays overwritten whole before any read
    "lower-to-loops",  # tensor-level IR -> loop-level IR (the backends' input)
    "hoist-checks",    # again, for the checks lowering made (gathers, scatters); before
                       # layout/memplan, which leave a loop with checks as it is
    "expand-math",     # exp/log/tanh/... as branch-free arithmetic, so loops vectorize
    "speculate-guards",  # guarded loads/arithmetic of innermost loops run unconditionally,
                         # the guard moves to the store (plain vector loads, not gathers)
    "reduce-to-memory",  # scalar accumulators stored per iteration -> out[i] += ... (for
                         # layout's interchange)
    "output-accumulators",  # window sums per output kept in memory per output (a chunk),
                            # so layout runs the output loop innermost
    "select-chains",   # running max/min/argmax loops (if x > mx: mx = x) searched in lanes;
                       # after the two above: a window's max per output vectorizes across
                       # the outputs there, better than lanes over a short window
    "sum-lanes",       # float accumulators of user loops (s += e) in np.sum's lanes and
                       # blocks (regroups the additions: option sum_lanes=False keeps them)
    "layout",          # inner loops over unit strides; copy re-read strided inputs once
    "distribute-reductions",  # expensive terms of a sequential sum in a loop of their own
    "memplan",         # temporaries hoisted out of loops, dead buffers reused
    "canonicalize", "cse", "dce",
    "interrupt-poll",  # the loops that poll for Ctrl-C (the CPU backend's countdown)
]
"""Tensor-level IR (after :data:`DEFAULT_PIPELINE`) to optimized loop-level IR: what the
CPU backend runs before code generation.  Every pass but ``lower-to-loops`` is an
optimization that may be disabled; all but ``sum-lanes`` leave every result's bits
unchanged (``sum-lanes`` regroups the additions of a loop's float sum as ``np.sum``
does, within its documented bound)."""

DISABLE_VARIABLE = "PYASC_DISABLE_PASSES"

REQUIRED_PASSES = frozenset({"lower-to-loops"})
"""Passes the backends cannot do without; the rest may be disabled (results unchanged but
for ``sum-lanes``'s regrouped sums)."""

BACKEND_STAGES = frozenset({"cube-reshapes", "loop-conv-cube"})
"""Rewrites a backend runs itself, outside the pass registry, that ``PYASC_DISABLE_PASSES``
may disable too (the AscendC backend's ``cube_reshape.PASS_NAME``,
``loop_conv.PASS_NAME``).  Named here, not registered by the backend at import, so a
value read before the backend is imported is judged the same (``parse_disabled``
caches per value)."""


def run_pipeline(module: ModuleOp, pipeline: Sequence[str] = DEFAULT_PIPELINE,
                 options: dict[str, object] | None = None,
                 dump: tuple[str, str, str] | None = None,
                 stage_dir: Path | None = None) -> ModuleOp:
    """Run the passes named in ``pipeline`` on ``module`` (in place) and return it;
    passes named in ``PYASC_DISABLE_PASSES`` are skipped.  With ``PYASC_DUMP_IR`` set,
    the IR after each pass goes to the folder of ``dump`` = (function, specialization
    key, stage) (``pyasc.ir.dumps``; default: named after the module's content); and to
    ``stage_dir`` (the ``PYASC_DUMP_PATH`` folder of the stage, ``pyasc.ir.stage_dumps``)
    when there is one."""
    disabled = disabled_passes()
    names = [p for p in pipeline if p not in disabled or p in REQUIRED_PASSES]
    sinks = []
    legacy = _dump_dir(module, dump)
    if legacy is not None:
        sinks.append(lambda name, text: write_dump(legacy, name, text))
    if stage_dir is not None:
        sinks.append(lambda name, text: write_file(stage_dir / name, text))
    ctx = PassContext(options=dict(options or {}), dump_sinks=sinks)
    return PassManager(names).run(module, ctx)


def _dump_dir(module: ModuleOp, dump: tuple[str, str, str] | None) -> Path | None:
    if not dumping():
        return None
    if dump is None:
        first = next(module.functions, None)
        name = first.sym_name if first is not None else "module"
        dump = (name, content_key(str(module)), "passes")
    return dump_dir(*dump)


def disabled_passes() -> frozenset[str]:
    """The passes ``PYASC_DISABLE_PASSES`` disables (read at every pipeline run;
    ``LLVMBackend`` puts the same set in its disk-cache key).  Names that are not
    registered passes, or name a required pass, are ignored with an
    :class:`~pyasc.errors.InvalidEnvironmentWarning` listing the valid names."""
    return parse_disabled(os.environ.get(DISABLE_VARIABLE, ""))


@functools.lru_cache(maxsize=64)
def parse_disabled(text: str) -> frozenset[str]:
    """The pass names a ``PYASC_DISABLE_PASSES`` value validly disables (cached per
    value, so each bad value is reported once)."""
    names = {p.strip() for p in text.split(",") if p.strip()}
    unknown = sorted(names - set(PASS_REGISTRY) - BACKEND_STAGES)
    required = sorted(names & REQUIRED_PASSES)
    problems = [f"{_names(unknown)} {'is not a pass' if len(unknown) == 1 else 'are not passes'}"
                ] if unknown else []
    if required:
        problems.append(f"{_names(required)} cannot be disabled")
    if problems:
        valid = sorted((set(PASS_REGISTRY) | BACKEND_STAGES) - REQUIRED_PASSES)
        warnings.warn(InvalidEnvironmentWarning(
            f"{DISABLE_VARIABLE}={text!r}: {'; '.join(problems)}; ignored",
            hint=f"valid names (comma separated): {', '.join(valid)}"), stacklevel=4)
    return frozenset(names - set(unknown) - REQUIRED_PASSES)


def _names(names: list[str]) -> str:
    return ", ".join(map(repr, names))


__all__ = ["BACKEND_STAGES", "DEFAULT_PIPELINE", "DISABLE_VARIABLE", "LOOP_PIPELINE",
           "PASS_REGISTRY", "Pass", "PassContext", "PassManager", "REQUIRED_PASSES",
           "disabled_passes", "get_pass", "parse_disabled", "register_pass", "run_pipeline"]
