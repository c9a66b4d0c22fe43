"""Parse the generic IR text back into ops, using the lark grammar in ``grammar.lark``.

``parse_module(text)`` returns the ``builtin.module`` op; ``parse_op`` parses any single
top-level op.  Value names are scoped per region: a region sees its ancestors' names, a
name may not be defined twice in one scope, and every use must name a definition that
appears earlier in the text.  Errors raise :class:`pyasc.errors.IRParseError` with the
line and column in the IR text.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources

import lark
import numpy as np

from pyasc.errors import IRParseError
from pyasc.ir.core import (
    OP_REGISTRY,
    UNKNOWN_LOC,
    Block,
    DenseArray,
    Location,
    Operation,
    Region,
    Value,
)
from pyasc.ir.types import (
    DYN,
    SCALAR_TYPES,
    FunctionType,
    MemRefType,
    ShapedType,
    TensorType,
    Type,
)

_SHAPED_RE = re.compile(r"(tensor|memref)<((?:\?x|[0-9]+x)*)([a-z0-9]+)(?:, strided<\[(.*)\]>)?>")


@lru_cache(maxsize=1)
def _lark() -> lark.Lark:
    grammar = resources.files("pyasc.ir").joinpath("grammar.lark").read_text()
    # no propagate_positions: errors locate tokens (their own line and column), never a
    # tree's meta, whose upkeep was a third of the parse time
    return lark.Lark(grammar, parser="lalr", maybe_placeholders=True)


def parse_type(text: str) -> Type:
    """Parse a type spelled as in the IR (``f32``, ``tensor<4x?xf32>``...)."""
    text = text.strip()
    if text in SCALAR_TYPES:
        return SCALAR_TYPES[text]
    m = _SHAPED_RE.fullmatch(text)
    if not m:
        raise IRParseError(f"invalid type '{text}'")
    kind, dims, elem, strides = m.groups()
    shape = tuple(DYN if d == "?" else int(d) for d in dims.split("x")[:-1])
    element = SCALAR_TYPES[elem]
    if kind == "tensor":
        return TensorType(shape, element)
    stride_t = None
    if strides is not None:
        stride_t = tuple(DYN if s.strip() == "?" else int(s) for s in strides.split(",")
                         if s.strip())
    return MemRefType(shape, element, stride_t)


class _Scope:
    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.values: dict[str, Value] = {}

    def lookup(self, name: str) -> Value | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            scope = scope.parent
        return None


class _Builder:
    """Walks the lark tree top-down so value definitions precede their uses."""

    def __init__(self, text: str, filename: str = "<ir>") -> None:
        self.lines = text.splitlines()
        self.filename = filename

    def op(self, tree: lark.Tree, scope: _Scope) -> Operation:
        names_t, name_tok, values_t, regions_t, attrs_t, ftype_t, loc_t = tree.children
        op_name = json.loads(name_tok)
        cls = OP_REGISTRY.get(op_name)
        if cls is None:
            raise self.err(f"unknown op '{op_name}'", name_tok)
        operands = [self.use(tok, scope) for tok in (values_t.children if values_t else [])]
        ftype = self.type(ftype_t)
        assert isinstance(ftype, FunctionType)
        if len(ftype.inputs) != len(operands):
            raise self.err(f"'{op_name}' has {len(operands)} operands but its type lists "
                       f"{len(ftype.inputs)}", name_tok)
        for v, t, tok in zip(operands, ftype.inputs, values_t.children if values_t else [],
                             strict=False):
            if v.type != t:
                raise self.err(f"use of {tok} with type {t}, but it was defined as {v.type}", tok)
        regions = [self.region(r, scope) for r in (regions_t.children if regions_t else [])]
        attributes = self.attrs(attrs_t)
        op = cls.__new__(cls)
        Operation.__init__(op, operands, ftype.results, attributes, regions, self.loc(loc_t))
        result_toks = names_t.children if names_t else []
        if len(result_toks) != len(op.result_values):
            raise self.err(f"'{op_name}' defines {len(result_toks)} names for "
                       f"{len(op.result_values)} results", name_tok)
        for tok, res in zip(result_toks, op.result_values, strict=True):
            self.define(tok, res, scope)
        return op

    def region(self, tree: lark.Tree, scope: _Scope) -> Region:
        inner = _Scope(scope)
        region = Region()
        entry, *labeled = tree.children
        if entry.children or not labeled:
            block = region.add_block(Block())
            for op_t in entry.children:
                block.append(self.op(op_t, inner))
        for bt in labeled:
            label, *rest = bt.children
            args = [c for c in rest if isinstance(c, lark.Tree) and c.data == "block_arg"]
            ops = [c for c in rest if isinstance(c, lark.Tree) and c.data == "op"]
            block = region.add_block(Block())
            for a in args:
                tok, type_t = a.children
                self.define(tok, block.add_arg(self.type(type_t), _hint(tok)), inner)
            for op_t in ops:
                block.append(self.op(op_t, inner))
        return region

    def define(self, tok: lark.Token, value: Value, scope: _Scope) -> None:
        if tok in scope.values:
            raise self.err(f"redefinition of {tok}", tok)
        scope.values[str(tok)] = value
        value.name_hint = _hint(tok)

    def use(self, tok: lark.Token, scope: _Scope) -> Value:
        v = scope.lookup(str(tok))
        if v is None:
            raise self.err(f"use of undefined value {tok}", tok)
        return v

    def type(self, tree: lark.Tree | lark.Token) -> Type:
        kind = tree.data
        if kind in ("scalar_type", "tensor_type", "memref_type"):
            return parse_type(str(tree.children[0]))
        if kind == "func_type":
            *ins, res = tree.children
            return FunctionType(tuple(self.type(t) for t in ins if t is not None),
                                self.result_types(res))
        raise AssertionError(kind)

    def result_types(self, tree: lark.Tree) -> tuple[Type, ...]:
        if tree.data == "single_result":
            return (self.type(tree.children[0]),)
        return tuple(self.type(t) for t in tree.children if t is not None)

    def attrs(self, tree: lark.Tree | None) -> dict:
        out: dict = {}
        for entry in (tree.children if tree else []):
            if entry is None:
                continue
            key, val = entry.children
            if str(key) in out:
                raise self.err(f"duplicate attribute '{key}'", key)
            out[str(key)] = self.attr(val)
        return out

    def attr(self, tree: lark.Tree) -> object:
        kind = tree.data
        if kind == "attr_int":
            return int(tree.children[0])
        if kind == "attr_float":
            return float(str(tree.children[0]))
        if kind == "attr_str":
            return json.loads(tree.children[0])
        if kind in ("attr_true", "attr_false"):
            return kind == "attr_true"
        if kind == "attr_list":
            return tuple(self.attr(c) for c in tree.children if c is not None)
        if kind == "attr_type":
            return self.type(tree.children[0])
        if kind == "attr_dense":
            return self.dense(tree)
        raise AssertionError(kind)

    def dense(self, tree: lark.Tree) -> DenseArray:
        values, type_t = tree.children
        t = self.type(type_t)
        if not isinstance(t, ShapedType):
            raise self.err("dense<...> needs a tensor type", _first_token(tree))
        flat = self.attr(values)
        flat = flat if isinstance(flat, tuple) else (flat,)
        try:
            arr = np.array(flat, dtype=t.element.to_numpy()).reshape(t.shape)
        except (ValueError, TypeError) as exc:
            raise self.err(f"dense<...> does not fit {t}: {exc}", _first_token(tree)) from None
        return DenseArray(arr, t)

    def err(self, message: str, tok: lark.Token | None) -> IRParseError:
        line = getattr(tok, "line", None)
        col = getattr(tok, "column", None)
        text = self.lines[line - 1] if line and 0 < line <= len(self.lines) else None
        return IRParseError(message, filename=self.filename, lineno=line,
                            col_offset=(col - 1) if col else None, source_line=text)

    def loc(self, tree: lark.Tree | None) -> Location:
        if tree is None or not tree.children or tree.children[0] is None:
            return UNKNOWN_LOC
        file_t, line_t, col_t = tree.children
        return Location(json.loads(file_t), int(line_t), int(col_t))


def _hint(tok: lark.Token) -> str | None:
    name = str(tok)[1:]
    return None if name.isdigit() else name


def _first_token(tree: lark.Tree) -> lark.Token | None:
    for tok in tree.scan_values(lambda t: isinstance(t, lark.Token)):
        return tok
    return None




def parse_op(text: str, filename: str = "<ir>") -> Operation:
    """Parse one top-level op (with everything nested in it) from generic IR text;
    errors name ``filename`` (the file the text came from)."""
    import pyasc.ir.ops  # noqa: F401  - registers the op classes

    try:
        tree = _lark().parse(text)
    except lark.exceptions.UnexpectedInput as exc:
        lines = text.splitlines()
        line = lines[exc.line - 1] if 0 < exc.line <= len(lines) else None
        raise IRParseError(f"unexpected input: {str(exc).splitlines()[0]}", filename=filename,
                           lineno=exc.line, col_offset=exc.column - 1,
                           source_line=line) from None
    except lark.exceptions.VisitError as exc:  # pragma: no cover - defensive
        raise IRParseError(str(exc.orig_exc)) from None
    return _Builder(text, filename).op(tree.children[0], _Scope(None))


def parse_module(text: str, verify: bool = True, filename: str = "<ir>"):
    """Parse a ``builtin.module`` from IR text and (by default) verify it; errors name
    ``filename``."""
    from pyasc.ir.ops.func import ModuleOp
    from pyasc.ir.verifier import verify_module

    op = parse_op(text, filename)
    if not isinstance(op, ModuleOp):
        raise IRParseError(f"expected a builtin.module, got {op.name}", filename=filename)
    if verify:
        verify_module(op)
    return op
