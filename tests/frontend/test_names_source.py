"""Name analysis (which names need buffers) and source loading/locations."""

from __future__ import annotations

import ast
import textwrap

import pytest

from pyasc.frontend.names import jumps, loads_outside, local_names, storage_names
from pyasc.frontend.source import load_source


def fn(src: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(src)).body[0]


@pytest.mark.parametrize("src,expected", [
    ("def f(x):\n    y = x + 1\n    return y\n", set()),
    ("def f(x):\n    r = x * 0\n    r[0] = 1\n", {"r"}),
    ("def f(x):\n    a = x\n    a += 1\n", {"a", "x"}),
    ("def f(x):\n    v = x[1:3]\n    v[0] = 2\n", {"v", "x"}),
    ("def f(x):\n    t = x.T\n    u = t\n    u[0, 0] = 1\n", {"t", "u", "x"}),
    ("def f(x, o):\n    np.add(x, 1, out=o)\n", {"o"}),
    ("def f(x):\n    b = x.reshape(4)\n    b[0] = 1\n", {"b", "x"}),
    ("def f(x):\n    for row in x:\n        row[0] = 1\n", {"row", "x"}),
    ("def f(x):\n    a, b = x, x * 2\n    b[0] = 1\n", {"b"}),
    ("def f(x):\n    s = 0\n    s += x[0]\n", {"s"}),
])
def test_storage_names(src, expected):
    assert storage_names(fn(src)) == expected


def test_local_names_include_parameters_and_assignments():
    f = fn("def f(a, *args, b=1, **kw):\n    c = 1\n    for d in a:\n        pass\n")
    assert local_names(f) == {"a", "args", "b", "kw", "c", "d"}


def test_loads_outside_and_jumps():
    f = fn("def f(x):\n    y = x\n    z = y\n    return z\n")
    assert loads_outside(f, f.body[1]) == {"x", "z"}
    loop = fn("def f(x):\n    for i in x:\n        for j in x:\n            break\n")
    assert not jumps(loop.body[0].body)
    assert jumps(fn("def f(x):\n    for i in x:\n        return i\n").body[0].body)
    nested_return = fn("def f(x):\n    for i in x:\n        for j in x:\n            return j\n")
    assert jumps(nested_return.body[0].body)


class Holder:
    def method(self, x):
        text = """a string
less indented"""
        return x, text


def test_indented_source_keeps_file_columns():
    src = load_source(Holder.method)
    ret = src.tree.body[-1]
    assert src.lineno(ret) == Holder.method.__code__.co_firstlineno + 3
    assert src.char_col(ret) == 8 and src.wrapped
    assert src.location(ret).col == 9 and src.location(ret).file == __file__


def test_decorated_function_lines():
    from pyasc import hybrid

    @hybrid
    def g(x):
        return x

    src = g.source_info()
    assert src.lineno(src.tree) == g.__wrapped__.__code__.co_firstlineno + 1
    assert src.line_text(src.tree.body[0]).strip() == "return x"
