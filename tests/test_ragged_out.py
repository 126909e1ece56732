"""out= into a preallocated ragged / option result, and np.asarray of ragged expressions
whose result is fixed."""
import numpy as np
import pytest

import lazyk
from lazyk.errors import CastingError, NotSupportedError, ShapeError


def offsets_of(lengths):
    off = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=off[1:])
    return off


def test_elementwise_into_offsets_out_writes_in_place():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 7, 200)
    off = offsets_of(lengths)
    content = rng.standard_normal(int(off[-1]))
    x = lazyk.from_offsets(off, content)
    buf = np.full(len(content), -1.0)
    o = lazyk.from_offsets(off, buf)
    got = lazyk.evaluate(x * 2 + 1, out=o)
    assert got is o
    np.testing.assert_array_equal(buf, content * 2 + 1)  # written into out's own buffer
    assert (x * 3).eval(out=o) is o
    np.testing.assert_array_equal(buf, content * 3)
    # per-row centering (a reduction with keepdims broadcast back over the rows)
    lazyk.evaluate(x - x.mean(axis=-1, keepdims=True), out=o)
    for i in range(len(lengths)):
        row = content[off[i]:off[i + 1]]
        np.testing.assert_allclose(buf[off[i]:off[i + 1]], row - row.mean() if len(row) else
                                   [], atol=1e-12)


def test_out_of_lazyk_rows_views_and_outer_dims():
    x = lazyk.array([[[1.0], [2.0, 3.0], []], [[4.0], [], [5.0, 6.0]]],
                    type="2 * 3 * var * float64")
    o = lazyk.full("2 * 3 * var * float64", 0.0, lengths=[1, 2, 0, 1, 0, 2])
    assert lazyk.evaluate(x * 10, out=o).to_list() == [[[10.0], [20.0, 30.0], []],
                                                       [[40.0], [], [50.0, 60.0]]]
    # a reversed view is a valid out: rows land where the view points
    y = lazyk.array([[1.0, 2.0], [3.0]])
    base = lazyk.full("2 * var * float64", 0.0, lengths=[1, 2])
    lazyk.evaluate(y + 1, out=base[::-1])
    assert base.to_list() == [[4.0], [2.0, 3.0]]
    stepped = lazyk.full("2 * var * float64", 0.0, lengths=[4, 2])
    lazyk.evaluate(y, out=stepped[:, ::2])
    assert stepped.to_list() == [[1.0, 0.0, 2.0, 0.0], [3.0, 0.0]]


def test_option_results_write_values_and_validity():
    xm = lazyk.array([[1.0, None], [], [3.0, 4.0]])
    o = lazyk.full("3 * var * ?float64", 9.0, lengths=[2, 0, 2])
    assert lazyk.evaluate(xm * 2, out=o).to_list() == [[2.0, None], [], [6.0, 8.0]]
    # a plain result into a ?T out: every value present again
    lazyk.evaluate(lazyk.array([[1.0, 2.0], [], [3.0, 4.0]]) + 0, out=o)
    assert o.to_list() == [[1.0, 2.0], [], [3.0, 4.0]]
    s = lazyk.full("3 * ?float64", 0.0)
    assert xm.sum(axis=-1, out=s) is s
    assert s.to_list() == [None, 0.0, 7.0]
    xm.sum(axis=-1, skipna=True, out=s)
    assert s.to_list() == [1.0, 0.0, 7.0]
    m = lazyk.array([1, None, 3])
    om = lazyk.full("3 * ?int64", 0)
    assert lazyk.evaluate(m * 2, out=om).to_list() == [2, None, 6]


def test_out_dtype_follows_the_casting_rule():
    x = lazyk.array([[1.5, 2.5], [3.5]])
    oi = lazyk.full("2 * var * int32", 0, lengths=[2, 1])
    with pytest.raises(CastingError, match=r"2 \* var \* float64 result into out of type "
                                           r"2 \* var \* int32 under casting='same_kind'"):
        lazyk.evaluate(x * 2, out=oi)
    assert lazyk.evaluate(x * 2, out=oi, casting="unsafe").to_list() == [[3, 5], [7]]
    of = lazyk.full("2 * var * float32", 0.0, lengths=[2, 1])
    assert lazyk.evaluate(x * 2, out=of).to_list() == [[3.0, 5.0], [7.0]]
    # NumPy stores a reduction into `out` unsafely: so does x.sum(out=)
    s = lazyk.full("2 * ?int32", 0)
    assert lazyk.array([[1.5, None], [2.5]]).sum(axis=-1, skipna=True, out=s).to_list() == \
        [1, 2]
    with pytest.raises(CastingError, match="missing values need an out of"):
        lazyk.evaluate(lazyk.array([[1.0, None]], type="1 * var * ?float64") * 2,
                       out=lazyk.full("1 * var * float64", 0.0, lengths=[2]))


@pytest.mark.parametrize("out, match", [
    (lambda: lazyk.full("3 * var * float64", 0.0, lengths=[2, 1, 1]),
     r"row \[1\]: the result has length 0, out has length 1"),
    (lambda: lazyk.full("2 * var * float64", 0.0, lengths=[2, 0]),
     r"out has type 2 \* var \* float64, the result 3 \* var \* float64"),
    (lambda: lazyk.full("3 * 1 * var * float64", 0.0, lengths=[2, 0, 1]), "out has type"),
])
def test_mismatched_structure_names_the_row_and_both_lengths(out, match):
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    o = out()
    before = o.to_list()
    with pytest.raises(ShapeError, match=match):
        lazyk.evaluate(x * 2, out=o)
    assert o.to_list() == before  # nothing written


def test_mismatched_rows_of_outer_dims_name_the_index_path():
    x = lazyk.array([[[1.0], [2.0, 3.0]], [[4.0], []]], type="2 * 2 * var * float64")
    o = lazyk.full("2 * 2 * var * float64", 0.0, lengths=[1, 2, 1, 1])
    with pytest.raises(ShapeError, match=r"row \[1, 1\]: the result has length 0, out has "
                                         r"length 1"):
        lazyk.evaluate(x + 1, out=o)


def test_read_only_out_and_fixed_out_for_a_ragged_result():
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    content = np.zeros(3)
    content.flags.writeable = False
    ro = lazyk.from_offsets(np.array([0, 2, 2, 3]), content)
    with pytest.raises(ValueError, match="read-only"):
        lazyk.evaluate(x * 2, out=ro)
    with pytest.raises(NotSupportedError, match="pass a lazyk array of the result's type"):
        lazyk.evaluate(x * 2, out=np.zeros(3))


def test_compiled_call_with_out():
    p = lazyk.placeholder("x", "N * var * ?float64")
    k = lazyk.compile(p * 2 + 1)
    a = lazyk.array([[1.0, None], [3.0]])
    o = lazyk.full("2 * var * ?float64", 0.0, lengths=[2, 1])
    assert k(a, out=o) is o and o.to_list() == [[3.0, None], [7.0]]
    r = lazyk.compile(p.sum(axis=-1, skipna=True))
    out = np.zeros(2)
    assert r(a, out=out) is out
    np.testing.assert_array_equal(out, [1.0, 3.0])


def test_var_var_out_through_assignment():
    from lazyk.runtime.ragged_out import store

    inner = lazyk.from_offsets(np.array([0, 2, 2, 3]), np.array([1.0, 2.0, 3.0]))
    x = lazyk.from_offsets(np.array([0, 1, 3]), inner)  # 2 * var * var * float64
    same = lazyk.from_offsets(np.array([0, 1, 3]), lazyk.from_offsets(np.array([0, 2, 2, 3]),
                                                                      np.zeros(3)))
    assert store(x, same, "same_kind") is same  # every level's row lengths agree
    assert same.to_list() == x.to_list()
    other = lazyk.from_offsets(np.array([0, 1, 3]), lazyk.from_offsets(np.array([0, 2, 3, 3]),
                                                                       np.zeros(3)))
    with pytest.raises(ShapeError, match=r"dimension 2 \(var\), row 1 .*length 0, out has length 1"):
        store(x, other, "same_kind")
    assert other.to_list() == [[[0.0, 0.0]], [[0.0], []]]  # nothing written
    try:
        want = (x * 2).eval().to_list()
    except NotSupportedError:
        pytest.skip("var * var expressions are not evaluated in this build")
    oi = lazyk.from_offsets(np.array([0, 2, 2, 3]), np.zeros(3))
    o = lazyk.from_offsets(np.array([0, 1, 3]), oi)
    assert lazyk.evaluate(x * 2, out=o).to_list() == want == [[[2.0, 4.0]], [[], [6.0]]]
    bad = lazyk.from_offsets(np.array([0, 1, 3]), lazyk.from_offsets(np.array([0, 2, 3, 3]),
                                                                     np.zeros(3)))
    with pytest.raises(ShapeError, match=r"dimension 2 \(var\), row 1 .*length 0, out has length 1"):
        lazyk.evaluate(x * 2, out=bad)


@pytest.mark.parametrize("make, want", [
    (lambda x, x3, xm: x.sum(axis=-1), [3.0, 0.0, 3.0]),
    (lambda x, x3, xm: (x * 2).sum(axis=-1) + 1, [7.0, 1.0, 7.0]),
    (lambda x, x3, xm: x.sum(), 6.0),
    (lambda x, x3, xm: x.max(axis=-1, initial=0.0), [2.0, 0.0, 3.0]),
    (lambda x, x3, xm: xm.sum(axis=-1, skipna=True), [1.0, 0.0, 3.0]),
    (lambda x, x3, xm: (x > 1).any(axis=-1), [True, False, True]),
    (lambda x, x3, xm: (x - x.mean(axis=-1, keepdims=True)).sum(axis=-1), [0.0, 0.0, 0.0]),
    (lambda x, x3, xm: x3.sum(axis=-1), [[1.0, 5.0, 0.0], [4.0, 0.0, 11.0]]),
    (lambda x, x3, xm: x3.sum(axis=(0, 2)), [5.0, 5.0, 11.0]),
    (lambda x, x3, xm: x3.sum(axis=-1, keepdims=True) * 2,
     [[[2.0], [10.0], [0.0]], [[8.0], [0.0], [22.0]]]),
])
def test_asarray_of_fixed_results(make, want):
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    xm = lazyk.array([[1.0, None], [], [3.0]])
    x3 = lazyk.array([[[1.0], [2.0, 3.0], []], [[4.0], [], [5.0, 6.0]]],
                     type="2 * 3 * var * float64")
    got = np.asarray(make(x, x3, xm))
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("make", [lambda x, xm: x * 2, lambda x, xm: xm.sum(axis=-1)])
def test_asarray_of_ragged_or_missing_results_points_elsewhere(make):
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    xm = lazyk.array([[1.0, None], [], [3.0]])
    with pytest.raises(NotSupportedError, match="to_arrow / lazyk.to_awkward.*to_list"):
        np.asarray(make(x, xm))


@pytest.mark.parametrize("foreign", [[0.0, 0.0], (0.0, 0.0), {"a": 1}, "out"])
def test_a_foreign_out_is_a_type_error_on_every_path(foreign):
    # the same TypeError naming the object's type as a dense result's, not "not supported"
    x = lazyk.array([[1.0, 2.0], [3.0]])
    total = lazyk.sum(x, axis=1)
    k = lazyk.compile(lazyk.sum(lazyk.placeholder("x", "N * var * float64"), axis=1))
    name = type(foreign).__name__
    for run in (lambda: total.eval(out=foreign), lambda: lazyk.evaluate(total, out=foreign),
                lambda: lazyk.evaluate(x * 2, out=foreign), lambda: k(x, out=foreign),
                lambda: k.bind(foreign, x)):
        with pytest.raises(TypeError, match=f"out must be a NumPy or lazyk array, not {name}"):
            run()
