"""Child process of ``test_interrupt.py``: one scenario per run (``argv[1]``).

Protocol on stdout: ``ready`` when the long call is about to start (the parent then waits
about a second and sends SIGINT), then ``caught <exception type>`` or ``finished <ok>``
for the long call, then ``again <ok>`` for a normal call made afterwards.  Scenarios
that need more report extra ``key value`` lines.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import numpy as np

from pyasc import hybrid
from pyasc.runtime import interrupt, threads

SEED = 712265938  # the LCG below reaches it after 3 steps from 7


@hybrid
def lcg_until(n):
    """``while True`` with only scalar work: endless for a value the LCG never takes."""
    i = 0
    j = 7
    while True:
        j = (j * 1103515245 + 12345) % 2147483648
        i += 1
        if j == n:
            break
    return i


@hybrid
def nested(x, m):
    s = 0.0
    for _i in range(m):
        for j in range(x.shape[0]):
            s += x[j]
    return s


@hybrid
def strips(x, n):
    """One innermost loop whose trip count is a scalar argument."""
    s = 0.0
    for i in range(n):
        s += x[i % 4]
    return s


@hybrid
def search(x, n):
    """A counted loop with a ``break``: run in strips by the interrupt-poll pass."""
    found = -1
    for k in range(n):
        if x[k % 4] < 0.0:
            found = k
            break
    return found


@hybrid
def spin(n):
    k = 0
    while k != n:
        k += 2
    return k


@hybrid
def calls_spin(x, n):
    return x * 2.0 + spin(n)


@hybrid
def rows(x, m):
    """A parallel loop (rows are independent); row ``i`` counts ``x[i] * m`` steps."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        s = 0.0
        k = 0.0
        while k < x[i] * m:
            s += 0.5
            k += 1.0
        out[i] = s
    return out


@hybrid
def ping_pong(x, m):
    """Whole-array steps in a loop (each a split loop of its own) on two buffers that
    trade places: the kernel owns both while the loop runs."""
    a = x * 1.0
    b = x * 2.0
    for _i in range(m):
        b[:] = a * 0.5 + 1.0
        a, b = b, a
    return a


@hybrid
def big_temp(x, m):
    """A kernel-owned temporary as large as ``x``, alive while the loops run."""
    t = np.sort(x)
    s = 0.0
    for _i in range(m):
        for j in range(t.shape[0]):
            s += t[j]
    return s


def say(*words: object) -> None:
    print(*words, flush=True)


def run_long(call, expect=None) -> None:
    """Run the long call after ``ready``; report how it ended."""
    say("ready")
    try:
        out = call()
    except BaseException as exc:  # noqa: BLE001 - reporting the type is the point
        say("caught", type(exc).__name__)
    else:
        say("finished", expect is None or bool(np.all(out == expect)))


def calibrated(seconds: float) -> int:
    """``m`` such that ``nested(ones(1000), m)`` runs about ``seconds``."""
    x = np.ones(1000)
    nested(x, 1)  # compiled first
    start = time.perf_counter()
    nested(x, 20000)
    return max(1, int(20000 * seconds / max(time.perf_counter() - start, 1e-6)))


def scenario_while() -> None:
    assert lcg_until(SEED) == 3
    run_long(lambda: lcg_until(-1))
    say("again", lcg_until(SEED) == 3)


def scenario_nested() -> None:
    x = np.ones(1000)
    run_long(lambda: nested(x, 10**12))
    say("again", nested(x, 3) == 3000.0)


def scenario_strips() -> None:
    x = np.ones(4)
    assert strips(x, 10) == 10.0
    run_long(lambda: strips(x, 1 << 62))
    say("again", strips(x, 5) == 5.0)


def scenario_search() -> None:
    x = np.ones(4)
    assert search(x, 10) == -1 and search(-x, 10) == 0
    run_long(lambda: search(x, 1 << 62))
    y = np.array([1.0, 1.0, 1.0, -1.0])
    say("again", search(y, 5000) == 3 and search(x, 9000) == -1)


def scenario_arrays() -> None:
    x = np.ones(1 << 22)
    assert np.all(ping_pong(x, 2) == 1.75)
    run_long(lambda: ping_pong(x, 10**9))
    say("again", bool(np.all(ping_pong(x, 3) == 1.875)))


def scenario_callee() -> None:
    x = np.ones(3)
    run_long(lambda: calls_spin(x, 7))  # k is even: never 7
    say("again", bool(np.all(calls_spin(x, 8) == 10.0)))


def scenario_parallel(which: str) -> None:
    x = np.ones(8) if which == "all" else np.eye(8)[7]
    with threads.minimum_work(0):
        assert np.all(rows(x, 3) == x * 1.5)
        run_long(lambda: rows(x, 1e300))
        say("again", bool(np.all(rows(x, 5) == x * 2.5)))
        say("splits", threads.stats().splits)


def scenario_sim() -> None:
    sim = hybrid(target="ascend-sim")(nested.__wrapped__)
    x = np.ones(16, np.float32)
    assert sim(x, 3) == 48.0
    run_long(lambda: sim(x, 10**12))
    say("again", sim(x, 5) == 80.0)


def scenario_handler() -> None:
    """A handler of the user's that returns: it runs during the kernel, which goes on."""
    m = calibrated(4.0)
    seen: list[float] = []
    signal.signal(signal.SIGINT, lambda *_: seen.append(time.monotonic()))
    x = np.ones(1000)
    run_long(lambda: nested(x, m), expect=1000.0 * m)
    done = time.monotonic()
    say("handler_calls", len(seen))
    say("handler_before_end", bool(seen) and seen[0] < done - 0.5)
    say("again", nested(x, 3) == 3000.0)


def scenario_raising() -> None:
    class Stop(Exception):
        pass

    def stop(*_: object) -> None:
        raise Stop

    signal.signal(signal.SIGINT, stop)
    x = np.ones(1000)
    run_long(lambda: nested(x, 10**12))
    say("again", nested(x, 3) == 3000.0)


def scenario_ignored() -> None:
    m = calibrated(2.5)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    x = np.ones(1000)
    run_long(lambda: nested(x, m), expect=1000.0 * m)
    say("hooked", interrupt.hooked())
    say("again", nested(x, 3) == 3000.0)


def scenario_thread() -> None:
    """A kernel on another thread goes on; the main thread gets KeyboardInterrupt."""
    m = calibrated(3.0)
    x = np.ones(1000)
    results: list[object] = []
    done = threading.Event()

    def work() -> None:
        try:
            results.append(nested(x, m))
        except BaseException as exc:  # noqa: BLE001
            results.append(exc)
        done.set()

    worker = threading.Thread(target=work)
    say("ready")
    worker.start()
    try:
        while not done.wait(0.05):
            pass
        say("finished", "main")
    except KeyboardInterrupt:
        say("caught", "KeyboardInterrupt")
    say("worker_running", not done.is_set())
    done.wait()
    worker.join()
    say("worker_result", results == [1000.0 * m])
    say("again", nested(x, 3) == 3000.0)


def scenario_rehook() -> None:
    """``signal.signal`` replaces the hook (IPython does it around every cell): the next
    long kernel installs it again."""
    x = np.ones(1000)
    nested(x, 3)  # compiled before the timer runs
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        nested(x, 10**12)
    except KeyboardInterrupt:
        say("first", "caught")
    say("hooked_before", interrupt.hooked())
    signal.signal(signal.SIGINT, signal.default_int_handler)
    say("hooked_after_signal", interrupt.hooked())
    run_long(lambda: nested(x, 10**12))
    say("again", nested(x, 3) == 3000.0)


def scenario_leak() -> None:
    """Interrupted calls free their temporaries and the buffers their loops carry: each
    round would leak 64 MB."""
    x = np.random.default_rng(0).random(1 << 23)
    y = x[: 1 << 22]
    big_temp(x, 1)  # compiled before the timers run
    ping_pong(y, 1)
    for name, call in (("temp", lambda: big_temp(x, 10**12)),
                       ("carried", lambda: ping_pong(y, 10**9))):
        rss = []
        for _ in range(5):
            timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            try:
                call()
            except KeyboardInterrupt:
                pass
            timer.join()
            rss.append(_rss())
        say(f"growth_mb_{name}", (rss[-1] - rss[0]) >> 20)
    say("again", big_temp(x[:8], 2) == 2 * x[:8].sum())


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


SCENARIOS = {
    "while": scenario_while, "nested": scenario_nested, "strips": scenario_strips,
    "callee": scenario_callee, "search": scenario_search, "arrays": scenario_arrays, "parallel-all": lambda: scenario_parallel("all"),
    "parallel-one": lambda: scenario_parallel("one"), "sim": scenario_sim,
    "handler": scenario_handler, "raising": scenario_raising, "ignored": scenario_ignored,
    "thread": scenario_thread, "rehook": scenario_rehook, "leak": scenario_leak,
}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]]()
