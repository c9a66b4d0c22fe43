"""Unit tests of the AscendC backend's pieces: SoC table, C++ expressions, #line
bookkeeping, the grouping fallback on hand-written IR, schedules, tile sizing and the
host program."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from ascendc_cases import layernorm, softmax

from pyasc.backend.ascendc import PyascPerformanceWarning, lower_program
from pyasc.backend.ascendc import sim as sim_dir
from pyasc.backend.ascendc.analysis import (
    COL,
    FULL,
    ROW,
    SCALAR,
    NotVectorizable,
    analyze,
    classify_type,
)
from pyasc.backend.ascendc.cexpr import helpers_used, literal, scalar_expr
from pyasc.backend.ascendc.cwriter import CWriter
from pyasc.backend.ascendc.grouping import form_groups
from pyasc.backend.ascendc.ops import LaunchOp
from pyasc.backend.ascendc.partition import GroupItem, HostItem, ScalarItem, partition
from pyasc.backend.ascendc.sim.runner import find_compiler
from pyasc.backend.ascendc.soc import API_DTYPE_CLASS, SOCS, get_soc, socs_for
from pyasc.backend.ascendc.tiles import CTYPES, Buf, Instr, Ref
from pyasc.backend.ascendc.vec_alloc import PhysBuf, choose_tile, reduce_tmp_elems
from pyasc.backend.ascendc.vec_kernel import plan_vector_kernel
from pyasc.backend.ascendc.vec_lower import check_instr
from pyasc.backend.base import Program
from pyasc.errors import InvalidOptionError, OutOfMemoryError
from pyasc.ir import Location, parse_module
from pyasc.ir.ops.fusion import FusionGroupOp
from pyasc.ir.types import DYN, ScalarType, TensorType, f16, f32, i32, index

SOC = get_soc("Ascend910B1")


def test_soc_table():
    assert (SOC.ub_bytes, SOC.init_buffer_bytes, SOC.vector_blocks) == (196608, 188416, 48)
    assert SOC.aicore_arch == "dav-c220-vec" and SOC.supports("arith", "f16")
    assert not SOC.supports("div", "i32")
    assert get_soc("Ascend310P").aicore_arch == "dav-m200-vec"
    assert get_soc("Ascend910").aicore_arch == "dav-c100"
    assert get_soc("Ascend310B").aicore_arch == "dav-m300"
    assert {s.family for s in SOCS.values()} == {"Ascend910B", "Ascend910_93", "Ascend310P",
                                                  "Ascend310B", "Ascend910"}
    assert all(s.init_buffer_bytes < s.ub_bytes for s in SOCS.values())
    assert not get_soc("Ascend310P3").supports("duplicate", "bf16")
    assert [s.name for s in socs_for(["Ascend310", "Ascend910B"])] == ["Ascend310P3",
                                                                        "Ascend910B1"]
    assert socs_for(None) == [SOC]
    with pytest.raises(InvalidOptionError):
        get_soc("Ascend999")


def test_literals_and_scalar_expressions():
    assert literal(0.5, f32) == "0.5f" and literal(1, f32) == "1.0f"
    assert literal(float("inf"), f32) == "__builtin_inff()"
    assert literal(-2.0, f16) == "half(-2.0f)"
    assert literal(3, i32) == "int32_t(3)" and literal(7, index) == "7"
    module = parse_module(_ADD_TEXT)
    ops = list(module.get("f").entry.ops)
    add, floordiv = ops[0], ops[1]
    assert scalar_expr(add, ["a", "b"]) == "int32_t(uint32_t(a) + uint32_t(b))"
    text = scalar_expr(floordiv, ["a", "b"])
    assert text == "PyascFloorDiv<int32_t>(a, b)"
    assert "numpy floor_divide" in helpers_used(text)[0]


_ADD_TEXT = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%a: i32, %b: i32):
    %0 = "arith.add"(%a, %b) : (i32, i32) -> i32
    %1 = "arith.floordiv"(%a, %b) : (i32, i32) -> i32
    "func.return"(%0, %1) : (i32, i32) -> ()
  }) {function_type = (i32, i32) -> (i32, i32), sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_line_directives_restore_the_generated_numbering():
    w = CWriter("k.cpp")
    w.raw("// head")
    w.line("Add(a, b, c, n);", Location("/src/op.py", 12, 5))
    w.line("plain();")
    w.line("x = y;", Location("/src/op.py", 13, 1), directive=False)
    lines = w.text().splitlines()
    assert lines[1] == '#line 12 "op.py"' and lines[2].endswith("Add(a, b, c, n);")
    restore = lines[3]
    assert restore == '#line 5 "k.cpp"' and lines[4] == "plain();"  # really line 5
    assert lines[5] == "// op.py:13" and w.files == {"op.py": "/src/op.py"}


def test_value_classes():
    space = (DYN, 8)
    assert classify_type(TensorType((DYN, 8), f32), space) == FULL
    assert classify_type(TensorType((DYN, 1), f32), space) == COL
    assert classify_type(TensorType((8,), f32), space) == ROW
    assert classify_type(TensorType((1, 1), f32), space) == SCALAR
    assert classify_type(f32, space) == SCALAR
    assert classify_type(TensorType((3, 8, 8), f32), space) is None


_UNGROUPED = """
"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<?x?xf32>, %s: f32):
    %0 = "mem.to_tensor"(%x) : (memref<?x?xf32>) -> tensor<?x?xf32>
    %1 = "tensor.max"(%0) {axes = [1], keepdims = true} : (tensor<?x?xf32>) -> tensor<?x1xf32>
    %2 = "arith.sub"(%0, %1) : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
    %3 = "arith.mul"(%s, %s) : (f32, f32) -> f32
    %4 = "math.exp"(%2) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    %5 = "arith.mul"(%4, %3) : (tensor<?x?xf32>, f32) -> tensor<?x?xf32>
    %6 = "math.sin"(%5) : (tensor<?x?xf32>) -> tensor<?x?xf32>
    "func.return"(%6) : (tensor<?x?xf32>) -> ()
  }) {function_type = (memref<?x?xf32>, f32) -> tensor<?x?xf32>, sym_name = "f"} : () -> ()
}) : () -> ()
"""


def test_grouping_fallback_on_ir_without_groups():
    module = parse_module(_UNGROUPED)
    fn = module.get("f")
    form_groups(fn, lambda g: plan_vector_kernel(g, SOC, "probe"))
    groups = [op for op in fn.entry.ops if isinstance(op, FusionGroupOp)]
    assert len(groups) == 1 and groups[0].attributes["kind"] == "rowwise"
    body = [op.name for op in groups[0].body.blocks[0].ops]
    assert body == ["tensor.max", "arith.sub", "math.exp", "arith.mul", "fusion.yield"]
    info = analyze(groups[0])
    assert info.schedule == "rows"
    kinds = [type(item).__name__ for item in partition(fn)]
    # to_tensor and the scalar multiply stay on the host; sin has no vector lowering
    assert kinds == ["HostItem", "HostItem", "GroupItem", "ScalarItem", "HostItem"]
    assert isinstance(partition(fn)[3], ScalarItem)
    assert all(isinstance(i, HostItem | GroupItem | ScalarItem) for i in partition(fn))


def test_grouping_without_the_fusion_pass(monkeypatch):
    monkeypatch.setenv("PYASC_DISABLE_PASSES", "fusion")
    from pyasc import hybrid

    @hybrid
    def norm(x):
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

    program = norm.specialize(np.zeros((3, 5), np.float32))
    assert "fusion.group" not in str(program.module)
    ap = lower_program(program)
    assert ap.kernel_names == ["norm_0"]


def test_fused_groups_merge_into_one_kernel():
    x = np.zeros((4, 6), np.float32)
    program = layernorm.specialize(x, x[0], x[0])
    assert str(program.module).count('"fusion.group"') == 2  # the fusion pass splits it
    ap = lower_program(program)
    # one vector kernel; its scalar twin runs only when x's rows are 1 wide and gamma
    # or beta is wider (numpy then normalizes over one column): a host `loop.if`
    # (and its long-rows twin, which the host runs when a row does not fit one tile)
    assert ap.kernel_names == ["layernorm_0", "layernorm_0_long", "layernorm_1"]
    assert [type(k).__name__ for k in ap.kernels] == ["VectorKernel", "VectorKernel",
                                                       "ScalarKernel"]
    launches = [op for op in ap.host.walk() if isinstance(op, LaunchOp)]
    assert [op.parent.parent.parent.name for op in launches] == ["loop.if"] * 3


def test_host_program_of_a_static_shape():
    from ascendc_cases import seed_relu

    ap = lower_program(seed_relu.specialize(np.zeros((4, 8), np.float32)))
    launches = [op for op in ap.host.walk() if isinstance(op, LaunchOp)]
    assert len(launches) == 1
    text = str(ap.host)
    assert '"ascend.launch"' in text and "kernel = \"relu_0\"" in text
    consts = [op for op in ap.host.get("relu").entry.ops if op.name == "arith.constant"]
    assert {op.attributes["value"] for op in consts} >= {1, 32}  # folded tiling values


def test_choose_tile_fills_the_budget_and_reports_e50003():
    phys = [PhysBuf("xQue_", "tile", 4, "in", 2), PhysBuf("yQue_", "tile", 4, "out", 2)]
    tile = choose_tile(phys, SOC.init_buffer_bytes, 8, 256, None, Location(), "k", SOC.name)
    assert tile % 256 == 0 and 16 * tile <= SOC.init_buffer_bytes < 16 * (tile + 256)
    assert choose_tile(phys, SOC.init_buffer_bytes, 8, 256, 300, Location(), "k",
                       SOC.name) == 512
    with pytest.raises(OutOfMemoryError, match=f"budget of {SOC.name} is 188416"):
        choose_tile(phys, SOC.init_buffer_bytes, 8, 20000, None, Location("a.py", 3, 1), "k",
                    SOC.name)
    assert reduce_tmp_elems(64, 4) == 8 and reduce_tmp_elems(8192, 2) == 128


def test_program_with_empty_options():
    module = parse_module(_UNGROUPED)
    program = Program(module=module, entry="f", cache_key="k")
    with pytest.warns(PyascPerformanceWarning, match="math.sin"):
        ap = lower_program(program, "Ascend910B4")
    assert ap.soc.name == "Ascend910B4" and ap.kernel_names == ["f_0", "f_0_long", "f_1"]
    # the row-wise kernel and its long-rows twin (run when a row does not fit one tile)
    assert softmax.ascendc(np.zeros((2, 3), np.float32)).count('extern "C"') == 2


def _ungrouped_chain(n: int) -> str:
    body = "".join(f'    %{i + 1} = "arith.mul"(%{i}, %y) : (tensor<?xf32>, tensor<?xf32>)'
                   f" -> tensor<?xf32>\n" for i in range(1, n + 1))
    return f'''"builtin.module"() ({{
  "func.func"() ({{
  ^bb0(%a: memref<?xf32>, %b: memref<?xf32>):
    %1 = "mem.to_tensor"(%a) : (memref<?xf32>) -> tensor<?xf32>
    %y = "mem.to_tensor"(%b) : (memref<?xf32>) -> tensor<?xf32>
{body}    "func.return"(%{n + 1}) : (tensor<?xf32>) -> ()
  }}) {{function_type = (memref<?xf32>, memref<?xf32>) -> tensor<?xf32>, sym_name = "f"}} : () -> ()
}}) : () -> ()
'''


def test_grouping_fallback_plans_a_long_run_a_few_times():
    # growing a run op by op planned every prefix of it: O(n^2) on a long unfused chain
    from pyasc.ir.passes.fusion_rules import MAX_GROUP_OPS

    n = MAX_GROUP_OPS + 150
    fn = parse_module(_ungrouped_chain(n)).get("f")
    probes = []

    def probe(group):
        probes.append(group)
        plan_vector_kernel(group, SOC, "probe")

    form_groups(fn, probe)
    groups = [op for op in fn.entry.ops if isinstance(op, FusionGroupOp)]
    sizes = [sum(o.name == "arith.mul" for o in g.body.blocks[0].ops) for g in groups]
    assert sizes == [MAX_GROUP_OPS, 150]
    assert len(probes) < 60, len(probes)


def _instr(api: str, dst: str, src: str, extra: tuple[str, ...] = ()) -> Instr:
    d, s = Buf("tile", ScalarType(dst), "d"), Buf("tile", ScalarType(src), "s")
    return Instr(api, Ref(d), (Ref(s), "x"), extra)


@pytest.mark.parametrize("dtype", sorted(set(CTYPES) - {"index", "i1"}))
@pytest.mark.parametrize("api", sorted(API_DTYPE_CLASS))
def test_no_vector_call_on_a_dtype_its_api_does_not_take(api, dtype):
    # every emitted call passes check_instr: the SoC table decides, per API, which
    # element types compile (the sim's static_asserts, sim_vec.h/sim_cmpsel.h, agree)
    ok = dtype in SOC.dtypes[API_DTYPE_CLASS[api]]
    instr = _instr(api, "ui8" if api == "Compare" else dtype, dtype)
    if ok:
        check_instr(SOC, instr)
    else:
        with pytest.raises(NotVectorizable, match=f"{api} on "):
            check_instr(SOC, instr)


def test_int32_compares_only_for_equality():
    check_instr(SOC, _instr("Compare", "ui8", "i32", ("CMPMODE::EQ",)))
    with pytest.raises(NotVectorizable):
        check_instr(SOC, _instr("Compare", "ui8", "i32", ("CMPMODE::LT",)))


@pytest.mark.parametrize(("src", "dst", "mode", "ok"), [
    ("f32", "f16", "CAST_RINT", True), ("f16", "f32", "CAST_NONE", True),
    ("f16", "f32", "CAST_RINT", False), ("f32", "i32", "CAST_NONE", False),
    ("f32", "i32", "CAST_TRUNC", True), ("f64", "f32", "CAST_RINT", False),
    ("i64", "f64", "CAST_NONE", False), ("ui8", "f16", "CAST_NONE", True),
    ("f32", "bf16", "CAST_RINT", True)])
def test_a_cast_pair_and_mode_outside_the_c220_table_is_refused(src, dst, mode, ok):
    instr = _instr("Cast", dst, src, (f"RoundMode::{mode}",))
    if ok:
        check_instr(SOC, instr)
    else:
        with pytest.raises(NotVectorizable, match="Cast from"):
            check_instr(SOC, instr)
    if "bf16" in (src, dst):  # no bf16 on dav-m200
        with pytest.raises(NotVectorizable):
            check_instr(get_soc("Ascend310P3"), instr)


_SIM_CTYPES = {v: k for k, v in CTYPES.items() if k != "index"}


def test_the_api_dtype_table_matches_the_sim_static_asserts():
    sim = Path(sim_dir.__file__).parent
    text = "".join((sim / f).read_text() for f in ("sim_vec.h", "sim_cmpsel.h", "sim_gather.h"))
    found: dict[str, set[str]] = {}
    uses = re.findall(r"^PYASC_SIM_(?:BINARY|SCALAR|UNARY)\((\w+), [^,]+, ([^)]+)\)", text,
                      re.M)  # the instantiations (a line each), not the #defines
    uses += re.findall(r"^ +PYASC_SIM_DTYPES\(([\w /]+), T, ([^)]+)\);", text, re.M)
    for names, types in uses:
        if "__VA_ARGS__" in types:
            continue
        for api in names.split(" / "):
            found[api] = {_SIM_CTYPES[t.strip()] for t in types.split(",")}
    found["Compare"] -= {"i32"}  # int32 only with EQ: the "compare_eq" class
    for api, dtypes in found.items():
        assert SOC.dtypes[API_DTYPE_CLASS[api]] == dtypes, api
    assert set(API_DTYPE_CLASS) - set(found) == {"DataCopy"}


_CAST_TYPES = ("f16", "bf16", "f32", "i8", "ui8", "i16", "i32", "i64")
_MODES = ("CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC",
          "CAST_ODD")  # bit i of the sim's cast_modes() is RoundMode i


def test_the_cast_table_matches_the_sim(tmp_path):
    lines = [f'std::printf("{s} {d} %d\\n", int(pyasc_sim::cast_modes<{CTYPES[d]}, '
             f'{CTYPES[s]}>()));' for s in _CAST_TYPES for d in _CAST_TYPES]
    src = tmp_path / "modes.cpp"
    src.write_text('#include <cstdio>\n#include "kernel_operator.h"\nint main() {\n'
                   + "\n".join(lines) + "\n}\n")
    sim = Path(sim_dir.__file__).parent
    subprocess.run([find_compiler(), "-std=c++17", "-I", str(sim), str(src), "-o",
                    str(tmp_path / "modes")], check=True)
    out = subprocess.run([str(tmp_path / "modes")], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        s, d, bits = line.split()
        modes = {m for i, m in enumerate(_MODES) if int(bits) >> i & 1}
        assert SOC.casts.get((s, d), frozenset()) == modes, (s, d)
