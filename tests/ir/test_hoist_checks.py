"""``hoist-checks`` never changes what a program does: on random loop nests with affine
checks (nested and triangular loops, steps of either sign, checks under an ``if``,
counting ``while`` loops that stop early, zero-trip loops), the interpreter gives the
same results, the same error with the same message, and the same writes before it,
with and without the pass; and the pass does remove checks from the loops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pyasc.ir import parse_module
from pyasc.ir.interpreter import Interpreter
from pyasc.ir.passes import run_pipeline
from pyasc.ir.passes.hoist_checks import hot_checks

HEADER = '''"builtin.module"() ({
  "func.func"() ({
  ^bb0(%log: memref<64xindex>, %p: index, %q: index, %d: index):
    %c0 = "arith.constant"() {value = 0} : () -> index
    %c1 = "arith.constant"() {value = 1} : () -> index
    %c64 = "arith.constant"() {value = 64} : () -> index
    %false = "arith.constant"() {value = false} : () -> i1
'''
FOOTER = '''    "func.return"(%end) : (index) -> ()
  }) {function_type = (memref<64xindex>, index, index, index) -> index, sym_name = "main"} : () -> ()
}) : () -> ()
'''


class Gen:
    """Builds the IR text of one random program."""

    def __init__(self, draw) -> None:
        self.draw, self.lines, self.n = draw, [], 0

    def fresh(self) -> str:
        self.n += 1
        return f"%v{self.n}"

    def op(self, indent: str, text: str) -> str:
        name = self.fresh()
        self.lines.append(f"{indent}{name} = {text}")
        return name

    def const(self, indent: str, k: int) -> str:
        return self.op(indent, f'"arith.constant"() {{value = {k}}} : () -> index')

    def bin(self, indent: str, name: str, a: str, b: str) -> str:
        return self.op(indent, f'"arith.{name}"({a}, {b}) : (index, index) -> index')

    def bound(self, indent: str, outer: list[str]) -> str:
        """A loop bound: a constant, a parameter, or an outer counter plus a constant."""
        kind = self.draw(st.sampled_from(["const", "p", "q", "outer"]))
        if kind == "outer" and outer:
            base = self.draw(st.sampled_from(outer))
            return self.bin(indent, "add", base, self.const(indent, self.draw(
                st.integers(-3, 3))))
        if kind in ("p", "q"):
            return f"%{kind}"
        return self.const(indent, self.draw(st.integers(-4, 9)))

    def check(self, indent: str, counters: list[str]) -> None:
        """``log[pos] = x`` after ``-d <= x < d`` for ``x`` affine in the counters."""
        x = self.const(indent, self.draw(st.integers(-6, 6)))
        for c in counters:
            k = self.draw(st.integers(-2, 2))
            if k:
                x = self.bin(indent, "add", x, self.bin(indent, "mul", c,
                                                         self.const(indent, k)))
        if self.draw(st.booleans()):
            x = self.bin(indent, "add", x, "%p")
        nd = self.op(indent, '"arith.neg"(%d) : (index) -> index')
        lo = self.op(indent, f'"arith.cmp"({x}, {nd}) {{predicate = "ge"}} : '
                             '(index, index) -> i1')
        hi = self.op(indent, f'"arith.cmp"({x}, %d) {{predicate = "lt"}} : '
                             '(index, index) -> i1')
        ok = self.op(indent, f'"arith.and"({lo}, {hi}) : (i1, i1) -> i1')
        self.lines.append(f'{indent}"func.assert"({ok}, {x}, %d) {{kind = "bounds", '
                          'message = "index {0} is out of bounds with size {1}"} : '
                          '(i1, index, index) -> ()')
        slot = self.op(indent, f'"arith.rem"({x}, %c64) : (index, index) -> index')
        self.lines.append(f'{indent}"mem.store"({x}, %log, {slot}) : '
                          '(index, memref<64xindex>, index) -> ()')

    def body(self, indent: str, counters: list[str], depth: int) -> None:
        if depth < 2 and self.draw(st.booleans()):
            self.loop(indent, counters, depth + 1)
        if self.draw(st.booleans()):
            self.check(indent, counters)
        elif counters:
            cond = self.op(indent, f'"arith.cmp"({counters[-1]}, %q) {{predicate = "lt"}} : '
                                   '(index, index) -> i1')
            self.lines.append(f'{indent}"loop.if"({cond}) ({{')
            self.check(indent + "  ", counters)
            self.lines += [f'{indent}  "loop.yield"() : () -> ()', f"{indent}}}, {{",
                           f'{indent}  "loop.yield"() : () -> ()',
                           f"{indent}}}) : (i1) -> ()"]

    def loop(self, indent: str, counters: list[str], depth: int) -> None:
        if self.draw(st.booleans()):
            self.for_loop(indent, counters, depth)
        else:
            self.while_loop(indent, counters, depth)

    def for_loop(self, indent: str, counters: list[str], depth: int) -> None:
        lo, hi = self.bound(indent, counters), self.bound(indent, counters)
        step = self.const(indent, self.draw(st.sampled_from([1, 2, 3, -1, -2])))
        iv = f"%i{depth}_{self.n}"
        self.lines.append(f'{indent}"loop.for"({lo}, {hi}, {step}) ({{')
        self.lines.append(f"{indent}^bb0({iv}: index):")
        self.body(indent + "  ", [*counters, iv], depth)
        self.lines += [f'{indent}  "loop.yield"() : () -> ()',
                       f"{indent}}}) : (index, index, index) -> ()"]

    def while_loop(self, indent: str, counters: list[str], depth: int) -> None:
        """``for k in range(lo, hi): ...; if k == stop: break`` as the frontend lowers it
        (also with steps 2 and -1, and a floor ``k > lo - 4`` that ends a loop going
        down: a counter that shrinks must not be read as bounded by ``[lo, hi)``)."""
        lo, hi = self.bound(indent, counters), self.bound(indent, counters)
        stop = self.bound(indent, counters)
        step = self.const(indent, self.draw(st.sampled_from([1, 1, 2, -1])))
        floor = self.bin(indent, "sub", lo, self.const(indent, 4))
        tag = self.n
        k, brk, kb, bb = (f"%{n}{tag}" for n in ("k", "brk", "kb", "bb"))
        i2 = indent + "  "
        self.lines.append(f'{indent}%w{tag}, %wb{tag} = "loop.while"({lo}, %false) ({{')
        self.lines.append(f"{indent}^bb0({k}: index, {brk}: i1):")
        go = self.op(i2, f'"arith.not"({brk}) : (i1) -> i1')
        more = self.op(i2, f'"arith.cmp"({k}, {hi}) {{predicate = "lt"}} : '
                           '(index, index) -> i1')
        above = self.op(i2, f'"arith.cmp"({k}, {floor}) {{predicate = "gt"}} : '
                            '(index, index) -> i1')
        inside = self.op(i2, f'"arith.and"({more}, {above}) : (i1, i1) -> i1')
        both = self.op(i2, f'"arith.select"({go}, {inside}, %false) : (i1, i1, i1) -> i1')
        self.lines += [f'{i2}"loop.condition"({both}, {k}, {brk}) : (i1, index, i1) -> ()',
                       f"{indent}}}, {{", f"{indent}^bb0({kb}: index, {bb}: i1):"]
        self.body(i2, [*counters, kb], depth)
        done = self.op(i2, f'"arith.cmp"({kb}, {stop}) {{predicate = "eq"}} : '
                           '(index, index) -> i1')
        nxt = self.bin(i2, "add", kb, step)
        self.lines += [f'{i2}"loop.yield"({nxt}, {done}) : (index, i1) -> ()',
                       f"{indent}}}) : (index, i1) -> (index, i1)"]


@st.composite
def programs(draw):
    gen = Gen(draw)
    gen.loop("    ", [], 0)
    gen.lines.append('    %end = "arith.add"(%p, %q) : (index, index) -> index')
    text = HEADER + "\n".join(gen.lines) + "\n" + FOOTER
    args = (draw(st.integers(-3, 8)), draw(st.integers(-2, 8)), draw(st.integers(0, 12)))
    return text, args


def _run(text: str, args: tuple, passes: list[str]) -> tuple[object, np.ndarray, bool]:
    module = parse_module(text)
    run_pipeline(module, passes)
    log = np.full(64, -99, np.int64)
    try:
        out: object = Interpreter(module).call("main", log, *args)
    except IndexError as exc:
        out = f"{type(exc).__name__}: {exc}"
    return out, log, bool(hot_checks(module))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=programs())
def test_hoisting_preserves_results_errors_and_writes(prog) -> None:
    text, args = prog
    expected, expected_log, hot_before = _run(text, args, [])
    got, got_log, hot_after = _run(text, args, ["hoist-checks"])
    assert str(got) == str(expected), text
    assert np.array_equal(got_log, expected_log), text
    event("raised" if isinstance(expected, str) else "ran")
    event("checks left the loops" if hot_before and not hot_after else "checks stayed")


def test_generated_programs_exercise_hoisting() -> None:
    found = []

    @settings(max_examples=60, deadline=None, database=None)
    @given(prog=programs())
    def collect(prog) -> None:
        text, args = prog
        found.append(_run(text, args, [])[2] and not _run(text, args, ["hoist-checks"])[2])

    collect()
    assert any(found), "no generated program had its checks hoisted"


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
