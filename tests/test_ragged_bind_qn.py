"""`bind()` and `out=` of results with `?n` rows (missing rows against a fixed dim of n):
bound call == unbound call == the plain-Python reference, also after the inputs' values and
missing values changed in place, from several threads; out needs `?n` where the result has
it."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lazyk
from lazyk.errors import BindError
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_bind import _in_threads, _same_out, check_bound, make_out, small_parts  # noqa: F401
from tests.test_ragged_bind_where import _changed
from tests.test_ragged_qfull import QALL, _rows_at


def _fixed_operand(t: str, d):
    """A NumPy operand whose fixed last dims meet t's first `?var` dim (`?n` rows)."""
    dims = R.parse_type(t).dims
    k = next(i for i, dim in enumerate(dims) if dim.option)
    lengths = [len(r) for r in _rows_at(d, k)] or [2]
    n = max(set(lengths), key=lengths.count) or 2
    shape = (n,) + tuple(dim.size if not dim.var else 1 for dim in dims[k + 1:])
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape) / 2


@settings(max_examples=25, deadline=None)
@given(S.ragged(layouts=QALL, dtypes=("float64", "int64")),
       st.sampled_from(["add", "multiply", "greater"]), st.booleans(),
       st.lists(st.integers(0, 5), min_size=100, max_size=100))
def test_results_with_missing_fixed_rows_bind_and_store(case, op, reduce, draws):
    t, d = case
    a = _fixed_operand(t, d)
    ta = " * ".join([str(n) for n in a.shape] + ["float64"])
    px, pm = lazyk.placeholder("x", t), lazyk.placeholder("m", ta)
    e = getattr(lazyk, op)(px, pm)
    k = lazyk.compile(e.sum(axis=-1) if reduce else e)
    x = lazyk.array(d, type=t)

    def ref(data):
        r = R.elementwise(op, R.array(data, t), R.array(a.tolist(), ta))
        return R.reduce("sum", r, -1) if reduce else r
    nd = len(R.parse_type(t).dims)
    e1 = _changed(d, nd, iter(draws * 20), t.split(" * ")[-1].startswith("?"))

    def change():
        assert lazyk.compile(lazyk.placeholder("p", t) * 1)(lazyk.array(e1, type=t),
                                                            out=x) is x
    got = check_bound(lambda: ref(d), lambda out: k.bind(out, x, a),
                      again=(change, lambda: ref(e1), lambda out: k(x, a, out=out)))
    assert got in ("match", "raises", "scalar"), got


def test_missing_fixed_rows_by_hand_and_what_out_needs(small_parts):  # noqa: F811
    x = lazyk.array([[1.0, 2.0], None, [3.0]], type="3 * ?var * float64")
    m = np.ones(2)
    k = lazyk.compile(lazyk.placeholder("x", "N * ?var * float64") +
                      lazyk.placeholder("m", "2 * float64"))
    out = lazyk.array([[0.0, 0.0], None, [0.0, 0.0]], type="3 * ?2 * float64")
    assert k(x, m, out=out) is out
    assert out.to_list() == [[2.0, 3.0], None, [4.0, 4.0]]
    fresh = lazyk.array([[0.0, 0.0]] * 3, type="3 * ?2 * float64")  # a present row: made missing
    run = k.bind(fresh, x, m)
    assert run().to_list() == [[2.0, 3.0], None, [4.0, 4.0]]
    m[:] = [10.0, 20.0]  # values changed in place are seen
    assert run().to_list() == [[11.0, 22.0], None, [13.0, 23.0]]
    with pytest.raises(BindError, match="lazyk array of the result.s type and row lengths"):
        k.bind(lazyk.array([[0.0, 0.0]] * 3, type="3 * 2 * float64"), x, m)
    with pytest.raises(lazyk.NotSupportedError, match="lazyk array of the result.s type"):
        k(x, m, out=lazyk.array([[0.0, 0.0]] * 3, type="3 * 2 * float64"))
    n = 300  # from several threads at once, over several parts
    rows = [None if i % 7 == 3 else [float(i), 1.0] for i in range(n)]
    big = lazyk.array(rows, type=f"{n} * ?var * float64")
    want = [None if r is None else [r[0] + 10.0, r[1] + 20.0] for r in rows]
    runs = [k.bind(lazyk.array([[0.0, 0.0]] * n, type=f"{n} * ?2 * float64"), big, m)
            for _ in range(2)]
    assert runs[0]._nparts > 1
    errors = []

    def work():
        try:
            for _ in range(20):
                for r in runs:
                    assert r().to_list() == want
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    _in_threads(work, errors)


def test_where_over_missing_rows_with_missing_fixed_rows_binds():
    # which `?n` rows are missing follows the values: each call stores its own
    # (tests/test_ragged_bind_where_qn.py draws these forms)
    x = lazyk.placeholder("x", "N * ?var * float64")
    m = lazyk.placeholder("m", "2 * float64")
    k = lazyk.compile(lazyk.where(m > 0, x, m))
    a = lazyk.array([[1.0, 2.0], None, [3.0, 4.0]], type="3 * ?var * float64")
    mm = np.array([1.0, -1.0])
    assert k(mm, a).to_list() == [[1.0, -1.0], None, [3.0, -1.0]]
    out = lazyk.array([[0.0, 0.0], None, [0.0, 0.0]], type="3 * ?2 * float64")
    run = k.bind(out, mm, a)
    assert run() is out and out.to_list() == [[1.0, -1.0], None, [3.0, -1.0]]
    mm[:] = [-1.0, -2.0]  # no element takes x's missing row: the row is present
    assert run().to_list() == [[-1.0, -2.0], [-1.0, -2.0], [-1.0, -2.0]]
