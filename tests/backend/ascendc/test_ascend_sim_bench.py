"""benchmarks/ascend_sim.py in ``--quick`` mode on two kernels: the table has one row per
kernel and dtype, the expected columns, every row checks "ok" against numpy, and the
issue-6 counters of the vector kernels are at their minima.

Builds go to a private cache at ``-O0`` (the default ``-O2`` only makes them slower).
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from pyasc.backend.ascendc.soc import get_soc

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import ascend_sim  # noqa: E402

KERNELS = ("relu", "layernorm")  # a flat kernel and one with row vectors (gamma, beta)
DTYPES = ("float32", "float16")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """Status and output of a quick markdown run, and of a plain-text run of one of its
    rows (built by the first run, so it costs no compile)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYASC_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.setenv("PYASC_SIM_OPT", "-O0")
        quick = ["--quick", "--repeat", "1"]
        runs = {"markdown": [*quick, "--only", ",".join(KERNELS), "--markdown"],
                "plain": [*quick, "--only", KERNELS[0], "--dtypes", DTYPES[0]]}  # cached
        out = {}
        for mode, argv in runs.items():
            text = io.StringIO()
            with contextlib.redirect_stdout(text):
                status = ascend_sim.main(argv)
            out[mode] = (status, text.getvalue())
    return out


def _markdown_rows(text: str) -> list[dict[str, str]]:
    lines = [ln for ln in text.splitlines() if ln.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split(" | ")]
    return [dict(zip(header, [c.strip() for c in ln.strip("|").split(" | ")], strict=True))
            for ln in lines[1:]]


def test_markdown_section_has_a_row_per_kernel_and_dtype(tables):
    status, text = tables["markdown"]
    assert status == 0
    assert text.startswith(ascend_sim.SECTION + "\n")
    rows = _markdown_rows(text)
    assert list(rows[0]) == ascend_sim.HEADER
    assert [(r["kernel"], r["dtype"]) for r in rows] == \
        [(k, d) for k in KERNELS for d in DTYPES]
    for r in rows:
        assert r["check"] == "ok", r
        assert r["issue-6 targets"] == "met", r
        assert r["GM→UB bytes"].endswith("= min") and r["UB→GM bytes"].endswith("= min"), r
        assert r["scalar GM read / write"] == "0 / 0", r


def test_notes_state_tolerances_and_rules(tables):
    text = tables["markdown"][1]
    assert "float32 rtol 1e-5 / atol 1e-6" in text and "float16 rtol 4e-3 / atol 4e-3" in text
    assert "read once per block" in text
    assert "not NPU time" in text


def test_layernorm_row_vectors_are_the_only_single_buffered_copies(tables):
    rows = {(r["kernel"], r["dtype"]): r for r in _markdown_rows(tables["markdown"][1])}
    for dtype in DTYPES:
        blocks = int(rows["layernorm", dtype]["blocks"])
        single = rows["layernorm", dtype]["copy-in (single-buf)"].split("(")[1].rstrip(")")
        assert int(single.replace(",", "")) == 2 * blocks  # gamma and beta, once per block
        assert rows["relu", dtype]["copy-in (single-buf)"].endswith("(0)")


def test_plain_text_table(tables):
    status, text = tables["plain"]
    assert status == 0
    lines = text.splitlines()
    assert lines[0] == ascend_sim.SECTION.removeprefix("## ")
    header = lines[2]
    assert all(col in header for col in ascend_sim.HEADER)
    assert set(lines[3]) == {"-", " "}
    cells = lines[4].split()
    assert cells[:3] == [KERNELS[0], DTYPES[0], "1M"]
    assert "ok" in cells and cells[-1] == "met"
    assert lines[5] == "" and lines[6].startswith("- SoC Ascend910B1")


def test_unknown_kernel_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        ascend_sim.main(["--only", "nonesuch"])
    assert "unknown kernel" in capsys.readouterr().err


def _positive(x):
    return x[x > 0]  # a result size that depends on the data: E50010 on the device


def test_unsupported_kernel_is_a_row_with_its_reason():
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    m = ascend_sim.Measured(ascend_sim.SimCase("positive"), "float32", "64", (x,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy-style boolean indexing may warn on the CPU
        ascend_sim.run(m, _positive, get_soc(), repeat=1)
    assert m.unsupported and m.error.startswith("E50010: ")
    assert f"(test_ascend_sim_bench.py:{_positive.__code__.co_firstlineno + 1})" in m.error
    cells = ascend_sim.row_cells(m, get_soc().init_buffer_bytes, markdown=True)
    assert len(cells) == len(ascend_sim.HEADER)
    assert cells[5] == "unsupported" and cells[-1] == m.error
