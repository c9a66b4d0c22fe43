"""Suite-wide pytest configuration.

The session fails when no test passed, so a broken collection can never look green
(pytest itself already fails when nothing is collected).  Compiled kernels go to a
disk cache private to the run (``PYASC_CACHE_DIR``, inherited by the subprocesses tests
start), so the suite neither reads nor fills the user's own cache.  The run has one such
cache, created by the controller and shared by its xdist workers (``PYASC_TEST_RUN_CACHE``
names it to them; the disk cache takes concurrent processes, ``DiskCache.building``), so
a library two workers need is built once, where each worker had its own cache before.
The precompiled sim headers and launch objects of that cache (``PYASC_SIM_PCH_DIR``)
also serve tests that point ``PYASC_CACHE_DIR`` at a private folder: each such test
built them again (about 5 s of compiler CPU per test and configuration).  The IR is verified after
every pass (``PYASC_VERIFY_IR=each``; by default only a pipeline's result is).
``ascend-sim`` libraries build at ``-O0`` (``PYASC_SIM_OPT``; the library default is
``-O2``): the suite's C++ builds take half the CPU time (measured on
tests/backend/ascendc/test_pool_kernel.py: 117 s -> 59 s of user time) and the kernels
run the same code; tests that exercise other levels set them explicitly
(``ascend_simkit.py``, ``test_ascendc_backend.py``).
Module fixtures that prebuild many ascend-sim libraries put them in ``run_tmp_path``,
one folder for every xdist worker of the run, in ``worker_order`` (reversed on every
second worker): each library is built by one worker (``DiskCache.building``), where
every worker built all of them before.
A test module's ``RNG`` (a ``numpy.random.Generator``) is reseeded before each of its
tests (``fresh_module_rng``): with xdist the tests a worker runs, and their order, differ
from run to run, so data drawn from a module-wide generator depended on which tests ran
first on that worker (a float16 window sum failed on one element in one such run).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pytest

_RUN_CACHE = "PYASC_TEST_RUN_CACHE"
_owned: list[str] = []  # the run cache this process created (and removes at the end)


def pytest_configure(config: pytest.Config) -> None:
    root = os.environ.get(_RUN_CACHE) if os.environ.get("PYTEST_XDIST_WORKER") else None
    if not root:  # the controller (or a run without xdist): its workers inherit the variable
        root = tempfile.mkdtemp(prefix="pyasc-test-cache-")
        os.environ[_RUN_CACHE] = root
        _owned.append(root)
    os.environ["PYASC_CACHE_DIR"] = root
    os.environ["PYASC_SIM_PCH_DIR"] = os.path.join(root, "ascend-sim-pch")
    os.environ.setdefault("PYASC_VERIFY_IR", "each")
    os.environ.setdefault("PYASC_SIM_OPT", "-O0")


def pytest_unconfigure(config: pytest.Config) -> None:
    while _owned:  # the controller unconfigures after its workers have finished
        shutil.rmtree(_owned.pop(), ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    if not reporter.stats.get("passed"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter.write_line("no test passed: failing the run", red=True)


@pytest.fixture(autouse=True)
def fresh_module_rng(request: pytest.FixtureRequest) -> None:
    """The module's ``RNG`` anew from its own seed, so each test draws the same data
    whatever ran before it (module docstring)."""
    module = getattr(request, "module", None)
    rng = getattr(module, "RNG", None)
    if isinstance(rng, np.random.Generator):
        seed = rng.bit_generator.seed_seq.entropy  # type: ignore[attr-defined]
        module.RNG = np.random.default_rng(seed)  # type: ignore[union-attr]


@pytest.fixture(scope="session")
def run_tmp_path(tmp_path_factory: pytest.TempPathFactory):
    """A folder shared by every pytest-xdist worker of this run (the controller's
    basetemp, whose ``popen-gwN`` subfolders are the workers' own; the basetemp without
    xdist).  Module fixtures that prebuild ascend-sim libraries keep them here, so
    each library is built once per run (``DiskCache.building``), not once per worker."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def worker_order():
    """``order(items)``: ``items`` reversed on every second xdist worker, so workers
    prebuilding the same libraries into a shared cache start from opposite ends and
    each builds about half (the other half it finds built or waits for)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    odd = int(worker.lstrip("gw") or 0) % 2 == 1
    return lambda items: list(items)[::-1] if odd else list(items)


# ------------------------------------------------------------- the stand-in AscendCL

@pytest.fixture(scope="session")
def acl_standin_path(tmp_path_factory: pytest.TempPathFactory):
    """The stand-in ``libascendcl.so`` (tests/acl_standin), built once per session."""
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parent / "acl_standin")
    if here not in sys.path:
        sys.path.insert(0, here)
    import standin

    if shutil.which("cc") is None and not os.environ.get("CC"):
        pytest.skip("no C compiler to build the stand-in AscendCL library")
    return standin.build(tmp_path_factory.getbasetemp() / "acl-standin")


@pytest.fixture
def ascend_standin(acl_standin_path, monkeypatch):
    """``target="ascend"`` against the stand-in: ``PYASC_ACL_LIBRARY`` points at it,
    ``PYASC_ASCEND_OBJECTS=ascend-sim`` builds the kernel objects without bisheng.  Yields
    the :class:`standin.Standin`; the device context is shut down afterwards and the
    ``target="auto"`` choice forgotten (it must not outlive the stand-in)."""
    import standin

    from pyasc.jit import options
    from pyasc.runtime import acl

    for name in ("PYASC_ACL_STANDIN_FAIL", "PYASC_ACL_STANDIN_SOC", "PYASC_ACL_STANDIN_DEVICES",
                 "PYASC_ACL_DEVICE", "PYASC_ACL_TIMEOUT_MS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYASC_ACL_LIBRARY", str(acl_standin_path))
    monkeypatch.setenv("PYASC_ASCEND_OBJECTS", "ascend-sim")
    acl.shutdown()
    yield standin.Standin(acl_standin_path)
    monkeypatch.delenv("PYASC_ACL_STANDIN_FAIL", raising=False)
    acl.shutdown()
    options.auto_target.cache_clear()
    options._RESOLVED.clear()


@pytest.fixture
def float64_soc(monkeypatch):
    """The default SoC as if its table allowed float64 on the AI Core.  No real SoC
    does (docs/ascendc-backend.md#float64: float64 device code is E50041); tests whose
    subject is not that policy but whose data is float64 (finite differences, ...) run
    ascend-sim on this configuration, which generates the double code as before."""
    import dataclasses

    from pyasc.backend.ascendc import soc

    monkeypatch.setitem(soc.SOCS, soc.DEFAULT_SOC,
                        dataclasses.replace(soc.SOCS[soc.DEFAULT_SOC], float64=True))
