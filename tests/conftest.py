"""Suite-wide pytest configuration.

The session fails when no test passed, so a broken collection can never look green
(pytest itself already fails when nothing is collected).  Compiled kernels go to a
disk cache private to the run (``PYASC_CACHE_DIR``, inherited by the subprocesses tests
start), so the suite neither reads nor fills the user's own cache.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_CACHE_ROOT = tempfile.mkdtemp(prefix="pyasc-test-cache-")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["PYASC_CACHE_DIR"] = _CACHE_ROOT


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE_ROOT, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    if not reporter.stats.get("passed"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter.write_line("no test passed: failing the run", red=True)
