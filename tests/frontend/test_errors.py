"""Every error a user can cause is coded and located at the user's own line and column.

Each case writes a module into ``tmp_path``, imports it, compiles the function and
checks the error's code, file, line and 0-based column (plus that the rendered message
shows the source line and no pyasc internals).
"""

from __future__ import annotations

import importlib.util
import linecache
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pyasc import errors, hybrid

PRELUDE = "import numpy as np\nfrom pyasc import hybrid, fusion_scope\n\n"


def load(tmp_path: Path, body: str, name: str = "f"):
    """Write ``PRELUDE + body`` to a file, import it, return attribute ``name``."""
    path = tmp_path / f"mod_{abs(hash(body))}.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name), path


def compile_error(tmp_path: Path, body: str, *args, name: str = "f") -> errors.PyascError:
    fn, path = load(tmp_path, body, name)
    with pytest.raises(errors.PyascError) as info:
        fn.ir(*args)
    err = info.value
    assert err.filename == str(path)
    text = str(err)
    assert "pyasc/" not in text.replace(str(path), "") and "Traceback" not in text
    return err


def where(err: errors.PyascError) -> tuple[str, int, int]:
    """(code, line in the written file, 0-based column)."""
    return err.code, err.lineno, err.col_offset


L = 4  # line of "@hybrid" in every case (after the 3-line prelude)
X = np.zeros((3, 4), np.float32)

SYNTAX_CASES = [
    ("with", "    with open('x') as f:\n        pass\n", (6, 4)),
    ("try", "    try:\n        y = x\n    except Exception:\n        pass\n", (6, 4)),
    ("set", "    g = {1, 2}\n", (6, 8)),
    ("listcomp", "    y = [v for v in range(3) for w in range(2)]\n", (6, 8)),
    ("global", "    global q\n", (6, 4)),
    ("del", "    y = x\n    del y\n", (7, 4)),
    ("class", "    class K:\n        pass\n", (6, 4)),
    ("async def", "    async def g():\n        return 1\n", (6, 4)),
    ("bare raise", "    raise\n", (6, 4)),
    ("import", "    import math\n", (6, 4)),
    ("dict", "    y = {1: 2}\n", (6, 8)),
    ("walrus", "    if (n := 3) > 2:\n        pass\n", (6, 8)),
    ("yield", "    yield x\n", (6, 4)),
]


@pytest.mark.parametrize("what,body,pos", SYNTAX_CASES, ids=[c[0] for c in SYNTAX_CASES])
def test_unsupported_syntax(tmp_path, what, body, pos):
    err = compile_error(tmp_path, f"@hybrid\ndef f(x):\n{body}    return x\n", X)
    assert where(err) == ("E50010", *pos)
    assert isinstance(err, errors.UnsupportedSyntaxError)
    assert "hint:" in str(err) and f"{pos[0]} |" in str(err)


def test_unknown_name(tmp_path):
    err = compile_error(tmp_path, "@hybrid\ndef f(x):\n    return x + undefined_thing\n", X)
    assert where(err) == ("E50012", 6, 15)
    assert "undefined_thing" in err.message


def test_name_used_before_assignment(tmp_path):
    err = compile_error(tmp_path, "@hybrid\ndef f(x):\n    y = z\n    z = 1\n    return y\n", X)
    assert where(err) == ("E50012", 6, 8)


def test_name_defined_on_one_branch_only(tmp_path):
    body = """\
    @hybrid
    def f(x, n):
        if n > 0:
            y = x
        return y
    """
    err = compile_error(tmp_path, body, X, 3)
    assert where(err) == ("E50012", 8, 11)
    assert "only one branch" in err.message


def test_name_first_assigned_in_loop(tmp_path):
    body = """\
    @hybrid
    def f(x, n):
        for i in range(n):
            y = x * i
        return y
    """
    err = compile_error(tmp_path, body, X, 3)
    assert where(err) == ("E50012", 8, 11)
    assert "loop" in err.message


def test_unsupported_numpy_function(tmp_path):
    err = compile_error(tmp_path, "@hybrid\ndef f(x):\n    return np.fft.fft(x)\n", X)
    assert where(err) == ("E50011", 6, 11)


def test_unsupported_numpy_argument(tmp_path):
    err = compile_error(tmp_path, "@hybrid\ndef f(x):\n    return np.sum(x, where=x > 0)\n",
                        X)
    assert where(err) == ("E50011", 6, 11)
    assert "where" in err.message and "np.sum(a, axis=None" in err.hint


def test_unsupported_array_method(tmp_path):
    err = compile_error(tmp_path, "@hybrid\ndef f(x):\n    return x.byteswap()\n", X)
    assert where(err) == ("E50011", 6, 11)


def test_bitwise_op_on_floats(tmp_path):
    err = compile_error(tmp_path, "@hybrid\ndef f(x):\n    return x & x\n", X)
    assert where(err) == ("E50001", 6, 11)
    assert err.end_col_offset == 16


def test_if_on_an_array(tmp_path):
    err = compile_error(tmp_path, "@hybrid\ndef f(x):\n    if x > 0:\n        x = x + 1\n"
                        "    return x\n", X)
    assert where(err) == ("E50001", 6, 7)
    assert "ambiguous" in err.message


def test_branches_with_incompatible_values(tmp_path):
    body = """\
    @hybrid
    def f(x, n):
        y = None
        if n > 1:
            y = x
        return y
    """
    err = compile_error(tmp_path, body, X, 2)
    assert where(err) == ("E50001", 7, 4)


def test_returns_of_different_structure(tmp_path):
    body = """\
    @hybrid
    def f(x, n):
        if n > 1:
            return x, x
        return x
    """
    err = compile_error(tmp_path, body, X, 2)
    assert where(err) == ("E50001", 8, 4)
    assert "returns" in err.message


@pytest.mark.parametrize("body,line", [
    ("    for i in range(3):\n        if x[0, i] > 0:\n            return x\n", 6),
    ("    if x[0, 0] > 0:\n        return 1\n", 6),
    ("    y = x + 1\n    while n > 0:\n        n -= 1\n        if n == 2:\n"
     "            return y\n", 7),
])
def test_returning_on_some_paths_only(tmp_path, body, line):
    # Python returns None where the end is reached: never a silently different value
    err = compile_error(tmp_path, "@hybrid\ndef f(x, n):\n" + body, X, 3)
    assert where(err) == ("E50001", line, 4)
    assert "returns a value on some paths" in err.message and "return" in err.hint


SHAPE_CASES = [
    ("broadcast", "    return x + y\n", (np.zeros(3), np.zeros(4)), (6, 11)),
    ("matmul", "    return x @ y\n", (np.zeros((2, 3)), np.zeros((4, 2))), (6, 11)),
    ("reshape", "    return x.reshape(5, 2)\n", (np.zeros((3, 4)), 0), (6, 11)),
    ("slice assignment", "    x[0:2] = y\n    return x\n", (np.zeros(5), np.zeros(3)),
     (6, 4)),
    ("concatenate", "    return np.concatenate((x, y), axis=1)\n",
     (np.zeros((2, 3)), np.zeros((3, 3))), (6, 11)),
]


@pytest.mark.parametrize("what,body,args,pos", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shape_conflicts(tmp_path, what, body, args, pos):
    err = compile_error(tmp_path, f"@hybrid\ndef f(x, y):\n{body}", *args)
    assert where(err) == ("E50002", *pos)
    assert isinstance(err, errors.ShapeInferenceError)


@pytest.mark.parametrize("index", ["7", "-6", "2**40"])
def test_constant_index_out_of_bounds_is_an_index_error(tmp_path, index):
    err = compile_error(tmp_path, f"@hybrid\ndef f(x, y):\n    return x[{index}]\n",
                        np.zeros(5), 0)
    assert where(err) == ("E50004", 6, 11)
    assert isinstance(err, errors.IndexOutOfBoundsError) and isinstance(err, IndexError)
    assert f"index {eval(index)} is out of bounds for axis 0 with size 5 (array 'x')" in \
        err.message


def test_tuple_index_out_of_range_is_an_index_error(tmp_path):
    err = compile_error(tmp_path, "@hybrid\ndef f(x, y):\n    return x.shape[2]\n",
                        np.zeros((5, 3)), 0)
    assert where(err) == ("E50004", 6, 11) and isinstance(err, IndexError)
    assert "index 2 is out of range for a tuple of length 2" in err.message


def test_error_inside_inlined_callee_points_into_the_callee(tmp_path):
    body = """\
    @hybrid
    def g(a):
        return a & a

    @hybrid
    def f(x):
        return g(x) + 1
    """
    err = compile_error(tmp_path, body, X)
    assert where(err) == ("E50001", 6, 11)


def test_recursion_is_an_error(tmp_path):
    body = """\
    @hybrid
    def f(x):
        return f(x)
    """
    err = compile_error(tmp_path, body, X)
    assert where(err) == ("E50010", 6, 11)
    assert "recursive" in err.message


def test_library_function_callee(tmp_path):
    # a function of the user's code is compiled (test_diff_helpers); one of the
    # standard library or an installed package is not
    body = """\
    import statistics

    @hybrid
    def f(x):
        return statistics.fmean(x)
    """
    err = compile_error(tmp_path, body, X)
    assert where(err) == ("E50010", 8, 11)
    assert "'fmean' is a function of 'statistics'" in err.message
    assert "numpy function" in err.hint


def test_indented_function_keeps_real_columns(tmp_path):
    body = """\
    class Holder:
        @staticmethod
        @hybrid
        def f(x):
            s = "ünïcode"
            return x & x
    """
    fn, path = load(tmp_path, body, "Holder")
    with pytest.raises(errors.TypeMismatchError) as info:
        fn.f.ir(X)
    err = info.value
    assert (err.filename, err.lineno, err.col_offset) == (str(path), 9, 15)
    assert "9 |         return x & x" in str(err)


def test_argument_error_points_at_the_call(tmp_path):
    fn, path = load(tmp_path, "@hybrid\ndef f(x):\n    return x\n")
    with pytest.raises(errors.ArgumentError) as info:
        fn.ir({1, 2, 3})
    err = info.value
    assert err.code == "E50040" and err.filename == __file__
    assert "type set is not supported" in err.message
    with pytest.raises(errors.ArgumentError) as info:
        fn.ir(X, X)
    assert info.value.filename == __file__


def test_unknown_option_at_decoration_time():
    with pytest.raises(errors.InvalidOptionError) as info:
        hybrid(trget="cpu")
    err = info.value
    assert err.code == "E50041" and err.filename == __file__
    assert err.lineno == test_unknown_option_at_decoration_time.__code__.co_firstlineno + 2


def test_exec_with_linecache_is_located(tmp_path):
    filename = str(tmp_path / "generated_cell.py")
    src = "import numpy as np\nfrom pyasc import hybrid\n\n@hybrid\ndef g(x):\n" \
          "    return x & x\n"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(src, filename, "exec"), namespace)
    with pytest.raises(errors.TypeMismatchError) as info:
        namespace["g"].ir(X)
    assert (info.value.filename, info.value.lineno, info.value.col_offset) == \
        (filename, 6, 11)


def test_exec_without_source_is_a_clear_error():
    namespace: dict = {}
    src = "from pyasc import hybrid\n\n@hybrid\ndef g(x):\n    return x\n"
    exec(compile(src, "<no-file>", "exec"), namespace)
    with pytest.raises(errors.UnsupportedSyntaxError) as info:
        namespace["g"].ir(X)
    err = info.value
    assert err.code == "E50010" and err.filename == "<no-file>" and err.lineno == 3
    assert "source" in err.message and "linecache" in err.hint


def test_internal_errors_are_wrapped_and_located(tmp_path, monkeypatch):
    from pyasc.frontend import elementwise

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(elementwise, "_emit", boom)
    fn, path = load(tmp_path, "@hybrid\ndef f(x):\n    return x * 2\n")
    with pytest.raises(errors.InternalCompilerError) as info:
        fn.ir(X)
    err = info.value
    assert (err.lineno, err.col_offset, err.code) == (6, 11, "E50050")
    assert "kaboom" in err.message and "elementwise" not in str(err)
    assert err.__cause__ is None  # pyasc's own chain is not printed ...
    monkeypatch.setenv("PYASC_TRACEBACK", "full")
    with pytest.raises(errors.InternalCompilerError) as info:
        fn.ir(np.zeros(5, np.float32))
    assert isinstance(info.value.__cause__, RuntimeError)  # ... unless asked for


@pytest.mark.parametrize(("body", "code", "words"), [
    # Python allows it, pyasc's lists are fixed: unsupported, with the array alternative
    ("    l = [x[0, 0], 1.0]\n    l[0] = 3.0\n    return l[1]\n", "E50010", "np.array"),
    ("    t = (x[0, 0], 1.0)\n    t[0] = 3.0\n    return t[1]\n", "E50001", "immutable"),
    ("    s = x[0, 0]\n    s[0] = 3.0\n    return s\n", "E50001", "only arrays"),
], ids=["list", "tuple", "scalar"])
def test_item_assignment_to_a_non_array_says_what_to_do(tmp_path, body, code, words):
    # was E50001 "type mismatch" with the dtype hint ("cast with .astype") for all three
    err = compile_error(tmp_path, f"@hybrid\ndef f(x):\n{body}", X)
    assert where(err) == (code, 7, 4) and words in str(err)
    assert ".astype" not in str(err)
