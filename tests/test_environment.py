"""What pyasc reads from the environment: a bad ``PYASC_NUM_THREADS`` or
``PYASC_DISABLE_PASSES`` value is reported with a coded warning listing the valid values
(and ignored), never silently accepted; ``PYASC_DUMP_IR`` dumps every pipeline of every
specialization into a folder of its own, also on a disk-cache hit, and a place that
cannot be written costs one warning, not the call."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.errors import InvalidEnvironmentWarning, IRDumpWarning
from pyasc.ir.dumps import _warn_unwritable
from pyasc.ir.passes import PASS_REGISTRY, disabled_passes, parse_disabled
from pyasc.runtime import threads


@pytest.fixture(autouse=True)
def _fresh_reports():
    """Each distinct bad value is reported once per process: forget earlier reports."""
    threads._warn_bad_threads.cache_clear()
    parse_disabled.cache_clear()
    yield
    threads._warn_bad_threads.cache_clear()
    parse_disabled.cache_clear()


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "2x", "2 ", "0x10", "-" + "9" * 25])
def test_bad_num_threads_warns_with_valid_values(monkeypatch, value):
    monkeypatch.setenv("PYASC_NUM_THREADS", value)
    with pytest.warns(InvalidEnvironmentWarning) as record:
        assert threads.requested_threads(value) is None  # ignored: the default applies
    text = str(record[0].message)
    assert text.startswith("W50041: PYASC_NUM_THREADS=") and repr(value) in text
    assert "valid values: a positive integer" in text and "0 / empty / unset" in text


@pytest.mark.parametrize("value, wanted", [("4", 4), (" 2", 2), ("+3", 3), ("08", 8),
                                           ("0", None), ("", None), ("  ", None),
                                           ("300", threads.MAX_THREADS), (None, None)])
def test_valid_num_threads_do_not_warn(value, wanted):
    with warnings.catch_warnings():
        warnings.simplefilter("error", InvalidEnvironmentWarning)
        assert threads.requested_threads(value) == wanted


@hybrid(cache=False)
def _scale(x):
    return x * 3.0


def test_bad_num_threads_is_reported_when_a_kernel_is_built_and_the_call_runs(monkeypatch):
    monkeypatch.setenv("PYASC_NUM_THREADS", "four")
    x = np.arange(5, dtype=np.float32)
    with pytest.warns(InvalidEnvironmentWarning, match="PYASC_NUM_THREADS='four'"):
        assert np.array_equal(_scale(x), x * 3)
    with warnings.catch_warnings():  # once per value, not at every kernel
        warnings.simplefilter("error", InvalidEnvironmentWarning)
        _scale(x[:3])


def test_unknown_disabled_pass_warns_with_the_pass_names(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "fuson, cse")
    with pytest.warns(InvalidEnvironmentWarning) as record:
        assert disabled_passes() == {"cse"}  # the valid part still applies
    text = str(record[0].message)
    assert text.startswith("W50041: PYASC_DISABLE_PASSES='fuson, cse': 'fuson' is not a pass")
    valid = sorted((set(PASS_REGISTRY) | {"cube-reshapes", "loop-conv-cube"}) - {"lower-to-loops"})
    assert f"valid names (comma separated): {', '.join(valid)}" in text


def test_unknown_disabled_pass_during_a_call(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "nosuchpass")
    x = np.arange(7, dtype=np.float32)
    with pytest.warns(InvalidEnvironmentWarning, match="'nosuchpass' is not a pass"):
        assert np.array_equal(_scale(x), x * 3)


def test_valid_disabled_passes_do_not_warn(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", " fusion,memplan ,")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InvalidEnvironmentWarning)
        assert disabled_passes() == {"fusion", "memplan"}


# -- PYASC_DUMP_IR

SOURCE = '''
import numpy as np

def {name}(x):
    return np.exp(x) * 2.0
'''


def _fresh(tmp_path: Path, name: str, **options):
    """A new ``@hybrid`` function (own module file: nothing compiled in this process)."""
    path = tmp_path / f"{name}_mod.py"
    path.write_text(SOURCE.format(name=name))
    spec = importlib.util.spec_from_file_location(f"{name}_mod", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return hybrid(getattr(module, name), **options)


def _folders(root: Path) -> dict[str, set[str]]:
    return {p.name: {s.name for s in p.iterdir()} for p in root.iterdir()}


def test_dumps_have_one_folder_per_function_and_specialization(tmp_path, monkeypatch):
    root = tmp_path / "dumps"
    monkeypatch.setenv("PYASC_DUMP_IR", str(root))
    f, g = _fresh(tmp_path, "dump_f"), _fresh(tmp_path, "dump_g")
    x32, x64 = np.linspace(0, 1, 9, dtype=np.float32), np.linspace(0, 1, 9)
    for fn, x in ((f, x32), (f, x64), (g, x32)):
        np.testing.assert_allclose(fn(x), np.exp(x) * 2, rtol=1e-6)
    folders = _folders(root)
    assert sorted(n.split("-")[0] for n in folders) == ["dump_f", "dump_f", "dump_g"]
    assert all(stages == {"tensor", "loops"} for stages in folders.values())
    for name in folders:  # every pass of both pipelines, nothing overwritten
        inputs = [(root / name / s / "00-input.ir").read_text() for s in ("tensor", "loops")]
        assert len({"f32" in t for t in inputs}) == 1
        assert (root / name / "loops" / "02-lower-to-loops.ir").exists()
    f32 = [n for n in folders if n.startswith("dump_f") and
           "f32" in (root / n / "tensor" / "00-input.ir").read_text()]
    assert len(f32) == 1  # the f32 and f64 specializations did not share a folder


def test_a_disk_cache_hit_dumps_too(tmp_path, monkeypatch):
    monkeypatch.setenv("PYASC_CACHE_DIR", str(tmp_path / "cache"))
    x = np.linspace(0, 1, 5, dtype=np.float32)
    _fresh(tmp_path, "dump_hit")(x)  # compiled and stored, no dumps
    root = tmp_path / "dumps"
    monkeypatch.setenv("PYASC_DUMP_IR", str(root))
    fn = _fresh(tmp_path, "dump_hit")  # a fresh function: would load the stored kernel
    np.testing.assert_allclose(fn(x), np.exp(x) * 2, rtol=1e-6)
    (folder,) = root.iterdir()
    assert {p.name for p in folder.iterdir()} == {"tensor", "loops"}
    assert (folder / "loops" / "00-input.ir").read_text().strip()


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_unwritable_dump_dir_warns_once_and_the_call_runs(tmp_path, monkeypatch, where):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    target = blocker if where == "file" else blocker / "sub"
    monkeypatch.setenv("PYASC_DUMP_IR", str(target))
    _warn_unwritable.cache_clear()
    fn = _fresh(tmp_path, f"dump_bad_{where.replace('-', '_')}", cache=False)
    x = np.linspace(0, 1, 6, dtype=np.float32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        np.testing.assert_allclose(fn(x), np.exp(x) * 2, rtol=1e-6)
    dumps = [w for w in record if issubclass(w.category, IRDumpWarning)]
    assert len(dumps) == 1, [str(w.message) for w in record]  # not one per pass or pipeline
    text = str(dumps[0].message)
    assert text.startswith(f"W50060: PYASC_DUMP_IR={target}: cannot write the IR dumps")
    assert "the call runs without them" in text and "hint: " in text
    assert blocker.read_text() == "x"
