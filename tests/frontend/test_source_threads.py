"""Reading function sources from many threads at once.

CPython 3.11's AST constructor keeps its recursion depth in interpreter-wide state: two
threads in ``ast.parse`` at once, with a garbage collection running a finalizer in the
middle (which lets the other thread in), fail with ``SystemError: AST constructor
recursion depth mismatch`` (gh-106905).  Found by the slow first-call stress test; the
frontend parses through ``source.parse_python``, one thread at a time.
"""

from __future__ import annotations

import gc
import threading
import time

import numpy as np

from pyasc.frontend import source
from pyasc.jit import fingerprint

TEXT = "\n".join(f"def f{i}(x, y):\n    a = x + y * {i}\n    if a > 3:\n"
                 f"        return [a, (x, y), {{'k': a}}]\n    return a - 1\n"
                 for i in range(40))


class _Cycle:
    def __del__(self) -> None:  # a finalizer: collections run Python code
        pass


def test_threads_parsing_while_finalizers_run():
    errors: list[BaseException] = []
    done = threading.Event()

    def garbage() -> None:
        while not done.is_set():
            for _ in range(200):
                a, b = _Cycle(), _Cycle()
                a.other, b.other = b, a
            time.sleep(0)  # let the parsers run: a busy loop starved them on a loaded host

    def parse() -> None:
        try:
            for _ in range(60):
                assert len(source.parse_python(TEXT, "<test>").body) == 40
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threshold = gc.get_threshold()
    gc.set_threshold(100, 1000, 1000)  # frequent young collections, rare full ones
    workers = [threading.Thread(target=parse) for _ in range(4)]
    churn = threading.Thread(target=garbage)
    try:
        churn.start()
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    finally:
        done.set()
        churn.join()
        gc.set_threshold(*threshold)
    assert not errors, repr(errors[0])


def sample(x):
    return np.maximum(x, 0)


def test_the_frontend_parses_through_the_serialized_parser(monkeypatch):
    calls = []
    original = source.parse_python

    def counted(text: str, filename: str):
        calls.append(filename)
        return original(text, filename)

    monkeypatch.setattr(source, "parse_python", counted)
    assert fingerprint.parse_source(sample) is not None
    assert source.load_source(sample) is not None
    assert calls == [__file__, __file__]
