"""The AscendCL runtime objects against the stand-in library: fault injection at every
bound call, lifetimes (no leaks over 10,000 calls), the binary cache, threads, fork,
device buffers, and the checks a real runtime makes (a host pointer where a device
pointer belongs)."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.errors import AclCallError, OutOfMemoryError, PyascError
from pyasc.runtime import acl
from pyasc.runtime.acl.binding import PROTOTYPES
from pyasc.runtime.acl.codes import BinaryMagic, MemcpyKind
from pyasc.runtime.acl.packing import pack_arguments


@hybrid(target="ascend")
def add_one(x):
    return x + 1


X = np.arange(64, dtype=np.float32)


def run_kernel() -> None:
    np.testing.assert_array_equal(add_one(X), X + 1)


def _fresh(finalize: bool = False):
    acl.shutdown(finalize=finalize)


def _host_buffer():
    return acl.HostBuffer(acl.context(), 64)


def _async_copy():
    ctx = acl.context()
    with acl.HostBuffer(ctx, 64) as host, acl.DeviceBuffer(ctx, 64) as dev, \
            ctx.stream() as stream:
        dev.upload_async(host, stream)


# call -> (prepare, the step that fails); prepare runs before the failure is injected
SCENARIOS = {
    "aclInit": (lambda: _fresh(finalize=True), run_kernel),
    "aclFinalize": (acl.context, lambda: acl.shutdown(finalize=True)),
    "aclGetRecentErrMsg": (None, run_kernel),  # with aclrtMalloc (see the test)
    "aclrtSetDevice": (_fresh, run_kernel),
    "aclrtResetDevice": (acl.context, acl.shutdown),
    "aclrtGetDeviceCount": (_fresh, run_kernel),
    "aclrtGetSocName": (_fresh, run_kernel),
    "aclrtGetDeviceInfo": (None, lambda: acl.context().vector_core_count()),
    "aclrtCreateStream": (_fresh, run_kernel),
    "aclrtDestroyStream": (run_kernel, acl.shutdown),
    "aclrtSynchronizeStream": (None, run_kernel),
    "aclrtSynchronizeStreamWithTimeout": (None, run_kernel),  # PYASC_ACL_TIMEOUT_MS set
    "aclrtMalloc": (None, run_kernel),
    "aclrtFree": (None, run_kernel),
    "aclrtMallocHost": (None, _host_buffer),
    "aclrtFreeHost": (None, lambda: _host_buffer().free()),
    "aclrtMemcpy": (None, run_kernel),
    "aclrtMemcpyAsync": (None, _async_copy),
    "aclrtBinaryLoadFromData": (_fresh, run_kernel),
    "aclrtBinaryGetFunction": (_fresh, run_kernel),
    "aclrtBinaryUnLoad": (run_kernel, acl.shutdown),
    "aclrtLaunchKernelWithHostArgs": (None, run_kernel),
}
OUT_OF_MEMORY = {"aclrtMalloc", "aclrtMallocHost", "aclGetRecentErrMsg"}
# a failed destroy leaves its resource alive in the stand-in: nothing retries it
LEAKS = {"aclrtDestroyStream": "streams", "aclrtBinaryUnLoad": "binaries",
         "aclrtResetDevice": "device_refs"}


def test_every_bound_call_has_a_scenario():
    assert set(SCENARIOS) == set(PROTOTYPES)


@pytest.mark.parametrize("call", sorted(SCENARIOS))
def test_fault_injection(call, ascend_standin, monkeypatch):
    before = ascend_standin.stats()  # nothing of this process's context is live
    run_kernel()  # compiled, loaded: the failure hits the step under test
    prepare, step = SCENARIOS[call]
    if prepare is not None:
        prepare()
    if call == "aclrtSynchronizeStreamWithTimeout":
        monkeypatch.setenv("PYASC_ACL_TIMEOUT_MS", "5000")
    spec = "aclrtMalloc,aclGetRecentErrMsg" if call == "aclGetRecentErrMsg" else call
    monkeypatch.setenv("PYASC_ACL_STANDIN_FAIL", spec)
    with pytest.raises(PyascError) as info:
        step()
    err = info.value
    if call in OUT_OF_MEMORY:
        assert isinstance(err, OutOfMemoryError) and err.code == "E50003"
        assert "bytes" in str(err)
    else:
        assert isinstance(err, AclCallError) and err.code == "E50032"
        assert err.call == call and f"injected failure of {call}" in err.recent
    if call == "aclGetRecentErrMsg":
        assert "no message" in str(err)
    monkeypatch.delenv("PYASC_ACL_STANDIN_FAIL")
    run_kernel()  # the process stays usable
    acl.shutdown()
    after = ascend_standin.stats()
    assert (after.device_blocks, after.host_blocks) == (0, 0)
    leaked = {k: getattr(after, k) - getattr(before, k) for k in ("streams", "binaries")}
    leaked["device_refs"] = after.device_refs
    expected = {k: int(LEAKS.get(call) == k) for k in leaked}
    assert leaked == expected
    if after.device_refs:  # clean up for the next test: the failed reset, done now
        acl.load_library().call("aclrtResetDevice", 0)


def test_ten_thousand_calls_leak_nothing(ascend_standin, monkeypatch):
    monkeypatch.setenv("PYASC_SIM_THREADS", "1")
    run_kernel()
    start = ascend_standin.stats()
    y = np.empty_like(X)
    for i in range(10_000):
        X[0] = i
        y = add_one(X)
    assert y[0] == 9_999 + 1
    stats = ascend_standin.stats()
    assert stats.launches - start.launches == 10_000
    assert (stats.device_blocks, stats.host_blocks) == (0, 0)
    assert (stats.streams, stats.binaries, stats.loads) == (start.streams, start.binaries,
                                                           start.loads)
    assert acl.current().live == {}
    X[0] = 0


def test_binary_loaded_once_per_process_and_soc(ascend_standin, monkeypatch):
    @hybrid(target="ascend", device_type=["Ascend910B1", "Ascend910B2"])
    def triple(x):
        return x * 3

    start = ascend_standin.stats().loads
    for _ in range(3):
        np.testing.assert_array_equal(triple(X), X * 3)
    assert ascend_standin.stats().loads - start == 1
    assert ascend_standin.last_magic() == BinaryMagic.VECTOR_CORE
    acl.shutdown()
    monkeypatch.setenv("PYASC_ACL_STANDIN_SOC", "Ascend910B2")
    for _ in range(2):
        np.testing.assert_array_equal(triple(X), X * 3)
    assert ascend_standin.stats().loads - start == 2
    assert acl.current().loaded_binaries() == 1


def test_threads_each_bind_the_device(ascend_standin):
    run_kernel()
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            x = np.random.default_rng(seed).standard_normal(999).astype(np.float32)
            for _ in range(20):
                np.testing.assert_array_equal(add_one(x), x + 1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert ascend_standin.stats().device_refs == 5  # the main thread and 4 workers
    acl.shutdown()
    assert ascend_standin.stats().device_refs == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_opens_its_own_context(ascend_standin):
    run_kernel()
    parent = acl.current()
    pid = os.fork()
    if pid == 0:  # the child: the parent's context is dropped, a new one opens
        code = 1
        try:
            assert acl.current() is None and parent.closed
            run_kernel()
            code = 0 if acl.current() is not parent else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert acl.current() is parent and not parent.closed
    run_kernel()


def test_device_buffers_are_freed_deterministically(ascend_standin):
    ctx = acl.context()
    base = ascend_standin.stats().device_blocks
    with acl.DeviceBuffer(ctx, 256) as buf:
        assert ascend_standin.stats().device_blocks == base + 1 and buf.alive
    assert ascend_standin.stats().device_blocks == base and not buf.alive
    buf.free()  # twice is harmless
    acl.DeviceBuffer(ctx, 128)  # dropped at once: the finalizer frees it
    assert ascend_standin.stats().device_blocks == base
    kept = acl.DeviceBuffer(ctx, 64)
    acl.shutdown()  # the context frees what is left
    assert ascend_standin.stats().device_blocks == 0 and not kept.alive


def test_device_array_round_trip_and_in_place_kernel(ascend_standin):
    x = np.linspace(-1, 1, 50, dtype=np.float32)
    d = acl.device_array(x)
    assert d.shape == (50,) and d.dtype == np.float32 and d.nbytes == 200
    np.testing.assert_array_equal(d.numpy(), x)
    d.copy_from(x * 2)
    np.testing.assert_array_equal(d.numpy(), x * 2)
    d.free()
    assert ascend_standin.stats().device_blocks == 0


def test_a_host_pointer_where_a_device_pointer_belongs_is_refused(ascend_standin):
    ctx = acl.context()
    host = np.zeros(16, np.float32)
    with acl.DeviceBuffer(ctx, 64) as buf:
        with pytest.raises(AclCallError, match="ACL_ERROR_INVALID_PARAM") as info:
            ctx.memcpy(host.ctypes.data, 64, buf.ptr, 64, MemcpyKind.HOST_TO_DEVICE)
        assert "dst" in info.value.recent and "is host" in info.value.recent
        run_kernel()
        binary = ctx.binary(next(iter(_objects().values())))
        fn = binary.function(_kernel_name())
        block = pack_arguments(["ptr", "ptr", "i64"], [host.ctypes.data, buf.ptr, 16])
        with ctx.stream() as stream, pytest.raises(AclCallError) as info:
            ctx.lib.call("aclrtLaunchKernelWithHostArgs", fn, 1, stream.handle, None, block,
                         len(block), None, 0)
        assert "parameter 0" in info.value.recent and "not a device address" in info.value.recent


def _objects() -> dict[str, bytes]:
    """The vector-kernel object of each SoC (add_one has no cube kernel)."""
    kernel = add_one._kernels[next(k for k in add_one._kernels if k[1] == "ascend")]
    return {soc: objects["vector"] for soc, objects in kernel.objects.items()}


def _kernel_name() -> str:
    kernel = add_one._kernels[next(k for k in add_one._kernels if k[1] == "ascend")]
    return next(iter(next(iter(kernel.signatures.values()))))


def test_a_kernel_failure_is_reported_by_the_synchronize(ascend_standin):
    run_kernel()
    kernel = add_one._kernels[next(k for k in add_one._kernels if k[1] == "ascend")]
    soc = next(iter(kernel.objects))
    name = _kernel_name()
    codes = kernel.signatures[soc][name]
    ctx = acl.context()
    binary = ctx.binary(kernel.objects[soc]["vector"])
    tiny = np.zeros(1, np.float32)  # far smaller than the length the kernel is told
    args = [tiny if c == "ptr" else 4096 for c in codes]
    with pytest.raises(AclCallError) as info:
        acl.launch(ctx, binary, name, 1, codes, args)
    assert info.value.call.startswith("aclrtSynchronizeStream")
    assert info.value.acl_name == "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION"
    run_kernel()


def test_device_arrays_are_launched_in_place_without_copies(ascend_standin):
    run_kernel()
    kernel = add_one._kernels[next(k for k in add_one._kernels if k[1] == "ascend")]
    soc = next(iter(kernel.objects))
    name = _kernel_name()
    assert kernel.signatures[soc][name] == ("ptr", "ptr", "i64", "i64")  # x, out, n, perBlock
    ctx = acl.context()
    x = acl.device_array(X)
    out = acl.device_array(np.zeros_like(X))
    blocks = ascend_standin.stats().device_blocks
    binary = ctx.binary(kernel.objects[soc]["vector"])
    acl.launch(ctx, binary, name, 2, kernel.signatures[soc][name],
               [x, out, X.size, X.size // 2], writes={1})
    assert ascend_standin.stats().device_blocks == blocks  # nothing allocated, no copy
    np.testing.assert_array_equal(out.numpy(), X + 1)
    # a @hybrid call takes the device array as it is (tests/acl/test_acl_device_args.py)
    np.testing.assert_array_equal(add_one(x), X + 1)
