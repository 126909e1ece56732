"""where(c, s, t) over strings and bytes on Dask collections: one machine's answer."""
from __future__ import annotations

import pickle

import pytest

dask = pytest.importorskip("dask")

import lazyk  # noqa: E402,I001
import lazyk.dask as ldask  # noqa: E402


@pytest.mark.parametrize("data, typ, other", [
    (["fig", "kiwi", "x"], "3 * string", "other"),
    ([["fig", "a"], [], ["kiwi"], None], "4 * ?var * string", "other"),
    ([b"fig", b"kiwi", None], "3 * ?bytes", b"other"),
])
@pytest.mark.parametrize("per_part", [1, 2])
def test_where_over_strings_on_dask_as_one_machine(data, typ, other, per_part):
    x = lazyk.array(data, type=typ)
    key = "fig" if isinstance(other, str) else b"fig"
    want = lazyk.where(x == key, x, other).eval().to_list()
    s = ldask.from_ragged(x, per_part)
    got = ldask.evaluate(lazyk.where(s == key, s, other)).compute(scheduler="sync")
    assert got.to_list() == want
    # a graph that crossed a process boundary has new nodes: still recognised
    e = pickle.loads(pickle.dumps(lazyk.where(x == key, x, other)))
    assert e.eval().to_list() == want
