"""Ctrl-C (SIGINT) stops compiled kernels: a child process (``interrupt_child.py``) runs an
endless or long kernel, the test sends SIGINT about a second later; the child must
report ``KeyboardInterrupt`` within two seconds and then make a normal call.  Handlers
of the user's own, an ignored SIGINT and kernels on other threads keep Python's rules."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("interrupt_child.py")
REPO = CHILD.parents[2]
BOUND = 2.0
"""Seconds from SIGINT to the child's report."""


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cache"))


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _Child:
    """A scenario's process; its stdout lines arrive through a queue, so a child that
    never prints (a kernel that ignores Ctrl-C) fails the test instead of hanging it."""

    def __init__(self, scenario: str, cache: str, **env: str) -> None:
        full = dict(os.environ, PYASC_CACHE_DIR=cache, PYTHONPATH=str(REPO), **env)
        # SIGINT as a terminal would deliver it: a suite started in the background of a
        # non-interactive shell inherits it ignored, and Python then installs no handler
        self.proc = subprocess.Popen([sys.executable, "-W", "ignore", str(CHILD), scenario],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=REPO, env=full,
                                     preexec_fn=_default_sigint)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.seen: dict[str, str] = {}

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def read(self, until: str, timeout: float) -> float:
        """Collect ``key value`` lines up to the one starting with ``until``; the time it
        came."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.proc.kill()
                raise AssertionError(f"no '{until}' line: {self.seen}; stderr: "
                                     f"{self.proc.communicate()[1]}")
            key, _, value = line.strip().partition(" ")
            self.seen[key] = value
            if key == until:
                return time.monotonic()

    def finish(self, timeout: float) -> dict[str, str]:
        """Wait for the exit (success required); every line it printed."""
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        assert self.proc.returncode == 0, self.proc.stderr.read()
        while (line := self.lines.get(timeout=10)) is not None:
            key, _, value = line.strip().partition(" ")
            self.seen[key] = value
        return self.seen


def _interrupt(scenario: str, cache: str, **env: str) -> dict[str, str]:
    """Run ``scenario``, send SIGINT a second into the long call; every line it printed,
    with ``delay``: seconds from SIGINT to the long call's report."""
    child = _Child(scenario, cache, **env)
    child.read("ready", 300)
    time.sleep(1.0)
    sent = time.monotonic()
    child.proc.send_signal(signal.SIGINT)
    at = child.read("finished" if scenario in _FINISHING else "caught", 30)
    seen = child.finish(60)
    seen["delay"] = str(at - sent)
    return seen


_FINISHING = {"handler", "ignored"}


@pytest.mark.parametrize("scenario", ["while", "nested", "strips", "search", "arrays", "callee",
                                      "parallel-all", "parallel-one", "raising"])
def test_ctrl_c_stops_the_kernel(cache, scenario):
    seen = _interrupt(scenario, cache, PYASC_NUM_THREADS="2")
    expected = "Stop" if scenario == "raising" else "KeyboardInterrupt"
    assert seen["caught"] == expected
    assert float(seen["delay"]) < BOUND
    assert seen["again"] == "True"
    if scenario.startswith("parallel"):  # the loops really ran on the pool
        assert int(seen["splits"]) >= 3


@pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None,
                    reason="ascend-sim needs a C++ compiler")
def test_ctrl_c_stops_an_ascend_sim_kernel(cache):
    seen = _interrupt("sim", cache)
    assert seen["caught"] == "KeyboardInterrupt"
    assert float(seen["delay"]) < BOUND
    assert seen["again"] == "True"


def test_a_handler_that_returns_runs_during_the_kernel(cache):
    seen = _interrupt("handler", cache)
    assert seen["finished"] == "True"  # the kernel went on, with the right result
    assert seen["handler_calls"] == "1" and seen["handler_before_end"] == "True"
    assert seen["again"] == "True"


def test_an_ignored_sigint_stays_ignored(cache):
    seen = _interrupt("ignored", cache)
    assert seen["finished"] == "True" and seen["hooked"] == "False"
    assert seen["again"] == "True"


def test_kernels_on_other_threads_go_on(cache):
    seen = _interrupt("thread", cache)
    assert seen["caught"] == "KeyboardInterrupt" and float(seen["delay"]) < BOUND
    assert seen["worker_running"] == "True" and seen["worker_result"] == "True"
    assert seen["again"] == "True"


def test_the_hook_comes_back_after_signal_signal(cache):
    seen = _interrupt("rehook", cache)
    assert seen["first"] == "caught"
    assert seen["hooked_before"] == "True" and seen["hooked_after_signal"] == "False"
    assert seen["caught"] == "KeyboardInterrupt" and float(seen["delay"]) < BOUND
    assert seen["again"] == "True"


def test_interrupted_calls_free_their_temporaries(cache):
    seen = _Child("leak", cache).finish(180)
    assert int(seen["growth_mb_temp"]) < 64 and int(seen["growth_mb_carried"]) < 64
    assert seen["again"] == "True"
