"""The data-flow graph of an IR function, independent of how it is drawn.

:func:`function_graph` turns a ``func.func`` into a :class:`Graph`: one :class:`Node` per
op (its name, result types and Python source line), one :class:`Edge` per value an op
uses, and nested :class:`Cluster` boxes for the ops that hold regions (loops, fused
groups, fusion scopes).  ``pyasc.tools.graph_render`` draws it with Graphviz.

Choices that keep a picture legible:

* scalar ``arith.constant`` ops are not nodes: a consumer shows their values in its
  label (``arith.div(·, 256.0)``, ``·`` standing for an operand drawn as an edge);
  array constants stay nodes;
* a ``fusion.group`` is isolated: its block arguments are its operands, so the edges of
  its inputs run from the producers outside straight to the consumers inside the box;
* a loop's header node (bounds in, induction variable and carried values out) heads its
  box; the values a region yields leave from its terminator node;
* ``collapse_loops``: a loop is one node (what its body holds in the label), with edges
  from every outside value its body uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pyasc.ir.core import DenseArray, Location, Operation, Value
from pyasc.ir.printer import format_attr, value_names

LOOP_OPS = frozenset({"loop.for", "loop.while", "loop.if"})
TERMINATORS = frozenset({"loop.yield", "loop.condition", "fusion.yield", "tensor.yield"})
CLUSTER_KINDS = {"loop.for": "loop", "loop.while": "loop", "loop.if": "loop",
                 "fusion.group": "fusion", "fusion.scope": "scope"}
"""The kind of box each region op is drawn as (others: ``region``)."""
SHOWN_ATTRS = ("kind", "predicate", "axes", "keepdims", "axis", "perm")
"""Attributes short and telling enough to print in a node's label."""


@dataclass
class Node:
    """One box: ``title`` (op name and constants), ``types``, ``where`` (file:line),
    ``name`` (the printed result names) and ``kind`` (op, arg, header, yield, loop)."""

    id: str
    title: str
    types: str = ""
    where: str = ""
    name: str = ""
    kind: str = "op"


@dataclass
class Edge:
    """A value flowing from ``src`` to ``dst`` (node ids); ``count`` uses of it."""

    src: str
    dst: str
    count: int = 1


@dataclass
class Cluster:
    """A box of nodes: a function, a loop, a fused group, a region of a loop.if..."""

    id: str
    label: str
    kind: str
    nodes: list[Node] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)

    def walk(self) -> Iterator[Cluster]:
        """This cluster and every cluster inside it."""
        yield self
        for c in self.clusters:
            yield from c.walk()


@dataclass
class Graph:
    """The clusters of the drawn functions and the edges between their nodes."""

    clusters: list[Cluster] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def nodes(self) -> Iterator[Node]:
        for top in self.clusters:
            for c in top.walk():
                yield from c.nodes


def where(loc: Location) -> str:
    """``file.py:line`` of a location (``""`` when unknown)."""
    if not loc.known or loc.file is None:
        return ""
    return f"{Path(loc.file).name}:{loc.line}"


def short_attrs(op: Operation) -> str:
    """The telling attributes of ``op`` (``{axes=[1], keepdims=true}``) or ``""``."""
    shown = [f"{k}={format_attr(op.attributes[k])}" for k in SHOWN_ATTRS
             if k in op.attributes and not (k == "kind" and op.name == "fusion.group")]
    return "{" + ", ".join(shown) + "}" if shown else ""


def scalar_constant(op: Operation) -> str | None:
    """The text of a scalar ``arith.constant`` (folded into consumers), else ``None``."""
    if op.name != "arith.constant" or isinstance(op.attributes.get("value"), DenseArray):
        return None
    return format_attr(op.attributes["value"])


def count_ops(op: Operation) -> int:
    """How many ops ``op``'s regions hold, nested ones included."""
    return sum(1 + count_ops(inner) for region in op.region_list
               for block in region.blocks for inner in block.ops)


class _Builder:
    """Walks one function, giving every value the node that produces it."""

    def __init__(self, func: Operation, collapse_loops: bool, prefix: str) -> None:
        self.names = value_names(func)
        self.collapse = collapse_loops
        self.prefix = prefix
        self.source: dict[Value, str] = {}    # value -> id of the node producing it
        self.const: dict[Value, str] = {}     # scalar constants, shown in their users
        self.edges: dict[tuple[str, str], Edge] = {}
        self.count = 0

    def new_id(self) -> str:
        self.count += 1
        return f"{self.prefix}n{self.count}"

    def function(self, func: Operation) -> Cluster:
        name = func.attributes.get("sym_name", "?")
        box = Cluster(self.new_id(), f"func.func {name}   {where(func.loc)}".rstrip(), "func")
        block = func.region_list[0].blocks[0]
        for arg in block.args:
            node = Node(self.new_id(), self.names.get(arg, "%?"), str(arg.type), kind="arg")
            box.nodes.append(node)
            self.source[arg] = node.id
        self.block_ops(block.ops, box)
        return box

    def block_ops(self, ops: list[Operation], box: Cluster) -> list[Node]:
        """Add ``ops`` to ``box``; returns the terminator nodes made (yielding values)."""
        yields = []
        for op in ops:
            constant = scalar_constant(op)
            if constant is not None:
                self.const[op.result_values[0]] = constant
            elif op.region_list and not (self.collapse and op.name in LOOP_OPS):
                self.region_op(op, box)
            else:
                node = self.op_node(op, box)
                if op.name in TERMINATORS:
                    yields.append(node)
        return yields

    def op_node(self, op: Operation, box: Cluster) -> Node | None:
        """A node for an op without drawn regions (a collapsed loop included)."""
        if op.name in TERMINATORS and not op.operand_values:
            return None  # an empty yield says nothing
        kind = "loop" if op.region_list else "yield" if op.name in TERMINATORS else "op"
        node = self.make_node(op, kind)
        box.nodes.append(node)
        used = self.free_values(op) if op.region_list else op.operand_values
        self.connect(used, node.id)
        for r in op.result_values:
            self.source[r] = node.id
        return node

    def make_node(self, op: Operation, kind: str) -> Node:
        args = ", ".join(self.const.get(v, "·") for v in op.operand_values)
        title = op.name
        if kind == "loop" or any(v in self.const for v in op.operand_values):
            title += f"({args})"
        if kind == "loop":
            title += f"  [{count_ops(op)} ops inside]"
        title += (" " + short_attrs(op)) if short_attrs(op) else ""
        names = ", ".join(self.names.get(r, "%?") for r in op.result_values)
        types = ", ".join(str(r.type) for r in op.result_values)
        if kind == "yield":
            types = ", ".join(str(v.type) for v in op.operand_values)
        return Node(self.new_id(), title, types, where(op.loc), names, kind)

    def region_op(self, op: Operation, box: Cluster) -> None:
        """A loop, fused group or scope as a cluster of its own."""
        kind = CLUSTER_KINDS.get(op.name, "region")
        label = op.name + (f" [{op.attributes['kind']}]" if op.name == "fusion.group" else "")
        inner = Cluster(self.new_id(), f"{label}   {where(op.loc)}".rstrip(), kind)
        box.clusters.append(inner)
        if "isolated" in op.traits:  # block arguments are the operands, in order
            for arg, v in zip(op.region_list[0].blocks[0].args, op.operand_values,
                              strict=False):
                self.alias(arg, v)
        else:  # a header: bounds and conditions in, induction variables out
            header = self.make_node(op, "header")
            header.types = ""  # (a loop's results leave from its yield)
            header.name = ", ".join(self.names.get(a, "%?") for region in op.region_list
                                    for a in region.blocks[0].args)
            inner.nodes.append(header)
            self.connect(op.operand_values, header.id)
            for region in op.region_list:
                for arg in region.blocks[0].args:
                    self.source[arg] = header.id
        yields = self.regions(op, inner)
        self.results(op, inner, yields)

    def regions(self, op: Operation, inner: Cluster) -> list[Node]:
        if len(op.region_list) == 1:
            return self.block_ops(op.region_list[0].blocks[0].ops, inner)
        yields = []
        for name, region in zip(type(op).regions, op.region_list, strict=False):
            part = Cluster(self.new_id(), name, "part")
            inner.clusters.append(part)
            yields += self.block_ops(region.blocks[0].ops, part)
        return yields

    def results(self, op: Operation, inner: Cluster, yields: list[Node]) -> None:
        """Give ``op``'s results a producer: its one terminator, or a join of several."""
        if not op.result_values:
            return
        if len(yields) == 1:
            producer = yields[0].id
        else:
            join = Node(self.new_id(), f"{op.name} results",
                        ", ".join(str(r.type) for r in op.result_values), where(op.loc),
                        ", ".join(self.names.get(r, "%?") for r in op.result_values), "yield")
            inner.nodes.append(join)
            for y in yields:
                self.add_edge(y.id, join.id)
            producer = join.id
        for r in op.result_values:
            self.source[r] = producer

    def alias(self, arg: Value, outer: Value) -> None:
        if outer in self.const:
            self.const[arg] = self.const[outer]
        elif outer in self.source:
            self.source[arg] = self.source[outer]

    def free_values(self, op: Operation) -> list[Value]:
        """Values ``op`` and its regions use but do not define (a collapsed loop's inputs)."""
        defined: set[Value] = set()
        used: list[Value] = list(op.operand_values)
        for inner in _nested(op):
            defined.update(inner.result_values)
            for region in inner.region_list:
                for block in region.blocks:
                    defined.update(block.args)
            used += inner.operand_values
        for region in op.region_list:
            for block in region.blocks:
                defined.update(block.args)
        return [v for v in dict.fromkeys(used) if v not in defined]

    def connect(self, values: list[Value], dst: str) -> None:
        for v in values:
            src = self.source.get(v)
            if src is not None and v not in self.const:
                self.add_edge(src, dst)

    def add_edge(self, src: str, dst: str) -> None:
        edge = self.edges.get((src, dst))
        if edge is None:
            self.edges[(src, dst)] = Edge(src, dst)
        else:
            edge.count += 1


def _nested(op: Operation) -> Iterator[Operation]:
    for region in op.region_list:
        for block in region.blocks:
            for inner in block.ops:
                yield inner
                yield from _nested(inner)


def function_graph(funcs: list[Operation], collapse_loops: bool = False) -> Graph:
    """The data-flow graph of the ``func.func`` ops ``funcs`` (one cluster each)."""
    graph = Graph()
    for k, func in enumerate(funcs):
        builder = _Builder(func, collapse_loops, f"f{k}")
        graph.clusters.append(builder.function(func))
        graph.edges += builder.edges.values()
    return graph
