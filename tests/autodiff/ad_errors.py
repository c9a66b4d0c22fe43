"""Programs automatic differentiation refuses (``test_errors``): each ``# E`` line is
where the error must point."""

from __future__ import annotations

import numpy as np

from pyasc import hybrid


@hybrid
def while_loop(x):
    s = x
    while s.sum() < 100.0:  # E
        s = s * 2.0
    return s


@hybrid
def runtime_trip_count(x, n):
    s = x
    for _ in range(n):  # E
        s = s * x
    return s


@hybrid
def sorted_values(x):
    return np.sort(x) * 2.0  # E


@hybrid
def argmax_as_number(x):
    i = np.argmax(x)
    return x * i.astype(np.float64)  # E


@hybrid
def writes_input(x):
    x[0] = 1.0  # E
    return x * 2.0


@hybrid
def product(x):
    return np.prod(x, axis=0)  # E


@hybrid
def vector_result(x):  # E (the function's return: the result is not a scalar)
    return x * 2.0


@hybrid
def scattered(x):
    out = np.zeros((4, 3))
    out[np.array([0, 2])] = x[:2] * 2.0  # E
    return out


@hybrid
def runtime_loop_writes(x, n):
    out = np.zeros((4, 3))
    for i in range(n):  # E
        out[i] = x[i] * 2.0
    return out


def error_line(fn) -> int:
    """The line of ``fn``'s source marked ``# E``."""
    import inspect

    lines, start = inspect.getsourcelines(fn.__wrapped__)
    return start + next(i for i, line in enumerate(lines) if "# E" in line)
