"""``PYASC_DUMP_PATH``: every stage of every compiled specialization, in a folder per
function and specialization; what a disk-cache hit writes and says it did not; a coded
warning, not an exception, when the place cannot be written."""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.errors import IRDumpWarning
from pyasc.ir import parse_module
from pyasc.ir.stage_dumps import _warn_unwritable, signature_name

SOURCE = '''
import numpy as np

def {name}(x, w):
    return np.sum(np.exp(x) * w, axis=-1)
'''


def _fresh(tmp_path: Path, name: str, **options):
    """A new ``@hybrid`` function (its own module file: nothing compiled in this process)."""
    path = tmp_path / f"{name}_mod.py"
    path.write_text(SOURCE.format(name=name))
    spec = importlib.util.spec_from_file_location(f"{name}_mod", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return hybrid(getattr(module, name), **options)


def _check(fn, x, w):
    np.testing.assert_allclose(fn(x, w), np.sum(np.exp(x) * w, axis=-1), rtol=1e-6)


@pytest.fixture
def dump_root(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "dumps"
    monkeypatch.setenv("PYASC_DUMP_PATH", str(root))
    monkeypatch.delenv("PYASC_DUMP_IR", raising=False)
    return root


def test_every_cpu_stage_of_every_specialization(tmp_path, dump_root):
    fn = _fresh(tmp_path, "stages_cpu")
    x32, w32 = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4), np.ones(4, np.float32)
    _check(fn, x32, w32)
    _check(fn, x32.astype(np.float64), w32.astype(np.float64))
    folders = sorted(p.name for p in (dump_root / "stages_cpu").iterdir())
    assert len(folders) == 2
    assert folders[0].startswith("float32_3x4-float32_4-")
    assert folders[1].startswith("float64_3x4-float64_4-")
    for folder in (dump_root / "stages_cpu").iterdir():
        tensor = sorted(p.name for p in (folder / "tensor").iterdir())
        loops = sorted(p.name for p in (folder / "cpu" / "loops").iterdir())
        assert tensor[0] == "00-input.ir" and tensor[-1].endswith("-fusion.ir")
        assert loops[:3] == ["00-input.ir", "01-dead-fills.ir", "02-lower-to-loops.ir"]
        for ir in [*(folder / "tensor").iterdir(), *(folder / "cpu" / "loops").iterdir()]:
            parse_module(ir.read_text())  # every IR stage parses (and verifies)
        assert "fusion.group" in (folder / "tensor" / tensor[-1]).read_text()
        assert "loop.for" in (folder / "cpu" / "loops" / loops[-1]).read_text()
        assert "define" in (folder / "cpu" / "kernel-unoptimized.ll").read_text()
        assert "stages_cpu" in (folder / "cpu" / "kernel.ll").read_text()
        assert (folder / "cpu" / "kernel.s").read_text().strip()
        assert json.loads((folder / "cpu" / "kernel.json").read_text())["abi"]
        assert not (folder / "cpu" / "NOT-DUMPED.txt").exists()


def test_a_disk_cache_hit_dumps_what_it_has_and_says_what_it_did_not(tmp_path, dump_root,
                                                                      monkeypatch):
    x, w = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    monkeypatch.delenv("PYASC_DUMP_PATH")
    _check(_fresh(tmp_path, "stages_hit"), x, w)  # compiled and stored, no dumps
    monkeypatch.setenv("PYASC_DUMP_PATH", str(dump_root))
    _check(_fresh(tmp_path, "stages_hit"), x, w)  # a fresh function: loads the stored kernel
    (folder,) = (dump_root / "stages_hit").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["cpu"]
    assert sorted(p.name for p in (folder / "cpu").iterdir()) == ["NOT-DUMPED.txt",
                                                                  "kernel.json"]
    note = (folder / "cpu" / "NOT-DUMPED.txt").read_text()
    assert "loaded from the disk cache" in note
    for stage in ("tensor/", "cpu/loops/", "cpu/kernel.ll", "cpu/kernel.s"):
        assert stage in note
    assert "cache=False" in note
    assert json.loads((folder / "cpu" / "kernel.json").read_text())["abi"]


def test_without_the_variable_nothing_is_written(tmp_path, dump_root, monkeypatch):
    monkeypatch.delenv("PYASC_DUMP_PATH")
    _check(_fresh(tmp_path, "stages_off", cache=False), np.ones((2, 2)), np.ones(2))
    assert not dump_root.exists()


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_an_unwritable_place_warns_once_and_the_call_runs(tmp_path, monkeypatch, where):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    target = blocker if where == "file" else blocker / "sub"
    monkeypatch.setenv("PYASC_DUMP_PATH", str(target))
    _warn_unwritable.cache_clear()
    fn = _fresh(tmp_path, f"stages_bad_{where.replace('-', '_')}", cache=False)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _check(fn, np.ones((2, 5), np.float32), np.ones(5, np.float32))
    dumps = [w for w in record if issubclass(w.category, IRDumpWarning)]
    assert len(dumps) == 1, [str(w.message) for w in record]
    text = str(dumps[0].message)
    assert text.startswith(f"W50060: PYASC_DUMP_PATH={target}: cannot write the compilation")
    assert "hint: set PYASC_DUMP_PATH to a writable directory" in text
    assert blocker.read_text() == "x"


def test_ascend_sim_writes_the_ascendc_source_and_host_program(tmp_path, dump_root,
                                                               monkeypatch):
    monkeypatch.setenv("PYASC_SIM_OPT", "-O0")
    fn = _fresh(tmp_path, "stages_sim", target="ascend-sim")
    _check(fn, np.ones((4, 8), np.float32), np.ones(8, np.float32))
    (folder,) = (dump_root / "stages_sim").iterdir()
    soc = folder / "ascend-sim" / "Ascend910B1"
    assert "__aicore__" in (soc / "stages_sim.cpp").read_text()
    import pyasc.backend.ascendc.ops  # noqa: F401  - the host program's launch op

    host = parse_module((soc / "host.ir").read_text())
    assert '"ascend.launch"' in str(host)
    assert (folder / "tensor" / "00-input.ir").exists() and not (folder / "cpu").exists()


def test_folder_names_of_argument_types():
    assert signature_name("float32[4, 8]; float32[8]; float") == "float32_4x8-float32_8-float"
    assert signature_name("float64[?, ?]; const 0.5") == "float64_NxN-const_0.5"
    assert signature_name("") == "noargs"
