"""pyasc vs numpy vs Numba vs C vs CPython, side by side in one process.

    python benchmarks/run.py [--size small|full] [--only relu,softmax] [--threads N]
                             [--repeat 7] [--no-fastmath] [--markdown]

Every kernel of ``kernels.py`` runs in every available implementation; each result is
checked against the kernel as written (CPython + numpy); the table gives the median time
per call and pyasc's ratios.  pyasc failures (missing, not compiling, wrong result) show up
as cells, never as a crash.  ``--markdown`` prints a RESULTS.md-ready report.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import sys
import tempfile

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "PYASC_NUM_THREADS")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--only", help="comma-separated kernel names (default: all)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for numpy's BLAS, Numba, pyasc (default 1)")
    parser.add_argument("--repeat", type=int, default=7, help="timed repetitions (>= 7)")
    parser.add_argument("--no-fastmath", action="store_true", help="skip the +fastmath rows")
    parser.add_argument("--markdown", action="store_true", help="print a RESULTS.md report")
    parser.add_argument("--keep-cache", action="store_true",
                        help="use pyasc's normal disk cache (default: a fresh empty one, so "
                             "the first call measures a cold compile)")
    args = parser.parse_args(argv)
    if args.repeat < 7:
        parser.error("--repeat must be at least 7")
    return args


def configure_environment(args: argparse.Namespace, cache_dir: str | None) -> None:
    """Thread counts and pyasc's cache; must run before numpy (or anything) is imported."""
    if "numpy" in sys.modules:
        raise RuntimeError("numpy was imported before the thread variables were set")
    for name in THREAD_VARIABLES:
        os.environ[name] = str(args.threads)
    if cache_dir is not None:
        os.environ["PYASC_CACHE_DIR"] = cache_dir


def main(argv: list[str] | None = None) -> None:
    """Run the benchmarks and print the tables."""
    args = parse_args(argv)
    faulthandler.enable()  # a crash inside compiled code still names the kernel's frame
    with tempfile.TemporaryDirectory(prefix="pyasc-bench-cache-") as tmp:
        configure_environment(args, None if args.keep_cache else tmp)
        # Imported here, after the environment is set: it imports numpy.
        import cases

        try:
            selected = cases.select(args.only.split(",") if args.only else None)
        except ValueError as exc:
            sys.exit(f"run.py: {exc}")
        measure_all(args, selected)


def measure_all(args: argparse.Namespace, selected: tuple) -> None:
    """Measure STREAM triad and every selected case, then print the report."""
    import harness
    import report
    import stream

    timing = harness.Timing(repeat=args.repeat)
    load = _loadavg()
    with harness.open_tools() as tools:
        triad = stream.measure_triad(sorted({1, min(2, os.cpu_count() or 1), args.threads}))
        rows = []
        for case in selected:
            print(f"... {case.kernel}", file=sys.stderr, flush=True)
            rows += harness.run_case(case, args.size, tools, timing, not args.no_fastmath)
        columns = harness.shown_columns(tools)
        header = report.machine(tools, args.threads, triad)
    header.append(f"- load average before / after: {load} / {_loadavg()} "
                  "(other processes on the machine disturb the timings)")
    print_report(args, rows, columns, header, triad.get(args.threads))


def _loadavg() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def sections(args: argparse.Namespace, rows: list, columns: tuple[str, ...],
             triad: float | None) -> list[tuple[str, list[list[str]]]]:
    """The report's (heading, table) pairs, in order."""
    import report

    md = args.markdown
    found = [("Time per call and ratios", report.summary_table(rows, columns, md))]
    fusion = report.fusion_lines(rows)
    if fusion:
        found.append(("Fusion (seed article: +23%)", [["result"], *[[f] for f in fusion]]))
    if args.size == "full" and triad:  # small inputs sit in cache: GB/s would mean nothing
        found.append((f"Memory-bound kernels: effective bandwidth vs STREAM triad "
                      f"({triad:.1f} GB/s at {args.threads} thread(s))",
                      report.bandwidth_table(rows, columns, triad)))
    found.append(("All variants", report.variants_table(rows, md)))
    return found


def print_report(args: argparse.Namespace, rows: list, columns: tuple[str, ...],
                 header: list[str], triad: float | None) -> None:
    """Print the machine description and every section (plain text or markdown)."""
    import report

    md = args.markdown
    title = (f"size={args.size}, threads={args.threads}, median of {args.repeat}, "
             f"command: python benchmarks/run.py {' '.join(sys.argv[1:])}")
    if md:
        print("# pyasc benchmark results\n")
        print("Regenerate with `python benchmarks/run.py --markdown > benchmarks/RESULTS.md && "
              "python benchmarks/overhead.py --markdown >> benchmarks/RESULTS.md`.\n")
        print("\n".join(header) + f"\n- run: {title}")
    else:
        print("\n".join(line.removeprefix("- ") for line in header) + "\n" + title)
    for heading, table in sections(args, rows, columns, triad):
        print(f"\n## {heading}\n" if md else f"\n{heading}")
        print(report.render(table, md))
        if md and heading.startswith("Time"):
            print("\n" + "\n".join(f"- {note}" for note in report.NOTES))
    if not md:
        print("\n" + "\n".join(report.NOTES))


if __name__ == "__main__":
    main()
