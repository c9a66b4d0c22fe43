"""``np.unique`` (``axis=None``): the sorted distinct elements, with numpy's optional
first indices, inverse and counts.

Built from what the frontend already has: a stable ``argsort`` of the flattened array
(NaN last), the sorted values taken through it, and a mask keeping each element that
differs from the one before (with ``equal_nan``, the default, only the first NaN: NaN
!= NaN would keep them all); ``x[mask]`` then has the run-time length of a boolean
index.  The first index of each value is the argsort position under the mask (the sort
is stable, so it is the first occurrence); the counts are the gaps between kept
positions; the inverse is each element's rank among the kept values, put back in the
input's order by the inverse permutation (an argsort of the argsort) and shape.
"""

from __future__ import annotations

import numpy as np

from pyasc.errors import UnsupportedNumpyError
from pyasc.frontend.elementwise import apply_ufunc
from pyasc.frontend.indexing import load_index
from pyasc.frontend.npfuncs.common import array_arg
from pyasc.frontend.numpy_registry import call_numpy, register
from pyasc.frontend.values import Tensor


def _u(lw, name: str, *operands: object) -> object:
    return apply_ufunc(lw.em, name, list(operands))


def _first_of_runs(lw, s: Tensor, equal_nan: bool) -> Tensor:
    """True where a sorted element starts a run of equal values."""
    nxt, prev = load_index(lw, s, (slice(1, None),)), load_index(lw, s, (slice(None, -1),))
    starts = _u(lw, "not_equal", nxt, prev)
    if equal_nan and s.type.element.is_float:
        both = _u(lw, "logical_and", _u(lw, "isnan", nxt), _u(lw, "isnan", prev))
        starts = _u(lw, "logical_and", starts, _u(lw, "logical_not", both))
    first = load_index(lw, call_numpy(lw, "ones_like", [s], {"dtype": np.bool_}),
                       (slice(None, 1),))
    return call_numpy(lw, "concatenate", [[first, starts]], {})


@register("unique")
def unique(lw, ar, return_index=False, return_inverse=False, return_counts=False,
           axis=None, *, equal_nan=True, sorted=True):
    """sorted distinct elements (`axis=None` only), optional first indices, inverse, counts"""
    flags = [lw.static(v, n) for v, n in ((return_index, "return_index"),
                                          (return_inverse, "return_inverse"),
                                          (return_counts, "return_counts"))]
    if lw.static(axis, "axis") is not None:
        raise UnsupportedNumpyError("np.unique along an axis is not supported",
                                    hint="np.unique of the whole array (axis=None)")
    lw.static(sorted, "sorted")  # numpy 2.3's hint; the result is sorted either way
    x = array_arg(lw, ar)
    flat = array_arg(lw, call_numpy(lw, "ravel", [x], {}))
    order = array_arg(lw, call_numpy(lw, "argsort", [flat], {"kind": "stable"}))
    s = array_arg(lw, call_numpy(lw, "take", [flat, order], {}))
    mask = _first_of_runs(lw, s, bool(lw.static(equal_nan, "equal_nan")))
    values = load_index(lw, s, (mask,))
    if not any(flags):
        return values
    out = [values]
    if flags[0]:
        out.append(load_index(lw, order, (mask,)))
    if flags[1]:
        ranks = _u(lw, "subtract", call_numpy(lw, "cumsum", [mask], {}), 1)
        back = call_numpy(lw, "argsort", [order], {})  # the inverse permutation
        inverse = call_numpy(lw, "take", [ranks, back], {})
        out.append(call_numpy(lw, "reshape", [inverse, lw.em.dims(x)], {}))
    if flags[2]:
        starts = call_numpy(lw, "flatnonzero", [mask], {})
        size = call_numpy(lw, "array", [[lw.em.dims(flat)[0]]], {"dtype": np.int64})
        out.append(call_numpy(lw, "diff", [starts], {"append": size}))
    return tuple(out)
