"""Hypothesis-generated random programs, compiled vs interpreted (``progen``).

Each example is the source text of a ``@hybrid`` function (elementwise expressions,
reductions, slices, slice writes, ``for``/``while`` loops with ``if``/``elif``/``else``,
``break``, ``continue``, early ``return`` and loop-carried values) with random inputs
(1-d or 2-d, odd sizes, size 0 and 1, views, int32/int64/float32/float64, static or
dynamic shapes).  ``diff.compare`` compares the IR interpreter (unoptimized and
optimized) and the CPU backend with the Python function; exact unless the program
has fuzzy parts (then the program's stated budget applies).

A device runner (``PYASC_DIFF_RUNNERS=ascend-sim``) that hits a documented limitation
(E50010) is skipped for that example only; the test prints how many examples each
device runner ran and fails when it ran none (then it tested nothing).

The default run must show every construct of :data:`CONSTRUCTS` at least once, so
that a change of the generator cannot silently stop testing one.

Deterministic: ``derandomize=True`` and no example database.  Shrinking is off by
default (a failing example is printed as source text, which is what one debugs);
``PYASC_DIFF_SHRINK=1`` turns it on.  ``PYASC_DIFF_EXAMPLES`` sets the number of
examples (default :data:`EXAMPLES`) and ``PYASC_DIFF_SEED=<n>`` explores other programs
(a random run seeded with ``n`` instead of the derandomized one).
"""

from __future__ import annotations

import os
import re
from collections import Counter

import numpy as np
import pytest
from diff import DEFAULT_RUNNERS, DEVICE_RUNNERS, Tol, compare
from hypothesis import HealthCheck, Phase, assume, given, note, seed, settings
from hypothesis import strategies as st
from progen import Program, generate

EXAMPLES = int(os.environ.get("PYASC_DIFF_EXAMPLES", "40"))
PHASES = (Phase.explicit, Phase.generate) + \
    ((Phase.shrink,) if os.environ.get("PYASC_DIFF_SHRINK") else ())

SEED = os.environ.get("PYASC_DIFF_SEED")

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _settings(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=SEED is None,
                    database=None, phases=PHASES, suppress_health_check=list(HealthCheck))


def _reference(program: Program) -> object:
    with np.errstate(all="ignore"):
        try:
            return program.fn.__wrapped__(*[np.copy(a) if isinstance(a, np.ndarray) else a
                                            for a in program.args])
        except Exception as exc:  # the runners must raise it too (diff.check)
            return exc


def _scale(result: object) -> float:
    """The largest finite magnitude among the float results (sets absolute errors)."""
    leaves = result if isinstance(result, tuple) else (result,)
    mags = [float(np.max(np.abs(v[np.isfinite(v)]), initial=0.0))
            for v in map(np.asarray, leaves) if v.dtype.kind == "f"]
    return max(mags, default=1.0)


def run_program(program: Program) -> dict[str, str]:
    """``diff.compare`` of one generated program, its source shown on failure; returns
    ``{runner: reason}`` for the device runners skipped on a documented limitation."""
    note(program.source)
    note(f"inputs: {program.args!r}")
    expected = _reference(program)
    tol = program.tol
    if isinstance(tol, Tol) and (tol.math or tol.terms) and not isinstance(expected,
                                                                           Exception):
        tol = Tol(tol.math, tol.terms, max(1.0, _scale(expected)), tol.dtype)
    with np.errstate(all="ignore"):
        return compare(program.fn, *program.args, rtol=tol)[1]


def test_random_programs():
    seen: set[str] = set()
    constructs: set[str] = set()
    skipped: Counter[str] = Counter()  # examples each device runner skipped

    @_settings(EXAMPLES)
    @seed(int(SEED or 0))
    @given(st.data())
    def random_program(data):
        program = generate(data.draw)
        assume(program.source not in seen)  # hypothesis revisits programs that passed
        skipped.update(run_program(program).keys())
        seen.add(program.source)
        constructs.update(k for k, pattern in CONSTRUCTS.items()
                          if re.search(pattern, program.source))

    random_program()
    _report_device_runners(len(seen), skipped)
    if SEED is None and EXAMPLES >= 40:  # the default run covers every construct
        assert constructs == set(CONSTRUCTS), sorted(set(CONSTRUCTS) - constructs)


def _report_device_runners(examples: int, skipped: Counter[str]) -> None:
    """Print how many examples each device runner ran; fail when one ran none."""
    for runner in (r for r in DEFAULT_RUNNERS if r in DEVICE_RUNNERS):
        ran = examples - skipped[runner]
        print(f"{runner}: ran {ran} of {examples} examples "
              f"({skipped[runner]} hit a documented device limitation)")
        assert ran > 0 or examples == 0, \
            f"{runner} tested nothing: all {examples} examples hit documented limitations"


CONSTRUCTS = {
    "for": r"\bfor \w+ in range\(", "while": r"\bwhile k\d+ <", "if": r"\n\s+if ",
    "elif": r"\belif ", "else": r"\belse:", "break": r"\bbreak\b",
    "continue": r"\bcontinue\b", "early return": r"\n {8,}return ",
    "reduction": r"\.(sum|max|min|mean)\(", "keepdims": r"keepdims=True",
    "slice write": r"out\[(1:|::2)\] =", "element write": r"out\[i\d+\] =",
    "2-d element write": r"out\[i\d+, i\d+\] [-+*]?=",
    "in-place update": r"(out\[[^\]]+\]|acc|row) [-+*]= ",
    "math": r"np\.(exp|log|tanh)\(", "where": r"np\.where\(", "cast": r"astype\(|np\.int",
    "floor division": r" // ", "modulo": r" % ", "power": r" \*\* ",
}
"""Constructs and a pattern of the source text that shows each."""
