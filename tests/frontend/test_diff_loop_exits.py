"""Names first assigned inside a loop and read after it (reaching definitions).

``while True:`` runs its body at least once and is left only by ``break``: a name
assigned before every ``break`` is defined after it (compiled == Python).  A name that
a ``break`` (or, in a loop with a normal exit, a ``continue``) can skip is possibly
unassigned after the loop: E50012 at its use, never a placeholder value returned in its
place (Python raises ``UnboundLocalError`` there).
"""

from __future__ import annotations

import importlib.util
import textwrap

import numpy as np
import pytest
from diff import check, rand

from pyasc import errors, hybrid


@hybrid
def assigned_then_break(x, n):
    i = 0
    while True:
        y = x * i
        i += 1
        if i >= n:
            break
    return y


@hybrid
def assigned_on_the_break_path(x, limit):
    i = 0
    while True:
        if x[i] > limit or i == x.shape[0] - 1:
            found = i
            value = x[i] * 2
            break
        i += 1
    return found, value


@hybrid
def while_one_two_breaks(x, n):
    k = 0
    while 1:
        k += 1
        if k > n:
            y = x + k
            break
        if k * k > 30:
            y = x - k
            break
    return y, k


@hybrid
def nested_loops_inside(x, n):
    while True:
        total = x * 0
        for j in range(x.shape[0]):
            if j == n:
                break  # the for's break: no capture for the while
            total = total + x[j]
        while True:
            inner = total * 2
            break
        result = inner + 1
        break
    return result


@hybrid
def returns_or_breaks(x, n):
    i = 0
    while True:
        i += 1
        if i > 10:
            return x * 0
        y = x * i
        if i >= n:
            break
    return y


@hybrid
def first_test_known_true(x, n):
    done = False
    steps = 0
    while not done:
        y = x + steps
        steps += 1
        done = steps >= n
    return y


@hybrid
def for_with_assignment_before_break(x, n):
    for i in range(3):
        if n > i:
            y = x * 1
            break
        y = x * 2
    return y


@hybrid
def captured_buffer(x, n):
    while True:
        buf = np.zeros(x.shape[0])
        buf[0] = x[0] * n
        break
    return buf


@hybrid
def captured_tuple(x, n):
    k = 0
    while True:
        k += 1
        pair = (x * k, k)
        if k >= n:
            break
    return pair


@hybrid
def inside_a_for(x, n):
    acc = x * 0
    for i in range(3):
        j = 0
        while True:
            j += 1
            t = x * j
            if j >= n + i:
                break
        acc = acc + t
    return acc


@hybrid
def in_a_callee(x, n):
    return assigned_then_break(x, n) * 2


@hybrid
def with_else_and_reassignment(x, n):
    k = 0
    while True:
        k += 1
        y = x * k
        if k >= n:
            break
        y = x * -1
    else:
        y = x * 1000
    return y


@pytest.mark.parametrize("fn", [captured_buffer, captured_tuple, inside_a_for, in_a_callee,
                                with_else_and_reassignment], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [1, 4])
def test_while_true_captures_buffers_tuples_and_nests(fn, n):
    check(fn, rand((4,)), n)


@pytest.mark.parametrize("n", [1, 3, 7])
def test_while_true_assigns_before_its_break(n):
    check(assigned_then_break, rand((4,)), n)
    check(while_one_two_breaks, rand((4,)), n)
    check(returns_or_breaks, rand((4,)), n)
    check(first_test_known_true, rand((4,)), n)
    check(for_with_assignment_before_break, rand((4,)), n - 1)


@pytest.mark.parametrize("limit", [-10.0, 0.3, 10.0])
def test_while_true_assigns_on_the_path_that_breaks(limit):
    check(assigned_on_the_break_path, rand((7,)), limit)


@pytest.mark.parametrize("n", [0, 2, 9])
def test_breaks_of_nested_loops_belong_to_them(n):
    check(nested_loops_inside, rand((5,)), n)


# ---------------------------------------------------------------- possibly unassigned

PRELUDE = "import numpy as np\nfrom pyasc import hybrid\n\n"
UNASSIGNED = {
    "after a conditional break": ("""\
        @hybrid
        def f(x, n):
            i = 0
            while True:
                i += 1
                if i >= n:
                    break
                y = x * i
            return y
        """, (np.ones(3), 1), "while True"),
    "before a break in one branch only": ("""\
        @hybrid
        def f(x, n):
            while True:
                if n > 2:
                    y = x
                    break
                if n > 1:
                    break
            return y
        """, (np.ones(3), 2), "while True"),
    "for: break before it": ("""\
        @hybrid
        def f(x, n):
            for i in range(3):
                if i >= n:
                    break
                y = x * i
            return y
        """, (np.ones(3), 0), "loop ends"),
    "for: continue before it": ("""\
        @hybrid
        def f(x, n):
            for i in range(3):
                if i < n:
                    continue
                y = x * i
            return y
        """, (np.ones(3), 5), "loop ends"),
    "while known to run: break before it": ("""\
        @hybrid
        def f(x, n):
            k = 0
            while k < 3:
                k += 1
                if k > n:
                    break
                y = x * k
            return y
        """, (np.ones(3), 0), "loop ends"),
}


def _load(tmp_path, body: str):
    path = tmp_path / "loops.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location("loops_mod", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f, path


@pytest.mark.parametrize("case", list(UNASSIGNED), ids=list(UNASSIGNED))
def test_a_name_a_jump_can_skip_is_undefined_after_the_loop(tmp_path, case):
    body, args, words = UNASSIGNED[case]
    fn, path = _load(tmp_path, body)
    with pytest.raises(UnboundLocalError):  # Python fails on these arguments
        fn.__wrapped__(*args)
    with pytest.raises(errors.UndefinedNameError) as info:
        fn(*args)  # compiled: the use is refused, not given a placeholder
    err = info.value
    lines = path.read_text().splitlines()
    assert (err.filename, lines[err.lineno - 1].strip()) == (str(path), "return y")
    assert "'y'" in err.message and words in err.message
