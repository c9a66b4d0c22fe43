"""Kernel kinds on ``target="ascend"``: a program holding a cube kernel (a matmul on a
dav-c220 SoC) and vector kernels builds one object per kind, each loaded with the magic
of its core type; a matmul with its fused epilogue is one MIX kernel (``AICORE``
magic); the stand-in refuses a kernel looked up in an object of the wrong kind, so a
wrong magic is caught here rather than on an NPU."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.backend.ascendc.codegen import lower_program
from pyasc.backend.ascendc.npu_backend import MAGICS
from pyasc.backend.base import Program
from pyasc.errors import AclCallError
from pyasc.runtime import acl
from pyasc.runtime.acl.codes import BinaryMagic


def _matmul_epilogue(a, b, bias):  # one MIX kernel: the epilogue on the vector cores
    return np.maximum(a @ b + bias, 0) * 2


def _two_kinds(a, b, bias):  # a cube kernel and a vector kernel of another array
    return a @ b, bias * 2 + 1


def _affine(v):
    return v * 2 + 1


def _inputs(m=40, k=48, n=72):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    return a, b, bias


def _run(fn, target, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scalar-unit performance warnings
        return hybrid(target=target)(fn)(*args)


def _program(fn, *args) -> Program:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return hybrid(target="ascend-sim")(fn).specialize(*args)


def test_cube_and_vector_kernels_are_separate_objects():
    ap = lower_program(_program(_two_kinds, *_inputs()), "Ascend910B1")
    cores = {k.name: k.core for k in ap.kernels}
    assert set(cores.values()) == {"vector", "cube"}
    parts = {part.core: part for part in ap.objects}
    assert set(parts) == {"vector", "cube"}
    assert parts["cube"].arch == "dav-c220-cube" and parts["vector"].arch == "dav-c220-vec"
    for core, part in parts.items():
        # each object's source defines exactly the kernels of its kind
        assert set(part.kernels) == {n for n, c in cores.items() if c == core}
        for name, c in cores.items():
            assert (f"void {name}(" in part.source) == (c == core)
        assert f"--cce-aicore-arch={part.arch}" in part.source


def test_a_vector_only_program_is_one_object_equal_to_its_source():
    x = np.ones((8, 8), np.float32)
    ap = lower_program(_program(_affine, x), "Ascend910B1")
    assert [p.core for p in ap.objects] == ["vector"]
    assert ap.objects[0].source == ap.source and ap.objects[0].arch == "dav-c220-vec"


def test_matmul_and_vector_kernel_equal_interpret(ascend_standin):
    args = _inputs()
    want = _run(_two_kinds, "interpret", *args)
    loads, launches = ascend_standin.stats().loads, ascend_standin.stats().launches
    got = _run(_two_kinds, "ascend", *args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    stats = ascend_standin.stats()
    assert stats.loads - loads == 2  # one object per kind
    assert stats.launches - launches >= 2
    magics = ascend_standin.magics()
    assert {BinaryMagic.CUBE_CORE, BinaryMagic.VECTOR_CORE} <= set(magics)


def test_a_fused_epilogue_is_one_mix_object(ascend_standin):
    args = _inputs()
    ap = lower_program(_program(_matmul_epilogue, *args), "Ascend910B1")
    # the epilogue is in the MIX object; the other object is the vector transpose kernel
    # of the float32 B (K x N), which LoadData cannot transpose for b32
    assert [type(k).__name__ for k in ap.kernels] == ["MixKernel", "TransposeKernel"]
    assert [p.core for p in ap.objects] == ["vector", "mix"]
    want = _run(_matmul_epilogue, "interpret", *args)
    got = _run(_matmul_epilogue, "ascend", *args)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert BinaryMagic.AICORE in set(ascend_standin.magics())


def test_magic_table_names_each_kind():
    assert MAGICS == {"vector": BinaryMagic.VECTOR_CORE, "cube": BinaryMagic.CUBE_CORE,
                      "mix": BinaryMagic.AICORE}


@pytest.mark.parametrize(("core", "wrong"), [("cube", BinaryMagic.VECTOR_CORE),
                                             ("vector", BinaryMagic.CUBE_CORE),
                                             ("vector", BinaryMagic.AICORE)])
def test_a_wrong_magic_fails_in_the_standin(ascend_standin, monkeypatch, core, wrong):
    """The object of ``core`` loaded with another kind's magic: the stand-in refuses its
    kernels (a real NPU would run them on the wrong core type)."""
    monkeypatch.setitem(MAGICS, core, wrong)
    with pytest.raises(AclCallError) as info:
        _run(_two_kinds, "ascend", *_inputs())
    assert info.value.call == "aclrtBinaryGetFunction"
    assert f"{core} kernel" in str(info.value) and "magic" in str(info.value)
    monkeypatch.undo()
    acl.shutdown()
    assert ascend_standin.stats().device_blocks == 0


def test_one_object_loaded_with_two_magics_is_two_binaries(ascend_standin, tmp_path):
    """The binary cache keys on the magic too; the stand-in reads the kind each exported
    kernel records (``pyasc_sim_kind_<name>``; a plain export is a vector kernel)."""
    from pyasc.backend.ascendc.sim import compile_kernels

    src = ('#include "kernel_operator.h"\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) { (void)x; }\n')
    compile_kernels(src, ["k"], keep_dir=tmp_path)
    obj = (tmp_path / "kernel.so").read_bytes()
    ctx = acl.context()
    vector = ctx.binary(obj, BinaryMagic.VECTOR_CORE)
    assert vector.function("k")
    cube = ctx.binary(obj, BinaryMagic.CUBE_CORE)
    assert cube is not vector and ctx.loaded_binaries() == 2
    with pytest.raises(AclCallError, match="vector kernel"):
        cube.function("k")
