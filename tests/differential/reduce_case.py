"""Shrink a failing generated program to the statements its failure needs.

``reduce_program`` removes statements (and whole ``if``/``for``/``while`` blocks) one at
a time, keeping a removal when the program still fails the same way on the same runner
(:func:`judge.judge`, same ``kind``), until no single removal keeps the failure.  It
works on the AST, so every candidate is valid Python; a removal that leaves a block
empty leaves ``pass``.  ``python -m tests.differential.campaign --reduce <case dir>``
writes the result to ``<case dir>/reduced.py``.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import replace

from judge import judge
from progen import Program, load


def _statements(tree: ast.AST) -> Iterator[tuple[list[ast.stmt], int]]:
    """``(body, position)`` of every statement inside the function, outermost first."""
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            body = getattr(node, field, None)
            if isinstance(node, ast.FunctionDef | ast.For | ast.While | ast.If) and body:
                for i in range(len(body)):
                    yield body, i


def _without(tree: ast.Module, k: int) -> str | None:
    """The source with the ``k``-th statement removed, or None if there is none."""
    tree = copy.deepcopy(tree)
    for n, (body, i) in enumerate(_statements(tree)):
        if n == k:
            if isinstance(body[i], ast.Return) and i == len(body) - 1 and \
                    isinstance(_parent_function(tree), ast.FunctionDef) and \
                    body is _parent_function(tree).body:
                return None  # the function's final return stays
            del body[i]
            if not body:
                body.append(ast.Pass())
            return ast.unparse(tree) + "\n"
    return None


def _parent_function(tree: ast.Module) -> ast.FunctionDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)


def still_fails(program: Program, source: str, runner: str, kind: str) -> bool:
    """Whether ``source`` (with the program's inputs) fails ``runner`` with ``kind``."""
    try:
        candidate = replace(program, source=source, fn=load(source))
    except Exception:  # noqa: BLE001 - not a program any more
        return False
    verdict = judge(candidate, () if runner == "frontend" else (runner,))
    got = verdict.outcomes.get(runner) or verdict.outcomes["frontend"]
    return got.status == "fail" and got.kind == kind


def reduce_program(program: Program, runner: str, kind: str) -> str:
    """The smallest source (by single statement removals) that still fails the same way."""
    source = program.source
    progress = True
    while progress:
        progress = False
        tree = ast.parse(source)
        k = 0
        while True:
            candidate = _without(tree, k)
            if candidate is None and k >= sum(1 for _ in _statements(tree)):
                break
            if candidate is not None and still_fails(program, candidate, runner, kind):
                source, tree, progress = candidate, ast.parse(candidate), True
                continue  # the same position now holds the next statement
            k += 1
    return source
