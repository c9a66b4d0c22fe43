"""Reading a function's source and mapping AST nodes back to the user's file.

``inspect.getsourcelines`` finds the source of functions defined in files and, through
``linecache``, in notebook cells and ``exec``'d code whose text was registered there.
The text is parsed with ``ast``; every node is then mapped to the real file, the absolute
line (offset by the line where the source starts) and the real column.

An indented source (a method, or a function defined inside a block) is not dedented:
it is parsed behind an ``if 1:`` header line, so columns stay exactly the file's
columns even when a multi-line string is less indented than the code around it.
``ast`` columns are UTF-8 byte offsets; :meth:`SourceInfo.char_col` turns them into
character offsets, which is what the caret under the source line needs.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import threading
from dataclasses import dataclass
from types import FunctionType

from pyasc.errors import PyascError, UnsupportedSyntaxError
from pyasc.ir.core import Location


@dataclass
class SourceInfo:
    """A parsed function and the mapping of its nodes to file positions."""

    filename: str
    first_line: int  # file line of the first source line (1-based)
    lines: list[str]  # the source lines as in the file
    tree: ast.FunctionDef
    text: str
    wrapped: bool  # parsed behind an ``if 1:`` header (one extra line at the top)

    def lineno(self, node: ast.AST) -> int:
        """The absolute file line of ``node``."""
        return node.lineno + self.first_line - 1 - int(self.wrapped)  # type: ignore[attr-defined]

    def line_text(self, node: ast.AST) -> str:
        idx = node.lineno - 1 - int(self.wrapped)  # type: ignore[attr-defined]
        return self.lines[idx].rstrip("\r\n") if 0 <= idx < len(self.lines) else ""

    def char_col(self, node: ast.AST, byte_col: int | None = None) -> int:
        """The 0-based character column of ``node`` (or of ``byte_col`` on its line)."""
        col = node.col_offset if byte_col is None else byte_col  # type: ignore[attr-defined]
        raw = self.line_text(node).encode("utf-8")
        return len(raw[:col].decode("utf-8", errors="replace"))

    def location(self, node: ast.AST) -> Location:
        """The IR location of ``node`` (1-based column, MLIR convention)."""
        return Location(self.filename, self.lineno(node), self.char_col(node) + 1)

    def locate(self, err: PyascError, node: ast.AST) -> PyascError:
        """Attach ``node``'s position to ``err`` unless it already has one."""
        end = None
        if getattr(node, "end_lineno", None) == getattr(node, "lineno", None):
            end = self.char_col(node, node.end_col_offset)  # type: ignore[attr-defined]
        return err.with_location(self.filename, self.lineno(node), self.char_col(node),
                                 end, self.line_text(node))

    def error(self, cls: type[PyascError], message: str, node: ast.AST,
              hint: str | None = None) -> PyascError:
        """A new error of class ``cls`` located at ``node``."""
        return self.locate(cls(message, hint=hint), node)


def _function_def(module: ast.Module, wrapped: bool) -> ast.FunctionDef:
    body = module.body[0].body if wrapped else module.body  # type: ignore[attr-defined]
    node = body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TypeError("source is not a plain function definition")
    return node


_NO_SOURCE: dict[str, str] = {
    "<stdin>": "at the interactive prompt or in a script piped to `python -`",
    "<string>": "by `python -c` or by exec() of a string",
}
"""Where functions whose source Python does not keep come from (by file name)."""

NO_SOURCE_HINT = ("pyasc compiles the function from its source: define it in a file or a "
                  "notebook cell (for exec'd code, register the source in linecache)")


def load_source(fn: FunctionType) -> SourceInfo:
    """Parse ``fn``'s source; raise a coded error when it cannot be read or parsed."""
    code = fn.__code__
    filename = code.co_filename
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        where = _NO_SOURCE.get(filename)
        detail = f": it was defined {where}, and Python keeps no source for it" \
            if where else ""
        raise UnsupportedSyntaxError(
            f"cannot read the source code of '{fn.__name__}'{detail}",
            filename=filename, lineno=code.co_firstlineno, col_offset=0,
            hint=NO_SOURCE_HINT) from None
    text = "".join(lines)
    wrapped = bool(lines) and lines[0][:1] in (" ", "\t")
    try:
        module = parse_python("if 1:\n" + text if wrapped else text, filename)
        tree = _function_def(module, wrapped)
    except (SyntaxError, TypeError, IndexError):
        raise UnsupportedSyntaxError(
            f"the source code found for '{fn.__name__}' is not its 'def' statement "
            "(was the file changed after it was imported?)",
            filename=filename, lineno=first_line or code.co_firstlineno, col_offset=0,
            hint="write the operator as a 'def' function in a file or notebook cell, "
                 "and re-import it after editing") from None
    return SourceInfo(filename, max(first_line, 1), lines, tree, text, wrapped)


_PARSE_LOCK = threading.Lock()


def parse_python(text: str, filename: str) -> ast.Module:
    """``ast.parse(text)``, one thread at a time in this process: CPython 3.11 (before
    gh-113035) keeps the AST constructor's recursion depth in interpreter-wide state,
    so two threads parsing at once (a garbage collection running a finalizer lets the
    other one in) fail with ``SystemError: AST constructor recursion depth mismatch``."""
    with _PARSE_LOCK:
        return ast.parse(text, filename=filename)


def register_source(filename: str, text: str) -> None:
    """Make ``text`` findable by ``inspect`` for code compiled under ``filename``."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)

