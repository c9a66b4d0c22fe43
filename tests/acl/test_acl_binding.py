"""The AscendCL binding without a device: struct layouts, the call table, argument
packing bytes, library lookup, error mapping, and what a missing library says."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.errors import AclCallError, ArgumentError, DeviceError, ToolchainMissingError
from pyasc.runtime import acl
from pyasc.runtime.acl.binding import PROTOTYPES, AclLibrary
from pyasc.runtime.acl.codes import (
    BinaryLoadOption,
    BinaryLoadOptions,
    BinaryLoadOptionValue,
    BinaryMagic,
    error_name,
    magic_options,
)
from pyasc.runtime.acl.packing import layout, pack_arguments

ISSUE_CALLS = {
    "aclInit", "aclFinalize", "aclrtSetDevice", "aclrtResetDevice", "aclrtGetDeviceCount",
    "aclrtGetSocName", "aclrtGetDeviceInfo", "aclrtCreateStream", "aclrtDestroyStream",
    "aclrtSynchronizeStream", "aclrtSynchronizeStreamWithTimeout", "aclrtMalloc", "aclrtFree",
    "aclrtMallocHost", "aclrtFreeHost", "aclrtMemcpy", "aclrtMemcpyAsync",
    "aclrtBinaryLoadFromData", "aclrtBinaryGetFunction", "aclrtLaunchKernelWithHostArgs",
    "aclrtBinaryUnLoad", "aclGetRecentErrMsg"}


def test_struct_layouts_are_the_headers():
    assert ctypes.sizeof(BinaryLoadOptionValue) == 16
    assert ctypes.sizeof(BinaryLoadOption) == 20
    assert ctypes.sizeof(BinaryLoadOptions) == 16
    assert BinaryLoadOption.value.offset == 4  # after the 4-byte enum, union aligned to 4
    assert BinaryLoadOptions.numOpt.offset == 8
    options, option = magic_options(BinaryMagic.VECTOR_CORE)
    raw = bytes(option)
    assert raw[:4] == (2).to_bytes(4, "little")  # ACL_RT_BINARY_LOAD_OPT_MAGIC
    assert raw[4:8] == (0x41415246).to_bytes(4, "little") and raw[8:] == bytes(12)
    assert options.numOpt == 1 and options.options.contents.value.magic == 0x41415246


def test_every_call_of_the_issue_is_bound_with_a_signature():
    assert set(PROTOTYPES) == ISSUE_CALLS
    assert PROTOTYPES["aclrtMalloc"][1] == (ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                            ctypes.c_int)
    assert len(PROTOTYPES["aclrtLaunchKernelWithHostArgs"][1]) == 8
    assert PROTOTYPES["aclrtGetSocName"][0] is ctypes.c_char_p


def test_packing_aligns_pointers_to_8_and_scalars_to_their_size():
    codes = ["ptr", "i32", "ptr", "f16", "i8", "f32", "bool"]
    block = pack_arguments(codes, [0x1122334455667788, -2, 0x10, 1.5, -1, 2.0, True])
    assert layout(codes) == ([0, 8, 16, 24, 26, 28, 32], 40)
    assert block == bytes.fromhex(
        "8877665544332211" "feffffff" "00000000" "1000000000000000"
        "003e" "ff" "00" "00000040" "01" "00000000000000")


@pytest.mark.parametrize("code, value, expected", [
    ("i64", -1, b"\xff" * 8), ("u16", 65537, b"\x01\x00"), ("i32", np.int64(2**31), b"\0\0\0\x80"),
    ("f64", 0.5, np.float64(0.5).tobytes()), ("bf16", 1.0, b"\x80\x3f"),
    ("u64", np.uint64(2**64 - 1), b"\xff" * 8), ("bool", np.bool_(False), b"\0")])
def test_scalars_are_little_endian_at_their_c_size(code, value, expected):
    block = pack_arguments([code], [value])
    assert block[:len(expected)] == expected and len(block) == 8


def test_packing_checks_the_argument_count():
    with pytest.raises(ArgumentError, match="takes 2 arguments"):
        pack_arguments(["ptr", "i32"], [0])
    assert pack_arguments([], []) == b""


def _touch(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def test_lookup_order_override_home_then_ld_library_path(tmp_path):
    home, extra = tmp_path / "toolkit", tmp_path / "extra"
    rt = _touch(home / "lib64" / "libacl_rt.so")
    cl = _touch(extra / "libascendcl.so")
    env = {"ASCEND_HOME_PATH": str(home), "LD_LIBRARY_PATH": f"{extra}:/nowhere"}
    found = acl.find_library(env)
    assert found.path == cl  # libascendcl.so anywhere before libacl_rt.so
    assert found.tried[0] == str(home / "lib64" / "libascendcl.so")
    (extra / "libascendcl.so").unlink()
    assert acl.find_library(env).path == rt
    assert acl.find_library({**env, "PYASC_ACL_LIBRARY": str(cl)}).reason.endswith("not a file")
    override = acl.find_library({**env, "PYASC_ACL_LIBRARY": str(rt)})
    assert override.path == rt and override.tried == (str(rt),)


def test_lookup_without_anything_says_what_to_do():
    found = acl.find_library({})
    assert found.path is None and found.tried == ()
    assert "ASCEND_HOME_PATH is not set" in found.reason and "set_env.sh" in found.reason
    assert "PYASC_ACL_LIBRARY" in found.reason
    probe = acl.probe({})
    assert probe.library is None and not probe.initialized and probe.error == found.reason


def test_missing_library_is_e50030_naming_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PYASC_ASCEND_OBJECTS", "ascend-sim")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    monkeypatch.delenv("PYASC_ACL_LIBRARY", raising=False)
    monkeypatch.setenv("LD_LIBRARY_PATH", "")

    @hybrid(target="ascend")
    def twice(x):
        return x * 2

    with pytest.raises(ToolchainMissingError) as info:
        twice(np.ones(4, np.float32))
    text = str(info.value)
    assert info.value.code == "E50030" and "AscendCL library is missing" in text
    assert str(tmp_path / "lib64" / "libacl_rt.so") not in text  # the reason, not the list
    assert "set_env.sh" in text and "PYASC_ACL_LIBRARY" in text
    with pytest.raises(ToolchainMissingError, match="AscendCL library is missing"):
        acl.context()


def test_an_acl_error_carries_code_name_call_and_message(ascend_standin):
    ctx = acl.context()
    host = np.zeros(4, np.float32)
    with pytest.raises(AclCallError) as info:
        ctx.lib.call("aclrtFree", host.ctypes.data)  # a host pointer is no allocation
    err = info.value
    assert isinstance(err, DeviceError) and err.code == "E50032"
    assert (err.acl_code, err.acl_name, err.call) == (100000, "ACL_ERROR_INVALID_PARAM",
                                                      "aclrtFree")
    assert "is not a live device allocation" in err.recent and err.recent in str(err)
    assert "aclrtFree returned 100000 (ACL_ERROR_INVALID_PARAM)" in str(err)
    assert error_name(507035) == "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION"
    assert error_name(123) == "ACL_ERROR_123"


def test_a_library_without_a_call_fails_when_the_call_is_used(tmp_path):
    src = tmp_path / "old.c"
    src.write_text("int aclInit(const char* c) { (void)c; return 0; }\n")
    lib_path = tmp_path / "libascendcl.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib_path), str(src)], check=True)
    lib = AclLibrary(lib_path)
    assert "aclrtBinaryLoadFromData" in lib.missing and "aclInit" not in lib.missing
    lib.call("aclInit", None)
    with pytest.raises(ToolchainMissingError, match="has no aclrtMalloc"):
        lib.call("aclrtMalloc", None, 1, 0)
    assert lib.recent_message() == ""
