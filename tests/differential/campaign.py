"""Differential fuzzing campaign: thousands of generated programs on every runner.

Run from the repository root::

    python -m tests.differential.campaign --count 10000 --seed 1 --jobs 2 --out fuzz-out

Program ``k`` of seed ``S`` is ``progen.generate_seeded(f"{S}:{k}", P)``: the seed, the
index and the generator profile ``P`` (``--profile``, ``default`` unless given) alone
reproduce it.  The programs are split into chunks of ``--chunk``; ``--jobs``
worker processes (a fresh one per chunk, so JIT memory does not pile up) judge each
program on ``--runners`` (``judge.judge``: every runner against the Python function)
and append one JSON line per program to ``<out>/results/``.  A failure is saved as a
case, ``<out>/cases/<k>-<runner>/`` (``case.json``, ``prog.py``, ``inputs.npz``), that
``--replay <case dir>`` runs again from those files with the full traceback.  A worker silent for
``--hang`` seconds (a compiled kernel that never returns) is killed, and a worker that
dies (a segfault in compiled code): the program it was running is recorded as a
failure and its chunk resumed after it.  Finished
chunks are kept: running the same command again resumes an interrupted campaign.

The summary (printed, and ``<out>/summary.json``) gives the count, seed, time, the
skips by kind and the failures by runner and kind.  ascend-sim builds use ``-O0``
(``--sim-opt``) and the precompiled sim headers; each worker's sim libraries go to a
private cache removed with it (fuzzed programs are all different).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _path in (HERE, HERE.parent / "frontend"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from campaign_report import summarize, write_summary  # noqa: E402
from campaign_worker import CHUNK_DONE, run_chunk, save_case  # noqa: E402

RUNNERS = ("ir", "ir-opt", "cpu", "cpu-nopasses", "ascend-sim")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.differential.campaign",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=1000, help="programs to run")
    p.add_argument("--start", type=int, default=0, help="index of the first program")
    p.add_argument("--seed", type=int, default=1, help="campaign seed")
    p.add_argument("--profile", default="default",
                   help="generator profile (progen.PROFILES: default, loops)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes")
    p.add_argument("--chunk", type=int, default=25, help="programs per worker process")
    p.add_argument("--runners", default=",".join(RUNNERS), help="comma-separated runners")
    p.add_argument("--out", default="fuzz-out", help="output directory")
    p.add_argument("--limit", type=float, default=300.0, help="seconds per runner")
    p.add_argument("--hang", type=float, default=900.0,
                   help="seconds without progress before a worker is killed")
    p.add_argument("--sim-opt", default="-O0", help="ascend-sim C++ optimisation level")
    p.add_argument("--report", action="store_true",
                   help="print the summary of the programs recorded in --out; run nothing")
    p.add_argument("--replay", metavar="CASE_DIR", help="re-run one saved case")
    p.add_argument("--reduce", metavar="CASE_DIR",
                   help="shrink a saved case to the statements its failure needs "
                        "(writes <CASE_DIR>/reduced.py)")
    p.add_argument("--worker", nargs=3, type=int, metavar=("CHUNK", "FIRST", "END"),
                   help=argparse.SUPPRESS)
    return p.parse_args(argv)


def worker_env(args: argparse.Namespace, out: Path) -> dict[str, str]:
    """The environment of a worker: its caches and the sim build options."""
    env = dict(os.environ)
    env["PYASC_CACHE_DIR"] = str(out / "cache")  # the precompiled sim headers, shared
    env["PYASC_SIM_OPT"] = args.sim_opt
    env["PYTHONWARNINGS"] = "ignore"
    env.pop("PYASC_DIFF_RUNNERS", None)
    return env


def chunk_file(out: Path, first: int) -> Path:
    return out / "results" / f"chunk-{first:07d}.jsonl"


def read_chunk(path: Path) -> list[dict]:
    """The records of a chunk file (a torn last line is ignored)."""
    if not path.is_file():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


class Worker:
    """One worker process judging programs ``[first, end)`` of a chunk."""

    def __init__(self, args: argparse.Namespace, out: Path, first: int, end: int) -> None:
        self.args, self.out, self.first, self.end = args, out, first, end
        self.path = chunk_file(out, first)
        done = [r["index"] for r in read_chunk(self.path) if "index" in r]
        resume = max(done, default=first - 1) + 1
        cmd = [sys.executable, "-m", "tests.differential.campaign", "--worker", str(first),
               str(resume), str(end), "--seed", str(args.seed), "--profile", args.profile, "--runners", args.runners,
               "--out", str(out), "--limit", str(args.limit)]
        self.log = open(out / "logs" / f"chunk-{first:07d}.log", "a")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=worker_env(args, out),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.seen = time.monotonic()
        self.size = self.path.stat().st_size if self.path.exists() else 0

    def poll(self) -> bool:
        """True when the chunk is finished (the worker ended or was killed for a hang)."""
        size = self.path.stat().st_size if self.path.exists() else 0
        if size != self.size:
            self.size, self.seen = size, time.monotonic()
        if self.proc.poll() is not None:
            self.log.close()
            return True
        if time.monotonic() - self.seen > self.args.hang:
            self.proc.kill()
            self.proc.wait()
            self.log.close()
            self._record_failure("hang", f"no progress for {self.args.hang:.0f} s: killed")
            return True
        return False

    def died(self) -> None:
        """The worker ended without finishing its chunk (a crash of the process, e.g. a
        segfault in compiled code): the program it was judging is a failure."""
        self._record_failure(f"worker died (exit status {self.proc.returncode})",
                             f"the worker process ended with status {self.proc.returncode}")

    def _record_failure(self, kind: str, detail: str) -> None:
        done = [r["index"] for r in read_chunk(self.path) if "index" in r]
        index = max(done, default=self.first - 1) + 1
        if index >= self.end:
            return
        save_case(self.out, self.args.seed, index, "worker", kind, detail,
                  profile=self.args.profile)
        record = {"index": index, "outcomes": {"worker": {
            "status": "fail", "kind": kind, "seconds": 0.0}}}
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def pending_chunks(args: argparse.Namespace, out: Path) -> list[tuple[int, int]]:
    """The chunks not finished yet, as ``(first, end)``."""
    chunks = []
    for first in range(args.start, args.start + args.count, args.chunk):
        end = min(first + args.chunk, args.start + args.count)
        records = read_chunk(chunk_file(out, first))
        if not any(r.get(CHUNK_DONE) for r in records):
            chunks.append((first, end))
    return chunks


def run_campaign(args: argparse.Namespace) -> dict:
    """Run every pending chunk on ``--jobs`` workers; returns the summary."""
    out = Path(args.out).resolve()
    for sub in ("results", "cases", "logs", "cache"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    queue, active = pending_chunks(args, out), []
    started, last_report = time.monotonic(), time.monotonic()
    while queue or active:
        while queue and len(active) < args.jobs:
            active.append(Worker(args, out, *queue.pop(0)))
        time.sleep(1.0)
        finished = [w for w in active if w.poll()]
        for w in finished:
            active.remove(w)
            if not any(r.get(CHUNK_DONE) for r in read_chunk(w.path)):
                if w.proc.returncode not in (None, -9):  # -9: killed for a hang
                    w.died()
                queue.insert(0, (w.first, w.end))  # resume after the failed program
        if time.monotonic() - last_report > 60:
            last_report = time.monotonic()
            print(summarize(out, args, time.monotonic() - started).progress_line(),
                  flush=True)
    summary = summarize(out, args, time.monotonic() - started)
    write_summary(out, summary)
    print(summary.text())
    return summary.data


def replay(case_dir: str) -> None:
    """Run a saved case's runner again (from its saved files) with the full traceback."""
    import traceback

    from campaign_worker import load_case
    from diff import compare
    from judge import budget, device_soc, reference

    case, program = load_case(Path(case_dir))
    print(program.source)
    print(f"inputs: {program.args!r}\nbudget: {program.tol}")
    runner = case["runner"]
    runners = (runner,) if runner not in ("frontend", "worker") else ("ir",)
    try:
        with device_soc(runner):  # as the judge compiled it
            compare(program.fn, *program.args, runners=runners,
                    rtol=budget(program, reference(program)))
        print(f"{runners[0]}: ok now")
    except BaseException:
        traceback.print_exc()


def reduce(case_dir: str) -> None:
    """Shrink a saved case (``reduce_case``) and write ``reduced.py`` beside it."""
    import warnings

    from campaign_worker import load_case
    from judge import judge
    from reduce_case import reduce_program

    warnings.simplefilter("ignore")
    case, program = load_case(Path(case_dir))
    runner = "ir" if case["runner"] == "worker" else case["runner"]
    now = judge(program, () if runner == "frontend" else (runner,)).outcomes
    failed = now.get(runner) or now["frontend"]
    if failed.status != "fail":
        print(f"{runner} does not fail any more ({failed.status})")
        return
    source = reduce_program(program, runner, failed.kind)  # as it fails today
    (Path(case_dir) / "reduced.py").write_text(source)
    print(source)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replay:
        replay(args.replay)
        return 0
    if args.report:
        print(summarize(Path(args.out), args, 0.0).text())
        return 0
    if args.reduce:
        reduce(args.reduce)
        return 0
    if args.worker:
        chunk, first, end = args.worker
        run_chunk(Path(args.out), args.seed, first, end, args.runners.split(","),
                  args.limit, chunk_file(Path(args.out), chunk), profile=args.profile)
        return 0
    summary = run_campaign(args)
    return 1 if summary["failed_programs"] else 0


if __name__ == "__main__":
    sys.exit(main())
