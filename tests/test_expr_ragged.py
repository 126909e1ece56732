"""Ragged (var) and missing-value (?T) expressions against hand-computed expectations."""
import re

import numpy as np
import pytest

import lazyk


def A(data, type=None):
    return lazyk.array(data, type=type)


def test_var_times_scalar_plus_length_one_rows():
    a = A([[1.0, 2.0, 3.0], [4.0]], "2 * var * float64")
    b = A([[10.0], [20.0]])
    e = a * 2 + b
    assert str(e.type) == "2 * var * float64"
    r = e.eval()
    assert str(r.type) == "2 * var * float64"
    assert r.to_list() == [[12.0, 14.0, 16.0], [28.0]]


def test_var_with_var_equal_lengths_pair_up_and_length_one_broadcasts():
    a = A([[1, 2, 3], [4], [5, 6]])
    b = A([[10, 20, 30], [1, 2, 3], [7]])
    assert (a + b).eval().to_list() == [[11, 22, 33], [5, 6, 7], [12, 13]]


def test_var_against_fixed_gives_fixed_when_rows_fit():
    a = A([[1, 2, 3], [4]])
    f = np.array([[10, 20, 30], [40, 50, 60]])
    e = a + f
    assert str(e.type) == "2 * 3 * int64"
    r = e.eval()
    assert str(r.type) == "2 * 3 * int64"
    assert r.to_list() == [[11, 22, 33], [44, 54, 64]]


def test_mismatched_rows_name_row_and_lengths():
    a = A([[1, 2, 3], [4]])
    b = A([[1, 2], [3]])
    with pytest.raises(lazyk.ShapeError, match=r"row 0: operand 0 has length 3 and operand 1 "
                                               r"has length 2"):
        (a + b).eval()


def test_missing_values_propagate_and_comparisons_give_option_bool():
    a = A([[1.0, None, 3.0], [4.0]], "2 * var * ?float64")
    e = a * 10 - 1
    assert str(e.type) == "2 * var * ?float64"
    assert e.eval().to_list() == [[9.0, None, 29.0], [39.0]]
    c = a > 2
    assert str(c.type) == "2 * var * ?bool"
    assert c.eval().to_list() == [[False, None, True], [True]]
    o = A([1, None, 3], "3 * ?int32")
    assert (o + o).eval().to_list() == [2, None, 6]
    assert str((o + 1.5).eval().type) == "3 * ?float64"


def test_nan_is_a_value_not_missing():
    a = A([[np.nan, None]], "1 * var * ?float64")
    r = lazyk.isnan(a).eval().to_list()
    assert r == [[True, None]]


def test_reductions_over_var_rows():
    a = A([[1, 2, 3], [4], [5, 6]])
    s = a.sum(axis=-1)
    assert str(s.type) == "3 * int64"
    assert s.eval().to_list() == [6, 4, 11]
    assert a.max(axis=-1).eval().to_list() == [3, 4, 6]
    assert a.mean(axis=1).eval().to_list() == [2.0, 4.0, 5.5]
    assert (a * a).sum(axis=-1, keepdims=True).eval().to_list() == [[14], [16], [61]]


def test_reductions_with_missing_and_skipna():
    a = A([[1.0, None, 3.0], [4.0], []], "3 * var * ?float64")
    assert a.sum(axis=-1).eval().to_list() == [None, 4.0, 0.0]
    assert str(a.sum(axis=-1, skipna=True).type) == "3 * float64"
    assert a.sum(axis=-1, skipna=True).eval().to_list() == [4.0, 4.0, 0.0]
    assert a.mean(axis=-1, skipna=True).eval().to_list() == [2.0, 4.0, None]
    assert a.max(axis=-1, skipna=True).eval().to_list() == [3.0, 4.0, None]
    assert a.max(axis=-1).eval().to_list() == [None, 4.0, None]
    o = A([1, None, 3], "3 * ?int32")
    assert o.sum().eval().to_list() is None
    assert o.sum(skipna=True).eval().to_list() == 4


def test_reduction_feeding_more_work():
    a = A([[1.0, 2.0, 6.0], [4.0]])
    assert (a - a.mean(axis=-1, keepdims=True)).eval().to_list() == [[-2.0, -1.0, 3.0], [0.0]]
    o = A([[1.0, None, 3.0], [4.0, 6.0]], "2 * var * ?float64")
    share = (o / o.sum(axis=-1, keepdims=True, skipna=True)).eval()
    assert share.to_list() == [[0.25, None, 0.75], [0.4, 0.6]]
    assert (a.sum(axis=-1) * 2).eval().to_list() == [18.0, 8.0]


def test_unsupported_forms_say_so():
    a = A([[1.0, 2.0], [3.0]])
    with pytest.raises(lazyk.NotSupportedError):
        lazyk.evaluate(a + 1, out=np.zeros(3))


def test_more_forms_outer_dims_top_level_var_and_scalars():
    a = A([[[1, 2], [3]], [[4], [5, 6, 7]]])
    assert str(a.type) == "2 * 2 * var * int64"
    assert (a * 2).eval().to_list() == [[[2, 4], [6]], [[8], [10, 12, 14]]]
    assert a.sum(axis=-1).eval().to_list() == [[3, 3], [4, 18]]
    v = A([1, 2, 3], "var * int32")
    r = (v + 1).eval()
    assert str(r.type) == "var * int32" and r.to_list() == [2, 3, 4]
    assert v.sum().eval().to_list() == 6
    o = A(None, "?int32")
    assert str((o + 1).type) == "?int32" and (o + 1).eval().to_list() is None
    five = A(5, "?int32")
    assert (A([1, None, 3], "3 * ?int32") + five).eval().to_list() == [6, None, 8]
    b = A([[1], [2, 3, 4]])
    got = (b + np.array([10, 20, 30])).eval()
    assert str(got.type) == "2 * 3 * int64" and got.to_list() == [[11, 21, 31], [12, 23, 34]]
    p = A([[1, None]], "1 * var * ?int64")
    assert lazyk.where(p > 0, p, 0).eval().to_list() == [[1, None]]


def test_arrmeta_gather_equals_list_reading():
    from lazyk.frontend.leaves import describe_ragged
    from lazyk.runtime.rows import gather

    def from_list(array):  # the same flattening through to_list
        shape, _, option = describe_ragged(array)
        data, outer = array.to_list(), shape[:-1]
        if not shape:
            data, outer, shape = [data], (), (1,)
        rows = [data]
        for _ in outer:
            rows = [r for row in rows for r in row]
        flat = [v for r in rows for v in r]
        return (tuple(outer), shape[-1] is None,
                None if shape[-1] is None or not outer and not array.type.shape else shape[-1],
                np.array([len(r) for r in rows]),
                np.array([0 if v is None else v for v in flat], "f8"),
                np.array([v is not None for v in flat]) if option else None)

    a = A([[1, 2, 3], [4, 5], [6]], "3 * var * int64")
    cases = [A([[1.0, None, 3.0], [4.0]], "2 * var * ?float64"),
             A([[1, 2, 3], [4], []], "3 * var * int32"), A([[[1, 2], [3]], [[4], [5, 6, 7]]]),
             A([1, None, 3], "3 * ?int16"), A([1, 2, 3], "var * int32"), A(None, "?int32"),
             a[::-1], a[:, ::-1], a[1:]]
    for c in cases:
        g = gather(c, np.dtype("f8"))
        outer, var, last, lengths, values, mask = from_list(c)
        assert (g.outer, g.var) == (outer, var), c.type
        np.testing.assert_array_equal(g.lengths, lengths)
        np.testing.assert_array_equal(g.values, values)
        assert (g.mask is None) == (mask is None)
        if g.mask is not None:
            np.testing.assert_array_equal(g.mask, mask)
    assert (a[:, ::-1] * 10).eval().to_list() == [[30, 20, 10], [50, 40], [60]]


# ---------------------------------------------------------------- fused var-row reductions
def _one_fused_kernel(monkeypatch):
    """Fail if the ragged path gathers values or runs a separate elementwise kernel."""
    def boom(*a, **k):
        raise AssertionError("reduction ran outside the fused loop-nest kernel")
    monkeypatch.setattr("lazyk.runtime.rows.gather", boom)  # rows are read in place, not copied
    monkeypatch.setattr("lazyk.runtime.launch.run_program", boom)


def test_fused_var_sum_is_exactly_one_kernel(monkeypatch):
    from lazyk.kernel import flat as kernel
    from lazyk.kernel import nest as nest_kernel

    _one_fused_kernel(monkeypatch)
    nest_kernel.kernels.clear()
    x = A([[1.0, 2.0, 3.0], [4.0], [], [5.0, 6.0]], "4 * var * float64")
    y = A([[1.0], [2.0, 3.0], [], [7.0]], "4 * var * float64")
    e = (x * 2 + y).sum(axis=-1)
    assert str(e.type) == "4 * float64"
    before_seg, before_k = dict(nest_kernel.nest_stats), dict(kernel.stats)
    r = e.eval()
    assert str(r.type) == "4 * float64"
    # row 0: y's length-1 row broadcasts; row 1: x's does; row 2 is empty
    assert r.to_list() == [3 + 5 + 7, 10 + 11, 0.0, 17 + 19]
    assert nest_kernel.nest_stats["compiles"] == before_seg["compiles"] + 1
    assert nest_kernel.nest_stats["runs"] == before_seg["runs"] + 1
    # no separate elementwise kernel (lazyk.stats() counts the nest kernel too)
    assert kernel.stats["compiles"] == before_k["compiles"] + 1
    assert kernel.stats["hits"] == before_k["hits"]
    # new sizes, same kernel: no compile
    x2 = A([[1.0, 1.0], [2.0, 2.0, 2.0]], "2 * var * float64")
    y2 = A([[0.5], [1.0, 1.0, 1.0]], "2 * var * float64")
    assert (x2 * 2 + y2).sum(axis=-1).eval().to_list() == [5.0, 15.0]
    assert nest_kernel.nest_stats["compiles"] == before_seg["compiles"] + 1
    (k,) = nest_kernel.kernels.values()
    ir = k.ir
    assert "l0.head" in ir and "e.head" in ir  # a row loop with an element loop inside it
    assert "fmul" in ir and "fadd" in ir       # the elementwise body is in the same function


def test_fused_every_reduction_with_empty_and_length_one_rows(monkeypatch):
    _one_fused_kernel(monkeypatch)
    a = A([[1, 2, 3], [4], [], [-5, 6]], "4 * var * int32")
    b = A([[10], [1, 2, 3], [], [2, 2]], "4 * var * int32")
    e = a * b  # rows: [10, 20, 30], [4, 8, 12], [], [-10, 12]
    cases = {
        "sum": ("4 * int64", [60, 24, 0, 2]),
        "prod": ("4 * int64", [6000, 384, 1, -120]),
        "mean": ("4 * float64", [20.0, 8.0, None, 1.0]),
        "any": ("4 * bool", [True, True, False, True]),
        "all": ("4 * bool", [True, True, True, True]),
    }
    for name, (typ, want) in cases.items():
        r = getattr(e, name)(axis=-1)
        assert str(r.type) == typ, name
        got = r.eval()
        assert str(got.type) == typ, name
        vals = got.to_list()
        if name == "mean":  # NumPy: mean of an empty row is nan
            assert np.isnan(vals[2])
            vals[2] = None
        assert vals == want, name
    assert (e - 11).all(axis=1).eval().to_list() == [True, True, True, True]
    assert (e == 12).any(axis=1).eval().to_list() == [False, True, False, True]
    ne = A([[1, 2, 3], [4], [-5, 6]], "3 * var * int32")
    assert (ne * -1).min(axis=-1).eval().to_list() == [-3, -4, -6]
    assert str((ne * -1).min(axis=-1).eval().type) == "3 * int32"
    assert (ne * 2).max(axis=-1, keepdims=True).eval().to_list() == [[6], [8], [12]]


def test_fused_min_max_of_empty_row_raises_like_numpy():
    a = A([[1.0, 2.0], []], "2 * var * float64")
    with pytest.raises(ValueError, match="zero-size row 1 in reduction max"):
        (a + 1).max(axis=-1).eval()
    with pytest.raises(ValueError, match="zero-size row 1 in reduction min"):
        a.min(axis=-1).eval()


def test_fused_missing_values_skipna_and_all_missing_rows(monkeypatch):
    _one_fused_kernel(monkeypatch)
    a = A([[1.0, None, 3.0], [None, None], [], [2.0]], "4 * var * ?float64")
    b = A([[1.0, 1.0, 2.0], [5.0], [], [None]], "4 * var * ?float64")
    e = a * 2 + b  # [3, None, 8], [None, None], [], [None]
    assert str(e.sum(axis=-1).type) == "4 * ?float64"
    assert e.sum(axis=-1).eval().to_list() == [None, None, 0.0, None]
    assert str(e.sum(axis=-1).eval().type) == "4 * ?float64"
    r = e.sum(axis=-1, skipna=True).eval()
    assert str(r.type) == "4 * float64" and r.to_list() == [11.0, 0.0, 0.0, 0.0]
    assert e.prod(axis=-1, skipna=True).eval().to_list() == [24.0, 1.0, 1.0, 1.0]
    # min / max / mean with nothing to fold: missing (documented choice for option inputs)
    m = e.max(axis=-1, skipna=True).eval()
    assert str(m.type) == "4 * ?float64" and m.to_list() == [8.0, None, None, None]
    assert e.min(axis=-1, skipna=True).eval().to_list() == [3.0, None, None, None]
    assert e.min(axis=-1).eval().to_list() == [None, None, None, None]
    assert e.mean(axis=-1, skipna=True).eval().to_list() == [5.5, None, None, None]
    # mean counts only present values under skipna
    c = A([[2.0, None, 4.0, None, 9.0]], "1 * var * ?float64")
    assert c.mean(axis=-1, skipna=True).eval().to_list() == [5.0]
    assert c.mean(axis=-1).eval().to_list() == [None]
    full = A([[2.0, 4.0], [1.0]], "2 * var * ?float64")
    assert full.mean(axis=-1).eval().to_list() == [3.0, 1.0]
    o = A([[1, None, 3], [None]], "2 * var * ?int32")
    s = (o > 1).any(axis=-1, skipna=True).eval()
    assert str(s.type) == "2 * bool" and s.to_list() == [True, False]
    assert (o > 1).all(axis=-1).eval().to_list() == [None, None]
    t = (o + 1).sum(axis=-1, skipna=True).eval()
    assert str(t.type) == "2 * int64" and t.to_list() == [6, 0]


def test_fused_reduction_of_negative_stride_views(monkeypatch):
    _one_fused_kernel(monkeypatch)
    a = A([[1.0, 2.0, 3.0], [4.0, 5.0], [6.0]], "3 * var * float64")
    w = A([[1.0, 10.0, 100.0], [1.0, 10.0], [1.0]], "3 * var * float64")
    # rows reversed inside: [3, 2, 1] . [1, 10, 100] = 123; [5, 4] . [1, 10] = 45
    assert (a[:, ::-1] * w).sum(axis=-1).eval().to_list() == [123.0, 45.0, 6.0]
    # outer dim reversed: rows [6], [4, 5], [1, 2, 3]
    assert (a[::-1] * 2).sum(axis=-1).eval().to_list() == [12.0, 18.0, 12.0]
    assert (a[::-1, ::-1] - w[::-1]).max(axis=-1).eval().to_list() == [5.0, 4.0, 2.0]
    o = A([[1.0, None, 3.0], [4.0]], "2 * var * ?float64")
    assert o[::-1, ::-1].sum(axis=-1, skipna=True).eval().to_list() == [4.0, 4.0]


def test_fused_reduction_with_numpy_and_outer_fixed_dims(monkeypatch):
    _one_fused_kernel(monkeypatch)
    a = A([[[1, 2], [3]], [[4], [5, 6, 7]]], "2 * 2 * var * int64")
    r = (a * np.array([[1], [10]])).sum(axis=-1).eval()
    assert str(r.type) == "2 * 2 * int64" and r.to_list() == [[3, 30], [4, 180]]
    v = A([[1.0], [2.0, 3.0]], "2 * var * float64")
    got = (v + np.array([10.0, 20.0])).sum(axis=-1).eval()  # rows fit a fixed 2: 2 * 2
    assert got.to_list() == [32.0, 35.0]
    assert (v * 0.5 + 1).sum(axis=-1, keepdims=True).eval().to_list() == [[1.5], [4.5]]


def test_fused_rows_in_place_from_8_threads():
    import threading

    from lazyk.kernel import nest as nest_kernel

    rng = np.random.default_rng(1)
    jobs = []
    for t in range(8):
        rows = [list(rng.standard_normal(int(n))) for n in rng.integers(0, 30, size=100 + t)]
        ones = [[float(t)] for _ in rows]
        jobs.append((A(rows, f"{len(rows)} * var * float64"),
                     A(ones, f"{len(rows)} * var * float64"), rows, t))
    (jobs[0][0] * 3 - jobs[0][1]).sum(axis=-1).eval()  # compile once
    before = nest_kernel.nest_stats["compiles"]
    results, errors = {}, []

    def work(job):
        x, y, rows, t = job
        try:
            for _ in range(20):
                results[t] = (x * 3 - y).sum(axis=-1).eval().to_list()
        except Exception as exc:  # pragma: no cover
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(j,)) for j in jobs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert nest_kernel.nest_stats["compiles"] == before  # one kernel for every size
    for x, y, rows, t in jobs:
        want = [sum(v * 3 - t for v in r) for r in rows]
        np.testing.assert_allclose(results[t], want, rtol=1e-12, atol=1e-12)


def test_fused_rows_byte_swapped_unaligned_and_strided_numpy(monkeypatch):
    _one_fused_kernel(monkeypatch)
    a = A([[1, 2, 3], [4]], "2 * var * >int32")
    assert (a * 2).sum(axis=-1).eval().to_list() == [12, 8]
    n = np.arange(6, dtype=">f8").reshape(2, 3)[:, ::-1]  # [[2, 1, 0], [5, 4, 3]]
    v = A([[1.0], [2.0, 3.0, 4.0]])
    assert (v * n).sum(axis=-1).eval().to_list() == [3.0, 34.0]
    raw = np.zeros(3 * 8 + 1, np.uint8)
    u = np.frombuffer(raw.data, dtype="f8", count=3, offset=1)  # unaligned view
    assert (v + 1 + u).sum(axis=-1).eval().to_list() == [6.0, 12.0]


def test_fused_reduction_over_outer_axis_and_all_axes(monkeypatch):
    from lazyk.kernel import nest as nest_kernel

    _one_fused_kernel(monkeypatch)
    x = A([[1.0, 2.0], [3.0, 4.0], [5.0]], "3 * var * float64")  # row 2 broadcasts
    s = x.sum(axis=0)
    assert str(s.type) == "var * float64"
    before = nest_kernel.nest_stats["runs"]
    r = s.eval()
    assert nest_kernel.nest_stats["runs"] == before + 2  # the result's length, then one kernel
    assert str(r.type) == "var * float64" and r.to_list() == [9.0, 11.0]
    k = x.sum(axis=0, keepdims=True).eval()
    assert str(k.type) == "1 * var * float64" and k.to_list() == [[9.0, 11.0]]
    assert x.mean(axis=0).eval().to_list() == [3.0, 11.0 / 3.0]
    assert (x * 2).max(axis=0).eval().to_list() == [10.0, 10.0]
    assert (x + np.array([1.0, 2.0])).sum(axis=0).eval().to_list() == [12.0, 17.0]
    # every axis: one value
    t = (x * 2).sum()
    assert str(t.type) == "float64" and t.eval().to_list() == 30.0
    assert x.max().eval().to_list() == 5.0
    assert str(x.sum(keepdims=True).eval().type) == "1 * 1 * float64"
    # missing values
    y = A([[1.0, None], [3.0, 4.0], [None]], "3 * var * ?float64")
    p = x * y  # [1, None], [9, 16], [None] (broadcast)
    assert p.sum(axis=0).eval().to_list() == [None, None]
    got = p.sum(axis=0, skipna=True).eval()
    assert str(got.type) == "var * float64" and got.to_list() == [10.0, 16.0]
    assert p.min(axis=0, skipna=True).eval().to_list() == [1.0, 16.0]
    assert p.sum(skipna=True).eval().to_list() == 26.0
    assert y.prod().eval().to_list() is None
    assert y.mean(skipna=True).eval().to_list() == 8.0 / 3.0
    # fixed option rows: a fixed result
    f = A([[1, None, 3], [4, 5, None]], "2 * 3 * ?int32")
    fs = f.sum(axis=0, skipna=True).eval()
    assert str(fs.type) == "3 * int64" and fs.to_list() == [5, 5, 3]
    assert f.max(axis=0).eval().to_list() == [4, None, None]
    # rows that neither agree nor broadcast name the row and both lengths
    w = A([[1.0, 2.0], [3.0, 4.0, 5.0]], "2 * var * float64")
    with pytest.raises(lazyk.ShapeError, match="row 1: rows of length 2 and 3 do not fold"):
        w.sum(axis=0).eval()
    e = A([[], []], "2 * var * float64")
    assert e.sum(axis=0).eval().to_list() == []
    with pytest.raises(ValueError, match="zero-size array in reduction max"):
        e.max().eval()


def test_out_for_fixed_results_of_ragged_reductions():
    x = A([[1.0, 2.0], [3.0, 4.0], [5.0]], "3 * var * float64")
    o = np.zeros(3)
    assert lazyk.evaluate((x * 2).sum(axis=-1), out=o) is o
    assert o.tolist() == [6.0, 14.0, 10.0]
    o2 = np.zeros((2, 3))
    lazyk.evaluate(x.max(axis=-1), out=o2)  # broadcasts as assignment does
    assert o2.tolist() == [[2.0, 4.0, 5.0]] * 2
    v = np.zeros(2)
    lazyk.evaluate(x.sum(axis=0), out=v)
    assert v.tolist() == [9.0, 11.0]
    la = A(np.zeros(3))
    la[...] = x.mean(axis=-1)
    assert la.to_list() == [1.5, 3.5, 5.0]
    with pytest.raises(lazyk.CastingError):
        lazyk.evaluate(x.sum(axis=-1), out=np.zeros(3, np.int32))
    with pytest.raises(lazyk.ShapeError):
        lazyk.evaluate(x.sum(axis=-1), out=np.zeros(4))
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        lazyk.evaluate(x.sum(axis=-1), out=ro)
    m = A([[1.0, None]], "1 * var * ?float64")
    with pytest.raises(lazyk.NotSupportedError):
        lazyk.evaluate(m.sum(axis=-1), out=np.zeros(1))  # a missing value has no slot
    ok = np.zeros(1)
    lazyk.evaluate(m.sum(axis=-1, skipna=True), out=ok)
    assert ok.tolist() == [1.0]


def test_row_view_reads_the_same_rows_as_gather():
    import ctypes

    from lazyk.runtime.rows import gather, row_view

    a = A([[1, 2, 3], [4, 5], [6]], "3 * var * int64")
    cases = [a, a[::-1], a[:, ::-1], a[1:], a[::2], A([[[1, 2], [3]], [[4], [5, 6, 7]]]),
             A([1, 2, 3], "var * int64"), A([[1, None], [3]], "2 * var * ?int64")]
    for c in cases:
        g, v = gather(c, np.dtype("i8")), row_view(c)
        np.testing.assert_array_equal(g.lengths, v.lengths)
        vals = [ctypes.c_int64.from_address(int(p) + i * v.stride).value
                for p, n in zip(v.rowptr, v.lengths) for i in range(n)]
        if v.mask_offset is not None:
            present = [ctypes.c_uint8.from_address(int(p) + i * v.stride + v.mask_offset).value
                       for p, n in zip(v.rowptr, v.lengths) for i in range(n)]
            np.testing.assert_array_equal(np.array(present, bool), g.mask)
            vals = [x if m else 0 for x, m in zip(vals, present)]
        np.testing.assert_array_equal(vals, g.values)


def test_explain_shows_one_fused_loop_nest_kernel():
    from lazyk.runtime import ragged

    x = A([[1.0, 2.0, 3.0], [4.0]], "2 * var * ?float64")
    y = A([[1.0], [2.0]], "2 * var * float64")
    text = ragged.explain((x * 2 + y).sum(axis=-1, skipna=True))
    assert "loop-nest kernels: 1 (the loop nest follows the result type" in text
    assert "multiply" in text and "add" in text and "reduce: sum" in text
    assert "reduce, pass fill, levels fixed * var" in text
    assert "(?T): strided, var rows" in text  # x has options
    assert "== nest 2" not in text
    graph = text.split("== graph as built")[1].split("== loop-nest")[0]
    assert "multiply(" in graph and "reduce(" in graph and ": 2 * var * float64" in graph
    asm = text.split("== assembly")[1]
    assert "lazyk_nest" in asm and ("ret" in asm or "retq" in asm)
    assert "fold0, pass fill" in ragged.explain(x.mean(axis=0, skipna=True))


def _ref_fold(op, vals, options, skipna):
    """Python reference of one reduction over `vals` (None = missing)."""
    import math

    present = [v for v in vals if v is not None]
    if options and not skipna and len(present) < len(vals):
        return None
    if op == "sum":
        return sum(present)
    if op == "prod":
        return math.prod(present)
    if op == "any":
        return any(present)
    if op == "all":
        return all(present)
    if not present:
        if op == "mean" and not options:  # a mean of nothing over ?T data is missing
            return float("nan")
        return None if options else "raise"
    if op == "mean":
        return sum(present) / len(present)
    return min(present) if op == "min" else max(present)


@pytest.mark.parametrize("seed", range(6))
def test_fused_reductions_against_a_python_reference(seed):
    rng = np.random.default_rng(seed)
    for case in range(25):
        nrows = int(rng.integers(0, 6))
        options = bool(rng.integers(0, 2))
        lengths = rng.integers(0, 5, size=nrows)

        def rows(lens, p_missing):
            return [[None if options and rng.random() < p_missing else float(rng.integers(-4, 5))
                     for _ in range(int(n))] for n in lens]
        xr = rows(lengths, 0.3)
        yl = [n if rng.random() < 0.6 else 1 for n in lengths]
        yr = rows(yl, 0.2)
        t = f"{nrows} * var * {'?' if options else ''}float64"
        x, y = A(xr, t), A(yr, t)
        e = x * 2 - y
        er = [[None if a is None or b is None else a * 2 - b
               for a, b in zip(r1 if len(r1) >= len(r2) else r1 * len(r2),
                               r2 if len(r2) >= len(r1) else r2 * len(r1))]
              for r1, r2 in zip(xr, yr)]
        op = ["sum", "prod", "min", "max", "mean", "any", "all"][int(rng.integers(0, 7))]
        skipna = bool(rng.integers(0, 2))
        got_expr = getattr(e, op)(axis=-1, skipna=skipna) if op not in ("any", "all") else \
            getattr(e != 0, op)(axis=-1, skipna=skipna)
        rows_ref = er if op not in ("any", "all") else \
            [[None if v is None else v != 0 for v in r] for r in er]
        want = [_ref_fold(op, r, options, skipna) for r in rows_ref]
        ctx = (seed, case, op, skipna, xr, yr)
        if "raise" in want:
            with pytest.raises(ValueError):
                got_expr.eval()
            continue
        got = got_expr.eval().to_list()
        assert len(got) == len(want), ctx
        for g, w in zip(got, want):
            if w is None:
                assert g is None, ctx
            elif isinstance(w, float) and np.isnan(w):
                assert np.isnan(g), ctx
            else:
                assert g == pytest.approx(w), ctx


@pytest.mark.parametrize("seed", range(4))
def test_fused_outer_and_total_reductions_against_a_python_reference(seed):
    rng = np.random.default_rng(100 + seed)
    for case in range(25):
        nrows = int(rng.integers(1, 6))
        options = bool(rng.integers(0, 2))
        L = int(rng.integers(0, 4))
        lens = [L if rng.random() < 0.7 or L == 0 else 1 for _ in range(nrows)]
        L = max(lens)  # every row has L elements or broadcasts from 1
        xr = [[None if options and rng.random() < 0.25 else float(rng.integers(-4, 5))
               for _ in range(n)] for n in lens]
        x = A(xr, f"{nrows} * var * {'?' if options else ''}float64")
        op = ["sum", "prod", "min", "max", "mean"][int(rng.integers(0, 5))]
        skipna = bool(rng.integers(0, 2))
        plus = [[None if v is None else v + 1 for v in (r * L if len(r) == 1 else r)]
                for r in xr]  # x + 1 with length-1 rows broadcast
        cols = [_ref_fold(op, [r[i] for r in plus], options, skipna) for i in range(L)]
        total = _ref_fold(op, [None if v is None else v + 1 for r in xr for v in r],
                          options, skipna)
        ctx = (seed, case, op, skipna, xr)
        for expr_, ref in ((getattr(x + 1, op)(axis=0, skipna=skipna), cols),
                           (getattr(x + 1, op)(skipna=skipna), [total])):
            if "raise" in ref:
                with pytest.raises(ValueError):
                    expr_.eval()
                continue
            got = expr_.eval().to_list()
            got = got if isinstance(got, list) else [got]
            assert len(got) == len(ref), ctx
            for g, w in zip(got, ref):
                if w is None:
                    assert g is None, ctx
                elif isinstance(w, float) and np.isnan(w):
                    assert np.isnan(g), ctx
                else:
                    assert g == pytest.approx(w), ctx


def test_an_empty_inner_list_is_named_by_its_path():
    """min / max / argmax over the inner lists of lists: the empty list is named by its
    path, [event, list], as lazyk's other row errors name rows."""
    x = lazyk.array([[[1.0], [2.0, 3.0]], [], [[4.0], [], [5.0]]])
    with pytest.raises(ValueError, match=r"zero-size row \[2, 1\] in reduction min"):
        lazyk.min(x, axis=2).eval()
    with pytest.raises(ValueError, match=r"empty sequence \(row \[0, 0\]\)"):
        lazyk.argmax(lazyk.array(np.zeros((2, 0, 3))), axis=1).eval()
    assert lazyk.max(x, axis=2, initial=0.0).eval().to_list() == [[1.0, 3.0], [], [4.0, 0.0, 5.0]]


def test_expression_shape_says_none_for_var_dims_as_its_result_does():
    x = A([[1.0, 2.0], [3.0]], "2 * var * float64")
    for e in (x * 2, x[x > 1.5], lazyk.pad_none(x, 3), lazyk.num(x)):
        got = e.eval()
        assert e.shape == got.shape, (e.type, e.shape, got.shape)
    assert (x * 2).shape == (2, None) and str((x * 2).type) == "2 * var * float64"
    # (an outer length known only once computed: var before, its size after)
    assert lazyk.flatten(x).shape == (None,) and lazyk.flatten(x).eval().shape == (3,)
    p = lazyk.placeholder("p", "N * var * float64") * 2
    assert p.shape == ("N", None) and lazyk.compile(p).signature.endswith("N * var * float64")


def _masked_case(n, seed=0):
    rng = np.random.default_rng(seed)
    mask = rng.random(n) < 0.3
    vals = rng.standard_normal(n)
    ints = rng.integers(-5, 5, n).astype(np.int32)
    ints[mask] = 0  # (missing divisors hold zero bytes: computed with, never trapping)
    return (np.ma.array(vals, mask=mask), np.ma.array(ints, mask=mask),
            np.ma.array(ints[::-1].copy(), mask=mask[::-1].copy()))


@pytest.mark.parametrize("n", [0, 1, 7, 33, 1000])
def test_elementwise_work_over_missing_values_matches_numpy_ma(n):
    ma, mi, mj = _masked_case(n)
    x, i, j = lazyk.array(ma), lazyk.array(mi), lazyk.array(mj)
    cases = [(x * 2 + 1, ma * 2 + 1), (x > 0.5, ma > 0.5), (lazyk.sqrt(x * x), np.ma.sqrt(ma * ma)),
             (i + 1, mi + 1), (x + i, ma + mi), (j // i, mj // np.ma.masked_equal(mi, 0)),
             (j % i, mj % np.ma.masked_equal(mi, 0)), (lazyk.where(x > 0, x, j), None)]
    for got, want in cases:
        got = got.eval().to_list()
        if want is None:  # where: missing where the condition or the branch taken is
            want = [None if (a is None or (b if a > 0 else c) is None) else
                    (a if a > 0 else c) for a, b, c in zip(ma.tolist(), ma.tolist(), mj.tolist())]
        else:
            want = want.tolist()
        # NumPy.ma masks a division by zero; lazyk gives 0 there (NumPy's integer rule)
        assert len(got) == len(want) == n
        for g, w in zip(got, want):
            assert (g is None) == (w is None) or (w is None and g == 0), (got, want)
            if w is not None:
                assert g == pytest.approx(w), (got, want)


def test_missing_values_elementwise_is_one_vector_loop():
    # a present byte per value: the value computed for every element and selected, no
    # branch per element, so the loop over contiguous values vectorizes
    ma, _, _ = _masked_case(1000)
    e = lazyk.array(ma) * 2.5 + 1
    asm = e.explain().split("== assembly", 1)[1].split(".Lfunc_end0", 1)[0]
    assert re.search(r"\tv(mul|fmadd\w*)pd\t.*%[yz]mm", asm), "no packed float64 math"
    assert "gather" not in asm  # (contiguous values read as vectors, not one by one)
    np.testing.assert_array_equal(np.array(e.eval().to_list(), dtype=float),
                                  np.ma.filled(ma * 2.5 + 1, np.nan))


def _fold_asm(e):
    return e.explain().split("== assembly", 1)[1].split(".Lfunc_end0", 1)[0]


@pytest.mark.parametrize("skipna", [False, True])
def test_folds_over_missing_values_are_vector_loops(skipna):
    # a missing value folds as the identity and is counted apart: no branch per element
    ma, _, _ = _masked_case(1000)
    m2 = np.ma.masked_array(ma.data.reshape(10, 100), ma.mask.reshape(10, 100))
    e = lazyk.sum(lazyk.array(m2) * 2.0, axis=1, skipna=skipna)
    assert re.search(r"\tv(add|fmadd\w*)pd\t.*%[yz]mm", _fold_asm(e)), "no packed float64 sum"
    want = (m2 * 2.0).sum(axis=1)
    if not skipna:
        want = np.ma.masked_array(want.data, m2.mask.any(axis=1))
    assert e.eval().to_list() == pytest.approx(want.tolist())


def test_float32_math_into_a_fold_over_missing_values_calls_vector_math():
    # float32 sin summed in float64: eight lanes, the libmvec variant the kernel can call
    ma, _, _ = _masked_case(1000)
    m2 = np.ma.masked_array(ma.data.reshape(10, 100).astype(np.float32),
                            ma.mask.reshape(10, 100))
    e = lazyk.sum(lazyk.sin(lazyk.array(m2)), axis=1, skipna=True)
    assert "_ZGV" in e.explain()
    assert e.eval().to_list() == pytest.approx(np.sin(m2).sum(axis=1).tolist(), rel=1e-5)


@pytest.mark.parametrize("reduction", ["min", "max"])
def test_min_max_over_missing_values_keep_nan_apart(reduction):
    # min / max fold with plain vector min / max, a NaN noted apart: NaN where a row had one
    rng = np.random.default_rng(3)
    data = rng.normal(size=(30, 50))
    data[[2, 7, 7], [0, 10, 49]] = np.nan
    mask = rng.random((30, 50)) < 0.1
    mask[7, 10] = True  # (a missing NaN: row 7 still has one)
    mask[12] = True  # (nothing present: no value)
    e = getattr(lazyk, reduction)(lazyk.array(np.ma.masked_array(data, mask)), axis=1,
                                  skipna=True)
    asm = _fold_asm(e)
    assert re.search(rf"\tv{reduction}pd\t.*%[yz]mm", asm), "no packed float64 min / max"
    want = [None if m.all() else float(getattr(np, reduction)(r[~m])) for r, m in zip(data, mask)]
    got = e.eval().to_list()
    assert [g is None for g in got] == [w is None for w in want]
    for g, w in zip(got, want):
        if w is not None:
            assert g == w or (np.isnan(g) and np.isnan(w)), (got, want)
    assert np.isnan(got[2]) and np.isnan(got[7]) and got[12] is None


def test_folds_of_fixed_rows_over_missing_values_split_over_threads():
    # a fold per row of 2000 values: parts weigh the values, not the result elements
    before = lazyk.get_num_threads()
    lazyk.set_num_threads(2)
    try:
        m = np.ma.masked_array(np.ones((2000, 2000), np.float32), np.eye(2000, dtype=bool))
        e = lazyk.array(m).sum(axis=1, skipna=True)
        assert re.search(r"nest 1: reduce, .* [2-9]\d* part\(s\)", e.explain())
        np.testing.assert_array_equal(np.asarray(e.eval().to_list()), np.full(2000, 1999.0))
    finally:
        lazyk.set_num_threads(before)


@pytest.mark.parametrize("reduction", ["sum", "prod", "min", "max", "mean"])
@pytest.mark.parametrize("skipna", [False, True])
@pytest.mark.parametrize("layout", ["c", "transposed", "reversed", "3d"])
def test_folds_along_the_first_axis_over_missing_values(reduction, skipna, layout):
    # folded by columns (a block of results on the stack, each row read along); against
    # numpy.ma, a result missing where a value of its column is (skipna=False)
    rng = np.random.default_rng(7)
    shape = (6, 5, 300) if layout == "3d" else (40, 300)
    data = rng.integers(1, 4, shape).astype(np.float64)
    mask = rng.random(shape) < 0.05
    mask[:, 3] = True  # a column (3d: a row of columns) with nothing present
    if layout == "transposed":
        data, mask = data.T.copy().T, mask.T.copy().T  # (F order: columns contiguous)
    elif layout == "reversed":
        data, mask = data[:, ::-1], mask[:, ::-1]
    m = np.ma.masked_array(data, mask)
    axis = 1 if layout == "3d" else 0
    e = getattr(lazyk, reduction)(lazyk.array(m), axis=axis, skipna=skipna)
    want = getattr(m, reduction)(axis=axis)
    if reduction == "sum" or reduction == "prod":
        want = np.ma.masked_array(want.filled(0 if reduction == "sum" else 1), False)
    if not skipna:
        want = np.ma.masked_array(want.data, np.ma.getmaskarray(want) | mask.any(axis=axis))
    if layout == "c" and reduction == "sum":  # each row read along: a vector loop
        asm = _fold_asm(e)
        assert re.search(r"\tvaddpd\t.*%[yz]mm", asm), "no packed float64 sum"
        assert "gather" not in asm  # (not a column's values, a row apart each)
    got = e.eval()
    total = skipna and reduction in ("sum", "prod")  # (a value for every column)
    assert str(got.type).endswith(" * float64" if total else "?float64")
    got, want = (np.array(v, dtype=object).ravel() for v in (got.to_list(), want.tolist()))
    assert [g is None for g in got] == [w is None for w in want]
    assert [g for g in got if g is not None] == pytest.approx([w for w in want if w is not None])


@pytest.mark.parametrize("reduction", ["sum", "max", "any", "argmax"])
@pytest.mark.parametrize("shape", [(1500, 2300), (300, 3, 700)])
@pytest.mark.parametrize("threads", [1, 2])
def test_folds_along_the_first_axis_split_their_columns_over_threads(reduction, shape, threads):
    # level 0 is folded, so threads take ranges of the results (columns) instead of rows,
    # each folding every row: the column fold (by blocks of columns) and the walk of each
    # column's group alike
    rng = np.random.default_rng(5)
    data = rng.integers(-50, 50, shape).astype(np.float32)
    mask = rng.random(shape) < 0.1
    mask[..., -1] = True  # the last column: nothing present
    m = np.ma.masked_array(data, mask)
    before = lazyk.get_num_threads()
    lazyk.set_num_threads(threads)
    try:
        for axis in (0, (0, 1))[:1 if reduction == "argmax" else len(shape) - 1]:
            kw = {} if reduction == "argmax" else {"skipna": True}
            e = getattr(lazyk, reduction)(lazyk.array(m), axis=axis, **kw)
            parts = re.search(r"nest 1: fold0.* (\d+) part\(s\)", e.explain()).group(1)
            assert (int(parts) > 1) == (threads > 1)
            got = np.array(e.eval().to_list(), dtype=object).ravel()
            want = getattr(m, reduction)(axis=axis)
            want = np.array(want.ravel() if reduction == "argmax" else want.tolist(),
                            dtype=object).ravel()
            # a column of nothing: the identity, or None where there is none (numpy.ma:
            # masked, and 0 for argmax)
            empty = mask.all(axis=axis).ravel()
            assert empty.sum() == len(want) // shape[-1]
            want[empty] = {"sum": 0.0, "any": False}.get(reduction)
            assert list(got) == list(want)
    finally:
        lazyk.set_num_threads(before)


@pytest.mark.parametrize("reduction", ["argmax", "argmin"])
def test_arg_reductions_along_the_first_axis_fold_columns(reduction):
    # each row read along into a block of columns' best values and positions (a vector
    # loop; it walked each column: one value per row); a missing value changes nothing, the
    # first NaN wins, a column of nothing has no position
    rng = np.random.default_rng(11)
    data = rng.integers(-3, 4, (300, 1100)).astype(np.float32)  # (ties: the first stays)
    data[rng.random(data.shape) < 0.002] = np.nan
    mask = rng.random(data.shape) < 0.2
    mask[:, 7] = True
    e = getattr(lazyk, reduction)(lazyk.array(np.ma.masked_array(data, mask)), axis=0)
    assert re.search(r"\tvcmp\w*ps\t", _fold_asm(e)), "no packed float32 compare"
    better = np.greater if reduction == "argmax" else np.less
    want = []
    for col, gone in zip(data.T, mask.T):
        best = at = None
        for i, (v, g) in enumerate(zip(col, gone)):
            if not g and np.isnan(v):
                at = i
                break
            if not g and (best is None or better(v, best)):
                best, at = v, i
        want.append(at)
    assert want[7] is None and e.eval().to_list() == want


def test_running_sums_over_missing_values_skip_them():
    x = lazyk.array([[1.0, None, 2.0], [], [None, 4.0]], type="3 * var * ?float64")
    assert lazyk.cumsum(x, axis=1).eval().to_list() == [[1.0, None, 3.0], [], [None, 4.0]]


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "float32", "float64", "complex128"])
def test_missing_values_results_of_every_item_size(dtype):
    # the kernel writes each present byte into the result's own mask, one value apart
    rows = [[1, None, 3], [], [None], [0, 5, None, 7]]
    if dtype == "bool":
        rows = [[None if v is None else bool(v) for v in r] for r in rows]
    want_rows = [[None if v is None else np.dtype(dtype).type(v) for v in r] for r in rows]
    x = lazyk.array(rows, type=f"4 * var * ?{dtype}")
    fixed = lazyk.array([[1, None], [None, 4], [5, 6]] if dtype != "bool" else
                        [[True, None], [None, False], [True, True]], type=f"3 * 2 * ?{dtype}")
    keep = lazyk.array([[True, True, False], [], [True], [False, True, True, True]])
    for e, want in [
            (x == x, [[None if v is None else True for v in r] for r in rows]),
            (lazyk.where(x == x, x, x), want_rows),
            (x[keep], [[v for v, k in zip(r, m) if k] for r, m in
                       zip(want_rows, [[1, 1, 0], [], [1], [0, 1, 1, 1]])]),
            (fixed == fixed, [[True, None], [None, True], [True, True]])]:
        assert e.eval().to_list() == want
    if dtype != "bool":
        doubled = (x + x).eval()
        assert doubled.type == x.type
        assert doubled.to_list() == [[None if v is None else v + v for v in r]
                                     for r in want_rows]
        assert "present bytes" in (x + x).explain() or np.dtype(dtype).itemsize == 1
