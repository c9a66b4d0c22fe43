"""Module verifier: structure, dominance, terminators, and every op's own ``verify_op``.

Rules:
  * every region has exactly one block (control flow is structured);
  * a value is used only after its definition in the same block, or inside a region of
    an op that comes after the definition in an enclosing block; ops with the
    ``isolated`` trait (``func.func``) see nothing from outside;
  * a block of a region whose op declares ``terminators`` ends with the declared op, and
    ops with the ``terminator`` trait appear only last;
  * each op's declarations hold (operand/result/region counts, attributes) and its
    ``verify_op`` passes (operand and result types, yield types against results...).
Failures raise :class:`pyasc.errors.IRVerificationError` located at the op's source loc.
"""

from __future__ import annotations

from pyasc.errors import IRVerificationError
from pyasc.ir.core import Block, Operation, Value


def _fail(op: Operation, message: str) -> IRVerificationError:
    loc = op.loc
    return IRVerificationError(
        f"'{op.name}': {message}", filename=loc.file if loc.known else None,
        lineno=loc.line if loc.known else None,
        col_offset=(loc.col - 1) if loc.known and loc.col else None)


def verify_op(op: Operation, visible: set[Value] | None = None) -> None:
    """Verify ``op`` and everything nested in it; ``visible`` are values defined above."""
    visible = set() if visible is None else visible
    for v in op.operand_values:
        if v not in visible:
            raise _fail(op, f"operand of type {v.type} does not dominate its use")
    try:
        op.verify_structure()
        op.verify_op()
    except IRVerificationError:
        raise
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise _fail(op, str(exc)) from None
    inner_visible = set() if op.has_trait("isolated") else visible
    terminators = getattr(op, "terminators", None)
    for i, region in enumerate(op.region_list):
        if len(region.blocks) != 1:
            raise _fail(op, f"region {i} has {len(region.blocks)} blocks; expected 1")
        expected = terminators[i] if terminators else None
        _verify_block(op, region.blocks[0], inner_visible, expected)


def _verify_block(parent: Operation, block: Block, visible: set[Value],
                  terminator: str | None) -> None:
    # One shared set, extended while inside the block and restored after: linear time.
    added: list[Value] = [a for a in block.args if a not in visible]
    visible.update(added)
    try:
        for i, op in enumerate(block.ops):
            if op.parent is not block:
                raise _fail(op, "op's parent link is broken")
            if op.has_trait("terminator") and i != len(block.ops) - 1:
                raise _fail(op, "terminator must be the last op of its block")
            verify_op(op, visible)
            for r in op.result_values:
                visible.add(r)
                added.append(r)
    finally:
        visible.difference_update(added)
    if terminator is not None:
        last = block.terminator
        if last is None or last.name != terminator:
            found = last.name if last else "nothing"
            raise _fail(parent, f"region must end with '{terminator}', found '{found}'")


def verify_module(module: Operation) -> None:
    """Verify a whole module (or any top-level op); raises ``IRVerificationError``."""
    verify_op(module)
