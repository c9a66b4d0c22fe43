"""An ``AscendOperator``'s ``compute`` and the methods it calls, as ``@hybrid`` bodies.

``compute(self, ...)`` is compiled like a ``@hybrid`` function whose parameters are the
instance attributes it reads (``self.<name>``, directly or in a helper method) followed
by its own parameters.  :func:`rewrite_operator` rewrites the parsed methods once per
class; node positions are kept, so every error still points at the user's line, and
the source text (what cache keys cover) is the file's:

* ``self.<m>``, where ``m`` is a method of the class (a ``def``, a ``staticmethod``, a
  ``@hybrid`` function in the class body), becomes a name bound to a callee
  (:class:`MethodCallee`, or the ``@hybrid`` function) that calls inline where it is
  called; a ``def`` method is rewritten like ``compute``, without its ``self``;
* any other ``self.<name>`` becomes a name: a parameter of ``compute`` that every
  method shares (``Callee.shared``).  The caller (``pyasc.jit.operator``) passes the
  instance's value: an array (state: writes land in the instance's array) or a
  compile-time constant;
* ``self.<name> op= v`` is an augmented assignment of that name (in place on an array,
  as numpy; the caller refuses it on a constant, which Python would rebind);
* rebinding ``self.<name> = v``, a classmethod and ``self`` used other than as
  ``self.<attribute>`` are refused (E50010) at their line.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FunctionType

from pyasc.errors import PyascError, UnsupportedSyntaxError
from pyasc.frontend.callee import Callee
from pyasc.frontend.source import SourceInfo

ReadSource = Callable[[FunctionType], SourceInfo]
STATE_HINT = "write into the array instead (self.name[...] = value), or return the value"


@dataclass
class AttributeRead:
    """A data attribute the methods read: its parameter and where it is first used."""

    attr: str
    param: str
    src: SourceInfo
    node: ast.AST
    augmented: ast.AST | None = None  # the first ``self.<attr> op= ...``

    def error(self, cls: type[PyascError], message: str, hint: str | None = None,
              node: ast.AST | None = None) -> PyascError:
        """A coded error located at the first read (or at ``node``)."""
        return self.src.error(cls, message, node or self.node, hint)


@dataclass
class OperatorMethods:
    """``compute`` rewritten, the attributes it reads and the callees it may call."""

    compute: SourceInfo
    attributes: dict[str, AttributeRead] = field(default_factory=dict)
    callees: dict[str, Callee] = field(default_factory=dict)  # by the name bound
    methods: dict[str, AttributeRead] = field(default_factory=dict)  # first uses


class MethodCallee(Callee):
    """A helper method of an operator, called inline (its ``self`` removed)."""

    def __init__(self, fn: FunctionType, src: SourceInfo, signature: inspect.Signature,
                 scope: OperatorMethods) -> None:
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__wrapped__ = fn
        self.__signature__ = signature
        self._src = src
        self._scope = scope

    def __repr__(self) -> str:
        return f"<operator method {self.__qualname__}>"

    @property
    def shared(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset(a.param for a in self._scope.attributes.values())

    def source_info(self) -> SourceInfo:
        return self._src

    def key_source(self) -> str:
        return self._src.text

    def bindings(self) -> dict[str, object]:
        return dict(self._scope.callees)


@dataclass
class _Member:
    """What ``self.<attr>`` names on the class: a method to inline, or data."""

    kind: str  # "method" (a def taking self), "static" (a def), "callee", "data"
    value: object = None


def class_member(cls: type, attr: str) -> _Member:
    """How ``self.<attr>`` is compiled, from the class (instances hold data only)."""
    value = inspect.getattr_static(cls, attr, None)
    if isinstance(value, staticmethod):
        inner = value.__func__
        return _Member("callee", inner) if isinstance(inner, Callee) else \
            _Member("static", inner) if isinstance(inner, FunctionType) else _Member("data")
    if isinstance(value, Callee):
        return _Member("callee", value)
    if isinstance(value, FunctionType):
        return _Member("method", value)
    if isinstance(value, classmethod):
        return _Member("classmethod", value)
    return _Member("data")


def _self_attributes(tree: ast.FunctionDef, self_name: str | None
                     ) -> list[ast.Attribute]:
    if self_name is None:
        return []
    return [n for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == self_name]


def _self_name(fn: FunctionType, src: SourceInfo) -> str:
    args = src.tree.args.posonlyargs + src.tree.args.args
    if not args:
        raise src.error(UnsupportedSyntaxError, f"method '{fn.__name__}' takes no "
                        "'self' argument", src.tree,
                        hint="define it as 'def name(self, ...)' or as a @staticmethod")
    return args[0].arg


@dataclass
class _Found:
    """A method reached from ``compute``: its function, source and ``self`` name."""

    fn: FunctionType
    src: SourceInfo
    self_name: str | None


def _discover(cls: type, compute: FunctionType, read: ReadSource
              ) -> tuple[dict[str, _Found], dict[str, _Member]]:
    """Every method reachable from ``compute`` (by attribute; compute under ``""``) and
    what each ``self.<attr>`` they use names."""
    src = read(compute)
    found = {"": _Found(compute, src, _self_name(compute, src))}
    members: dict[str, _Member] = {}
    todo = [""]
    while todo:
        item = found[todo.pop()]
        for node in _self_attributes(item.src.tree, item.self_name):
            if node.attr in members:
                continue
            member = members[node.attr] = class_member(cls, node.attr)
            if member.kind == "classmethod":
                raise item.src.error(UnsupportedSyntaxError, f"'{node.attr}' is a "
                                     "classmethod, which compute cannot call", node,
                                     hint="make it a method or a @staticmethod")
            if member.kind in ("method", "static"):
                fn: FunctionType = member.value  # type: ignore[assignment]
                msrc = read(fn)
                own = _self_name(fn, msrc) if member.kind == "method" else None
                found[node.attr] = _Found(fn, msrc, own)
                todo.append(node.attr)
    return found, members


def _prefix(found: dict[str, _Found], attrs: list[str]) -> str:
    """``self_``, lengthened until no generated name is a name the methods use."""
    used = {n.id for f in found.values() for n in ast.walk(f.src.tree)
            if isinstance(n, ast.Name)}
    used |= {a.arg for f in found.values() for a in ast.walk(f.src.tree)
             if isinstance(a, ast.arg)}
    prefix = "self_"
    while any(prefix + a in used for a in attrs):
        prefix += "_"
    return prefix


def rewrite_operator(cls: type, compute: FunctionType, read: ReadSource) -> OperatorMethods:
    """Rewrite ``compute`` and the methods it reaches (``read``: a function's parsed
    source); raises located coded errors for what cannot be compiled."""
    found, members = _discover(cls, compute, read)
    prefix = _prefix(found, list(members))
    names = {attr: prefix + attr for attr in members}
    result = OperatorMethods(compute=found[""].src)
    trees = {key: _Rewriter(item, names, members, result).rewrite()
             for key, item in found.items()}
    result.compute = dataclasses.replace(found[""].src, tree=trees[""])
    for attr, member in members.items():
        if member.kind == "callee":
            result.callees[names[attr]] = member.value  # type: ignore[assignment]
        elif member.kind in ("method", "static"):
            item = found[attr]
            params = list(inspect.signature(item.fn).parameters.values())
            sig = inspect.Signature(params[1:] if member.kind == "method" else params)
            src = dataclasses.replace(item.src, tree=trees[attr])
            result.callees[names[attr]] = MethodCallee(item.fn, src, sig, result)
    return result


class _Rewriter(ast.NodeTransformer):
    """``self.<attr>`` -> a name, in a copy of one method's tree."""

    def __init__(self, item: _Found, names: dict[str, str], members: dict[str, _Member],
                 result: OperatorMethods) -> None:
        self.item = item
        self.names = names
        self.members = members
        self.result = result

    def rewrite(self) -> ast.FunctionDef:
        tree = copy.deepcopy(self.item.src.tree)
        tree.decorator_list = []
        if self.item.self_name is not None:  # ``self`` is not a parameter any more
            args = tree.args
            if args.posonlyargs:
                args.posonlyargs = args.posonlyargs[1:]
            else:
                args.args = args.args[1:]
        tree.body = [self.visit(s) for s in tree.body]
        return tree

    def _is_self(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == self.item.self_name

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:  # noqa: N802 - ast API
        if not self._is_self(node.value):
            return self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            raise self.item.src.error(
                UnsupportedSyntaxError, f"compute cannot rebind 'self.{node.attr}': the "
                "operator's attributes are its state and constants", node, hint=STATE_HINT)
        self._record(node)
        return ast.copy_location(ast.Name(self.names[node.attr], ast.Load()), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:  # noqa: N802 - ast API
        target = node.target
        if isinstance(target, ast.Attribute) and self._is_self(target.value):
            read = self._record(target)
            if read is not None and read.augmented is None:
                read.augmented = target
            node.target = ast.copy_location(ast.Name(self.names[target.attr], ast.Store()),
                                            target)
            node.value = self.visit(node.value)
            return node
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:  # noqa: N802 - ast API
        if self._is_self(node):
            raise self.item.src.error(
                UnsupportedSyntaxError, f"'{node.id}' can only be used as "
                f"'{node.id}.<attribute>' in a compiled method", node,
                hint="read the attributes you need (self.name) and pass those")
        return node

    def _record(self, node: ast.Attribute) -> AttributeRead | None:
        """Note an attribute's first use (methods are bound, data are parameters)."""
        data = self.members[node.attr].kind == "data"
        reads = self.result.attributes if data else self.result.methods
        if node.attr not in reads:
            reads[node.attr] = AttributeRead(node.attr, self.names[node.attr],
                                             self.item.src, node)
        return reads[node.attr] if data else None
