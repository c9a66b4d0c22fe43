"""Hypothesis-generated programs: random compositions of differentiable operations
(elementwise math, broadcasting, reductions with axis/keepdims, transposes, slices,
matmuls, loops with static trip counts, branches on scalars), their ``fn.vjp``
against central finite differences in float64.

Each program is source text written to a file and imported (``@hybrid`` reads its
source); the operations are smooth where the inputs are drawn, so the finite
differences are accurate to ~1e-8.
"""

from __future__ import annotations

import importlib.util

import numpy as np
from ad_fdcheck import check_vjp
from hypothesis import given, settings
from hypothesis import strategies as st

UNARY = ["np.tanh({a})", "np.sin({a})", "np.sqrt({a} * {a} + 1.0)", "np.log({a} * {a} + 1.0)",
         "np.exp(np.tanh({a}))", "(-{a})", "({a} ** 2)", "np.cos({a}) * 0.5"]
BINARY = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / ({b} * {b} + 1.0))",
          "np.maximum({a}, {b} + 0.25)", "np.where({a} > {b}, {a} * 2.0, {b})"]
REDUCE = ["{a}.sum(axis={k}, keepdims=True)", "{a}.mean(axis={k}, keepdims=True)",
          "{a}.max(axis={k}, keepdims=True)", "{a}.var(axis={k}, keepdims=True)"]
SHAPE = ["({a}.T @ {a}).sum(axis=0)[:{n}]", "{a}[::-1]", "np.concatenate([{a}[1:], {a}[:1]])",
         "{a}.reshape({n}, {m}).T.reshape({m}, {n}).reshape({m}, {n}).T.reshape({m}, {n})"]


def _line(draw, names: list[str]) -> str:
    kind = draw(st.sampled_from(["unary", "binary", "reduce", "shape", "loop", "if"]))
    a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
    if kind == "unary":
        return draw(st.sampled_from(UNARY)).format(a=a)
    if kind == "binary":
        return draw(st.sampled_from(BINARY)).format(a=a, b=b)
    if kind == "reduce":
        return f"({a} + {draw(st.sampled_from(REDUCE)).format(a=b, k=draw(st.integers(0, 1)))})"
    if kind == "shape":
        return f"({a} * 0.5 + {draw(st.sampled_from(SHAPE)).format(a=b, n='N', m='M')})"
    if kind == "loop":
        return f"_loop({a}, {b}, {draw(st.integers(1, 3))})"
    return f"_branch({a}, {b})"


HEADER = '''import numpy as np
from pyasc import hybrid

N, M = 4, 3


def _loop(s, y, n):
    for _ in range(n):
        s = np.tanh(s * y + 0.1)
    return s


def _branch(a, b):
    if a.sum() > b.sum():
        r = a * b
    else:
        r = a - np.sin(b)
    return r

'''


@st.composite
def programs(draw) -> str:
    names = ["x", "y"]
    body = []
    for k in range(draw(st.integers(1, 5))):
        body.append(f"    v{k} = {_line(draw, names)}")
        names.append(f"v{k}")
    out = " + ".join(draw(st.lists(st.sampled_from(names[2:]), min_size=1, max_size=2)))
    return HEADER + "\n@hybrid\ndef prog(x, y):\n" + "\n".join(body) + f"\n    return {out}\n"


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(source=programs(), seed=st.integers(0, 2**16))
def test_random_program_gradients(tmp_path_factory, source, seed):
    path = tmp_path_factory.mktemp("prog") / "prog.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"adprog_{seed}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    # kinks (maximum, where, max, branches) are where ties are: shift y off x
    y = np.where(np.abs(x - y - 0.25) < 1e-3, y + 0.1, y)
    check_vjp(module.prog, x, y, seed=seed, rtol=1e-5, atol=1e-6)
