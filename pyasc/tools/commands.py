"""``pyasc opt``, ``pyasc compile`` and ``pyasc cache``: the IR, the generated code and
the kernel cache from the shell.

::

    pyasc opt FILE.ir [-p canonicalize,cse,dce] [--pipeline default|loop] [-o OUT]
    pyasc compile FILE.py:NAME --target ir|llvm|asm|ascendc --arg 'float32[1024,64]'
    pyasc cache info|list|clear [--dir DIR]

``pyasc opt`` parses an IR file (``fn.dump_ir``, a ``PYASC_DUMP_PATH`` stage, any printed
module), runs the named passes in order (``-p``) or a whole pipeline, verifies after
each, and prints the result (or writes ``-o``); with no passes it prints the parsed
module, a round trip of the text format.  ``pyasc compile`` prints the code generated
for a function and argument types (arrays of zeros stand for them) without running it.
``pyasc cache`` reports on the on-disk kernel
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
    PassManager(names, each=True).run(module)  # a debugging tool: name the pass
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


def compile_parser() -> argparse.ArgumentParser:
    """The command line of ``pyasc compile``."""
    p = argparse.ArgumentParser(prog="pyasc compile", description="Print the code pyasc "
                                "generates for a function and argument types, running "
                                "nothing.")
    p.add_argument("function", help="FILE.py:NAME (a @hybrid or plain function)")
    p.add_argument("--target", choices=tuple(EMITTERS), default="ir")
    p.add_argument("--arg", action="append", default=[], metavar="SPEC",
                   help="one per parameter, in order: 'float32[1024,64]' (an array), "
                        "'float32' (a scalar of that type) or a number (a value)")
    p.add_argument("--soc", help="the SoC of --target ascendc (default Ascend910B1)")
    p.add_argument("-o", "--output", type=Path, help="write here instead of printing")
    return p


EMITTERS = {
    "ir": lambda fn, args, soc: fn.ir(*args),
    "llvm": lambda fn, args, soc: fn.llvm_ir(*args),
    "asm": lambda fn, args, soc: fn.asm(*args),
    "ascendc": lambda fn, args, soc: fn.ascendc(*args, soc=soc) if soc else fn.ascendc(*args),
}
"""``--target``: what each prints."""


def compile_(argv: Sequence[str]) -> int:
    """``pyasc compile``: returns the exit status."""
    args = compile_parser().parse_args(argv)
    return _guarded("pyasc compile", lambda: _compile(args))


def _compile(args: argparse.Namespace) -> int:
    import inspect

    fn = _load_function(args.function)
    values = tuple(parse_arg(spec) for spec in args.arg)
    try:
        inspect.signature(fn).bind(*values)
    except TypeError as exc:
        raise UsageError(f"{args.function}: {exc} (give one --arg per parameter)") from None
    _emit(EMITTERS[args.target](fn, values, args.soc).rstrip("\n") + "\n", args.output)
    return 0


def parse_arg(spec: str) -> object:
    """``float32[1024,64]`` -> a zero array, ``float32`` -> a scalar of that type, a
    number -> itself (a value the function may specialize on)."""
    import numpy as np

    text = spec.strip()
    try:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        pass
    name, _, rest = text.partition("[")
    try:
        dtype = np.dtype(name.strip())
    except TypeError:
        raise UsageError(f"invalid --arg {spec!r}: not a dtype, e.g. 'float32[1024,64]', "
                         "'int32' or a number") from None
    if not rest:
        return dtype.type(1)
    dims = rest.rstrip().removesuffix("]").split(",")
    try:
        shape = tuple(int(d) for d in dims if d.strip())
    except ValueError:
        raise UsageError(f"invalid --arg {spec!r}: sizes must be integers") from None
    return np.zeros(shape, dtype)


def _load_function(target: str) -> object:
    import importlib.util

    from pyasc.jit import HybridFunction, hybrid

    path, _, name = target.rpartition(":")
    if not path or not name:
        raise UsageError(f"expected FILE.py:NAME, got {target!r}")
    spec = importlib.util.spec_from_file_location(f"pyasc_compile_{Path(path).stem}", path)
    if spec is None or spec.loader is None or not Path(path).is_file():
        raise UsageError(f"cannot read {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None:
        raise UsageError(f"{path} has no function {name!r}")
    return fn if isinstance(fn, HybridFunction) else hybrid(fn)


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


__all__ = ["EMITTERS", "cache", "cache_parser", "compile_", "compile_parser", "opt",
           "opt_parser", "parse_arg"]
