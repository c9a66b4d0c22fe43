"""``pyasc opt`` and ``pyasc cache``: the IR and the kernel cache from the shell.

::

    pyasc opt FILE.ir [-p canonicalize,cse,dce] [--pipeline default|loop] [-o OUT]
    pyasc cache info|list|clear [--dir DIR]

``pyasc opt`` parses an IR file (``fn.dump_ir``, a ``PYASC_DUMP_PATH`` stage, any printed
module), runs the named passes in order (``-p``) or a whole pipeline, verifies after
each, and prints the result (or writes ``-o``); with no passes it prints the parsed
module, a round trip of the text format.  ``pyasc cache`` reports on the on-disk kernel
cache (``PYASC_CACHE_DIR``, default ``~/.cache/pyasc``): ``info`` its size per backend,
``list`` its entries (backend, key, size, age), ``clear`` removes it.

Bad input (a file that cannot be read or written, malformed IR, an unknown pass) is one
message on standard error and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pyasc.errors import PyascError


class UsageError(Exception):
    """Bad input: one message, exit status 2."""


def opt_parser() -> argparse.ArgumentParser:
    """The command line of ``pyasc opt``."""
    p = argparse.ArgumentParser(prog="pyasc opt", description="Run IR passes on an IR "
                                "file and print the result.")
    p.add_argument("file", type=Path, help="an IR file (fn.dump_ir, PYASC_DUMP_PATH)")
    p.add_argument("-p", "--passes", default="", help="comma-separated pass names, run "
                   "in order (see --list)")
    p.add_argument("--pipeline", choices=("default", "loop"), help="run the tensor-level "
                   "pipeline (default) or the loop-level one after -p")
    p.add_argument("-o", "--output", type=Path, help="write here instead of printing")
    p.add_argument("--list", action="store_true", help="list the passes and exit")
    return p


def opt(argv: Sequence[str]) -> int:
    """``pyasc opt``: returns the exit status."""
    args = opt_parser().parse_args(argv)
    return _guarded("pyasc opt", lambda: _opt(args))


def _opt(args: argparse.Namespace) -> int:
    from pyasc.ir.parser import parse_module
    from pyasc.ir.passes import DEFAULT_PIPELINE, LOOP_PIPELINE, PASS_REGISTRY, PassManager

    if args.list:
        print("\n".join(sorted(PASS_REGISTRY)))
        return 0
    names = [n.strip() for n in args.passes.split(",") if n.strip()]
    unknown = [n for n in names if n not in PASS_REGISTRY]
    if unknown:
        raise UsageError(f"unknown pass {', '.join(map(repr, unknown))}; known: "
                         f"{', '.join(sorted(PASS_REGISTRY))}")
    names += {"default": DEFAULT_PIPELINE, "loop": LOOP_PIPELINE}.get(args.pipeline, [])
    module = parse_module(_read(args.file), filename=str(args.file))
    PassManager(names).run(module)
    _emit(str(module) + "\n", args.output)
    return 0


def cache_parser() -> argparse.ArgumentParser:
    """The command line of ``pyasc cache``."""
    p = argparse.ArgumentParser(prog="pyasc cache", description="The on-disk kernel "
                                "cache: its size, its entries, or remove it.")
    p.add_argument("action", choices=("info", "list", "clear"))
    p.add_argument("--dir", type=Path, help="the cache root (default: PYASC_CACHE_DIR, "
                   "else ~/.cache/pyasc)")
    return p


def cache(argv: Sequence[str]) -> int:
    """``pyasc cache``: returns the exit status."""
    args = cache_parser().parse_args(argv)
    return _guarded("pyasc cache", lambda: _cache(args))


def _cache(args: argparse.Namespace) -> int:
    from pyasc.runtime.disk_cache import default_root

    root = args.dir or default_root()
    if args.action == "clear":
        if root.exists():
            n = sum(1 for _ in root.rglob("*.json"))
            shutil.rmtree(root)
            print(f"removed {root} ({n} entries)")
        else:
            print(f"{root}: no cache")
        return 0
    backends = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if args.action == "info":
        print(f"cache: {root}")
        for b in backends:
            files = [f for f in b.rglob("*") if f.is_file()]
            size = sum(f.stat().st_size for f in files)
            entries = sum(1 for f in files if f.suffix == ".json")
            print(f"  {b.name}: {entries} entries, {size / 1e6:.1f} MB")
        if not backends:
            print("  empty")
        return 0
    now = time.time()
    for b in backends:
        for manifest in sorted(b.rglob("*.json")):
            size = sum(f.stat().st_size for f in manifest.parent.glob(manifest.stem + "*"))
            age = (now - manifest.stat().st_mtime) / 3600
            print(f"{b.name}\t{manifest.stem}\t{size}\t{age:.1f} h")
    return 0


def _guarded(prog: str, run: object) -> int:
    try:
        return run()  # type: ignore[operator]
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
    except PyascError as exc:  # the parser's located message
        print(exc.render(), file=sys.stderr)
    return 2


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def _emit(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text)
        return
    try:
        out.write_text(text)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None


__all__ = ["cache", "cache_parser", "opt", "opt_parser"]
