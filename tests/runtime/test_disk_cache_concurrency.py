"""The disk cache under concurrent writers and readers, in threads and in processes.

Writers store entries for the same keys with different contents while readers load
them: a reader sees either nothing or one complete entry as one writer wrote it (its
manifest and object together), never a mix or a torn file, and no temporary file is
left behind.  The same holds for the frontend's by-value records (``store_data``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from pyasc.runtime.disk_cache import DiskCache

KEYS = [f"{i:02x}" + "ab" * 31 for i in range(4)]
ROUNDS = 30

WORKER = r"""
import json, sys
from pathlib import Path
from pyasc.runtime.disk_cache import DiskCache
root, who, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
keys = json.loads(sys.argv[4])
cache = DiskCache(root, backend="test")
bad = []
for r in range(rounds):
    for key in keys:
        obj = f"{who}:{key}:{r}:".encode() * (1 + r % 7) * 512
        cache.store(key, {"who": who, "round": r}, obj)
        cache.store_data(key + "-data", {"who": who, "round": r})
        found = cache.load(key)
        if found is None or found.obj != f"{found.manifest['who']}:{key}:" \
                f"{found.manifest['round']}:".encode() * (1 + found.manifest['round'] % 7) * 512:
            bad.append(key)
        data = cache.load_data(key + "-data")
        if data is None or set(data) != {"who", "round"}:
            bad.append(key + "-data")
print(json.dumps(bad))
"""


def _payload(who: str, key: str, r: int) -> bytes:
    return f"{who}:{key}:{r}:".encode() * (1 + r % 7) * 512


def _consistent(cache: DiskCache, key: str) -> bool:
    """The entry of ``key`` is present and exactly what one writer stored."""
    found = cache.load(key)
    return found is not None and \
        found.obj == _payload(found.manifest["who"], key, found.manifest["round"])


def test_threads_storing_and_loading_the_same_keys(tmp_path):
    cache = DiskCache(tmp_path, backend="test")
    torn: list[str] = []
    start = threading.Barrier(8)

    def writer(who: str) -> None:
        start.wait()
        for r in range(ROUNDS):
            for key in KEYS:
                cache.store(key, {"who": who, "round": r}, _payload(who, key, r))
                cache.store_data(key + "-data", {"who": who, "round": r})
                if not _consistent(cache, key):  # present: it was just stored
                    torn.append(key)

    def reader() -> None:
        start.wait()
        for _ in range(ROUNDS):
            for key in KEYS:
                found = cache.load(key)
                if found is not None and \
                        found.obj != _payload(found.manifest["who"], key, found.manifest["round"]):
                    torn.append(key)
                data = cache.load_data(key + "-data")
                if data is not None and set(data) != {"who", "round"}:
                    torn.append(key + "-data")

    threads = [threading.Thread(target=writer, args=(f"t{i}",)) for i in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not torn
    assert all(_consistent(cache, key) for key in KEYS)
    assert not list(tmp_path.rglob("*.tmp"))


def test_processes_storing_and_loading_the_same_keys(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path), f"p{i}",
                               str(ROUNDS), json.dumps(KEYS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ))
             for i in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1]) == []
    cache = DiskCache(Path(tmp_path), backend="test")
    assert all(_consistent(cache, key) for key in KEYS)
    assert not list(tmp_path.rglob("*.tmp"))


def test_build_locks_exclude_each_other_and_leave_no_lock_file(tmp_path):
    # each holder unlinks its lock file on release; a waiter that had opened the
    # unlinked file must not think it holds the lock of the path's new file
    cache = DiskCache(tmp_path, backend="cpu")
    inside, overlaps, done = [0], [], []
    guard = threading.Lock()

    def build(n: int) -> None:
        for _ in range(n):
            with cache.building("ab" * 32):
                with guard:
                    inside[0] += 1
                    overlaps.append(inside[0])
                threading.Event().wait(0.002)
                with guard:
                    inside[0] -= 1
        done.append(n)

    threads = [threading.Thread(target=build, args=(30,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(done) == 4 and max(overlaps) == 1
    assert not list(tmp_path.rglob("*.lock"))
