"""Cube matmul kernels (issue 14): counts and a stated time estimate per kernel.

    python benchmarks/cube_matmul.py [--soc Ascend910B1] [--sim-macs 1e9] [--markdown]

Each shape is compiled for ``target="ascend-sim"``; its cube kernel's plan gives the counts
and the time estimate of ``pyasc/backend/ascendc/cube_cost.py`` (MACs; GM -> L1 bytes
against the compulsory minimum, each stored operand element read once, and against
``schedule_bound_read_bytes``, the least a tile schedule with the SoC's L1 and L0C can
read; the plan's block shape and what L1 keeps resident; a roofline
estimate: the busiest core's padded MACs at 16 x 16 x C0 MACs per cycle and 1.8 GHz,
against all GM bytes at 1.6 TB/s HBM with no L2 credit; and the same with the L2 credit
of ``cube_cost.l2_memory_s``: when the operands and C fit in the 192 MB L2, the re-reads
come from L2 at 3x HBM bandwidth).  Nothing is measured on an NPU.
Shapes of at most ``--sim-macs`` MACs are also run in the sim, which checks the result
against numpy and the counted bytes and MACs against the model ("sim" column).

A second table is conv2d (``pyasc.ops.conv2d``): the seed's ``CustomConv``
(``examples/custom_conv.py``: input (8, 8, 128, 128), weights (16, 8, 3, 3)) and ResNet's
64x64x3x3 layer with padding 1 on (1, 64, 56, 56) (``--conv CASE``: that table alone):
its kernels (the conv kernel building the im2col in L1, ``conv_plan``, writing float16
through Fixpipe, and the transpose kernels around it, ``xpose_kernel``), each one's GM
bytes and estimate, and the total against the least traffic of any conv2d (x and w read
once, y written once); then CustomConv with a bias and ReLU: one conv MIX kernel (the
conv kernel, its tiles handed through a GM workspace to the vector cores, which add the
bias, apply the ReLU and write NCHW) and the two operand transposes.

A fourth table (``--loop-conv``: that table alone) is a convolution written with loops
(``loop_conv_relu``: ``acc += x[n, c, i + a, j + b] * w[o, c, a, b]``, bias and ReLU):
ResNet's 64x64x3x3 layer without padding on (1, 64, 58, 58), as it ran before
``loop-conv-cube`` (``PYASC_DISABLE_PASSES=loop-conv-cube``: a scalar kernel, since
``batch-loops`` does not unroll 576 taps) and after (the conv MIX kernel of
``pyasc.ops.conv2d``); GM bytes from the sim's counters, the stencil kernel's and the
cube route's estimates of ``loop_conv_cost`` (the route decision's numbers), the
result against ``pyasc.ops.conv2d``'s on the sim.

A third table is linear + bias + activation, fused into one MIX kernel and not
(``pyasc/backend/ascendc/mix_cost.py`` states the byte formula and the estimate); the
"dynamic" rows are compiled with ``dynamic_shape=True`` (one MIX kernel for every shape,
counted for the plan its host computes for this call: ``mix_plan.mix_at``).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np
from pyasc import hybrid
from pyasc.backend.ascendc.conv_mix import ConvMixKernel, conv_mix_counts
from pyasc.backend.ascendc.conv_plan import conv_l1_counts, conv_l1_estimate_s
from pyasc.backend.ascendc.copy_loops import CopyKernel
from pyasc.backend.ascendc.cube_cost import cube_cost, schedule_bound_read_bytes
from pyasc.backend.ascendc.cube_plan import CubeKernel
from pyasc.backend.ascendc.emit_conv import ConvKernel
from pyasc.backend.ascendc.mix_cost import mix_cost
from pyasc.backend.ascendc.mix_plan import MixKernel, mix_at
from pyasc.backend.ascendc.soc import get_soc
from pyasc.backend.ascendc.xpose_kernel import TransposeKernel
from pyasc.ops import conv2d


def matmul(a, b):
    return a @ b


# name -> (A shape, B shape)
SHAPES = {
    "512^3": ((512, 512), (512, 512)),
    "4096^3": ((4096, 4096), (4096, 4096)),
    "batched 8x1024x1024x64": ((8, 1024, 64), (8, 64, 1024)),
    "attention 8x128x64 @ 8x64x128": ((8, 128, 64), (8, 64, 128)),
    "GEMV 1x4096x4096": ((1, 4096), (4096, 4096)),
}


def _row(name: str, sa: tuple, sb: tuple, soc_name: str, sim_macs: float) -> list[str]:
    soc = get_soc(soc_name)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(sa).astype(np.float16)
    b = rng.standard_normal(sb).astype(np.float16)
    fn = hybrid(matmul, target="ascend-sim", device_type=[soc.name])
    kernel = fn.kernel(a, b)
    (k,) = [x for x in kernel.ascend.kernels if isinstance(x, CubeKernel)]
    cost = cube_cost(k, soc)
    sim = "-"
    if cost.macs <= sim_macs:
        got = fn(a, b).astype(np.float32)
        want = a.astype(np.float32) @ b.astype(np.float32)
        c = kernel.last_counters
        same = (c["cube_macs"], c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"]) == \
            (cost.macs, cost.gm_read_bytes, cost.gm_write_bytes)
        close = np.allclose(got, want, rtol=2e-2, atol=2e-1)
        sim = "counts match, result ok" if same and close else "MISMATCH"
    bound = schedule_bound_read_bytes(k, soc)
    resident = "+".join(x for x, r in (("A", k.a_resident), ("B", k.b_resident)) if r) or "-"
    return [name, f"{k.m}x{k.n}x{k.k}" + (f" x{k.batch}" if k.batch > 1 else ""),
            f"{k.tile.base_m}x{k.tile.base_n}/{k.tile.c_bufs}, {resident}",
            f"{k.block_dim}/{soc.cube.cores}", f"{cost.macs / 1e9:.3g} G",
            f"{cost.gm_read_bytes / 2**20:.4g}", f"{cost.min_read_bytes / 2**20:.4g}",
            f"{bound / 2**20:.4g}", f"{cost.gm_read_bytes / bound:.2f}",
            f"{cost.compute_s * 1e6:.4g}", f"{cost.memory_s * 1e6:.4g}",
            f"{cost.estimate_s * 1e6:.4g} ({cost.bound})",
            f"{cost.estimate_l2_s * 1e6:.4g} ({cost.bound_l2})", f"{cost.peak_s * 1e6:.4g}",
            f"{cost.estimate_s / cost.peak_s:.2f}", f"{cost.estimate_l2_s / cost.peak_s:.2f}",
            sim]


HEADER = ["shape", "kernel M x N x K", "block/L0C bufs, L1-resident", "blocks", "MACs",
          "GM->L1 MiB", "min MiB", "bound MiB", "read/bound", "compute us", "memory us",
          "estimate us", "estimate us, L2 credit", "peak us", "est/peak",
          "est/peak, L2 credit", "sim"]


def linear_gelu(a, b, bias):
    y = a @ b + bias
    return 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y**3)))


def linear_relu(a, b, bias):
    return np.maximum(a @ b + bias, 0)


# name -> (epilogue, A shape, B shape): fused (one MIX kernel) and not (PYASC_DISABLE_PASSES)
MIX_SHAPES = {
    "4096^3 + bias + gelu": (linear_gelu, (4096, 4096), (4096, 4096)),
    "attention 8x128x64 @ 8x64x128 + bias + gelu": (linear_gelu, (8, 128, 64), (8, 64, 128)),
    "attention 8x128x64 @ 8x64x128 + bias + relu": (linear_relu, (8, 128, 64), (8, 64, 128)),
    "dynamic 4096^3 + bias + gelu": (linear_gelu, (4096, 4096), (4096, 4096)),
    "dynamic attention 8x128x64 @ 8x64x128 + bias + gelu":
        (linear_gelu, (8, 128, 64), (8, 64, 128)),
    "dynamic 300x33 @ 33x270 + bias + gelu": (linear_gelu, (300, 33), (33, 270)),
}
MIX_HEADER = ["case", "kernels", "cube GM->L1 MiB", "C hand-off MiB (x2)", "intermediate MiB",
              "epilogue GM->UB MiB", "out MiB", "GM bytes MiB (sim)", "estimate us", "sim"]
_KEYS = ("gm_to_l1_bytes", "l0c_to_gm_bytes", "gm_to_ub_bytes", "ub_to_gm_bytes")


def _unfused_bytes(fn, args: tuple, soc_name: str, dynamic: bool) -> int:  # noqa: ANN001
    """All GM bytes the sim counts for the cube + vector kernels without fusion."""
    old = os.environ.get("PYASC_DISABLE_PASSES")
    os.environ["PYASC_DISABLE_PASSES"] = "fusion"
    try:
        sim = hybrid(fn, target="ascend-sim", device_type=[soc_name], dynamic_shape=dynamic)
        sim(*args)
        c = sim.kernel(*args).last_counters
    finally:
        if old is None:
            del os.environ["PYASC_DISABLE_PASSES"]
        else:
            os.environ["PYASC_DISABLE_PASSES"] = old
    return sum(c[key] for key in _KEYS)


def _mix_rows(name: str, fn, sa: tuple, sb: tuple, soc_name: str,  # noqa: ANN001
              sim_macs: float) -> list[list[str]]:
    """The fused MIX kernel and the unfused cube + vector pair of one linear layer.  The
    unfused pair's counts are the fused ones with a whole C array in place of the
    workspace (the same bytes), its estimate the sum of the two parts (mix_cost)."""
    soc = get_soc(soc_name)
    rng = np.random.default_rng(0)
    # scaled so that float16 y**3 of the reference does not overflow
    a, b = ((rng.standard_normal(s) / 4).astype(np.float16) for s in (sa, sb))
    bias = rng.standard_normal(sb[-1]).astype(np.float16)
    dynamic = name.startswith("dynamic")
    sim = hybrid(fn, target="ascend-sim", device_type=[soc.name], dynamic_shape=dynamic)
    kernel = sim.kernel(a, b, bias)
    k = kernel.ascend.kernels[0]   # a dynamic MIX kernel's twins follow it
    assert isinstance(k, MixKernel), kernel.ascend.kernels
    if dynamic:  # the plan its host computes for this call (A and B batched alike)
        k = mix_at(k, sa[-2], sb[-1], sa[-1], sa[:-2], soc.cube.cores)
    cost = mix_cost(k, soc)
    check, fused_sim, unfused_sim = "-", "-", "-"
    if k.cube.batch * k.cube.m * k.cube.n * k.cube.k <= sim_macs:
        got = sim(a, b, bias)
        want = hybrid(fn, target="interpret")(a, b, bias)
        c = kernel.last_counters
        same = (c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"], c["gm_to_ub_bytes"],
                c["ub_to_gm_bytes"]) == (cost.cube_read, cost.handoff, cost.epilogue_read,
                                         cost.written)
        ok = np.allclose(got.astype(np.float64), want, rtol=2e-2, atol=2e-2)
        check = "counts match, result ok" if same and ok else "MISMATCH"
        fused_sim = f"{sum(c[key] for key in _KEYS) / 2**20:.4g}"
        unfused = _unfused_bytes(fn, (a, b, bias), soc.name, dynamic)
        unfused_sim = f"{unfused / 2**20:.4g}"
    ws = k.workspace_elems * k.cube.out.itemsize
    mib = 2**20
    common = [f"{cost.cube_read / mib:.4g}", f"{cost.handoff / mib:.4g}"]
    tail = [f"{(cost.epilogue_read - cost.handoff) / mib:.4g} + hand-off",
            f"{cost.written / mib:.4g}"]
    return [[name + " fused", f"1 MIX ({k.block_dim} x (1 AIC + 2 AIV))", *common,
             f"{ws / mib:.4g} (workspace)", *tail, fused_sim, f"{cost.fused_s * 1e6:.4g}",
             check],
            [name + " unfused", "cube + vector", *common, f"{cost.handoff / mib:.4g} (C)",
             *tail, unfused_sim, f"{cost.unfused_s * 1e6:.4g}", "-"]]


def conv(x, w):
    return conv2d(x, w)


def conv_bias_relu(x, w, b):
    return np.maximum(conv2d(x, w, b), 0)


def conv_pad1(x, w):
    return conv2d(x, w, padding=1)


# case -> (conv2d form, its form with a bias and ReLU or None, (x shape, w shape))
CONV_CASES = {
    # examples/custom_conv.py: _DEMO, "default"
    "CustomConv": (conv, conv_bias_relu, ((8, 8, 128, 128), (16, 8, 3, 3))),
    # ResNet's first-stage 3x3 layer: weights (72 KB) larger than L0B, padding 1
    "ResNet 64x64x3x3 pad 1": (conv_pad1, None, ((1, 64, 56, 56), (64, 64, 3, 3))),
    # weights larger than L1 (1.2 MB, 4.7 MB as float16): streamed in panels
    "256x256x3x3 pad 1": (conv_pad1, None, ((1, 256, 14, 14), (256, 256, 3, 3))),
    "512x512x3x3 pad 1": (conv_pad1, None, ((1, 512, 7, 7), (512, 512, 3, 3))),
}
CONV_HEADER = ["dtype", "kernel", "what", "GM read MiB", "GM written MiB", "estimate us",
               "sim"]


def _kernel_row(k, c: dict, soc, acc: list[int]) -> tuple[int, int, float, str, str]:  # noqa: ANN001
    """(GM read, GM written, estimate s, what, sim check) of one conv kernel; ``acc``
    sums the vector cores' GM <-> UB bytes (copy kernel, MIX epilogue), checked later."""
    bw = soc.cube.hbm_bytes_per_s
    if isinstance(k, TransposeKernel):
        half = k.gm_bytes // 2
        acc[0] += half
        acc[1] += half
        return (half, half, k.gm_bytes / bw, f"transpose {k.batch} x ({k.rows} x {k.cols}) "
                f"-> ({k.cols} x {k.rows}), tiles {k.tr} x {k.tc}, {k.block_dim} vector blocks",
                "vector")
    if isinstance(k, CopyKernel):
        acc[0] += k.gm_bytes // 2
        acc[1] += k.gm_bytes // 2
        return (k.gm_bytes // 2, k.gm_bytes // 2, k.gm_bytes / bw,
                f"im2col: {len(k.src_offsets)} window copies", "vector")
    if isinstance(k, ConvMixKernel):
        mc = conv_mix_counts(k)
        acc[0] += mc.gm_to_ub
        acc[1] += mc.ub_to_gm
        conv = conv_l1_counts(k.plan, 4 if k.conv.out == "f32" else 2)
        same = (c["cube_macs"], c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"]) == \
            (conv.macs, mc.gm_to_l1, mc.l0c_to_gm)
        read, written = mc.gm_to_l1 + mc.gm_to_ub, mc.l0c_to_gm + mc.ub_to_gm
        est = max(conv_l1_estimate_s(k.plan, conv, soc.cube), (read + written) / bw)
        p = k.plan
        return (read, written, est, f"conv MIX: im2col in L1, {p.bands} bands x "
                f"{p.band_rows} rows, M tile {p.base_m}, {p.blocks}/{soc.cube.cores} cores, "
                "+ bias + relu on the vector cores writing NCHW (hand-off in both)",
                "vector" if same else "MISMATCH")
    if isinstance(k, ConvKernel):
        counts = conv_l1_counts(k.plan, np.dtype({"f16": np.float16, "f32": np.float32,
                                                  "bf16": np.float16}[k.out]).itemsize)
        same = (c["cube_macs"], c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"]) == \
            (counts.macs, counts.gm_read, counts.gm_written)
        p = k.plan
        blocks = "" if p.b_resident else f" in {p.base_k}-blocks, N in {p.base_n}-blocks"
        pads = f", padList {p.geo.pads}" if any(p.geo.pads) else ""
        if p.stream:
            blocks += f", weights streamed in panels, {p.groups} channel groups"
        return (counts.gm_read, counts.gm_written, conv_l1_estimate_s(p, counts, soc.cube),
                f"im2col in L1: {p.bands} bands x {p.band_rows} rows, M tile {p.base_m}, "
                f"K {p.ktot}{blocks}{pads}, {p.blocks}/{soc.cube.cores} cores",
                "counts match" if same else "MISMATCH")
    cube = k.cube if isinstance(k, MixKernel) else k
    assert isinstance(cube, CubeKernel), k
    cost = cube_cost(cube, soc)
    what = f"{cube.m}x{cube.n}x{cube.k} x{cube.batch}, {cube.block_dim}/{soc.cube.cores} cores"
    if not isinstance(k, MixKernel):
        same = (c["cube_macs"], c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"]) == \
            (cost.macs, cost.gm_read_bytes, cost.gm_write_bytes)
        return (cost.gm_read_bytes, cost.gm_write_bytes, cost.estimate_s, what,
                "counts match" if same else "MISMATCH")
    mc = mix_cost(k, soc)
    acc[0] += mc.epilogue_read
    acc[1] += mc.written
    same = (c["cube_macs"], c["gm_to_l1_bytes"], c["l0c_to_gm_bytes"]) == \
        (cost.macs, mc.cube_read, mc.handoff)
    return (mc.cube_read + mc.epilogue_read, mc.handoff + mc.written, mc.fused_s,
            "MIX: " + what + " + bias + relu (hand-off in both)",
            "vector" if same else "MISMATCH")


def _conv_rows(case: str, dtype: type, soc_name: str, bias: bool = False) -> list[list[str]]:
    """One row per kernel of the conv2d ``case`` (``bias``: with a bias and ReLU), then
    the total."""
    soc = get_soc(soc_name)
    assert soc.cube is not None
    plain, biased, shapes = CONV_CASES[case]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if bias:
        args.append(rng.standard_normal(shapes[1][0]).astype(dtype))
    form = biased if bias else plain
    fn = hybrid(form, target="ascend-sim", device_type=[soc.name])
    kernel = fn.kernel(*args)
    got = fn(*args)
    want = hybrid(form, target="interpret")(*args)
    ok = np.allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)
    c = kernel.last_counters
    rows, total_r, total_w, total_s = [], 0, 0, 0.0
    acc = [0, 0]   # the vector cores' GM <-> UB bytes
    name = f"{case}: {np.dtype(dtype).name}" + (" + bias + relu" if bias else "")
    for k in kernel.ascend.kernels:
        r, wr, est, what, sim = _kernel_row(k, c, soc, acc)
        total_r, total_w, total_s = total_r + r, total_w + wr, total_s + est
        rows.append([name, k.name, what, f"{r / 2**20:.4g}", f"{wr / 2**20:.4g}",
                     f"{est * 1e6:.4g}", sim])
    # the vector cores' counts together against the sim's GM <-> UB counters
    same = (c["gm_to_ub_bytes"], c["ub_to_gm_bytes"]) == tuple(acc)
    for row in rows:
        row[-1] = row[-1].replace("vector", "counts match" if same else "MISMATCH")
    least = sum(a.nbytes for a in args) + got.nbytes
    rows.append([name, "total", f"least any conv2d moves: {least / 2**20:.4g} "
                 f"MiB ({(total_r + total_w) / least:.1f}x)", f"{total_r / 2**20:.4g}",
                 f"{total_w / 2**20:.4g}", f"{total_s * 1e6:.4g}",
                 "result ok" if ok else "MISMATCH"])
    return rows


def loop_conv_relu(x, w, b):
    n_, c_, h, wd = x.shape
    o_, _, kh, kw = w.shape
    out = np.empty((n_, o_, h - kh + 1, wd - kw + 1), dtype=x.dtype)
    for n in range(n_):
        for o in range(o_):
            for i in range(h - kh + 1):
                for j in range(wd - kw + 1):
                    acc = b[o]
                    for c in range(c_):
                        for a in range(kh):
                            for d in range(kw):
                                acc += x[n, c, i + a, j + d] * w[o, c, a, d]
                    out[n, o, i, j] = max(acc, 0)
    return out


LOOP_CONV_HEADER = ["case", "route", "kernels", "GM read MiB", "GM written MiB",
                    "cube MACs", "estimate us", "sim vs float64"]
LOOP_CONV_SHAPES = ((1, 64, 58, 58), (64, 64, 3, 3))


def _loop_conv_rows(dtype: type, soc_name: str) -> list[list[str]]:
    """Before (the pass disabled) and after, of the ResNet-like loop convolution."""
    from pyasc.backend.ascendc.conv_plan import ConvGeometry
    from pyasc.backend.ascendc.loop_conv_cost import cube_estimate_s, stencil_estimate_s
    soc = get_soc(soc_name)
    (n, c, h, wd), (o, _, kh, kw) = LOOP_CONV_SHAPES
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal(s).astype(dtype) for s in LOOP_CONV_SHAPES)
    b = rng.standard_normal(o).astype(dtype)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    win = np.lib.stride_tricks.sliding_window_view(x64, (kh, kw), axis=(2, 3))
    want = np.maximum(np.einsum("nchwab,ocab->nohw", win, w64) +
                      b.astype(np.float64).reshape(-1, 1, 1), 0)
    g = ConvGeometry(n, c, h, wd, o, kh, kw, dtype="f16" if dtype == np.float16 else "f32")
    rows = []
    for route, disabled in (("before", "loop-conv-cube"), ("after", "")):
        os.environ["PYASC_DISABLE_PASSES"] = disabled
        try:
            fn = hybrid(loop_conv_relu, target="ascend-sim", device_type=[soc.name])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = fn(x, w, b)
            kernel = fn.kernel(x, w, b)
        finally:
            os.environ.pop("PYASC_DISABLE_PASSES", None)
        cn = kernel.last_counters
        read = cn["gm_to_ub_bytes"] + cn["gm_to_l1_bytes"] + cn["gm_scalar_read_bytes"]
        written = cn["ub_to_gm_bytes"] + cn["l0c_to_gm_bytes"] + cn["gm_scalar_write_bytes"]
        kinds = ", ".join(type(k).__name__ for k in kernel.ascend.kernels)
        est = cube_estimate_s(g, soc) if route == "after" else None
        err = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
        rows.append([f"{np.dtype(dtype).name} loops 1x64x58x58 * 64x64x3x3 + bias + relu",
                     route, kinds, f"{read / 2**20:.4g}", f"{written / 2**20:.4g}",
                     str(cn["cube_macs"]),
                     f"{est * 1e6:.4g}" if est else
                     f"(stencil kernel, were it one: {stencil_estimate_s(g, soc) * 1e6:.4g})",
                     f"max err / max abs(y): {err:.2g}"])
    return rows


def _print(header: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    """Print the table; exit status 1 if a sim run disagrees with the model or numpy."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--soc", default="Ascend910B1")
    p.add_argument("--sim-macs", type=float, default=1e9)
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--conv", choices=list(CONV_CASES), action="append",
                   help="only the conv2d table, of these cases")
    p.add_argument("--loop-conv", action="store_true",
                   help="only the table of the convolution written with loops")
    args = p.parse_args(argv)
    if args.loop_conv:
        loop_rows = [r for dt in (np.float16, np.float32)
                     for r in _loop_conv_rows(dt, args.soc)]
        _print(LOOP_CONV_HEADER, loop_rows, args.markdown)
        return 0
    rows, conv_rows, mix_rows = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # a scalar fallback would be a failure here
        for case in args.conv or CONV_CASES:
            for bias in (False, True) if CONV_CASES[case][1] else (False,):
                for dtype in (np.float16, np.float32):
                    conv_rows.extend(_conv_rows(case, dtype, args.soc, bias))
        if not args.conv:
            rows = [_row(name, sa, sb, args.soc, args.sim_macs)
                    for name, (sa, sb) in SHAPES.items()]
            mix_rows = [r for name, (fn, sa, sb) in MIX_SHAPES.items()
                        for r in _mix_rows(name, fn, sa, sb, args.soc, args.sim_macs)]
    if rows:
        _print(HEADER, rows, args.markdown)
        print()
    _print(CONV_HEADER, conv_rows, args.markdown)
    if mix_rows:
        print()
        _print(MIX_HEADER, mix_rows, args.markdown)
    return 1 if any(r[-1] == "MISMATCH" for r in rows + conv_rows + mix_rows) else 0


if __name__ == "__main__":
    sys.exit(main())
