"""The on-disk kernel cache: hits, bypass, corrupt and foreign entries, fresh processes,
and two processes compiling the same kernel at once."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cpukit import program, relu_text

from pyasc import hybrid
from pyasc.backend.llvm import LLVMBackend, cache_key, jit
from pyasc.runtime import disk_cache
from pyasc.runtime.abi import KernelABI
from pyasc.runtime.cpu import CPUKernel
from pyasc.runtime.disk_cache import DiskCache, default_root

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def _compile(key: str = "relu-cached", **options):
    return LLVMBackend().compile(program(relu_text("?"), "relu", key, **options))


def _entry(key: str = "relu-cached") -> tuple[Path, dict, Path]:
    k = cache_key(program(relu_text("?"), "relu", key))
    manifest_path = DiskCache().dir / k[:2] / f"{k}.json"
    manifest = json.loads(manifest_path.read_text())
    return manifest_path, manifest, manifest_path.parent / manifest["object"]


def _works(kernel) -> None:
    x = np.linspace(-2, 2, 33, dtype=np.float32)
    np.testing.assert_array_equal(kernel([x])[0], np.maximum(x, 0))


def test_default_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("PYASC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_root() == tmp_path / "xdg" / "pyasc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_root() == Path.home() / ".cache" / "pyasc"


def test_second_compile_is_a_hit_and_inspection_still_works():
    first = _compile()
    assert not first.from_cache
    second = _compile()
    assert second.from_cache
    _works(second)
    assert "x float>" in second.llvm_ir and '"mem.alloc"' in second.loop_ir
    _, manifest, obj = _entry()
    assert manifest["abi"]["symbol"] == "pyasc.kernel.relu"
    assert hashlib.sha256(obj.read_bytes()).hexdigest() == manifest["object_sha256"]


def test_cache_false_writes_nothing():
    _compile(cache=False)
    assert not DiskCache().dir.exists()
    assert not _compile(cache=False).from_cache


def _corrupt_truncate(manifest_path: Path, manifest: dict, obj: Path) -> None:
    obj.write_bytes(obj.read_bytes()[:100])


def _corrupt_json(manifest_path: Path, manifest: dict, obj: Path) -> None:
    manifest_path.write_text('{"format": 1, "key": ')


def _corrupt_key(manifest_path: Path, manifest: dict, obj: Path) -> None:
    manifest_path.write_text(json.dumps(dict(manifest, key="0" * 64)))


def _corrupt_object_with_matching_hash(manifest_path: Path, manifest: dict, obj: Path) -> None:
    junk = b"\x7fELF\x02\x01" + bytes(range(256)) * 4  # an ELF header with nonsense after
    obj.write_bytes(junk)
    manifest_path.write_text(json.dumps(dict(manifest, object_size=len(junk),
                                             object_sha256=hashlib.sha256(junk).hexdigest())))


def _corrupt_abi(manifest_path: Path, manifest: dict, obj: Path) -> None:
    manifest_path.write_text(json.dumps(dict(manifest, abi={"version": 1, "symbol": 3})))


def _missing_object(manifest_path: Path, manifest: dict, obj: Path) -> None:
    obj.unlink()


@pytest.mark.parametrize("corrupt", [_corrupt_truncate, _corrupt_json, _corrupt_key,
                                     _corrupt_object_with_matching_hash, _corrupt_abi,
                                     _missing_object])
def test_broken_entries_are_rebuilt(corrupt):
    _compile()
    corrupt(*_entry())
    rebuilt = _compile()
    assert not rebuilt.from_cache
    _works(rebuilt)
    assert _compile().from_cache  # the rebuild rewrote a good entry


SCRIPT = """
import glob, os, sys, time, json
t0 = time.perf_counter()
sys.path.insert(0, {here!r})
import numpy as np
from cpukit import program, relu_text
from pyasc.backend.llvm import LLVMBackend
imported = time.perf_counter() - t0
prog = program(relu_text("?"), "relu", sys.argv[2])
go = sys.argv[1]
if go:  # a race: both processes must have missed the cache before either stores
    from pyasc.runtime.disk_cache import DiskCache
    store = DiskCache.store

    def racing_store(self, *args):
        open(f"{{go}}.{{os.getpid()}}", "w").close()
        while len(glob.glob(go + ".*")) < 2:
            time.sleep(0.001)
        return store(self, *args)

    DiskCache.store = racing_store
print("ready", flush=True)
while go and not os.path.exists(go):
    time.sleep(0.001)
t1 = time.perf_counter()
k = LLVMBackend().compile(prog)
compiled = time.perf_counter() - t1
x = np.linspace(-1, 1, 101, dtype=np.float32)
assert (k([x])[0] == np.maximum(x, 0)).all()
from pyasc.backend.llvm import cache_key
print(json.dumps({{"hit": k.from_cache, "import": imported, "compile": compiled,
                  "key": cache_key(prog)}}))
"""


def _spawn(key: str, go: Path | None = None) -> subprocess.Popen:
    """A fresh process compiling relu under ``key`` once the file ``go`` exists."""
    p = subprocess.Popen([sys.executable, "-c", SCRIPT.format(here=str(HERE)),
                          str(go or ""), key], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=REPO, env=dict(os.environ))
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


def _result(p: subprocess.Popen) -> dict:
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _same_sources(*runs: dict) -> bool:
    """Whether the runs saw the same pyasc sources (others may be editing this checkout,
    and the cache key rightly changes with the code)."""
    return len({r["key"] for r in runs}) == 1


def test_fresh_process_hit():
    for attempt in range(3):
        cold = _result(_spawn(f"relu-fresh-{attempt}"))
        warm = _result(_spawn(f"relu-fresh-{attempt}"))
        if _same_sources(cold, warm):
            break
    assert not cold["hit"] and warm["hit"]
    assert warm["compile"] < cold["compile"]


def test_two_processes_compiling_at_once_both_succeed(tmp_path):
    for attempt in range(3):
        go = tmp_path / f"go{attempt}"
        procs = [_spawn(f"relu-race-{attempt}", go) for _ in range(2)]  # both waiting
        go.touch()
        results = [_result(p) for p in procs]
        if _same_sources(*results):
            break
    assert not any(r["hit"] for r in results)  # both compiled, then both stored at once
    entry = DiskCache().load(results[0]["key"])
    assert entry is not None
    abi = KernelABI.from_json(entry.manifest["abi"])
    code = jit.LoadedCode(entry.obj, [abi.symbol, abi.py_symbol], "relu")
    _works(CPUKernel(abi, code.addresses, keepalive=code))
    assert not list(DiskCache().dir.rglob("*.tmp"))


def test_disabled_passes_are_part_of_the_key(monkeypatch):
    p = program(relu_text("?"), "relu", "relu-disabled")
    monkeypatch.delenv("PYASC_DISABLE_PASSES", raising=False)
    plain = cache_key(p)
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "memplan, layout")
    without = cache_key(p)
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "layout,memplan,")
    assert cache_key(p) == without != plain  # the set of names, not the spelling
    kernel = LLVMBackend().compile(p)
    assert not kernel.from_cache
    _works(kernel)
    monkeypatch.delenv("PYASC_DISABLE_PASSES")
    assert not LLVMBackend().compile(p).from_cache  # built with the passes: a new entry


# -- every byte of an entry is sealed: tampering with any field or the object rebuilds


def _tampered_values(value):
    """Values differing from ``value`` in one way each (a leaf changed, a key dropped)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield {key: w for key, w in value.items() if key != k}
            for w in _tampered_values(v):
                yield dict(value, **{k: w})
        yield dict(value, extra=0)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            for w in _tampered_values(v):
                yield value[:i] + [w] + value[i + 1:]
        yield value + [0]
    elif isinstance(value, bool):
        yield not value
    elif isinstance(value, int | float):
        yield value + 1
    elif isinstance(value, str):  # the last character changed (the same length)
        yield value[:-1] + ("0" if value[-1:] != "0" else "1")
    else:
        yield 0


def _pair(x, s=(2.0,)):
    return x * s[0], x.sum()


def _reset(hf) -> None:
    """Forget the compiled kernels of ``hf`` (its IR stays): the next call loads by key,
    then compiles, as a fresh process would."""
    hf._kernels.clear()
    hf._calls.clear()
    hf._hot = (None, None, ())  # no native entry to try first


def _kernel_entry() -> tuple[Path, Path]:
    (manifest,) = [p for p in DiskCache().dir.rglob("*.json")
                   if json.loads(p.read_text()).get("entry") == "_pair"]
    return manifest, manifest.parent / json.loads(manifest.read_text())["object"]


def test_every_manifest_field_and_the_object_are_sealed():
    fn = hybrid(_pair)
    x = np.arange(8, dtype=np.float32)
    expected = (x * 2, x.sum())

    def check() -> None:
        _reset(fn)
        got = fn(x)
        np.testing.assert_array_equal(got[0], expected[0])
        assert got[1] == expected[1] and got[1].dtype == np.float32

    check()
    manifest_path, obj_path = _kernel_entry()
    good_text, good_obj = manifest_path.read_text(), obj_path.read_bytes()
    manifest = json.loads(good_text)
    assert isinstance(manifest.get("seal"), str)
    tampered = [json.dumps(m) for m in _tampered_values(manifest)]
    assert len(tampered) > 2 * len(json.dumps(manifest).split(","))  # every field, 2 ways
    objects = [good_obj[:-1], good_obj + b"\0"] + [
        good_obj[:i] + bytes([good_obj[i] ^ 1]) + good_obj[i + 1:]
        for i in (0, 17, len(good_obj) // 2, len(good_obj) - 1)]
    for text, obj in [(t, good_obj) for t in tampered] + [(good_text, o) for o in objects]:
        manifest_path.write_text(text)
        obj_path.write_bytes(obj)
        check()  # correct results: the edited entry was not used ...
        assert manifest_path.read_text() == good_text, text  # ... but rebuilt and rewritten
        assert obj_path.read_bytes() == good_obj
    _reset(fn)
    assert LLVMBackend().load(*_load_args(fn, x)).from_cache  # the rewritten entry is good


def _load_args(fn, x):
    from pyasc.jit.fingerprint import program_key

    specs, key = fn._key_of(fn._arguments((x,), {}))
    options = fn.options.as_dict()
    return program_key(fn, key, options), fn.__name__, options


def test_a_resealed_manifest_with_another_signature_is_not_used():
    # an entry can be sealed and still not be this specialization's (written by another
    # pyasc, or sealed again after an edit): the ABI's parameters are recomputed from
    # the signature and compared, never believed
    fn = hybrid(_pair)
    x = np.arange(8, dtype=np.float32)
    fn(x)
    manifest_path, obj_path = _kernel_entry()
    good_text = manifest_path.read_text()
    manifest = json.loads(good_text)
    manifest["abi"]["params"][0]["shape"] = [9]
    manifest["abi"]["buffers"][0]["shape"] = [9]
    manifest_path.write_bytes(disk_cache._sealed_json(manifest, obj_path.read_bytes()))
    assert DiskCache().load(manifest["key"]) is not None  # the seal itself is good
    _reset(fn)
    np.testing.assert_array_equal(fn(x)[0], x * 2)
    assert manifest_path.read_text() == good_text


def test_frontend_facts_are_sealed():
    cache = DiskCache(backend="frontend")
    key = "ab" * 32
    cache.store_data(key, {"by_value": [["axis"]]})
    assert cache.load_data(key) == {"by_value": [["axis"]]}
    path = cache.dir / key[:2] / f"{key}.json"
    good = json.loads(path.read_text())
    for bad in _tampered_values(good):
        path.write_text(json.dumps(bad))
        assert cache.load_data(key) is None, bad
