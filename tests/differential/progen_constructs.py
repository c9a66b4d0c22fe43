"""The constructs of generated programs (``progen``), each recognised in the source by
a pattern: the CI test checks its fixed-seed run shows every one, and the campaign
counts how often each was run."""

from __future__ import annotations

import re

CONSTRUCTS = {
    "for": r"\bfor \w+ in range\(", "while": r"\bwhile k\d+ <", "if": r"\n\s+if ",
    "elif": r"\belif ", "else": r"\belse:", "break": r"\bbreak\b",
    "continue": r"\bcontinue\b", "early return": r"\n {8,}return ",
    "reduction": r"\.(sum|max|min|mean)\(", "keepdims": r"keepdims=True",
    "slice write": r"out\[(1:|::2)\] =", "element write": r"out\[i\d+\] =",
    "2-d element write": r"out\[i\d+, i\d+\] [-+*]?=",
    "in-place update": r"(out\[[^\]]+\]|acc|row) [-+*]= ",
    "math": r"np\.(exp|log|tanh)\(", "where": r"np\.where\(", "cast": r"astype\(|np\.int",
    "floor division": r" // ", "modulo": r" % ", "power": r" \*\* ",
    # data-dependent control (progen_loops)
    "search loop": r"while j\d+ < a\.shape\[\d\] and ", "data break": r"if .*\[i\d+\].*:\n\s+.*\n(.*\n)*?\s+break",
    "loop on a value": r"while k\d+ < \d+ and ", "index found by search": r"if j\d+ < a\.shape",
    # views (progen_views)
    "negative step": r"\[(-2)?::-[12]\]|\[:, ::-1\]", "odd elements": r"\[1::2\]",
    "transpose": r"\.T\b|np\.transpose\(", "reshape": r"\.reshape\(|\.ravel\(|np\.reshape\(",
    "new axis": r"None\]|\[None|np\.newaxis", "write through view": r"out(\.T)?\[[^\]]*::-?[12][^\]]*\] [-+*]?=|out\.T\[",
    "write through alias": r"\bv\d+\[[^\]]*\] [-+*]?=",
    "rebound to a view": r"(?m)^ {8,}(row|t\d+) = [a-z]\w*(\[[^\]]*\]|\.T)+$",
    # dtypes (progen_dtypes)
    "narrow cast": r"np\.(int8|int16|uint8|float16|bool)\b",
    # reductions (progen_reduce)
    "prod": r"\.prod\(|np\.prod\(", "argmax/argmin": r"arg(max|min)\(", "any/all": r"\b(any|all)\(",
    "tuple axis": r"axis=\(", "negative axis": r"axis=-",
    # gather / scatter (progen_index)
    "gather": r"np\.take\(|\.take\(|[^t ]\[(:, )?(np\.arange\(|np\.argsort\(|np\.clip\(|\(.*% a\.shape)",
    "mask": r"\w\[\(.*[<>=]=?.*\)\]\.", "scatter": r"(?m)^\s*out\[(:, )?(np\.arange|np\.argsort|np\.clip|\(.*% a\.shape\[\d\]\)\])",
    "masked write": r"(?m)^\s*out\[\([^\]]*[<>=]=?[^\]]*\)\] \+?= ",
    # matmul (progen_matmul)
    "matmul": r" @ |np\.matmul\(|np\.dot\(|\.dot\(",
    # accumulators per output (progen_accum: the "loops" profile only)
    "window accumulator": r"(?m)^\s+r\d+ = .*\n\s+for k\d+ in range\(",
    "running extreme": r"if .* [<>] r\d+:\n\s+r\d+ = ",
    "shifted slice update": r"out\[(:, )?k\d+:\] [-+]?= ",
    "loop sum": r"(?m)^(\s+)r\d+ = np\.float(32|64)\([^)]*\)\n\1for i\d+ in range\(a\.shape",
    "np.empty": r"np\.empty",
    "pixel stencil": r"for di\d+ in range\(.*\n\s+for dj\d+ in range\(",
    "window slice": r"\[i\d+( - \d+)?:i\d+ \+ \d+, j\d+( - \d+)?:j\d+ \+ \d+\]",
    "row reduction": r"r\d+ = [ab]\[i\d+(, :)?\]\n\s+\w+\[i\d+\] = ",
    "window of a run-time size": r"k\d+ = min\([ab]\.shape\[1\], \d\)\n",
    "dilated window slice": r"j\d+:j\d+ \+ \d+:2\]",
}
"""Construct -> a pattern of the source text that shows it."""
PROFILE_ONLY = {"loops": ("window accumulator", "running extreme", "shifted slice update",
                          "loop sum",
                          "np.empty", "pixel stencil", "window slice", "row reduction",
                          "window of a run-time size", "dilated window slice")}
"""The constructs only a generator profile other than ``"default"`` draws."""


def constructs_in(source: str) -> list[str]:
    """The constructs whose pattern ``source`` matches."""
    return [name for name, pattern in CONSTRUCTS.items() if re.search(pattern, source)]
