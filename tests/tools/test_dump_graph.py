"""``ascend-dump-graph``: the DOT structure (boxes for loops and fused groups, node
labels, edges), collapsed loops, the text outline, rendering, and the bad-input paths
(exit status 2 with the parser's location)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pyasc import hybrid
from pyasc.tools.dump_graph import main

# Two functions as pyasc prints them: a loop holding a fused row-wise group, and a loop
# carrying a value through a loop.if.
IR = '''"builtin.module"() ({
  "func.func"() ({
  ^bb0(%x: memref<4x8xf32>, %out: memref<4x8xf32>):
    %0 = "arith.constant"() {value = 0} : () -> index loc("/src/rows.py":6:5)
    %1 = "arith.constant"() {value = 4} : () -> index loc("/src/rows.py":6:5)
    %2 = "arith.constant"() {value = 1} : () -> index loc("/src/rows.py":6:5)
    "loop.for"(%0, %1, %2) ({
    ^bb0(%3: index):
      %4 = "arith.constant"() {value = 8} : () -> index loc("/src/rows.py":7:25)
      %5 = "mem.subview"(%x, %3, %0, %2, %4, %2, %2) {drop = [0]} : (memref<4x8xf32>, index, index, index, index, index, index) -> memref<8xf32> loc("/src/rows.py":7:25)
      %6 = "mem.to_tensor"(%5) : (memref<8xf32>) -> tensor<8xf32> loc("/src/rows.py":7:32)
      %7 = "mem.to_tensor"(%5) : (memref<8xf32>) -> tensor<8xf32> loc("/src/rows.py":7:25)
      %8 = "fusion.group"(%6, %7) ({
      ^bb0(%9: tensor<8xf32>, %10: tensor<8xf32>):
        %11 = "tensor.max"(%9) {axes = [0], keepdims = false} : (tensor<8xf32>) -> f32 loc("/src/rows.py":7:32)
        %12 = "arith.sub"(%10, %11) : (tensor<8xf32>, f32) -> tensor<8xf32> loc("/src/rows.py":7:25)
        %13 = "math.exp"(%12) : (tensor<8xf32>) -> tensor<8xf32> loc("/src/rows.py":7:18)
        %14 = "arith.constant"() {value = 2.0} : () -> f32 loc("/src/rows.py":7:18)
        %15 = "arith.mul"(%13, %14) : (tensor<8xf32>, f32) -> tensor<8xf32> loc("/src/rows.py":7:18)
        "fusion.yield"(%15) : (tensor<8xf32>) -> () loc("/src/rows.py":7:18)
      }) {kind = "rowwise"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> loc("/src/rows.py":7:18)
      %16 = "mem.subview"(%out, %3, %0, %2, %4, %2, %2) {drop = [0]} : (memref<4x8xf32>, index, index, index, index, index, index) -> memref<8xf32> loc("/src/rows.py":7:9)
      "mem.write"(%8, %16) : (tensor<8xf32>, memref<8xf32>) -> () loc("/src/rows.py":7:9)
      "loop.yield"() : () -> () loc("/src/rows.py":6:5)
    }) : (index, index, index) -> () loc("/src/rows.py":6:5)
    "func.return"(%out) : (memref<4x8xf32>) -> () loc("/src/rows.py":5:1)
  }) {function_type = (memref<4x8xf32>, memref<4x8xf32>) -> memref<4x8xf32>, sym_name = "rows"} : () -> () loc("/src/rows.py":5:1)
  "func.func"() ({
  ^bb0(%n: index):
    %0 = "arith.constant"() {value = 0} : () -> index loc("/src/acc.py":6:5)
    %1 = "arith.constant"() {value = 1} : () -> index loc("/src/acc.py":6:5)
    %2 = "arith.constant"() {value = 0.0} : () -> f64 loc("/src/acc.py":6:5)
    %3 = "loop.for"(%0, %n, %1, %2) ({
    ^bb0(%4: index, %5: f64):
      %6 = "arith.constant"() {value = 2} : () -> index loc("/src/acc.py":7:12)
      %7 = "arith.rem"(%4, %6) : (index, index) -> index loc("/src/acc.py":7:12)
      %8 = "arith.cmp"(%7, %0) {predicate = "eq"} : (index, index) -> i1 loc("/src/acc.py":7:12)
      %9 = "loop.if"(%8) ({
        %10 = "arith.cast"(%4) : (index) -> f64 loc("/src/acc.py":8:13)
        %11 = "arith.add"(%5, %10) : (f64, f64) -> f64 loc("/src/acc.py":8:13)
        "loop.yield"(%11) : (f64) -> () loc("/src/acc.py":7:9)
      }, {
        "loop.yield"(%5) : (f64) -> () loc("/src/acc.py":7:9)
      }) : (i1) -> f64 loc("/src/acc.py":7:9)
      "loop.yield"(%9) : (f64) -> () loc("/src/acc.py":6:5)
    }) : (index, index, index, f64) -> f64 loc("/src/acc.py":6:5)
    "func.return"(%3) : (f64) -> () loc("/src/acc.py":4:1)
  }) {function_type = (index) -> f64, sym_name = "total"} : () -> () loc("/src/acc.py":4:1)
}) : () -> () loc(unknown)
'''


class Dot:
    """The clusters, nodes and edges of DOT text as the ``graphviz`` package writes it
    (one statement per line)."""

    def __init__(self, text: str) -> None:
        self.labels: dict[str, str] = {}      # node id -> label
        self.boxes: dict[str, str] = {}       # cluster id -> label
        self.inside: dict[str, list[str]] = {}  # node id -> enclosing cluster ids, outermost first
        self.edges: list[tuple[str, str]] = []
        stack: list[str] = []
        for line in text.splitlines():
            s = line.strip()
            if m := re.match(r"subgraph (cluster_\w+) \{$", s):
                stack.append(m.group(1))
            elif s == "}" and stack:
                stack.pop()
            elif m := re.match(r'(\w+) -> (\w+)', s):
                self.edges.append((m.group(1), m.group(2)))
            elif m := re.match(r'(\w+) \[label="((?:[^"\\]|\\.)*)"', s):
                self.labels[m.group(1)] = m.group(2).replace("\\n", "\n")
                self.inside[m.group(1)] = list(stack)
            elif stack and (m := re.search(r'label=(?:"((?:[^"\\]|\\.)*)"|(\w+))', s)):
                self.boxes.setdefault(stack[-1], m.group(1) or m.group(2))

    def node(self, title: str) -> str:
        """The id of the one node whose label starts with ``title``."""
        found = [n for n, label in self.labels.items() if label.startswith(title)]
        assert len(found) == 1, (title, found)
        return found[0]

    def boxes_of(self, title: str) -> list[str]:
        """The labels of the boxes around the node ``title``, outermost first."""
        return [self.boxes[c] for c in self.inside[self.node(title)]]


@pytest.fixture
def ir_file(tmp_path):
    path = tmp_path / "two.ir"
    path.write_text(IR)
    return path


def _run(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_dot_draws_loops_and_fused_groups_as_nested_boxes(ir_file, capsys):
    status, out, _ = _run(capsys, ir_file, "--function", "rows")
    assert status == 0
    dot = Dot(out)
    group = ["func.func rows   rows.py:5", "loop.for   rows.py:6",
             "fusion.group [rowwise]   rows.py:7"]
    for title in ("tensor.max", "arith.sub", "math.exp", "arith.mul", "fusion.yield"):
        assert dot.boxes_of(title) == group, title  # the fused ops: one box
    assert dot.boxes_of("mem.write") == group[:2]  # in the loop, not in the kernel
    assert dot.boxes_of("func.return") == group[:1]
    # labels: op name (scalar constants shown in place), result types, name and line
    assert dot.labels[dot.node("arith.mul")] == "arith.mul(·, 2.0)\ntensor<8xf32>\n%15  rows.py:7"
    assert dot.labels[dot.node("tensor.max")] == \
        "tensor.max {axes=[0], keepdims=false}\nf32\n%11  rows.py:7"
    assert not any(label.startswith("arith.constant") for label in dot.labels.values())
    assert dot.labels[dot.node("loop.for")] == "loop.for(0, 4, 1)\n%3  rows.py:6"


def test_dot_edges_follow_the_values(ir_file, capsys):
    dot = Dot(_run(capsys, ir_file, "--function", "rows")[1])
    edge = lambda a, b: (dot.node(a), dot.node(b)) in dot.edges  # noqa: E731
    assert edge("%x", "mem.subview(·, ·, 0, 1, 8, 1, 1)\nmemref<8xf32>\n%5")
    assert edge("loop.for", "mem.subview(·, ·, 0, 1, 8, 1, 1)\nmemref<8xf32>\n%16")
    assert edge("loop.for", "mem.write") is False
    # a group's inputs run from their producers outside straight to their users inside
    to_tensor = [n for n, label in dot.labels.items() if label.startswith("mem.to_tensor")]
    assert {(t, dot.node("tensor.max")) in dot.edges for t in to_tensor} == {True, False}
    assert (dot.node("fusion.yield"), dot.node("mem.write")) in dot.edges
    assert (dot.node("%out"), dot.node("func.return")) in dot.edges


def test_a_loop_carried_value_and_a_loop_if(ir_file, capsys):
    dot = Dot(_run(capsys, ir_file, "--function", "total")[1])
    join = dot.node("loop.if results")
    yields = [n for n, label in dot.labels.items() if label.startswith("loop.yield")]
    assert len(yields) == 3  # then, else, and the loop's own
    assert sum((y, join) in dot.edges for y in yields) == 2
    assert dot.boxes_of("arith.add")[-2:] == ["loop.if   acc.py:7", "then_region"]
    assert dot.labels[dot.node("arith.cmp")].startswith('arith.cmp(·, 0) {predicate=\\"eq\\"}')
    # the loop's result leaves from its yield; the header takes n and defines i, s
    assert (dot.node("%n"), dot.node("loop.for")) in dot.edges
    assert "%4, %5" in dot.labels[dot.node("loop.for")]


def test_collapsed_loops_are_one_node(ir_file, capsys):
    dot = Dot(_run(capsys, ir_file, "--collapse-loops")[1])
    assert not [b for b in dot.boxes.values() if b.startswith(("loop.", "fusion."))]
    loops = [n for n, label in dot.labels.items() if label.startswith("loop.for")]
    assert len(loops) == 2
    rows_loop = dot.node("loop.for(0, 4, 1)")
    assert "[14 ops inside]" in dot.labels[rows_loop]
    assert (dot.node("%x"), rows_loop) in dot.edges and (dot.node("%out"), rows_loop) in dot.edges
    total_loop = dot.node("loop.for(0, ·, 1, 0.0)")
    assert (total_loop, dot.node("func.return\nacc.py")) in dot.edges


def test_txt_outline(ir_file, capsys):
    status, out, _ = _run(capsys, ir_file, "--format", "txt", "--function", "rows")
    assert status == 0
    assert out.splitlines()[:5] == [
        "func.func rows(%x: memref<4x8xf32>, %out: memref<4x8xf32>)   @ rows.py:5",
        "  %0 = arith.constant 0 : index   @ rows.py:6",
        "  %1 = arith.constant 4 : index   @ rows.py:6",
        "  %2 = arith.constant 1 : index   @ rows.py:6",
        "  loop.for(%0, %1, %2)   @ rows.py:6"]
    assert "    %8 = fusion.group [rowwise](%6, %7) : tensor<8xf32>   @ rows.py:7" in out
    assert "      %11 = tensor.max(%9) {axes=[0], keepdims=false} : f32   @ rows.py:7" in out
    collapsed = _run(capsys, ir_file, "--format", "txt", "--collapse-loops")[1]
    assert "  loop.for(%0, %1, %2)  { 14 ops }   @ rows.py:6" in collapsed
    assert "fusion.group" not in collapsed and "func.func total" in collapsed


def test_output_file_format_from_its_suffix(ir_file, tmp_path, capsys):
    out = tmp_path / "g.txt"
    assert _run(capsys, ir_file, "-o", out)[0] == 0
    assert out.read_text().startswith("func.func rows(")
    out = tmp_path / "g.dot"
    assert _run(capsys, ir_file, "-o", out)[0] == 0
    assert out.read_text().startswith("digraph")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("svg", b"<?xml")])
def test_rendered_picture(ir_file, tmp_path, capsys, fmt, magic):
    out = tmp_path / f"g.{fmt}"
    status, printed, _ = _run(capsys, ir_file, "-o", out)
    assert status == 0 and printed == f"wrote {out}\n"
    assert out.read_bytes().startswith(magic)
    if fmt == "svg":
        assert "fusion.group [rowwise]" in out.read_text()


def test_without_graphviz_the_dot_file_is_written(ir_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no `dot` program to find
    out = tmp_path / "g.png"
    status, _, err = _run(capsys, ir_file, "-o", out)
    assert status == 1 and not out.exists()
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    assert "`dot` program is not installed" in err and str(tmp_path / "g.dot") in err
    assert "apt-get install graphviz" in err


def test_malformed_file_gives_the_parsers_location_and_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.ir"
    bad.write_text(IR.replace('%12 = "arith.sub"(%10, %11)', '%12 = "arith.sub"(%10, %99)'))
    status, out, err = _run(capsys, bad)
    assert status == 2 and out == ""
    assert err.startswith("E50020: IR parse error: use of undefined value %99")
    assert f"--> {bad}:16:" in err and "^" in err and "Traceback" not in err


@pytest.mark.parametrize("case", ["missing", "function", "unwritable"])
def test_bad_input_is_one_line_and_status_2(ir_file, tmp_path, capsys, case):
    argv = {"missing": [tmp_path / "nope.ir"],
            "function": [ir_file, "--function", "nope"],
            "unwritable": [ir_file, "-o", tmp_path / "no" / "such" / "dir" / "g.dot"]}[case]
    status, _, err = _run(capsys, *argv)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("ascend-dump-graph: error: ")
    if case == "function":
        assert "it has: rows, total" in err


def test_console_script_draws_a_dumped_function(tmp_path):
    script = Path(sys.executable).with_name("ascend-dump-graph")
    if not script.exists():
        pytest.skip("the package is not installed with its console scripts")

    def layernorm(x, gamma, beta, eps=1e-5):
        mean = np.mean(x, axis=-1, keepdims=True)
        var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * gamma + beta

    x, g = np.ones((8, 16), np.float32), np.ones(16, np.float32)
    path = tmp_path / "ln.ir"
    hybrid(layernorm).dump_ir(str(path), x, g, g)
    proc = subprocess.run([str(script), str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    dot = Dot(proc.stdout)
    assert dot.boxes_of("math.sqrt")[-1].startswith("fusion.group [rowwise]")
    assert dot.boxes_of("tensor.sum {axes=[1], keepdims=true}\ntensor<8x1xf32>\n%7")[-1] \
        .startswith("fusion.group [rowwise]")
