"""Frontend test configuration.

Every module the frontend produces during these tests (before and after the default
passes) must print, parse back and print identically, and every op the frontend builds
must carry a source location: an autouse fixture wraps the specializer so no test can
skip these checks.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from pyasc.jit import decorator

sys.path.insert(0, str(Path(__file__).parent))  # tests import diff.py and helpers.py
from diff import parsed  # noqa: E402 - the differential runners reuse what this parses

ROUND_TRIPS: list[int] = [0]
_ROUND_TRIPPED: set[bytes] = set()
"""Digests of the texts already checked in this process (not the texts: a worker
compiles thousands of modules): a function made again by each parametrization
(``hybrid(dynamic_shape=True)(f.__wrapped__)`` in a test body) prints the same IR, and
parsing it again proves nothing new (the parse was a third of these tests' CPU time)."""


@pytest.fixture(autouse=True)
def round_trip_every_module(monkeypatch: pytest.MonkeyPatch) -> None:
    original = decorator.HybridFunction._compile

    def compile_and_check(self, key, specs):
        spec = original(self, key, specs)
        for text in (spec.unoptimized, str(spec.program.module)):
            digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
            if digest in _ROUND_TRIPPED:
                continue
            again = str(parsed(text))
            assert again == text, f"IR of {self.__name__} does not round-trip"
            _ROUND_TRIPPED.add(digest)
        # every op the frontend builds carries a source location (the module has none)
        assert spec.unoptimized.count("loc(unknown)") == 1, spec.unoptimized
        ROUND_TRIPS[0] += 1
        return spec

    monkeypatch.setattr(decorator.HybridFunction, "_compile", compile_and_check)
