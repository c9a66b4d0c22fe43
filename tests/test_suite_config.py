"""The suite's own configuration (``tests/conftest.py``): one kernel cache per run, which
the xdist workers share (each worker had its own, so a library two workers needed was
built twice), with its precompiled sim headers serving tests that use private caches,
and removed when the run ends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBE = """\
import os
from pathlib import Path

def _record(name):
    keys = ("PYASC_CACHE_DIR", "PYASC_SIM_PCH_DIR", "PYTEST_XDIST_WORKER")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "none")
    Path(os.environ["PROBE_OUT"], f"{name}-{worker}").write_text(
        "|".join(os.environ.get(k, "") for k in keys))

def test_one():
    _record("one")

def test_two():
    _record("two")
"""


def test_xdist_workers_share_one_run_cache(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(HERE / "conftest.py", suite / "conftest.py")
    (suite / "test_probe.py").write_text(PROBE)
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "PYASC_TEST_RUN_CACHE"))}
    env["PROBE_OUT"] = str(out)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "xdist", "-n", "2", "--dist", "each",
           "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", str(suite), str(suite)]
    proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # --dist each: both workers run both tests
    seen = [path.read_text().split("|") for path in sorted(out.iterdir())]
    assert len(seen) == 4 and {worker for _, _, worker in seen} == {"gw0", "gw1"}
    caches = {cache for cache, _, _ in seen}
    assert len(caches) == 1 and all(pch == os.path.join(cache, "ascend-sim-pch")
                                    for cache, pch, _ in seen)
    assert not Path(caches.pop()).exists()  # the controller removed it after its workers
