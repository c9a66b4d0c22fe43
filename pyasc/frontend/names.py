"""Syntactic name analysis done once per function before lowering it.

* :func:`storage_names`: the names that need a mutable buffer when bound to a new array:
  targets of subscript assignment (``r[i] = v``), of augmented assignment (``a += b``),
  of ``out=`` arguments and of in-place methods (``a.sort()``, ``a.fill(v)``), closed
  under aliasing: ``b = a``, ``b = a[1:3]``,
  ``b = a.T``, ``b = a.reshape(...)``, ``b = a if c else d``, ``b = f(a)`` (an inlined
  callee may return its argument), ``p = (a, d)`` and ``for b in a`` make ``a`` and
  ``b`` storage names together.  Other names bound to arrays hold immutable tensor
  values.
* :func:`kept_names` (returned, or passed to a callee) and :func:`view_choices` (the
  conditional expressions whose array must stay the view it is on a path): where a
  join keeps a buffer (``merge.KEEP``).
* :func:`local_names`: every name the function assigns (Python's rule for locals),
  ``def`` names included.
* :class:`Loads` / :func:`loads_outside`: names read outside a given statement (what a
  fusion scope must yield).
* :func:`jumps`: whether a loop body contains ``break`` (of that loop) or ``return``.
* :func:`assigned_before_jumps`: the names a loop body assigns on every path to each of
  its ``break``/``continue`` statements (a must-analysis: a branch, or a nested loop
  that may run zero times, assigns nothing for sure).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Container, Iterable, Iterator
from itertools import chain

# Functions and methods that return a view of (or the same object as) their argument.
ALIAS_CALLS = frozenset({
    "transpose", "reshape", "ravel", "squeeze", "expand_dims", "asarray", "swapaxes",
    "ascontiguousarray", "broadcast_to", "view", "moveaxis",
})

# Array methods that modify the array they are called on.
IN_PLACE_METHODS = frozenset({"sort", "fill"})


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _walk(node: ast.AST, nested: bool = False) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter nested functions, lambdas or classes (unless
    ``nested``: what a local function does to the names it shares with its definer)."""
    todo = list(ast.iter_child_nodes(node))
    while todo:
        n = todo.pop()
        yield n
        if nested or not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))


def root_names(node: ast.AST) -> set[str]:
    """Every name an expression's value may be (a view of): ``a`` for ``a[1:].T``,
    both sides of ``a if c else b`` and of ``a or b``, the items of a tuple or list
    display (``p = (x[1:], y)``: unpacking ``p`` later gives views of ``x``)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.IfExp):
        return root_names(node.body) | root_names(node.orelse)
    if isinstance(node, ast.BoolOp | ast.Tuple | ast.List):
        items = node.values if isinstance(node, ast.BoolOp) else node.elts
        return set().union(*(root_names(v) for v in items))
    if _calls_function(node):  # an inlined callee may return (a view of) an argument
        return set().union(*(root_names(a) for a in _call_args(node)))  # type: ignore[arg-type]
    inner = _view_source(node)
    return root_names(inner) if inner is not None else set()


def _calls_function(node: ast.AST) -> bool:
    """A call of a function by name, or of an operator's helper method (``self.f``):
    maybe a ``@hybrid`` callee (numpy's functions are ``np.<name>``)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return isinstance(f, ast.Name) or isinstance(f, ast.Attribute) and \
        isinstance(f.value, ast.Name) and f.value.id == "self"


def _call_args(node: ast.Call) -> list[ast.AST]:
    return [*node.args, *(kw.value for kw in node.keywords)]


def _view_source(node: ast.AST) -> ast.AST | None:
    """The operand a view expression (a subscript, ``.T``, ``reshape``...) is of."""
    if isinstance(node, ast.Subscript | ast.Starred):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return node.value
    if isinstance(node, ast.Call) and _call_name(node) in ALIAS_CALLS:
        if isinstance(node.func, ast.Attribute) and not _is_module(node.func.value):
            return node.func.value
        return node.args[0] if node.args else None
    return None


def _call_name(node: ast.Call) -> str | None:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) \
        else None


def _is_module(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("np", "numpy")


def _pairs(target: ast.AST, value: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    """(target, value) pairs of an assignment, matching tuple displays element-wise."""
    if isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.IfExp):
        yield from _pairs(target, value.body)
        yield from _pairs(target, value.orelse)
    elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List) \
            and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts, strict=True):
            yield from _pairs(t, v)
    else:
        yield target, value


def storage_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names that must hold a mutable buffer when bound to a fresh array."""
    direct: set[str] = set()
    aliases: list[tuple[str, str]] = []
    # writes inside a local function are writes to the definer's arrays it reads (a
    # name of its own written there costs a buffer here at worst)
    for node in _walk(fn, nested=True):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for t, v in _pairs(target, node.value):
                    _classify(t, v, direct, aliases)
        elif isinstance(node, ast.For):  # ``for row in x``: row is a view of x
            aliases.extend((t, src) for t in _target_names(node.target)
                           for src in root_names(node.iter))
        elif isinstance(node, ast.AugAssign):
            direct.update(root_names(node.target))
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in IN_PLACE_METHODS and \
                    not _is_module(f.value):
                direct.update(root_names(f.value))
            for kw in node.keywords:
                if kw.arg == "out":
                    direct.update(root_names(kw.value))
    return frozenset(_close(direct, aliases))


def kept_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Names whose identity is seen beyond the function body: returned ones (a returned
    view shares the argument's memory, as in numpy) and arguments of calls of other
    functions (an inlined ``@hybrid`` callee may write into them)."""
    out: set[str] = set()
    for node in _walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            out |= root_names(node.value)
        elif _calls_function(node):
            out |= root_names(node)
    return frozenset(out)


def view_choices(fn: ast.FunctionDef, storage: Container[str]) -> frozenset[int]:
    """The ``id``\\ s of the conditional expressions whose array must stay the buffer (a
    parameter, a view) it is on a path: the value bound to a name of ``storage``
    (directly, as a tuple display's item or under a view: ``r = (t if c else u)[1:]``),
    or returned."""
    out: set[int] = set()
    for node in _walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _choices(target, node.value, storage, out)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _choices(node.target, node.value, storage, out)
        elif isinstance(node, ast.Return) and node.value is not None:
            _choices(None, node.value, storage, out)
    return frozenset(out)


def _choices(target: ast.AST | None, value: ast.AST, storage: Container[str],
             out: set[int]) -> None:
    """:func:`view_choices` of one target (``None``: a returned value) and its value."""
    if isinstance(value, ast.IfExp):
        if target is None or any(n in storage for n in _target_names(target)):
            out.add(id(value))
        _choices(target, value.body, storage, out)
        _choices(target, value.orelse, storage, out)
    elif isinstance(value, ast.Tuple | ast.List):
        items = target.elts if isinstance(target, ast.Tuple | ast.List) and \
            len(target.elts) == len(value.elts) else [target] * len(value.elts)
        for t, v in zip(items, value.elts, strict=True):
            _choices(t, v, storage, out)
    elif (inner := _view_source(value)) is not None:
        _choices(target, inner, storage, out)


def _target_names(target: ast.AST) -> list[str]:
    """The names an assignment target binds (``a`` and ``b`` of ``a, (b, *c)``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return [n for t in target.elts for n in _target_names(t)]
    return []


def _classify(target: ast.AST, value: ast.AST, direct: set[str],
              aliases: list[tuple[str, str]]) -> None:
    if isinstance(target, ast.Subscript):
        direct.update(root_names(target))
    else:  # a name, or a tuple unpacked from a value that is not a display
        aliases.extend((t, src) for t in _target_names(target) for src in root_names(value))


def _close(names: set[str], aliases: list[tuple[str, str]]) -> set[str]:
    changed = True
    while changed:
        changed = False
        for a, b in aliases:
            if (a in names) != (b in names):
                names.update((a, b))
                changed = True
    return names


def local_names(fn: ast.FunctionDef) -> frozenset[str]:
    """Parameters and every name the function binds."""
    args = fn.args
    params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    stores = [n.id for n in _walk(fn) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)]
    defs = [n.name for n in _walk(fn) if isinstance(n, ast.FunctionDef)]
    return frozenset(params + stores + defs)


class Loads:
    """How often ``fn`` reads each name (counted once per function): then the names
    read outside a statement cost a walk of that statement only, not of the function
    (asked per loop and per ``fusion_scope``, that was O(n^2) for many loops)."""

    def __init__(self, fn: ast.FunctionDef) -> None:
        self.fn = fn
        self.total = _load_counts(_walk(fn))

    def outside(self, inside: ast.AST) -> Container[str]:
        """Names read anywhere in the function except within ``inside``."""
        # the same walk as the function's count (nested functions are not entered)
        return _Outside(self.total, _load_counts(chain([inside], _walk(inside))))


class _Outside:
    def __init__(self, total: Counter[str], inside: Counter[str]) -> None:
        self.total, self.inside = total, inside

    def __contains__(self, name: object) -> bool:
        return self.total.get(name, 0) > self.inside.get(name, 0)  # type: ignore[arg-type]


def _load_counts(nodes: Iterable[ast.AST]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            counts[n.id] += 1
        elif isinstance(n, ast.FunctionDef | ast.Lambda):  # names a local function may
            counts.update(_load_counts(_walk(n, nested=True)))  # read from its definer
    return counts


def loads_outside(fn: ast.FunctionDef, inside: ast.AST) -> frozenset[str]:
    """Names read anywhere in ``fn`` except within ``inside`` (one-off: a
    :class:`Loads` answers many such questions about one function)."""
    loads = Loads(fn)
    outside = loads.outside(inside)
    return frozenset(n for n in loads.total if n in outside)


def jumps(body: Iterable[ast.stmt]) -> bool:
    """True if a loop with this body must be able to stop early (break or return)."""
    for stmt in body:
        for node in _walk_loop(stmt):
            if isinstance(node, ast.Break | ast.Return):
                return True
    return False


def _walk_loop(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a loop body; ``break`` inside a nested loop belongs to that loop."""
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.For | ast.While) and any(child is b for b in node.body):
            yield from (n for n in ast.walk(child) if isinstance(n, ast.Return))
            continue
        yield from _walk_loop(child)


def assigned_before_jumps(body: list[ast.stmt], start: frozenset[str] = frozenset()
                          ) -> frozenset[str] | None:
    """Names assigned on every path from the start of a loop body (where ``start`` are
    assigned) to each ``break`` and ``continue`` of that loop; ``None`` if it has none."""
    walk = _MustAssign()
    walk.block(body, start)
    if not walk.at_jumps:
        return None
    return frozenset.intersection(*walk.at_jumps)


class _MustAssign:
    """Walks statements with the set of names surely assigned (``None``: unreachable)."""

    def __init__(self) -> None:
        self.at_jumps: list[frozenset[str]] = []

    def block(self, stmts: list[ast.stmt], state: frozenset[str] | None
              ) -> frozenset[str] | None:
        for st in stmts:
            if state is None:
                break
            state = self.stmt(st, state)
        return state

    def stmt(self, st: ast.stmt, state: frozenset[str]) -> frozenset[str] | None:
        if isinstance(st, ast.Break | ast.Continue):
            self.at_jumps.append(state)
            return None
        if isinstance(st, ast.Return):
            return None
        if isinstance(st, ast.If):
            return _meet(self.block(st.body, state), self.block(st.orelse, state))
        if isinstance(st, ast.With):
            return self.block(st.body, state)
        if isinstance(st, ast.For | ast.While):
            self.block(st.orelse, state)  # its body's jumps are its own; its else's ours
            return state
        if isinstance(st, ast.AnnAssign) and st.value is None:
            return state
        return state | {n.id for n in _walk(st) if isinstance(n, ast.Name)
                        and isinstance(n.ctx, ast.Store)}


def _meet(a: frozenset[str] | None, b: frozenset[str] | None) -> frozenset[str] | None:
    if a is None:
        return b
    return a if b is None else a & b
