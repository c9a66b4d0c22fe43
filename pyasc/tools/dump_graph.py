"""``ascend-dump-graph``: draw the data-flow graph of an IR file.

::

    ascend-dump-graph FILE.ir [-o OUT] [--format dot|svg|png|txt] [--function NAME]
                      [--collapse-loops]

The file (``fn.dump_ir(path, ...)``, a ``PYASC_DUMP_PATH`` stage, any printed module) is
parsed with the IR parser; its functions (or ``--function NAME``) become one graph
(``pyasc.tools.graph``), written as DOT, rendered to SVG/PNG by Graphviz's ``dot``
program, or printed as an indented outline (``txt``).  The format defaults to the
suffix of ``-o``, else ``dot``; without ``-o``, DOT and text go to standard output and
SVG/PNG beside the input (``FILE.svg``).

Exit status: 0 done; 1 the picture could not be rendered (``dot`` missing or failing:
the DOT file is written instead and the message says where); 2 bad input (a file that
cannot be read or written, a malformed IR file: the parser's located error, an unknown
function), one message on standard error and no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pyasc.errors import PyascError
from pyasc.tools.graph_render import (
    FORMATS,
    RenderUnavailable,
    outline,
    render,
    to_dot,
)

PROG = "ascend-dump-graph"


class UsageError(Exception):
    """Bad input: printed as one message, exit status 2."""


def parser() -> argparse.ArgumentParser:
    """The command line of ``ascend-dump-graph``."""
    p = argparse.ArgumentParser(prog=PROG, description="Draw the data-flow graph of a "
                                "pyasc IR file: ops as nodes (op name, result types, "
                                "Python line), loops and fused groups as boxes.")
    p.add_argument("file", type=Path, help="an IR file (fn.dump_ir, PYASC_DUMP_PATH)")
    p.add_argument("-o", "--output", type=Path, help="where to write (default: standard "
                   "output for dot and txt, FILE.<format> for svg and png)")
    p.add_argument("--format", choices=FORMATS, help="default: the suffix of -o, else dot")
    p.add_argument("--function", metavar="NAME", help="draw only this function")
    p.add_argument("--collapse-loops", action="store_true",
                   help="draw each loop as one node")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns its exit status (see the module docstring)."""
    args = parser().parse_args(argv)
    try:
        return _run(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except PyascError as exc:  # the parser's or verifier's located message
        print(exc.render(), file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    fmt = args.format or _suffix_format(args.output) or "dot"
    funcs = _functions(load_module(args.file), args.function)
    if fmt == "txt":
        return _emit(outline(funcs, args.collapse_loops), args.output)
    from pyasc.tools.graph import function_graph

    dot = to_dot(function_graph(funcs, args.collapse_loops), title=args.file.name)
    if fmt == "dot":
        return _emit(dot.source, args.output)
    out = args.output or args.file.with_suffix(f".{fmt}")
    try:
        picture = render(dot, fmt)
    except RenderUnavailable as exc:
        fallback = out.with_suffix(".dot")
        _write(fallback, dot.source)
        print(f"{PROG}: {exc}, so no {fmt.upper()}: wrote the graph as DOT to {fallback} "
              f"(install Graphviz, e.g. `apt-get install graphviz`, then run "
              f"`dot -T{fmt} {fallback} -o {out}`)", file=sys.stderr)
        return 1
    _write(out, picture)
    print(f"wrote {out}")
    return 0


def load_module(path: Path):
    """The verified module of the IR file at ``path`` (errors located in that file)."""
    from pyasc.ir.parser import parse_module

    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {_reason(exc)}") from None
    if '"ascend.' in text:  # the AscendC host program's ops are registered by the backend
        import pyasc.backend.ascendc.ops  # noqa: F401
    return parse_module(text, filename=str(path))


def _functions(module, name: str | None) -> list:
    funcs = list(module.functions)
    if name is None:
        if not funcs:
            raise UsageError("the module has no function to draw")
        return funcs
    chosen = [f for f in funcs if f.sym_name == name]
    if not chosen:
        known = ", ".join(f.sym_name for f in funcs) or "none"
        raise UsageError(f"no function named {name!r} in the file (it has: {known})")
    return chosen


def _suffix_format(output: Path | None) -> str | None:
    suffix = output.suffix.lstrip(".").lower() if output is not None else ""
    return {"gv": "dot", "text": "txt"}.get(suffix, suffix) if suffix in (
        *FORMATS, "gv", "text") else None


def _emit(text: str, output: Path | None) -> int:
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        _write(output, text)
    return 0


def _write(path: Path, data: str | bytes) -> None:
    try:
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or str(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
