"""combinations, argcombinations, cartesian and zip against Awkward Array 2 and the plain-Python
reference: every layout (empty rows, empty arrays, `?T`, `?var`, rows shorter than n, fixed
dims, depth 2 and 3), the records when evaluated, and the fields inside fused reductions
(the kernel walks the tuples of each row; the reference builds them)."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import lazyk
from lazyk.backend import vecmath
from lazyk.kernel.nest import nest_stats
from lazyk.runtime.ragged_rules import RECORDERS
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_reference import same

ak = pytest.importorskip("awkward")
from tests.test_ragged_reference import ak_array  # noqa: E402

LAYOUTS = S.LAYOUTS + S.QNEST_LAYOUTS


def both(t: str, data):
    """(lazyk array, reference array, Awkward array) of one drawn layout."""
    return lazyk.array(data, type=t), R.array(data, t), ak_array(t, data)


def drawn(data, layouts=LAYOUTS, dtypes=S.DTYPES):
    t, d = data.draw(S.ragged(layouts=layouts, dtypes=dtypes), label="array")
    return both(t, d)


def axis_of(data, x: R.RArray) -> int:
    """An axis the tuples can walk: any but a fixed outermost one."""
    lo = 0 if x.type.dims[0].var else 1
    assume(x.type.ndim > lo)
    return data.draw(st.integers(lo, x.type.ndim - 1), label="axis")


def storable(x: R.RArray, axis: int) -> bool:
    """Whether records of x's items at `axis` can be stored: lazyk's records (C structs)
    hold no fixed dim of missing values (`4 * ?T`) in a field."""
    below = x.type.dims[axis + 1:]
    return not (x.type.option and any(not d.var for d in below))


def field_types(rec) -> list:
    return [f.type.dtype for f in (rec.values() if isinstance(rec, dict) else rec)]


# ---------------------------------------------------------------- records against Awkward
@given(st.data(), st.integers(1, 3), st.booleans(), st.booleans())
def test_combinations_match_awkward(data, n, named, replacement):
    lx, rx, ax = drawn(data)
    axis = axis_of(data, rx)
    assume(storable(rx, axis))
    fields = ["a", "b", "c"][:n] if named else None
    got = lazyk.combinations(lx, n, replacement=replacement, axis=axis, fields=fields)
    want = ak.combinations(ax, n, replacement=replacement, axis=axis, fields=fields)
    value = got.eval()
    assert same(value.to_list(), want.to_list()), (str(rx.type), axis)
    assert str(value.type) == str(got.type)
    assert got.fields == (fields or [str(k) for k in range(n)])
    # each field alone: the reference's (no records built)
    if not replacement:
        ref = R.combinations(rx, n, axis, fields=fields)
        for k, part in zip(got.fields, ref.values() if named else ref):
            assert same(got[k].eval().to_list(), part.data)
            assert got[k].dtype == part.type.dtype


@given(st.data(), st.integers(1, 3))
def test_argcombinations_match_awkward(data, n):
    lx, rx, ax = drawn(data)
    axis = axis_of(data, rx)
    got = lazyk.argcombinations(lx, n, axis=axis)
    want = ak.argcombinations(ax, n, axis=axis)
    assert same(got.to_list(), want.to_list()), (str(rx.type), axis)
    assert all(got[k].dtype == np.int64 for k in got.fields)
    assert not got["0"].type.dtype.__class__.__name__ == "Option"


def _missing_lists(x: R.RArray, a: int) -> bool:
    found = []

    def look(v, depth):
        if v is None:
            found.append(depth)
        elif depth <= a:
            for w in v:
                look(w, depth + 1)
    for v in x.data:
        look(v, 1)
    return any(1 <= d <= a for d in found)


@given(S.ragged_pair(LAYOUTS, S.DTYPES, own_rows=True), st.data())
def test_cartesian_matches_awkward(pair, data):
    t1, d1, t2, d2 = pair
    (lx, rx, ax), (ly, ry, ay) = both(t1, d1), both(t2, d2)
    axis = axis_of(data, rx)
    assume(not _missing_lists(ry, axis) and storable(rx, axis) and storable(ry, axis))  # Awkward: a later array's missing list gives []
    third = data.draw(st.booleans(), label="third")
    arrays = [(lx, ax), (ly, ay)] + ([(ly, ay)] if third else [])
    nested = data.draw(st.sampled_from([None, True] + [[j] for j in range(len(arrays) - 1)]),
                       label="nested")
    if axis == 0:
        nested = None  # (lazyk nests no lists at axis 0)
    named = data.draw(st.booleans(), label="named")
    if named:
        keys = ["x", "y", "z"][:len(arrays)]
        nest = [keys[j] for j in nested] if isinstance(nested, list) else nested
        got = lazyk.cartesian(dict(zip(keys, (a for a, _ in arrays))), axis=axis, nested=nest)
        want = ak.cartesian(dict(zip(keys, (b for _, b in arrays))), axis=axis, nested=nest)
    else:
        got = lazyk.cartesian([a for a, _ in arrays], axis=axis, nested=nested)
        want = ak.cartesian([b for _, b in arrays], axis=axis, nested=nested)
    assert same(got.to_list(), want.to_list()), (t1, t2, axis, nested)


def test_cartesian_missing_row_of_a_later_array_is_missing():
    # the reference's rule (Awkward 2.14 gives [] for a later array's missing list)
    x = lazyk.array([[1, 2], [3], [4]], type="3 * var * int64")
    y = lazyk.array([[5], None, []], type="3 * ?var * int64")
    got = lazyk.cartesian([x, y]).to_list()
    ref = R.cartesian([R.array(x.to_list(), "3 * var * int64"),
                       R.array(y.to_list(), "3 * ?var * int64")])
    assert got == [[(1, 5), (2, 5)], None, []] == R.records(ref, 2)


# ---------------------------------------------------------------- fused into reductions
REDUCERS = ("sum", "max", "min", "any", "all", "prod")


@given(st.data(), st.integers(2, 3), st.sampled_from(REDUCERS))
def test_combinations_fused_into_a_reduction(data, n, op):
    lx, rx, _ = drawn(data, dtypes=S.NUMERIC)
    axis = axis_of(data, rx)
    skipna = data.draw(st.booleans(), label="skipna")
    c = lazyk.combinations(lx, n, axis=axis)
    body = c["0"] * 2 - c[str(n - 1)] if op not in ("any", "all") else c["0"] > c["1"]
    ref_c = R.combinations(rx, n, axis)
    nd = rx.type.ndim
    red_axis = data.draw(st.sampled_from(sorted({axis, nd - 1, -1})), label="reduce axis")
    before = nest_stats["runs"]
    try:  # (items of inner rows of different lengths do not pair: the same error)
        ref_body = R.elementwise("subtract", R.elementwise("multiply", ref_c[0], 2),
                                 ref_c[n - 1]) if op not in ("any", "all") else \
            R.elementwise("greater", ref_c[0], ref_c[1])
        want = R.reduce(op, ref_body, axis=red_axis, skipna=skipna)
    except (ValueError, lazyk.ShapeError) as err:  # an empty min / max: the same error
        with pytest.raises(type(err)):
            lazyk.evaluate(getattr(lazyk, op)(body, axis=red_axis, skipna=skipna))
        return
    got = getattr(lazyk, op)(body, axis=red_axis, skipna=skipna).eval()
    assert same(got.to_list(), want.data), (str(rx.type), axis, red_axis)
    assert nest_stats["runs"] > before


def test_no_pairs_of_optional_values_fold_to_missing():
    """A min / max over pairs where no row has a pair: missing results for `?T` values (as
    for the values themselves), NumPy's ValueError for plain ones."""
    for rows in ([[], [], []], [[[1.0, None, 2.0, 3.0]], [], []]):
        x = lazyk.array(rows, "3 * var * 4 * ?float64")
        c = lazyk.combinations(x, 2, axis=1)
        got = lazyk.max(c["0"] * 2 - c["1"], axis=1).eval()
        assert got.to_list() == [[None] * 4] * 3
        assert str(got.type) == "3 * 4 * ?float64"
    c = lazyk.combinations(lazyk.array([[], []], "2 * var * 4 * float64"), 2, axis=1)
    with pytest.raises(ValueError, match=r"zero-size row \[0, 0\] in reduction max"):
        lazyk.max(c["0"] - c["1"], axis=1).eval()


@given(st.data())
def test_combinations_over_all_axes_and_count(data):
    lx, rx, ax = drawn(data, dtypes=S.NUMERIC)
    axis = rx.type.ndim - 1  # pairs of numbers
    assume(axis > 0 or rx.type.dims[0].var)
    c = lazyk.combinations(lx, 2, axis=axis)
    want = ak.combinations(ax, 2, axis=axis)
    # every value: one fold over every level, the pairs walked in the kernel
    total = lazyk.sum(c["0"] + c["1"], skipna=True).eval().to_list()
    assert same(total, float(ak.sum(want["0"] + want["1"], axis=None)))
    counts = lazyk.count(c["0"], axis=axis).eval().to_list()
    ref = ak.count(want["0"], axis=axis)
    assert same(counts, ref.to_list() if isinstance(ref, ak.Array) else int(ref))


def test_invariant_mass_of_muon_pairs_fused():
    """The pairs of each event's muons, their mass from pt, eta, phi fields, `any` over a
    window: one loop nest over the pairs; the same as Awkward."""
    rng = np.random.default_rng(3)
    counts = rng.poisson(1.5, 500)
    n = int(counts.sum())
    mu = {"pt": rng.exponential(30, n) + 5, "eta": rng.normal(0, 1.5, n),
          "phi": rng.uniform(-np.pi, np.pi, n), "charge": rng.choice([-1, 1], n)}
    offsets = np.concatenate([[0], np.cumsum(counts)])
    fields = {k: lazyk.from_offsets(offsets, v) for k, v in mu.items()}
    a_mu = ak.zip({k: ak.unflatten(v, counts) for k, v in mu.items()})

    def mass(p, lib):
        a, b = p["0"], p["1"]
        cosh = lib.cosh(a.eta - b.eta)
        return lib.sqrt(2 * a.pt * b.pt * (cosh - lib.cos(a.phi - b.phi)))

    pairs = lazyk.combinations(lazyk.zip(fields), 2)
    m = mass(pairs, lazyk)
    good = (m > 60) & (m < 120) & (pairs["0"].charge != pairs["1"].charge)
    before = nest_stats["runs"]
    got = lazyk.any(good, axis=1).to_numpy()
    assert nest_stats["runs"] - before == 1  # one pass, no tuples stored
    a_pairs = ak.combinations(a_mu, 2)
    a_m = mass(a_pairs, np)
    want = ak.any((a_m > 60) & (a_m < 120) & (a_pairs["0"].charge != a_pairs["1"].charge),
                  axis=1)
    assert got.dtype == np.bool_ and got.tolist() == want.to_list()
    assert 0 < got.sum() < len(got)
    # the largest mass per event (an event with fewer than two muons has no pair: -1)
    top = lazyk.max(m, axis=1, initial=-1.0).to_numpy()
    np.testing.assert_allclose(top, ak.to_numpy(ak.max(a_m, axis=1, initial=-1)),
                               rtol=1e-12)


def test_item_math_of_several_fields_is_stored_in_one_pass():
    """px, py, pz, E of each muon (math per item, stored once, not per pair) are computed in
    one pass that writes four results, then the pairs' masses in one more; the same as
    Awkward. Over a `?float64` pt the values are computed one by one, and are the same."""
    rng = np.random.default_rng(5)
    counts = rng.poisson(2.0, 400)
    n = int(counts.sum())
    mu = {"pt": rng.exponential(30, n) + 5, "eta": rng.normal(0, 1.5, n),
          "phi": rng.uniform(-np.pi, np.pi, n), "mass": np.full(n, 0.105)}
    offsets = np.concatenate([[0], np.cumsum(counts)])

    def p4(c, lib):
        px, py = c["pt"] * lib.cos(c["phi"]), c["pt"] * lib.sin(c["phi"])
        pz = c["pt"] * lib.sinh(c["eta"])
        e = lib.sqrt(px * px + py * py + pz * pz + c["mass"] * c["mass"])
        return {"px": px, "py": py, "pz": pz, "e": e}

    def mass(pairs):
        a, b = pairs["0"], pairs["1"]
        s = {k: a[k] + b[k] for k in ("px", "py", "pz", "e")}
        return s["e"] * s["e"] - s["px"] * s["px"] - s["py"] * s["py"] - s["pz"] * s["pz"]

    a_mu = {k: ak.unflatten(v, counts) for k, v in mu.items()}
    want = ak.to_list(ak.sum(mass(ak.combinations(ak.zip(p4(a_mu, np)), 2)), axis=1))
    for missing in (False, True):
        fields = {k: lazyk.from_offsets(offsets, v) for k, v in mu.items()}
        if missing:  # (a `?float64` pt that holds every value)
            fields["pt"] = lazyk.from_offsets(offsets, lazyk.array(
                mu["pt"].tolist(), type=f"{n} * ?float64"))
        rec: list = []
        RECORDERS.append(rec)
        try:
            got = lazyk.sum(mass(lazyk.combinations(lazyk.zip(p4(fields, lazyk)), 2)),
                            axis=1).to_list()
        finally:
            RECORDERS.remove(rec)
        maps = [str(k.mode) for _, k, _ in rec if str(k.mode).startswith("map")]
        assert maps == (["map"] * 4 if missing else ["map of 4 results"]), maps
        np.testing.assert_allclose(got, want, rtol=1e-9)
        if not missing and vecmath.load():  # the one pass is a vector loop (libmvec's cos...)
            asm = next(k for _, k, _ in rec if str(k.mode).startswith("map")).jit.asm
            assert "_ZGV" in asm, "the four-result pass calls no vector math"


def test_records_of_an_array_of_records():
    r = lazyk.array([[{"x": 1.0, "y": 2}, {"x": 3.0, "y": 4}, {"x": 5.0, "y": 6}], [],
                     [{"x": 7.0, "y": 8}]])
    a = lazyk.to_awkward(r)
    got = lazyk.combinations(r, 2, fields=["p", "q"])
    assert got.to_list() == ak.combinations(a, 2, fields=["p", "q"]).to_list()
    assert str(got.type) == "3 * var * {p: {x: float64, y: int64}, q: {x: float64, y: int64}}"
    s = lazyk.sum(got.p.x * got.q.y, axis=1).eval()
    assert s.to_list() == [1.0 * 4 + 1.0 * 6 + 3.0 * 6, 0.0, 0.0]
    t = lazyk.cartesian({"a": r, "b": r.x}, nested=True)
    assert t.to_list() == ak.cartesian({"a": a, "b": a.x}, nested=True).to_list()


def test_zip_of_expressions():
    x = lazyk.array([[1.0, 2.0], [], [3.0]])
    z = lazyk.zip({"x": x, "y": x * 10})
    assert z.fields == ["x", "y"] and z.ndim == 2
    assert str(z.type) == "3 * var * {x: float64, y: float64}"
    assert z.to_list() == [[{"x": 1.0, "y": 10.0}, {"x": 2.0, "y": 20.0}], [],
                           [{"x": 3.0, "y": 30.0}]]
    assert z.y.eval().to_list() == [[10.0, 20.0], [], [30.0]]
    t = lazyk.zip([x, x + 1])
    assert t.to_list() == [[(1.0, 2.0), (2.0, 3.0)], [], [(3.0, 4.0)]]
    with pytest.raises(KeyError, match="no field 'z'"):
        z["z"]
    with pytest.raises(AttributeError, match="no attribute 'z'"):
        z.z


def test_fixed_dims_and_numpy_items():
    x = np.arange(12.0).reshape(3, 4)
    c = lazyk.combinations(x, 2)
    want = ak.combinations(ak.from_numpy(x, regulararray=True), 2)
    assert c.to_list() == want.to_list()
    assert c["0"].shape == (3, 6)
    np.testing.assert_array_equal(lazyk.sum(c["0"] * c["1"], axis=1).to_numpy(),
                                  ak.to_numpy(ak.sum(want["0"] * want["1"], axis=1)))
    p = lazyk.cartesian([x, x[:, :2]])
    assert p["0"].shape == (3, 8)
    assert p.to_list() == ak.cartesian([ak.from_numpy(x, regulararray=True),
                                        ak.from_numpy(x[:, :2], regulararray=True)]).to_list()


FIXED_ROWS = [np.array([[1.0], [2.0]]), np.arange(6.0).reshape(2, 3), np.zeros((2, 0)),
              np.arange(4.0).reshape(2, 2)]


@pytest.mark.parametrize("x", FIXED_ROWS, ids=lambda x: "x".join(map(str, x.shape)))
@pytest.mark.parametrize("n", [1, 2, 3])
def test_fixed_rows_of_any_size_match_awkward(x, n):
    """Rows of a fixed dim of 1 (or 0) are the array's own items at the tuples' axis, not
    a broadcast: C(1, 2) is no pair."""
    ax = ak.from_numpy(x, regulararray=True)
    c = lazyk.combinations(x, n, axis=1)
    want = ak.combinations(ax, n, axis=1)
    assert c.to_list() == want.to_list()
    assert c.eval().shape == (2, len(want[0]))
    i = lazyk.argcombinations(x, n, axis=1)
    assert i.to_list() == ak.argcombinations(ax, n, axis=1).to_list()
    s = lazyk.sum(c["0"] * 2, axis=1).eval()
    np.testing.assert_array_equal(s.to_numpy(), ak.to_numpy(ak.sum(want["0"] * 2, axis=1)))


@pytest.mark.parametrize("x", FIXED_ROWS, ids=lambda x: "x".join(map(str, x.shape)))
@pytest.mark.parametrize("y", [np.array([[7.0], [8.0]]), [[1.0, 2.0], [3.0]], [[], [3.0]]],
                         ids=["fixed1", "var", "var-empty"])
def test_cartesian_of_fixed_rows_of_any_size_matches_awkward(x, y):
    ay = ak.from_numpy(y, regulararray=True) if isinstance(y, np.ndarray) else ak.Array(y)
    want = ak.cartesian([ak.from_numpy(x, regulararray=True), ay], axis=1)
    got = lazyk.cartesian([lazyk.array(x), lazyk.array(y)], axis=1)
    assert got.to_list() == want.to_list()
    assert lazyk.cartesian([lazyk.array(y), lazyk.array(x)], axis=1).to_list() == \
        ak.cartesian([ay, ak.from_numpy(x, regulararray=True)], axis=1).to_list()


def test_records_of_rows_of_size_0_keep_their_count():
    z = np.zeros((2, 0))
    r = lazyk.zip({"a": z, "b": z}).eval()
    assert r.shape == (2, 0) and r.to_list() == [[], []]


def test_a_per_event_value_broadcasts_over_the_pairs():
    x = lazyk.array([[1.0, 2.0, 3.0], [4.0, 5.0], []])
    w = np.array([10.0, 100.0, 1000.0])
    c = lazyk.combinations(x, 2)
    got = lazyk.sum((c["0"] + c["1"]) * w[:, None], axis=1).eval().to_list()
    assert got == [(3 + 4 + 5) * 10.0, 9 * 100.0, 0.0]
    # the pairs' own values stored, then used again: rows of the pair count pair up
    s = (c["0"] + c["1"]).eval()
    assert lazyk.sum(s * c["0"], axis=1).eval().to_list() == [3 + 4 + 10.0, 36.0, 0.0]


def test_contiguous_and_strided_rows_give_the_same_pairs():
    """Contiguous content and a field of NumPy records (stride 16: no constant-stride fast
    path over the tuples) give the same sums over pairs and triples, and a row of 1
    stretches against the pairs' rows (steps of 0)."""
    rng = np.random.default_rng(11)
    counts = rng.integers(0, 7, 3_000)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    n = int(offsets[-1])
    rec = np.zeros(n, [("x", "f8"), ("q", "i4"), ("pad", "i4")])
    rec["x"], rec["q"] = rng.normal(0, 10, n), rng.choice([-1, 1], n)
    plain = lazyk.from_offsets(offsets, np.ascontiguousarray(rec["x"]))
    strided = lazyk.from_offsets(offsets, rec["x"])
    charge = lazyk.from_offsets(offsets, rec["q"])
    explained = lazyk.sum(lazyk.combinations(plain, 2)["0"], axis=1).explain()
    assert "stride 8 bytes compiled in" in explained
    assert "stride 16 bytes compiled in" in \
        lazyk.sum(lazyk.combinations(strided, 2)["0"], axis=1).explain()
    starts, stops = offsets[:-1], offsets[1:]
    wv = rng.normal(0, 1, len(counts))
    w = lazyk.from_offsets(np.arange(len(counts) + 1), wv)  # rows of 1
    for x in (plain, strided):
        pairs = lazyk.combinations(x, 2)
        got = lazyk.sum(pairs["0"] * pairs["1"], axis=1).to_numpy()
        tri = lazyk.combinations(lazyk.zip({"x": x, "q": charge}), 3)
        top = lazyk.max(tri["0"].x + tri["1"].x * tri["2"].q, axis=1, initial=-1e9).to_numpy()
        weighted = lazyk.sum((pairs["0"] + pairs["1"]) * w, axis=1).to_numpy()
        for r in range(0, 3_000, 37):
            v, q = rec["x"][starts[r]:stops[r]], rec["q"][starts[r]:stops[r]]
            ij = [(i, j) for i in range(len(v)) for j in range(i + 1, len(v))]
            np.testing.assert_allclose(got[r], sum(v[i] * v[j] for i, j in ij),
                                       rtol=1e-12, atol=1e-9)
            np.testing.assert_allclose(weighted[r], sum(v[i] + v[j] for i, j in ij) * wv[r],
                                       rtol=1e-12, atol=1e-9)
            t = [v[i] + v[j] * q[k] for i, j in ij for k in range(j + 1, len(v))]
            assert top[r] == (max(t) if t else -1e9)


def test_threads_give_the_same_result():
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 9, 40_000)
    values = rng.integers(-4, 5, int(counts.sum())).astype(np.float64)
    x = lazyk.from_offsets(np.concatenate([[0], np.cumsum(counts)]), values)
    c = lazyk.combinations(x, 2)
    e = lazyk.sum(c["0"] * c["1"], axis=1)
    with lazyk.threads(1):
        one, tot1 = e.to_numpy(), lazyk.sum(c["0"] * c["1"]).to_numpy()
    with lazyk.threads(2):
        two, tot2 = e.to_numpy(), lazyk.sum(c["0"] * c["1"]).to_numpy()
    np.testing.assert_array_equal(one, two)
    assert tot1 == tot2 == one.sum()
    starts = np.concatenate([[0], np.cumsum(counts)])
    row = 7
    v = values[starts[row]:starts[row + 1]]
    assert one[row] == sum(v[i] * v[j] for i in range(len(v)) for j in range(i + 1, len(v)))


# ---------------------------------------------------------------- errors
def test_errors_name_the_problem():
    x = lazyk.array([[1, 2, 3], [4]])
    with pytest.raises(ValueError, match="n must be an int >= 1"):
        lazyk.combinations(x, 0)
    with pytest.raises(ValueError, match="fields must be 2 names"):
        lazyk.combinations(x, 2, fields=["a"])
    with pytest.raises(lazyk.NotSupportedError, match="axis 0"):
        lazyk.combinations(x, 2, axis=0)
    with pytest.raises(np.exceptions.AxisError, match="axis=2 is out of bounds"):
        lazyk.combinations(x, 2, axis=2)
    with pytest.raises(ValueError, match="nested must name arrays 0..0"):
        lazyk.cartesian([x, x], nested=[1])
    with pytest.raises(lazyk.NotSupportedError, match="nested lists at axis 0"):
        lazyk.cartesian([x[0], x[0]], axis=0, nested=True)
    three = lazyk.array([[1.0], [2.0], [3.0]])
    with pytest.raises(lazyk.ShapeError, match=r"cartesian: the arrays do not line up at "
                                               r"axis 0 \(array 'a' has 2, array 'b' has 3\)"):
        lazyk.cartesian({"a": x, "b": three})
    with pytest.raises(lazyk.ShapeError, match=r"array 0 has 2, array 1 has 3"):
        lazyk.cartesian([x, three])
    c2, c3 = lazyk.combinations(x, 2), lazyk.combinations(x, 3)
    with pytest.raises(lazyk.NotSupportedError, match="combinations of 2 and combinations "
                                                      "of 3 meet"):
        (c2["0"] + c3["0"]).eval()
    y = lazyk.array([[1, 2], [4]])
    with pytest.raises(lazyk.ShapeError, match=r"row 0: operand \d has length 3 and "
                                               r"operand \d has length 2"):
        (c2["0"] + lazyk.combinations(y, 2)["1"]).eval()
    fixed = lazyk.placeholder("p", "N * 3 * float64")  # (fixed-size lists: tuples too)
    pairs = lazyk.combinations(fixed, 2, fields=["a", "b"])
    grid = np.arange(6.0).reshape(2, 3)
    got = lazyk.compile(lazyk.sum(pairs.a * pairs.b, axis=1))(grid)
    np.testing.assert_array_equal(got, [0 * 1 + 0 * 2 + 1 * 2, 3 * 4 + 3 * 5 + 4 * 5])
    p = lazyk.placeholder("p", "N * var * float64")
    with pytest.raises(lazyk.NotSupportedError, match=r"compile of records \(fields 0, 1\): "
                                                      r"compile each field .*r\['0'\]"):
        lazyk.compile(lazyk.combinations(p, 2))
    with pytest.raises(lazyk.NotSupportedError, match=r"lazyk.compile\(r\['a'\]\['x'\]\)"):
        lazyk.compile(lazyk.combinations(lazyk.zip({"x": p}), 2, fields=["a", "b"]))
    with pytest.raises(lazyk.NotSupportedError, match="compile of a histogram"):
        lazyk.compile(lazyk.histogram(p, 3, (0, 1)))
    k = lazyk.compile(lazyk.sum(lazyk.combinations(p, 2)["0"], axis=1))
    with pytest.raises(lazyk.NotSupportedError, match=r"bind\(\) of .*the tuples of "
                                                      r"combinations .* call the compiled"):
        k.bind(np.empty(2), lazyk.array([[1.0, 2.0], []]))


COMPILED_ROWS = [[1.5, -2.0, 0.5, None], [], None, [3.0], [None, 4.0, -1.0], [2.0, 2.0]]


@pytest.mark.parametrize("t", ["N * var * float64", "N * ?var * ?float64"])
@pytest.mark.parametrize("case", ["pairs", "triples", "positions", "product", "records",
                                  "selected", "folded"])
def test_compiled_tuples_over_var_placeholders(t, case):
    # lazyk.compile of the tuples: planned once over the placeholders' types, then each
    # call binds arrays of those types; equal to Awkward and to the same expression over
    # the arrays themselves
    rows = [[v if v is not None else 0.5 for v in r] if r is not None else []
            for r in COMPILED_ROWS] if "?" not in t else COMPILED_ROWS

    def build(m, x, y):
        if case == "pairs":
            c = m.combinations(x, 2, fields=["a", "b"])
            return c.a * 10 + c.b
        if case == "triples":
            return m.combinations(x, 3, fields=["a", "b", "c"]).c
        if case == "positions":
            return m.argcombinations(x, 2, fields=["i", "j"]).j
        if case == "product":
            return m.cartesian({"a": x, "b": y}, axis=1).b
        if case == "records":
            return m.combinations(m.zip({"p": x, "q": y}), 2, fields=["l", "r"]).l.q
        if case == "selected":
            return m.combinations(x[x > 0], 2, fields=["a", "b"]).b
        c = m.combinations(x, 2, fields=["a", "b"])
        return m.sum(c.a * c.b, axis=1) if "?" not in t else m.max(c.a - c.b, axis=1)
    x, y = lazyk.placeholder("x", t), lazyk.placeholder("y", t)
    k = lazyk.compile(build(lazyk, x, y))
    for data in (rows, rows[::-1], rows[:1]):
        other = [None if r is None else [v + 1 if v is not None else v for v in r][::-1]
                 for r in data]
        ct = t.replace("N", str(len(data)))
        xs, ys = lazyk.array(data, type=ct), lazyk.array(other, type=ct)
        args = {"x": xs, "y": ys}
        got = k(**{n: args[n] for n in ("x", "y") if f"{n}:" in k.signature})
        assert same(got.to_list(), build(lazyk, xs, ys).eval().to_list())
        if case != "folded" or "?" not in t:  # (Awkward's max skips missing values)
            want = build(ak, ak_array(ct, data), ak_array(ct, other)).to_list()
            assert same(got.to_list(), want), (got, want)


def test_explain_shows_the_tuple_level():
    x = lazyk.array([[1.0, 2.0, 3.0], []])
    c = lazyk.combinations(x, 2)
    text = lazyk.sum(c["0"] * c["1"], axis=1).explain()
    assert "item 0 of the combinations of 2 over var rows" in text
    assert "item 1 of the combinations of 2 over var rows" in text


def test_tuples_of_tuples():
    """Pairs inside the sublists of pairs' items (two tuple levels in one nest), and pairs
    of pairs along one axis (the inner pairs stored first)."""
    x = lazyk.array([[[1.0, 2.0, 3.0], [4.0, 5.0]], [], [[6.0], [7.0, 8.0], [9.0, 10.0]]])
    a = lazyk.to_awkward(x)
    c, ac = lazyk.combinations(x, 2, axis=1), ak.combinations(a, 2, axis=1)
    d, ad = lazyk.combinations(c["0"], 2, axis=2), ak.combinations(ac["0"], 2, axis=2)
    assert d.to_list() == ad.to_list()
    e = lazyk.sum(d["0"] * d["1"], axis=-1) + lazyk.sum(c["1"], axis=-1)
    assert e.eval().to_list() == (ak.sum(ad["0"] * ad["1"], axis=-1)
                                  + ak.sum(ac["1"], axis=-1)).to_list()
    f, af = lazyk.combinations(c["0"], 2, axis=1), ak.combinations(ac["0"], 2, axis=1)
    assert f.to_list() == af.to_list()
    assert lazyk.sum(f["0"], axis=-1).eval().to_list() == ak.sum(af["0"], axis=-1).to_list()


def test_an_empty_max_over_combinations_is_the_error_of_a_plain_max():
    # a fold over the tuples' axis above a fixed dim: nothing missing, so empty rows have no
    # identity, as for `max` over the rows themselves (the reference raises too)
    x = lazyk.array([[], [], []], type="3 * var * 4 * float64")
    c = lazyk.combinations(x, 2, axis=1)
    for skipna in (False, True):
        with pytest.raises(ValueError, match=r"zero-size row \[0, 0\] in reduction max"):
            lazyk.max(c["0"] * 2 - c["1"], axis=1, skipna=skipna).eval()
        with pytest.raises(ValueError, match=r"zero-size row \[0, 0\] in reduction max"):
            lazyk.max(x, axis=1, skipna=skipna).eval()
    y = lazyk.array([[[1.0, 2.0, 3.0, 4.0], [0.5, 5.0, 1.0, 1.0]], [], []],
                    type="3 * var * 4 * float64")
    got = lazyk.sum(lazyk.combinations(y, 2, axis=1)["1"], axis=1).eval()
    assert str(got.type) == "3 * 4 * float64"
    assert got.tolist() == [[0.5, 5.0, 1.0, 1.0], [0.0] * 4, [0.0] * 4]


@pytest.mark.parametrize("n", [2, 3])
def test_fields_of_combinations_with_as_many_tuples_as_items(n):
    # 3 items give 3 pairs, 4 items 4 triples: a selection of the tuples' fields reads the
    # tuples, never the items their rows line up with (Awkward's)
    k = 3 if n == 2 else 4
    rows = [[30.0, 20.0, 10.0, 5.0][:k], [3.0, 2.0, 1.0, 0.5][:k], []]
    qs = [[1, -1, 1, -1][:k], [-1, -1, 1, 1][:k], []]
    a = ak.zip({"pt": rows, "q": qs})
    x = lazyk.from_awkward(a)
    names = ["a", "b", "c"][:n]
    p, ap = lazyk.combinations(x, n, fields=names), ak.combinations(a, n, fields=names)
    ip = lazyk.argcombinations(x.pt, n, fields=names)
    aip = ak.argcombinations(a.pt, n, fields=names)
    keep, akeep = p.a.q != p.b.q, ap.a.q != ap.b.q
    for f in names:
        assert p[keep][f].pt.eval().to_list() == ak.to_list(ap[akeep][f].pt)
        assert ip[f][keep].eval().to_list() == ak.to_list(aip[f][akeep])
    m, am = (p.a.pt + p.b.pt)[keep], (ap.a.pt + ap.b.pt)[akeep]
    best = lazyk.firsts(p[keep][lazyk.argmin(abs(m - 25), axis=1, keepdims=True)].b.pt)
    abest = ak.firsts(ap[akeep][ak.argmin(abs(am - 25), axis=1, keepdims=True)].b.pt)
    assert best.eval().to_list() == ak.to_list(abest)
    assert lazyk.sum(p[keep].b.pt, axis=1).eval().to_list() == ak.to_list(
        ak.sum(ap[akeep].b.pt, axis=1))


def test_argcartesian_matches_awkward():
    a, b = [[1.5, 2.5], [], [3.0], [4.0, 5.0]], [[7, 8, 9], [1], [], [2]]
    la, lb, aa, ab = lazyk.array(a), lazyk.array(b), ak.Array(a), ak.Array(b)
    assert lazyk.argcartesian([la, lb]).eval().to_list() == ak.to_list(ak.argcartesian([aa, ab]))
    for nested in (None, True):
        got = lazyk.argcartesian({"x": la, "y": lb}, nested=nested).eval().to_list()
        assert got == ak.to_list(ak.argcartesian({"x": aa, "y": ab}, nested=nested))
    # the positions take the items back (as `argcombinations`')
    p, ap = lazyk.argcartesian([la, lb]), ak.argcartesian([aa, ab])
    assert (la[p["0"]] * lb[p["1"]]).eval().to_list() == ak.to_list(aa[ap["0"]] * ab[ap["1"]])
    deep = [[[1, 2], [3]], [[4]]]
    ld, ad = lazyk.array(deep), ak.Array(deep)
    assert lazyk.argcartesian([ld, ld], axis=2).eval().to_list() == ak.to_list(
        ak.argcartesian([ad, ad], axis=2))


def test_cartesian_of_something_else_than_a_list_or_dict_is_refused_by_type():
    x = lazyk.array([[1.0, 2.0]])
    for fn in (lazyk.cartesian, lazyk.argcartesian):
        for bad, name in (({1, 2}, "set"), (x, "Array"), (5, "int")):
            with pytest.raises(TypeError, match=f"list or a dict of arrays, not {name}"):
                fn(bad)
        with pytest.raises(ValueError, match="no arrays"):
            fn([])


def test_tuples_over_fixed_dims_match_awkward_on_one_machine_and_on_dask():
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    la, aa = lazyk.array(a), ak.Array(a)
    want = [[tuple(p) for p in row] for row in ak.to_list(ak.argcartesian([aa, aa]))]
    assert lazyk.argcartesian([la, la]).eval().to_list() == want
    one = lazyk.argcombinations(la, 2).eval()
    assert str(one.type) == "3 * 1 * (int64, int64)" and one.to_list() == [[(0, 1)]] * 3
    dd = pytest.importorskip("lazyk.dask")
    import dask
    with dask.config.set(scheduler="synchronous"):
        got = dd.evaluate(lazyk.argcombinations(dd.from_ragged(la, 2), 2)).compute()
    assert got.type == one.type and got.to_list() == one.to_list()  # (tuples, not f0 / f1)


def test_a_selection_over_rows_of_a_fixed_size_that_may_be_missing_says_so():
    x = lazyk.array([[1.0, -2.0, -1.0], [-3.0, None, 1.0]])
    y = lazyk.from_awkward(ak.Array([None, [2.0, -1.0, -1.0], [-1.0, 2.0, -3.0]])[1:])
    with pytest.raises(lazyk.NotSupportedError, match=r"2 \* \?3 \* \?bool: one has fixed-size "
                                                       r"rows that may be missing"):
        x[y > x].eval()


def test_records_with_a_per_event_field_stretched_to_the_objects():
    # `zip({"met": met[:, None], "pt": pt})`: the records' lists are pt's, whatever the
    # field order (as Awkward's broadcast records)
    ak = pytest.importorskip("awkward")
    pt = [[10.0, 20.0, 30.0], [], [5.0], [7.0, 8.0]]
    met = [1.0, 2.0, 3.0, 4.0]
    A = ak.zip({"met": met, "pt": pt})
    r = lazyk.zip({"met": lazyk.array(met)[:, None], "pt": lazyk.array(pt)})
    assert lazyk.argcombinations(r, 2).eval().to_list() == ak.argcombinations(A, 2).to_list()
    c = lazyk.cartesian({"a": r, "b": lazyk.array(pt)})
    C = ak.cartesian({"a": A, "b": pt})
    assert (c.a.met + c.b).eval().to_list() == (C.a.met + C.b).to_list()
    p = lazyk.combinations(r, 2)
    P = ak.combinations(A, 2)
    assert lazyk.num(p["0"].met).eval().to_list() == ak.num(P["0"].met).to_list()
    assert lazyk.sum(p["0"].met + p["1"].pt, axis=1).eval().to_list() == \
        ak.sum(P["0"].met + P["1"].pt, axis=1).to_list()


def test_a_stretched_field_beside_missing_values_keeps_its_own():
    # the field whose lists the records take is read for its rows only: its missing values
    # never mark the stretched field's values
    pt = [[10.0, None, 30.0], [], [5.0], [7.0, 8.0]]
    r = lazyk.zip({"met": lazyk.array([1.0, 2.0, 3.0, 5.0])[:, None], "pt": lazyk.array(pt)})
    p = lazyk.combinations(r, 2)
    assert p["1"].met.eval().to_list() == [[1.0, 1.0, 1.0], [], [], [5.0]]
    assert (p["0"].met + p["1"].pt).eval().to_list() == [[None, 31.0, 31.0], [], [], [13.0]]


def test_gathers_from_full_like_at_pair_positions():
    # a field made by full_like (a flavour), read at the positions of the pairs
    a = lazyk.array([[1], [1, -1]], type="2 * var * int32")
    b = lazyk.array([[], [1]], type="2 * var * int32")
    f = lazyk.full_like(a, 13)
    assert f[lazyk.argcartesian([f, f])["0"]].eval().to_list() == [[13], [13, 13, 13, 13]]
    fl = lazyk.concatenate([lazyk.full_like(a, 13), lazyk.full_like(b, 11)], axis=1)
    pairs = lazyk.argcombinations(fl, 2, fields=["i", "j"])
    assert fl[pairs.i].eval().to_list() == [[], [13, 13, 13]]
    assert fl[pairs.j].eval().to_list() == [[], [13, 11, 11]]


def test_a_nested_products_field_taken_back_is_awkwards():
    """`c["1"][idx]` of a nested cartesian product (a field with the records' lists) and
    `c[idx]["1"]` are both Awkward's closest b to each a."""
    import awkward as ak
    ev, ev2 = [[8.0, 7.0], [4.0, 7.0, 5.0]], [[4.0], [1.0, 6.0]]
    c = lazyk.cartesian([lazyk.array(ev), lazyk.array(ev2)], nested=True)
    idx = lazyk.argmin(abs(c["0"] - c["1"]), axis=2, keepdims=True)
    ca = ak.cartesian([ak.Array(ev), ak.Array(ev2)], nested=True)
    want = ca["1"][ak.argmin(abs(ca["0"] - ca["1"]), axis=2, keepdims=True)].to_list()
    assert c[idx]["1"].eval().to_list() == want
    assert c["1"][idx].eval().to_list() == want


def test_a_field_of_nested_products_folds_and_counts_per_record_as_awkward():
    """A field of `cartesian(..., nested=True)` or of a zip with a per-event value has the
    records' lists: folds, counts and firsts of it alone give one value per record (they
    folded the field's own dims: one value per event)."""
    import awkward as ak
    j, m = [[1.0, 2.0], [], [3.0]], [[10.0], [20.0, 30.0], []]
    c = lazyk.cartesian([lazyk.array(j), lazyk.array(m)], nested=True)
    ca = ak.cartesian([ak.Array(j), ak.Array(m)], nested=True)
    assert c["1"].eval().to_list() == ca["1"].to_list()
    for f, g in ((lazyk.sum, ak.sum), (lazyk.num, ak.num), (lazyk.firsts, ak.firsts)):
        assert f(c["1"], axis=2).eval().to_list() == g(ca["1"], axis=2).to_list()
    assert lazyk.sum(c["1"] > 15, axis=2).eval().to_list() == \
        ak.sum(ca["1"] > 15, axis=2).to_list()
    assert lazyk.sum(c["1"] - c["0"], axis=2).eval().to_list() == \
        ak.sum(ca["1"] - ca["0"], axis=2).to_list()
    met = [1.0, 2.0, 3.0]
    z = lazyk.zip({"pt": lazyk.array(j), "met": lazyk.array(met)[:, None]})
    za = ak.zip({"pt": ak.Array(j), "met": ak.Array(met)})
    assert z.met.eval().to_list() == za.met.to_list()
    assert lazyk.sum(z.met, axis=1).eval().to_list() == ak.sum(za.met, axis=1).to_list()


def test_fields_of_nested_products_of_records_with_per_event_fields_are_awkwards():
    """Records with a per-event field (`met[:, None]`) or a string field on either side of
    `cartesian(..., nested=True)`: each field alone, and fields together, have the product's
    lists (a per-event value repeated per object, no value where a side has no objects)."""
    import awkward as ak
    pt, met, x = [[1.0, 2.0], [3.0], []], [10.0, 20.0, 30.0], [[5.0, 6.0, 7.0], [], [8.0]]
    tags = ["t", "u", "v"]
    lz = lazyk.zip({"x": lazyk.array(x), "pt": lazyk.array(met)[:, None],
                    "tag": lazyk.array(tags)[:, None]})
    az = ak.zip({"x": ak.Array(x), "pt": ak.Array(met), "tag": ak.Array(tags)})
    for order in ((0, 1), (1, 0)):
        sides = [lazyk.zip({"pt": lazyk.array(pt)}), lz]
        asides = [ak.zip({"pt": ak.Array(pt)}), az]
        c = lazyk.cartesian({k: sides[i] for k, i in zip("ab", order)}, nested=True)
        ca = ak.cartesian({k: asides[i] for k, i in zip("ab", order)}, nested=True)
        for f in (lambda r: r.a.pt, lambda r: r.b.pt, lambda r: r.a.pt - r.b.pt):
            assert f(c).eval().to_list() == f(ca).to_list()
            assert lazyk.num(f(c), axis=2).eval().to_list() == ak.num(f(ca), axis=2).to_list()
            assert lazyk.sum(f(c), axis=2).eval().to_list() == ak.sum(f(ca), axis=2).to_list()
        side = "b" if order == (0, 1) else "a"
        assert c[side].tag.eval().to_list() == ca[side].tag.to_list()
    s = lazyk.cartesian([lazyk.array(pt), lazyk.array([["p", "q"], ["r"], []])], nested=True)
    sa = ak.cartesian([ak.Array(pt), ak.Array([["p", "q"], ["r"], []])], nested=True)
    assert s["1"].eval().to_list() == sa["1"].to_list()
    assert lazyk.sum(s["1"] == "p", axis=2).eval().to_list() == \
        ak.sum(sa["1"] == "p", axis=2).to_list()


def test_a_row_against_the_tuples_names_them():
    """Tuples never stretch: a row of another length than a row's tuples (other than 1) is a
    ShapeError that names the tuples; a row of 1 stretches to them."""
    c = lazyk.combinations(lazyk.array([[1.0, 8.0], [1.0, 2.0, 3.0]]), 2)["0"]
    with pytest.raises(lazyk.ShapeError, match=r"row 0: operand \d has length 0 and the row "
                       r"holds 1 tuples \(combinations / cartesian\)"):
        (c + lazyk.array([[], [1.0, 1.0, 1.0]])).eval()
    assert (c + lazyk.array([[5.0], [1.0, 1.0, 1.0]])).eval().to_list() == [[6.0],
                                                                           [2.0, 2.0, 3.0]]


def test_more_tuples_than_an_int64_counts_is_an_error_not_a_wrapped_count():
    """Rows so long that their pairs (or their product) pass int64 are refused naming the
    row (a wrapped count sized the result too small). Stride-0 content: no memory."""
    def row(n):
        return lazyk.from_offsets(np.array([0, n]), np.broadcast_to(np.zeros(1), (n,)))
    for e in (lazyk.cartesian([row(2**32), row(2**32)]), lazyk.combinations(row(2**33), 2)):
        for run in (lambda: lazyk.num(e, axis=1).eval(), e.eval):
            with pytest.raises(ValueError, match="row 0: .* more tuples than an int64 counts"):
                run()
    # counts exact past float64's integers (each count loops over a row's first slots)
    for n, k, want in ((2**28, 2, 2**27 * (2**28 - 1)), (2**12, 3, 2**11 * 4095 * 4094 // 3)):
        assert lazyk.num(lazyk.combinations(row(n), k), axis=1).eval().tolist() == [want]


def _pyrows(x) -> list:
    return x.eval().to_list() if hasattr(x, "eval") else x.to_list()


def test_nested_cartesian_of_sliced_work_pairs_the_sliced_items():
    """`cartesian([(y - 1)[:, -2:], z], nested=True)` opens a list per item of the slice:
    those of the last two items (it took the first two, and a row that the slice empties
    kept one)."""
    y = lazyk.array([[5, 2, -3], [1], []])
    z = lazyk.array([[5.0, 1.0], [2.0], [-2.0]])
    for s in ((y - 1)[:, -2:], (y - 1)[:, 1:], abs(y)[:, :1], (y * 2)[y > 1]):
        rows, zs = _pyrows(s), _pyrows(z)
        want = [[[(a, b) for b in zr] for a in sr] for sr, zr in zip(rows, zs)]
        assert lazyk.cartesian([s, z], nested=True).eval().to_list() == want
        assert lazyk.cartesian([s, z]).eval().to_list() == \
            [[t for group in w for t in group] for w in want]


def test_a_mask_of_item_positions_selects_the_items_of_deeper_data():
    """x of `N * var * 2` selected by a mask of `N * var` built from item positions
    (`local_index(y) >= 1`, as a slice builds it): the mask's dims line up with x's first."""
    y = lazyk.array([[5, 2, -3], [1], []])
    x = lazyk.array([[[5, 6], [2, 7], [-3, 8]], [[1, 9]], []], "3 * var * 2 * int64")
    m = lazyk.local_index(y) >= 1
    want = [[item for item, k in zip(row, keep) if k]
            for row, keep in zip(x.to_list(), m.eval().to_list())]
    assert x[m].eval().to_list() == want == [[[2, 7], [-3, 8]], [], []]
    assert (x - 1)[m].eval().to_list() == [[[a - 1 for a in item] for item in row]
                                           for row in want]


def test_a_new_axis_on_positions_of_combinations():
    y = lazyk.array([[5, 2, -3], [1], []])
    x = lazyk.array([[[5, 6], [2, 7], [-3, 8]], [[1, 9]], []], "3 * var * 2 * int64")
    p = lazyk.argcombinations(y, 2)
    assert p["0"][:, :, None].eval().to_list() == [[[0], [0], [1]], [], []]
    first = [[row[0] for _ in range(len(row) * (len(row) - 1) // 2)] if row else []
             for row in x.to_list()]
    assert (p["1"][:, :, None] + x[:, :1, :]).eval().to_list() == [
        [[j + a for a in f] for j, f in zip(js, fs)]
        for js, fs in zip(p["1"].eval().to_list(), first)]


def test_slices_of_combinations_over_rows_that_may_be_missing():
    """A slice of the pairs of `?var * var` rows keeps whole pairs (the tuples' items are
    stored first): the kernel once walked every pair under a kept level, past the counts."""
    x = lazyk.array([None, [[3.0], [1.0]], None, [[-1.0, 2.0, -3.0]],
                     [[-1.0, -3.0], [-3.0, -1.0, 5.0, -2.0]]], type="5 * ?var * ?var * float64")
    rows = x.to_list()
    for repl in (False, True):
        p = lazyk.combinations(x, 2, replacement=repl)
        want = [None if r is None else
                [(a, b) for i, a in enumerate(r) for b in r[i + (0 if repl else 1):]][1:]
                for r in rows]
        assert p[:, 1:].eval().to_list() == want
        assert p["0"][:, 1:].eval().to_list() == [None if w is None else [a for a, _ in w]
                                                  for w in want]
    y = lazyk.array([[[1.0], [2.0], [3.0]]], type="1 * ?var * var * float64")
    assert lazyk.combinations(y, 2)["1"][:, 1:].eval().to_list() == [[[3.0], [3.0]]]


@pytest.mark.parametrize("t", ["2 * var * 2 * float64", "2 * ?var * 2 * float64"])
def test_masks_of_pairs_of_fixed_size_lists(t):
    """Pairs of `var * 2` items selected by a mask of the pairs (a slice, a comparison of
    the other slot): the kept pairs' items (every pair's were written, past the count)."""
    x = lazyk.array([[[1.0, 1.5], [2.0, 2.5], [3.0, 3.5]], [[4.0, 4.5]]], type=t)
    rows = x.to_list()
    p = lazyk.combinations(x, 2)
    pairs = [[(a, b) for i, a in enumerate(r) for b in r[i + 1:]] for r in rows]
    assert p["0"][:, 1:].eval().to_list() == [[a for a, _ in w[1:]] for w in pairs]
    assert p[:, 1:].eval().to_list() == [w[1:] for w in pairs]
    assert (p["0"].sum(axis=-1))[:, 1:].eval().to_list() == [[sum(a) for a, _ in w[1:]]
                                                             for w in pairs]
    if "?" not in t:
        assert (p["0"] * 2)[p["1"][:, :, 0] > 2.5].eval().to_list() == [
            [[2 * v for v in a] for a, b in w if b[0] > 2.5] for w in pairs]


def test_nested_cartesian_of_selections_and_gathers_that_may_be_missing():
    """`cartesian([x[x > 1], z], nested=True)` with `?T` x (a missing mask element keeps a
    missing item) and with a take-back at `argmin(keepdims=True)` (an empty row's position
    is missing): the new list axis goes on the selection's result, as in Awkward."""
    x = lazyk.array([[1.0, None, 3.0], [4.0]])
    z = lazyk.array([[10.0], [20.0, 30.0]])
    ax, az = ak.Array(x.to_list()), ak.Array(z.to_list())
    assert lazyk.cartesian([(x * 2)[x > 1], z], nested=True).eval().to_list() == \
        ak.cartesian([(ax * 2)[ax > 1], az], nested=True).to_list()
    y = lazyk.array([[1.0, 2.0], [], [3.0]])
    w = lazyk.array([[5.0], [6.0, 7.0], [8.0]])
    e = y - y.sum(axis=1, keepdims=True)
    i = lazyk.argmin(y, axis=1, keepdims=True)
    ay, aw = ak.Array(y.to_list()), ak.Array(w.to_list())
    ae = ay - ak.sum(ay, axis=1, keepdims=True)
    want = ak.cartesian([ae[ak.argmin(ay, axis=1, keepdims=True)], aw], nested=True).to_list()
    assert lazyk.cartesian([e[i], w], nested=True).eval().to_list() == want


def test_negative_slices_of_items_over_rows_that_may_be_missing():
    a = ak.to_regular(ak.Array([[[1, 2], [3, 4], [5, 6]], None, []]), axis=2)
    x = lazyk.from_awkward(a)  # 3 * ?var * 2 * int64
    for sl in (slice(None, -1), slice(-2, None), slice(1, -1)):
        assert lazyk.combinations(x, 2)["1"][:, sl].eval().to_list() == \
            ak.combinations(a, 2)["1"][:, sl].to_list()
        assert x[:, sl].eval().to_list() == a[:, sl].to_list()


def test_compiled_tuples_of_rows_selected_by_a_per_event_parameter():
    z = lazyk.placeholder("z", "N * var * float64")
    met = lazyk.placeholder("met", "N * float64")
    zz, mm = lazyk.array([[0.1, 0.2], [], [0.3, 0.4, 0.5]]), np.array([0.6, 0.7, 0.1])
    for build in (lambda m, x, v: m.num(m.combinations(x[v > 0.5], 2), axis=1),
                  lambda m, x, v: m.num(m.cartesian([x[v > 0.5], x[v > 0.5]]), axis=1),
                  lambda m, x, v: m.num(m.argcombinations(x[v > 0.5], 2), axis=1),
                  lambda m, x, v: m.sum(m.combinations(x, 2, fields=["a", "b"]).a *
                                        v[:, None], axis=1)):
        want = build(lazyk, zz, lazyk.array(mm)).eval().to_list()
        got = lazyk.compile(build(lazyk, z, met))(zz, mm)
        assert np.allclose(np.asarray(got.to_list() if hasattr(got, "to_list") else got),
                           want)


def test_positions_in_a_tuples_field_meet_the_tuples_as_in_awkward():
    x = lazyk.array([[0.1, 0.5], [], [0.7]], type="3 * var * float64")
    y = lazyk.array([[0.2], [0.3], [0.4, 0.9]], type="3 * var * float64")
    c = lazyk.cartesian({"a": x, "b": y}, axis=1)
    assert (lazyk.local_index(c.b) * c.b).eval().to_list() == [[0.0, 0.2], [], [0.0, 0.9]]
    p = lazyk.combinations(x, 2, fields=["a", "b"])
    assert (lazyk.local_index(p.b) + p.a).eval().to_list() == [[0.1], [], []]


def test_take_backs_of_rows_that_may_be_missing_meet_tuples_once_evaluated():
    xr = lazyk.array([[0.46, 0.23], [], None], type="3 * ?var * float64")
    t = xr[lazyk.argmin(xr, axis=1, keepdims=True)]
    assert t.eval().to_list() == [[0.23], [None], None]
    assert lazyk.num(lazyk.combinations(t.eval(), 2), axis=1).eval().to_list() == [0, 0, None]
    y = lazyk.array([[0.2], [0.3], [0.4, 0.9]], type="3 * var * float64")
    with pytest.raises(lazyk.NotSupportedError, match=r"\.eval\(\) the take-back"):
        lazyk.cartesian({"a": y, "b": t}, axis=1).a.eval()


def test_numpy_operands_of_combinations_are_freed_with_their_expressions():
    # (a NumPy leaf's lazyk array is shared while an expression holds it, never kept past)
    r = lazyk.array(np.ones((50, 3)))
    refs = []
    for _ in range(5):
        w = np.random.rand(50)
        refs.append(weakref.ref(w))
        p = lazyk.combinations(r * w[:, None], 2, fields=["a", "b"])
        got = lazyk.sum(p.a * p.b, axis=1).eval().to_numpy()
        assert np.allclose(got, 3 * w * w)
    jets = lazyk.zip({"pt": lazyk.array([[1.0, 2.0, 3.0]] * 20)})
    c = lazyk.combinations(jets[:10], 2, fields=["a", "b"])  # (slices: positions leaves)
    assert lazyk.sum(c.a.pt * c.b.pt, axis=1).eval().to_list() == [11.0] * 10
    del p, w, c
    gc.collect()
    assert [x() for x in refs] == [None] * 5
