"""Inputs a new user passes: Python ints past int64, pandas Series, string lists, data without
missing values for `?T` parameters, and the errors for mistakes."""
import numpy as np
import pytest

import lazyk
from lazyk.errors import ArrayConstructionError


# ---------------------------------------------------------------- ints past int64
@pytest.mark.parametrize("data, where", [([2**63, -1], "[0]"), ([[1.0], [2**63, -1]], "[1, 0]"),
                                         ([-5, 3, 2**64 - 1], "[2]")])
def test_uint64_and_negative_ints_raise_a_clear_error(data, where):
    with pytest.raises(ArrayConstructionError, match=rf"integer \d+ at {re_esc(where)}.*"
                                                     r"negative integer -\d+"):
        lazyk.array(data)


def re_esc(s):
    import re
    return re.escape(s)


def test_int_error_does_not_end_a_map_early():
    rows = [[1, 2], [2**63, -1], [3]]
    got = []
    with pytest.raises(ArrayConstructionError):
        for a in map(lazyk.array, rows):
            got.append(a)
    assert len(got) == 1
    assert str(lazyk.array([2**63, 1]).type) == "2 * uint64"
