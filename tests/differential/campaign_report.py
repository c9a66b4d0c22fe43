"""The fuzzing campaign's figures (``campaign``): programs run, skips by kind, failures
by runner and kind, time per runner, constructs covered; read from the chunk records."""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Summary:
    """Aggregated campaign records (``data`` is what ``summary.json`` holds)."""

    data: dict[str, Any] = field(default_factory=dict)

    def progress_line(self) -> str:
        d = self.data
        return (f"[{d['wall_seconds']:.0f} s] {d['programs']} programs, "
                f"{d['failed_programs']} failed, {d['frontend_skips']} skipped (unsupported)")

    def text(self) -> str:
        d = self.data
        lines = [f"seed {d['seed']} ({d.get('profile', 'default')} profile), programs {d['first']}..{d['end'] - 1}: "
                 f"{d['programs']} judged ({d['unique']} distinct sources), "
                 f"wall {d['wall_seconds']:.0f} s this run, worker time "
                 f"{d['worker_seconds']:.0f} s, worker CPU {d['worker_cpu']:.0f} s"]
        lines.append("runner        ran     ok   skip   fail   median s  total s  "
                     "median cpu  total cpu")
        for r, s in d["runners"].items():
            lines.append(f"{r:12s} {s['ran']:5d} {s['ok']:6d} {s['skip']:6d} {s['fail']:6d}"
                         f"   {s['median_seconds']:8.3f} {s['total_seconds']:8.0f}"
                         f"  {s['median_cpu']:10.3f} {s['total_cpu']:10.0f}")
            lines += [f"    skip {n:5d}  {k}" for k, n in s["skip_kinds"].items()]
            lines += [f"    FAIL {n:5d}  {k}" for k, n in s["fail_kinds"].items()]
        b = d["sim_batches"]
        if b["builds"]:
            lines.append(f"ascend-sim batch builds: {b['builds']} builds of "
                         f"{b['programs_built']} programs, {b['seconds']:.0f} s, "
                         f"{b['cpu']:.0f} s CPU")
        lines.append(f"programs with a failure: {d['failed_programs']}")
        lines += [f"    {f['index']:7d} {f['runner']:12s} {f['kind']}" for f in d["failures"][:50]]
        return "\n".join(lines)


def _records(out: Path, first: int, end: int) -> tuple[list[dict], list[dict]]:
    """The program records in ``[first, end)`` and the ascend-sim batch-build records."""
    by_index: dict[int, dict] = {}
    batches = []
    for path in sorted((out / "results").glob("chunk-*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "index" in rec and first <= rec["index"] < end:
                by_index[rec["index"]] = rec  # a re-run of a program replaces it
            elif "batch" in rec:
                batches.append(rec)
    return [by_index[i] for i in sorted(by_index)], batches


def _runner_stats(records: list[dict]) -> dict[str, dict[str, Any]]:
    seconds: dict[str, list[float]] = defaultdict(list)
    cpu: dict[str, list[float]] = defaultdict(list)
    counts: dict[str, Counter] = defaultdict(Counter)
    kinds: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for rec in records:
        for runner, o in rec["outcomes"].items():
            counts[runner][o["status"]] += 1
            seconds[runner].append(o.get("seconds", 0.0))
            cpu[runner].append(o.get("cpu", 0.0))
            if o["status"] != "ok":
                kinds[(runner, o["status"])][o["kind"]] += 1
    return {r: {"ran": c["ok"] + c["fail"], "ok": c["ok"], "skip": c["skip"],
                "fail": c["fail"], "median_seconds": statistics.median(seconds[r]),
                "total_seconds": sum(seconds[r]),
                "median_cpu": statistics.median(cpu[r]), "total_cpu": sum(cpu[r]),
                "skip_kinds": dict(kinds[(r, "skip")].most_common()),
                "fail_kinds": dict(kinds[(r, "fail")].most_common())}
            for r, c in counts.items()}


def summarize(out: Path, args: Any, wall: float) -> Summary:
    """The summary of programs ``[args.start, args.start + args.count)`` so far."""
    first, end = args.start, args.start + args.count
    records, batches = _records(out, first, end)
    front = Counter(r["outcomes"]["frontend"]["kind"] for r in records
                    if r["outcomes"].get("frontend", {}).get("status") == "skip")
    failures = [{"index": r["index"], "runner": runner, "kind": o["kind"]}
                for r in records for runner, o in r["outcomes"].items()
                if o["status"] == "fail"]
    constructs = Counter(c for r in records for c in r.get("constructs", ()))
    worker = sum(o.get("seconds", 0.0) for r in records for o in r["outcomes"].values()) + \
        sum(b["seconds"] for b in batches)
    worker_cpu = sum(o.get("cpu", 0.0) for r in records for o in r["outcomes"].values()) + \
        sum(b["cpu"] for b in batches)
    return Summary({
        "seed": args.seed, "profile": getattr(args, "profile", "default"),
        "first": first, "end": end, "runners_requested": args.runners,
        "programs": len(records), "unique": len({r.get("hash") for r in records}),
        "wall_seconds": wall, "worker_seconds": worker, "worker_cpu": worker_cpu,
        "frontend_skips": sum(front.values()), "frontend_skip_kinds": dict(front.most_common()),
        "runners": _runner_stats(records),
        "failed_programs": len({f["index"] for f in failures}), "failures": failures,
        "constructs": dict(constructs.most_common()),
        "sim_batches": {"builds": len(batches), "programs_built": sum(b["built"] for b in batches),
                        "seconds": sum(b["seconds"] for b in batches),
                        "cpu": sum(b["cpu"] for b in batches)},
    })


def write_summary(out: Path, summary: Summary) -> None:
    """``<out>/summary.json`` and ``<out>/summary.txt``."""
    (out / "summary.json").write_text(json.dumps(summary.data, indent=1) + "\n")
    (out / "summary.txt").write_text(summary.text() + "\n")
