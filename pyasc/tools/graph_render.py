"""Drawing a :class:`~pyasc.tools.graph.Graph`: Graphviz DOT, SVG/PNG, a text outline.

DOT is built with the ``graphviz`` Python package (it quotes and escapes every name and
label); SVG and PNG come from Graphviz's ``dot`` program through the same package, and
:class:`RenderUnavailable` says when that program is missing.  The outline
(:func:`outline`) is the IR as an indented list of ops without the type noise.

Styles: a fused group is a filled blue box with a bold border (one kernel), a loop a
dashed yellow box, a fusion scope a dotted grey one; function arguments are ovals,
terminators small grey boxes, collapsed loops folders.
"""

from __future__ import annotations

from collections.abc import Iterable

import graphviz

from pyasc.ir.core import Operation
from pyasc.ir.printer import value_names
from pyasc.tools.graph import LOOP_OPS, Cluster, Graph, Node, count_ops, short_attrs, where

CLUSTER_STYLES: dict[str, dict[str, str]] = {
    "func": {"style": "rounded", "color": "gray40", "fontsize": "16"},
    "fusion": {"style": "filled,bold", "fillcolor": "#dcebfa", "color": "#1f5fa8",
               "penwidth": "2.5", "fontcolor": "#1f5fa8"},
    "loop": {"style": "dashed,filled", "fillcolor": "#fff8e0", "color": "#b08000",
             "fontcolor": "#806000"},
    "scope": {"style": "dotted", "color": "gray30"},
    "part": {"style": "dotted", "color": "gray50"},
    "region": {"style": "dashed", "color": "gray40"},
}
"""Graphviz attributes of each kind of box (``graph.CLUSTER_KINDS``)."""

NODE_STYLES: dict[str, dict[str, str]] = {
    "op": {"shape": "box", "style": "rounded,filled", "fillcolor": "white"},
    "arg": {"shape": "oval", "style": "filled", "fillcolor": "#e8f5e0"},
    "header": {"shape": "box", "style": "filled", "fillcolor": "#f5deb3"},
    "yield": {"shape": "box", "style": "filled", "fillcolor": "gray90", "fontsize": "9"},
    "loop": {"shape": "folder", "style": "filled", "fillcolor": "#fff0b0"},
}
"""Graphviz attributes of each kind of node."""

RENDERED_FORMATS = ("svg", "png")
FORMATS = ("dot", *RENDERED_FORMATS, "txt")


class RenderUnavailable(Exception):
    """Graphviz's ``dot`` program is not installed (or failed): no SVG/PNG."""


def node_label(node: Node) -> str:
    """The lines of a node's label: title, types, then names and source line."""
    tail = "  ".join(p for p in (node.name, node.where) if p)
    return "\\n".join(p for p in (node.title, node.types, tail) if p)  # DOT line breaks


def to_dot(graph: Graph, title: str = "") -> graphviz.Digraph:
    """The Graphviz graph of ``graph`` (``.source`` is its DOT text)."""
    dot = graphviz.Digraph("pyasc", graph_attr={
        "rankdir": "TB", "compound": "true", "fontname": "Helvetica", "nodesep": "0.3",
        "ranksep": "0.35", "label": title, "labelloc": "t", "newrank": "true"},
        node_attr={"fontname": "Helvetica", "fontsize": "10", "margin": "0.08,0.03"},
        edge_attr={"color": "gray35", "arrowsize": "0.6"})
    for top in graph.clusters:
        _cluster(dot, top)
    for e in graph.edges:
        dot.edge(e.src, e.dst, **({"label": f"×{e.count}", "fontsize": "8"}
                                  if e.count > 1 else {}))
    return dot


def _cluster(parent: graphviz.Digraph, box: Cluster) -> None:
    with parent.subgraph(name=f"cluster_{box.id}") as sub:
        sub.attr(label=box.label, labeljust="l", fontname="Helvetica",
                 **CLUSTER_STYLES.get(box.kind, CLUSTER_STYLES["region"]))
        for node in box.nodes:
            sub.node(node.id, node_label(node), **NODE_STYLES[node.kind])
        for inner in box.clusters:
            _cluster(sub, inner)


def render(dot: graphviz.Digraph, fmt: str) -> bytes:
    """``dot`` drawn as ``fmt`` (svg or png) by Graphviz's ``dot`` program."""
    try:
        return dot.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise RenderUnavailable("Graphviz's `dot` program is not installed") from None
    except graphviz.CalledProcessError as exc:
        raise RenderUnavailable(f"Graphviz's `dot` failed: {exc}") from None


def outline(funcs: Iterable[Operation], collapse_loops: bool = False) -> str:
    """The functions as an indented outline: one line per op (results, name, operands,
    telling attributes, result types, source line), regions indented below their op."""
    lines: list[str] = []
    for func in funcs:
        names = value_names(func)
        block = func.region_list[0].blocks[0]
        args = ", ".join(f"{names.get(a, '%?')}: {a.type}" for a in block.args)
        lines.append(f"func.func {func.attributes.get('sym_name', '?')}({args})"
                     f"{_at(where(func.loc))}")
        _outline_ops(block.ops, names, 1, collapse_loops, lines)
    return "\n".join(lines) + "\n"


def _outline_ops(ops: Iterable[Operation], names: dict, depth: int, collapse: bool,
                 lines: list[str]) -> None:
    pad = "  " * depth
    for op in ops:
        results = ", ".join(names.get(r, "%?") for r in op.result_values)
        text = f"{results} = " if results else ""
        text += op.name
        if op.name == "fusion.group":
            text += f" [{op.attributes['kind']}]"
        if op.name == "arith.constant":
            text += f" {short_value(op)}"
        else:
            text += "(" + ", ".join(names.get(v, "%?") for v in op.operand_values) + ")"
        attrs = short_attrs(op)
        text += f" {attrs}" if attrs else ""
        if op.result_values:
            text += " : " + ", ".join(str(r.type) for r in op.result_values)
        if collapse and op.name in LOOP_OPS:
            text += f"  {{ {count_ops(op)} ops }}"
        lines.append(pad + text + _at(where(op.loc)))
        if collapse and op.name in LOOP_OPS:
            continue
        for rname, region in zip(type(op).regions, op.region_list, strict=False):
            if len(op.region_list) > 1:
                lines.append(f"{pad}  {rname}:")
            block = region.blocks[0]
            if block.args:
                lines.append(f"{pad}  ^(" + ", ".join(names.get(a, "%?") for a in block.args)
                             + ")")
            _outline_ops(block.ops, names, depth + 1, collapse, lines)


def short_value(op: Operation) -> str:
    """A constant's value, abbreviated when it is a long array."""
    from pyasc.ir.printer import format_attr

    text = format_attr(op.attributes["value"])
    return text if len(text) <= 60 else text[:57] + "..."


def _at(place: str) -> str:
    return f"   @ {place}" if place else ""
