"""Hypothesis-generated random programs, compiled vs interpreted (``progen``): the
fixed-seed CI subset of the fuzzing campaign (``campaign``).

Each example is the source text of a ``@hybrid`` function (elementwise expressions,
reductions with ``axis``/``keepdims``, views, gathers and scatters, matrix products,
slice and view writes, ``for``/``while`` loops with data-dependent control,
``if``/``elif``/``else``, ``break``, ``continue``, early ``return`` and loop-carried
values) with random inputs (1-d or 2-d, odd sizes, size 0 and 1, views, mixed dtypes
from int8 and bool to float64, static or dynamic shapes).  ``diff.compare`` compares
the IR interpreter (unoptimized and optimized) and the CPU backend (passes on and off)
with the Python function; exact unless the program has fuzzy parts (then the
program's stated budget applies).

A program the frontend rejects as unsupported (E50010/E50011) is skipped and counted
by kind; a device runner (``PYASC_DIFF_RUNNERS=ascend-sim``) that hits a documented
limitation (E50010) is skipped for that example only.  The test prints both counts
and fails when a runner ran nothing.

The default run must show every construct of ``progen_constructs.CONSTRUCTS`` at least
once, so that a change of the generator cannot silently stop testing one.

Deterministic: ``derandomize=True`` and no example database.  Hypothesis draws one
seed per example and ``progen.generate_seeded`` builds the program from it (a
hypothesis draw per choice costs ~0.4 s per program); ``PYASC_DIFF_SHRINK=1`` draws
every choice through hypothesis instead and turns shrinking on (a failing example is
printed as source text either way).  ``PYASC_DIFF_EXAMPLES`` sets the number of
examples (default :data:`EXAMPLES`) and ``PYASC_DIFF_SEED=<n>`` explores other programs
(a random run seeded with ``n`` instead of the derandomized one).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, DEVICE_RUNNERS, compare
from hypothesis import HealthCheck, Phase, assume, given, note, seed, settings
from hypothesis import strategies as st
from judge import UNSUPPORTED, budget, frontend_error, kind_of, kind_of_skip, reference
from progen import Program, generate, generate_seeded
from progen_constructs import CONSTRUCTS, PROFILE_ONLY, constructs_in

EXAMPLES = int(os.environ.get("PYASC_DIFF_EXAMPLES", "40"))
SHRINK = bool(os.environ.get("PYASC_DIFF_SHRINK"))
PHASES = (Phase.explicit, Phase.generate) + ((Phase.shrink,) if SHRINK else ())

SEED = os.environ.get("PYASC_DIFF_SEED")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _settings(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=SEED is None,
                    database=None, phases=PHASES, suppress_health_check=list(HealthCheck))


def draw_program(data: st.DataObject) -> Program:
    """A program: every choice drawn by hypothesis (shrinkable), or one drawn seed."""
    if SHRINK:
        return generate(data.draw)
    return generate_seeded(data.draw(st.integers(0, 2**63 - 1), label="program seed"))


def run_program(program: Program, show: Callable[[str], None] = note) -> dict[str, str]:
    """``diff.compare`` of one generated program, its source shown on failure; returns
    ``{runner: reason}`` for the device runners skipped on a documented limitation."""
    show(program.source)
    show(f"inputs: {program.args!r}")
    expected = reference(program)
    with np.errstate(all="ignore"):
        return compare(program.fn, *program.args, rtol=budget(program, expected))[1]


def test_random_programs():
    seen: set[str] = set()
    constructs: set[str] = set()
    skipped: Counter[str] = Counter()  # examples each device runner skipped
    unsupported: Counter[str] = Counter()  # examples the frontend rejected, by kind

    @_settings(EXAMPLES)
    @seed(int(SEED or 0))
    @given(st.data())
    def random_program(data):
        program = draw_program(data)
        assume(program.source not in seen)  # hypothesis revisits programs that passed
        seen.add(program.source)
        error = frontend_error(program)
        if isinstance(error, UNSUPPORTED):
            unsupported[kind_of(error)] += 1
            return
        for runner, reason in run_program(program).items():
            skipped[f"{runner}: {kind_of_skip(reason)}"] += 1
        constructs.update(constructs_in(program.source))

    random_program()
    _report(len(seen), unsupported, skipped)
    if SEED is None and EXAMPLES >= 40:  # the default run covers every construct
        for name in sorted(set(CONSTRUCTS) - constructs):
            constructs.update(_run_one_with(name))
        assert constructs == set(CONSTRUCTS), sorted(set(CONSTRUCTS) - constructs)


def _run_one_with(construct: str, tries: int = 2000) -> set[str]:
    """Run the first program of a fixed seed sequence that uses ``construct`` and
    compiles; its constructs.  Rare constructs (a masked write is in 1 program in 40)
    are then checked on every run whatever hypothesis drew, not by luck; those of
    another generator profile (``progen.PROFILES``) from that profile."""
    profile = next((p for p, names in PROFILE_ONLY.items() if construct in names), "default")
    for k in range(tries):
        program = generate_seeded(f"cover:{k}", profile)
        found = constructs_in(program.source)
        if construct in found and not isinstance(frontend_error(program), UNSUPPORTED):
            run_program(program, print)  # shown with the failure by pytest
            return found
    return set()


def _report(examples: int, unsupported: Counter[str], skipped: Counter[str]) -> None:
    """Print the skips by kind; fail when a runner ran nothing."""
    compiled = examples - sum(unsupported.values())
    print(f"{examples} programs, {compiled} compiled; unsupported by kind: "
          f"{dict(unsupported) or 'none'}")
    assert compiled > 0 or examples == 0, "every program was unsupported"
    for runner in (r for r in DEFAULT_RUNNERS if r in DEVICE_RUNNERS):
        kinds = {k: n for k, n in skipped.items() if k.startswith(f"{runner}: ")}
        ran = compiled - sum(kinds.values())
        print(f"{runner}: ran {ran} of {compiled} programs; skipped by kind: {kinds or 'none'}")
        assert ran > 0 or compiled == 0, \
            f"{runner} tested nothing: all {compiled} programs hit documented limitations"
