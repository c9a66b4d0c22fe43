"""Differential suite configuration: the tests import ``diff`` (the differential
helper in ``tests/frontend``) and ``progen`` (the random program generator here), and
kernels compiled by calling functions go to a disk cache private to the session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
for path in (HERE, HERE.parent / "frontend"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


@pytest.fixture(autouse=True, scope="session")
def _private_kernel_cache(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYASC_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
        yield
