"""lazyk's ragged (`var`) and missing-value (`?T`) support against the plain-Python reference.

Every drawn case ends one of three ways: lazyk matches the reference (type string, values,
missing positions), lazyk refuses with NotSupportedError, or both raise the same error
(ShapeError for rows that do not line up, ValueError for min/max of nothing). Anything else
(a wrong answer, a different error, a crash) fails. Wrong answers known today are the
`xfail(strict=True)` tests at the end: they start passing when lazyk is fixed.

`python -m tests.test_ragged_today [N]` prints how many drawn cases of each kind match,
are refused or raise, out of N per kind.
"""
from __future__ import annotations

import collections
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from tests import ragged_reference as R
from tests import ragged_strategies as S
from tests.test_ragged_reference import same

LAZYK_REDUCERS = ("sum", "prod", "min", "max", "any", "all", "mean", "count")


def check(ref_fn, lazyk_fn) -> str:
    """'match', 'refused' or 'raises' (both raised alike); AssertionError otherwise."""
    try:
        ref, ref_err = ref_fn(), None
    except (lazyk.ShapeError, ValueError) as e:  # AxisError is a ValueError too
        ref, ref_err = None, e
    try:
        got = lazyk_fn()
        got = got.eval() if isinstance(got, lazyk.Expr) else got
    except lazyk.NotSupportedError:
        return "refused"
    except Exception as e:  # noqa: BLE001 - compared with the reference's outcome below
        if ref_err is None:
            raise AssertionError(f"lazyk raised {e!r}; the reference gives {ref}") from e
        want = lazyk.ShapeError if isinstance(ref_err, lazyk.ShapeError) else ValueError
        assert isinstance(e, want), f"lazyk raised {e!r}; the reference raises {ref_err!r}"
        return "raises"
    assert ref_err is None, f"lazyk answered {got.to_list()!r}; the reference raises {ref_err!r}"
    got_list = got.to_list()
    assert str(got.type) == str(ref.type), (f"type {got.type} != reference {ref.type}; "
                                            f"values {got_list!r} / {ref.data!r}")
    assert same(got_list, ref.data, rel=1e-5), f"values {got_list!r} != reference {ref.data!r}"
    return "match"


def L(t, d):
    return lazyk.array(d, type=t)


def RA(t, d):
    return R.array(d, t)


# ---------------------------------------------------------------- the cases, by kind
BINARY = ("add", "subtract", "multiply", "maximum", "greater")


def case_construct(case):
    t, d = case
    return check(lambda: RA(t, d), lambda: L(t, d))


def case_binary(pair, op):
    t1, d1, t2, d2 = pair
    return check(lambda: R.elementwise(op, RA(t1, d1), RA(t2, d2)),
                 lambda: getattr(lazyk, op)(L(t1, d1), L(t2, d2)))


def case_unary_scalar(case, op):
    t, d = case
    return check(lambda: R.elementwise("add", R.elementwise(op, RA(t, d)), 0.5),
                 lambda: getattr(lazyk, op)(L(t, d)) + 0.5)


def case_where(pair):
    t1, d1, t2, d2 = pair

    def ref():
        x = RA(t1, d1)
        return R.where(R.elementwise("greater", x, 0), x, RA(t2, d2))

    def lz():
        x = L(t1, d1)
        return lazyk.where(x > 0, x, L(t2, d2))
    return check(ref, lz)


def case_reduce(case, op, axis, keepdims, skipna, initial=None):
    t, d = case
    kw = {} if op == "count" else {"skipna": skipna}  # count always skips missing values
    if initial is not None:
        kw["initial"] = initial
    return check(lambda: R.reduce(op, RA(t, d), axis, keepdims=keepdims, skipna=skipna,
                                  initial=initial),
                 lambda: getattr(lazyk, op)(L(t, d), axis=axis, keepdims=keepdims, **kw))


def case_fused(pair, which):
    """The benchmark's shapes of work: (x*2 + y).sum(-1) and x - x.mean(-1, keepdims)."""
    t1, d1, t2, d2 = pair
    if which == "sum2":
        return check(lambda: R.reduce("sum", R.elementwise(
                         "add", R.elementwise("multiply", RA(t1, d1), 2), RA(t2, d2)), -1),
                     lambda: ((L(t1, d1) * 2 + L(t2, d2)).sum(axis=-1)))
    return check(lambda: R.elementwise("subtract", RA(t1, d1),
                                       R.reduce("mean", RA(t1, d1), -1, keepdims=True)),
                 lambda: L(t1, d1) - L(t1, d1).mean(axis=-1, keepdims=True))


def case_infer(case):
    """lazyk.array(nested list) infers the reference's type (`typeof`) and keeps the values."""
    _, d = case
    a, want = lazyk.array(d), R.typeof(d)
    assert str(a.type) == str(want), f"{d!r}: lazyk infers {a.type}, the reference {want}"
    assert same(a.to_list(), R.array(d, want).data)
    return "match"


KINDS = {
    "construct": (st.tuples(S.ragged()), case_construct),
    "infer": (st.tuples(S.ragged()), case_infer),
    "binary": (st.tuples(S.ragged_pair(), st.sampled_from(BINARY)), case_binary),
    "binary, length-1 rows": (st.tuples(S.ragged_pair(broadcast=True),
                                        st.sampled_from(BINARY)), case_binary),
    "unary + scalar": (st.tuples(S.ragged(dtypes=S.NUMERIC, nan=True),
                                 st.sampled_from(["negative", "sqrt", "absolute"])),
                       case_unary_scalar),
    "where": (st.tuples(S.ragged_pair()), case_where),
    "fused": (st.tuples(S.ragged_pair(dtypes=("float64",)), st.sampled_from(["sum2", "center"])),
              case_fused),
}


@st.composite
def reduce_cases(draw):
    t, d = draw(S.ragged(nan=True))
    axis, keepdims = draw(S.reduce_args(R.parse_type(t).ndim))
    return (t, d), draw(st.sampled_from(LAZYK_REDUCERS)), axis, keepdims, draw(st.booleans())


@st.composite
def initial_cases(draw):
    (t, d), _, axis, keepdims, skipna = draw(reduce_cases())
    return ((t, d), draw(st.sampled_from(["min", "max"])), axis, keepdims, skipna,
            draw(st.integers(-3, 3)))


KINDS["reduce"] = (reduce_cases(), case_reduce)
KINDS["reduce, initial"] = (initial_cases(), case_reduce)


def _run(kind, args):
    return KINDS[kind][1](*args)


def known_wrong(kind, args) -> str | None:
    """Which xfail test below covers this case, if lazyk is known to get it wrong today
    (none at the moment: a strict xfail test and a branch here mark one when found)."""
    return None


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_lazyk_today_matches_or_refuses(kind):
    @given(KINDS[kind][0])
    def inner(args):
        try:
            _run(kind, args)
        except (AssertionError, ValueError):
            if known_wrong(kind, args) is None:  # those have their own xfail test below
                raise
    inner()


# ---------------------------------------------------------------- known today
def test_supported_forms_match_by_hand():
    """The forms lazyk documents as supported: fixed dims, one trailing var, T or ?T."""
    cases = [(lambda m: m.elementwise("add", m.elementwise("multiply", X, 2), Y)),
             (lambda m: m.reduce("sum", X, -1)), (lambda m: m.reduce("mean", X, -1, skipna=True)),
             (lambda m: m.reduce("max", X, -1, keepdims=True, skipna=True))]
    X = RA("3 * var * ?float64", [[1.0, None, 3.0], [4.0], []])
    Y = RA("3 * var * float64", [[1.0], [2.0], []])
    XL, YL = L(str(X.type), X.data), L(str(Y.type), Y.data)

    class LZ:  # lazyk spelled like the reference
        @staticmethod
        def elementwise(op, *a):
            a = [{id(X): XL, id(Y): YL}.get(id(v), v) for v in a]
            return getattr(lazyk, op)(*a)

        @staticmethod
        def reduce(op, x, axis, **kw):
            return getattr(lazyk, op)({id(X): XL, id(Y): YL}[id(x)], axis=axis, **kw)
    for c in cases:
        assert check(lambda: c(R), lambda: c(LZ)) == "match"


def test_refusals_are_not_supported_errors():
    v = L("2 * var * var * float64", [[[1.0], []], [[2.0, 3.0]]])
    assert (v + 1).eval().to_list() == [[[2.0], []], [[3.0, 4.0]]]  # the loop nest runs it
    assert lazyk.mean(v, axis=(1, 2)).eval().to_list() == [1.0, 2.5]  # any axes run too
    b = L("2 * var * var * bytes", [[[b"a"], []], [[b"b"]]])
    assert (b == b"a").eval().to_list() == [[[True], []], [[False]]]  # bytes compare
    with pytest.raises(lazyk.NotSupportedError):
        b + b"a"  # no arithmetic on bytes


def test_elementwise_on_an_empty_array():
    for t in ("0 * var * float64", "0 * var * ?float32"):
        assert check(lambda: R.elementwise("add", RA(t, []), 1), lambda: L(t, []) + 1) == "match"


def test_where_takes_missing_from_the_branch_taken():
    x, y = ("1 * var * ?int32", [[4, -1]]), ("1 * var * ?int32", [[None, None]])
    assert case_where(x + y) == "match"  # reference [[4, None]]; lazyk [[None, None]]


def test_mean_of_nothing_with_options_is_missing():
    assert case_reduce(("1 * var * ?float64", [[]]), "mean", -1, False, False) == "match"


if __name__ == "__main__":  # the tally for the report
    from hypothesis import HealthCheck, settings

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for kind, (strategy, _) in sorted(KINDS.items()):
        counts = collections.Counter()
        examples = []

        @settings(max_examples=n, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def tally(args):
            known = known_wrong(kind, args)
            try:
                counts[_run(kind, args)] += 1
            except Exception as e:  # noqa: BLE001
                if known:
                    counts["WRONG (" + known + ")"] += 1
                    return
                counts["WRONG" if isinstance(e, AssertionError) else
                       "CRASH " + type(e).__name__] += 1
                if len(examples) < 3:
                    examples.append((args, repr(e)[:300]))
        tally()
        print(f"{kind:24s} {dict(counts)}")
        for ex in examples:
            print("    ", ex)
