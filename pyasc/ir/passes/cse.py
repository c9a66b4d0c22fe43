"""``cse``: common subexpression elimination over structured regions.

Two pure, region-free ops are the same expression when they have the same name,
operands (in any order for commutative ops), attributes and result types.  The later
one is replaced by the earlier one when the earlier dominates it: it comes before it in
the same block, or before the op whose region (transitively) contains it.  Scopes are
pushed per region, so a value defined inside a region never replaces one outside, and
``isolated`` ops (functions) start from an empty scope.

Attribute keys are exact: ``0.0`` and ``-0.0`` are different constants, as are ``1``
and ``true``, and dense constants compare by their bytes.
"""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Hashable

from pyasc.ir.core import DenseArray, Operation, Region
from pyasc.ir.ops.func import ModuleOp
from pyasc.ir.passes.manager import Pass, PassContext, register_pass


def attr_key(value: object) -> Hashable:
    """A hashable key equal only for attribute values that print identically."""
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    if isinstance(value, tuple | list):
        return ("list", tuple(attr_key(v) for v in value))
    if isinstance(value, DenseArray):
        return ("dense", value.type, value.array.dtype.str, value.array.tobytes())
    return (type(value).__name__, value)


def _eligible(op: Operation) -> bool:
    return op.has_trait("pure") and not op.region_list and bool(op.result_values)


def expression_key(op: Operation) -> Hashable:
    """What makes two ops compute the same values."""
    operands = op.operand_values  # values hash by identity
    if op.has_trait("commutative"):
        operands.sort(key=id)
    attrs = tuple(sorted((k, attr_key(v)) for k, v in op.attributes.items()))
    return (op.name, tuple(operands), attrs, tuple(r.type for r in op.result_values))


def _cse_region(region: Region, scope: ChainMap) -> bool:
    changed = False
    for block in region.blocks:
        local = scope.new_child()
        for op in list(block.ops):
            if _eligible(op):
                key = expression_key(op)
                earlier = local.get(key)
                if earlier is not None:
                    for old, new in zip(op.result_values, earlier.result_values,
                                        strict=True):
                        old.replace_all_uses_with(new)
                    op.erase()
                    changed = True
                    continue
                local[key] = op
            inner = ChainMap() if op.has_trait("isolated") else local
            for r in op.region_list:
                changed |= _cse_region(r, inner)
    return changed


def eliminate_common_subexpressions(op: Operation) -> bool:
    """Run CSE on everything nested in ``op``; returns True if anything changed."""
    changed = False
    for region in op.region_list:
        changed |= _cse_region(region, ChainMap())
    return changed


@register_pass
class CSE(Pass):
    """Replace repeated pure expressions by their first (dominating) occurrence."""

    name = "cse"
    description = "common subexpression elimination"

    def run(self, module: ModuleOp, ctx: PassContext) -> None:
        eliminate_common_subexpressions(module)
