"""The test helpers themselves: FileCheck matching and the differential checker fail
when they should."""

import numpy as np
import pytest
from diff import assert_same, check
from helpers import filecheck

from pyasc import hybrid


def test_filecheck_accepts_and_rejects():
    filecheck('a\n"arith.add"(%x)\n', "// CHECK: arith.add\n")
    with pytest.raises(AssertionError):
        filecheck('"arith.add"(%x)\n', "// CHECK: arith.sub\n")


def test_assert_same_detects_value_dtype_and_kind_differences():
    with pytest.raises(AssertionError):
        assert_same(np.array([1.0]), np.array([2.0]), "v")
    with pytest.raises(AssertionError):
        assert_same(np.array([1.0], np.float32), np.array([1.0]), "dtype")
    with pytest.raises(AssertionError):
        assert_same(1, np.int64(1), "python vs numpy scalar")


def test_check_compares_runners_with_the_reference():
    @hybrid
    def double(x):
        return x * 2

    out = check(double, np.arange(4.0))
    assert np.array_equal(out, np.arange(4.0) * 2)
