"""``pyasc.profiler``: calls recorded with their cache outcome, times, bytes and (on
ascend-sim) the simulator's GM counters; nested profiles and threads; the report table,
``stats()`` and the Chrome trace schema; nothing recorded outside a profile."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from pyasc import hybrid, profiler

X = np.linspace(-1, 1, 64 * 32, dtype=np.float32).reshape(64, 32)


def _relu(x):
    return np.maximum(x, 0)


def _affine(x):
    return x * 2.0 + 1.0


def test_calls_cache_outcomes_and_bytes():
    relu = hybrid(_relu, target="cpu", cache=False)
    with profiler.Profile() as p:
        for _ in range(3):
            relu(X)
    (row,) = p.stats()
    assert (row["function"], row["target"], row["calls"]) == ("_relu", "cpu", 3)
    assert (row["memory_hits"], row["disk_hits"], row["compiles"]) == (2, 0, 1)
    assert row["signature"] == "float32[64, 32]"
    assert row["bytes_in"] == row["bytes_out"] == 3 * X.nbytes
    assert 0 < row["compile_s"] < row["total_s"] and row["run_s"] > 0
    assert row["gb_per_s"] > 0 and row["gm_bytes"] is None
    (compile_record,) = p.compiles
    assert compile_record.source == "compiled" and compile_record.target == "cpu"


def test_disk_hits_are_told_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path))
    hybrid(_relu, target="cpu")(X)                      # compiled and stored
    with profiler.Profile() as p:
        hybrid(_relu, target="cpu")(X)                  # a new function object: from disk
    (row,) = p.stats()
    assert (row["memory_hits"], row["disk_hits"], row["compiles"]) == (0, 1, 0)


def test_simulator_counters_give_gm_bytes_against_the_minimum():
    affine = hybrid(_affine, target="ascend-sim", cache=False)
    with profiler.Profile() as p:
        affine(X)
    (row,) = p.stats()
    assert row["counters"]["gm_to_ub_bytes"] == X.nbytes
    assert row["gm_bytes"] == 2 * X.nbytes and row["gm_over_minimum"] == pytest.approx(1.0)
    assert "ascend-sim" in p.report() and "1.00x" in p.report()


def test_nested_profiles_and_threads():
    relu = hybrid(_relu, target="cpu", cache=False)
    relu(X)
    with profiler.Profile() as outer:
        relu(X)
        with profiler.Profile() as inner:
            threads = [threading.Thread(target=relu, args=(X,)) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert len(outer.calls) == 4 and len(inner.calls) == 3
    assert len({c.thread for c in inner.calls}) >= 1
    assert outer.stats()[0]["memory_hits"] == 4


def test_nothing_is_recorded_outside_a_profile():
    relu = hybrid(_relu, target="cpu", cache=False)
    with profiler.Profile() as p:
        pass
    relu(X)
    assert p.calls == [] and p.report() == "no pyasc calls were profiled"


def test_chrome_trace_schema(tmp_path):
    relu = hybrid(_relu, target="cpu", cache=False)
    with profiler.Profile() as p:
        relu(X)
        relu(X)
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert [e["cat"] for e in events].count("compile") == 1
    assert [e["cat"] for e in events].count("call") == 2
    for e in events:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    compile_event = next(e for e in events if e["cat"] == "compile")
    first_call = min((e for e in events if e["cat"] == "call"), key=lambda e: e["ts"])
    # the compile slice lies inside the call that needed it
    assert first_call["ts"] <= compile_event["ts"]
    assert compile_event["ts"] + compile_event["dur"] <= first_call["ts"] + first_call["dur"]


def test_interpret_calls_are_recorded_without_a_kernel():
    with profiler.Profile() as p:
        hybrid(_relu, target="interpret")(X)
    (row,) = p.stats()
    assert row["target"] == "interpret" and row["calls"] == 1 and row["compiles"] == 0


def test_launches_per_kernel_on_ascend_sim():
    affine = hybrid(_affine, target="ascend-sim", cache=False)
    with profiler.Profile() as p:
        affine(X)
        affine(X)
    (row,) = p.stats()
    (kernel,) = row["kernels"]                         # one fused elementwise kernel
    assert row["launches"] == 2 and row["kernels"][kernel]["launches"] == 2
    assert row["kernels"][kernel]["blocks"] >= 2       # block_dim summed over launches
    header, _, line = p.report().splitlines()[:3]
    assert header.split()[-1] == "launches" and line.split()[-1] == "1"


def test_no_launches_on_cpu():
    relu = hybrid(_relu, target="cpu")
    with profiler.Profile() as p:
        relu(X)
    (row,) = p.stats()
    assert row["launches"] == 0 and row["kernels"] == {}
    assert p.report().splitlines()[2].split()[-1] == "-"
