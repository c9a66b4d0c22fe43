"""An op class's declared operand, result and region names: the accessor properties
made from them and the count checks of verification (``core.Operation`` uses both).

A declaration is a tuple of names; one may end in ``*`` (variadic: any number, at
least zero), the names after it then counting from the end.
"""

from __future__ import annotations

import functools


def check_count(op: object, what: str, names: tuple[str, ...], n: int) -> None:
    """Raise when ``n`` operands/results/regions (``what``) do not fit ``names``."""
    variadic, fixed = count_spec(names)
    if (variadic and n < fixed) or (not variadic and n != fixed):
        raise ValueError(f"expected {'at least ' if variadic else ''}{fixed} {what}s, got {n}")


@functools.cache
def count_spec(names: tuple[str, ...]) -> tuple[bool, int]:
    """(any variadic name, the number of fixed ones) of an op class's declaration: asked
    for every op at every verification (PYASC_VERIFY_IR=each), so computed once."""
    return any(x.endswith("*") for x in names), len([x for x in names if not x.endswith("*")])


def install_accessors(cls: type, spec_attr: str, storage: str) -> None:
    """Give op class ``cls`` a property per name it declares in ``spec_attr`` (a
    variadic ``name*`` is a list; the names after it count from the end)."""
    names = cls.__dict__.get(spec_attr)
    if not names:
        return
    var_pos = [i for i, n in enumerate(names) if n.endswith("*")]
    if len(var_pos) > 1:
        raise ValueError(f"{cls.__name__}: at most one variadic {spec_attr[:-1]}")
    n_after = len(names) - var_pos[0] - 1 if var_pos else 0
    for i, n in enumerate(names):
        key = n.rstrip("*")
        if key in cls.__dict__:
            continue  # the op defines a custom accessor
        if n.endswith("*"):
            prop = property(lambda self, i=i, s=storage, a=n_after:
                            list(getattr(self, s)[i:len(getattr(self, s)) - a]))
        elif var_pos and i > var_pos[0]:
            from_end = len(names) - i
            prop = property(lambda self, j=from_end, s=storage: getattr(self, s)[-j])
        else:
            prop = property(lambda self, i=i, s=storage: getattr(self, s)[i])
        setattr(cls, key, prop)
