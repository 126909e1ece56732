"""Fixed-size strings (`fixed_string[n]`: NumPy `U` / `S`, lazyk's UTF-8 ones) in ragged
rows and through Arrow / Awkward: string operations against a plain-Python reference over
the same nested lists, conversions against pyarrow's and Awkward's own."""
import operator

import numpy as np
import pytest

import lazyk
from lazyk.errors import NotSupportedError

pa = pytest.importorskip("pyarrow")
ak = pytest.importorskip("awkward")

OFFSETS = np.array([0, 1, 3, 3, 5])
WORDS = ["ab", "c", "kiwi", "", "k\u00e9"]
CONTENTS = {
    "U": np.array(WORDS),
    ">U": np.array(WORDS).astype(">U4"),
    "S": np.array([w.encode() for w in WORDS]),
}
OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
       ">": operator.gt, ">=": operator.ge}


def nested(f, rows):
    """`f` applied to every string of nested lists; None stays None."""
    if rows is None:
        return None
    if isinstance(rows, list):
        return [nested(f, r) for r in rows]
    return f(rows)


@pytest.mark.parametrize("kind", list(CONTENTS))
@pytest.mark.parametrize("op", list(OPS))
def test_comparisons_on_var_fixed_string_rows(kind, op):
    x = lazyk.from_offsets(OFFSETS, CONTENTS[kind])
    rows = [WORDS[a:b] for a, b in zip(OFFSETS, OFFSETS[1:])]
    for const in ("c", "kiwi", "k\u00e9", b"c"):
        got = OPS[op](x, const).eval().to_list()
        assert got == nested(lambda s: OPS[op](s.encode(), const if isinstance(const, bytes)
                                               else const.encode()), rows), (op, const)


@pytest.mark.parametrize("kind", list(CONTENTS))
def test_str_len_startswith_endswith_on_var_fixed_string_rows(kind):
    x = lazyk.from_offsets(OFFSETS, CONTENTS[kind])
    rows = [WORDS[a:b] for a, b in zip(OFFSETS, OFFSETS[1:])]
    assert lazyk.str_len(x).eval().to_list() == nested(len, rows)
    assert lazyk.startswith(x, "k").eval().to_list() == \
        nested(lambda s: s.startswith("k"), rows)
    assert lazyk.endswith(x, "\u00e9").eval().to_list() == \
        nested(lambda s: s.endswith("\u00e9"), rows)
    n = lazyk.evaluate("str_len(x) > 1", local_dict={"x": x})
    assert n.to_list() == nested(lambda s: len(s) > 1, rows)


@pytest.mark.parametrize("type, rows", [
    ("2 * var * fixed_string[4]", [["ab"], ["c", "kiwi"]]),
    ("2 * var * var * fixed_string[4]", [[["ab"], []], [["c", "kiwi"]]]),
    ("3 * ?var * ?fixed_string[4]", [["ab", None], None, ["c", "kiwi"]]),
    ("2 * 2 * ?fixed_string[4]", [["ab", None], ["c", "kiwi"]]),
    ("2 * var * fixed_string[2, 'utf32']", [["ab"], ["c", "\u00e9"]]),
])
def test_string_operations_on_lazyk_fixed_string_rows(type, rows):
    x = lazyk.array(rows, type=type)
    assert (x == "c").eval().to_list() == nested(lambda s: s == "c", rows)
    assert (x >= "b").eval().to_list() == nested(lambda s: s >= "b", rows)
    assert lazyk.str_len(x).eval().to_list() == nested(len, rows)
    assert lazyk.startswith(x, "a").eval().to_list() == \
        nested(lambda s: s.startswith("a"), rows)
    assert (x == lazyk.array(rows, type=type.replace("fixed_string[4]", "string").replace(
        "fixed_string[2, 'utf32']", "string"))).eval().to_list() == \
        nested(lambda s: True, rows)


def test_var_fixed_string_leaves_its_rows_in_place():
    offsets = OFFSETS.copy()
    x = lazyk.from_offsets(offsets, CONTENTS["U"])
    assert (x == "c").eval().to_list() == [[False], [True, False], [], [False, False]]
    offsets[1] = 2  # the rows are read from the offsets when the expression runs
    assert (x == "c").eval().to_list() == [[False, True], [False], [], [False, False]]


# ---------------------------------------------------------------- Arrow and Awkward
@pytest.mark.parametrize("kind", list(CONTENTS))
def test_fixed_strings_to_arrow_and_awkward_as_strings(kind):
    v = CONTENTS[kind]
    ref = pa.array(WORDS)
    out = lazyk.to_arrow(lazyk.array(v))
    assert out.type == pa.string() and out.equals(ref)
    awk = lazyk.to_awkward(lazyk.array(v))
    assert awk.tolist() == WORDS and str(awk.type) == "5 * string"
    rows = lazyk.from_offsets(OFFSETS, v)
    expect = [WORDS[a:b] for a, b in zip(OFFSETS, OFFSETS[1:])]
    assert lazyk.to_arrow(rows).to_pylist() == expect
    assert lazyk.to_arrow(rows).type.value_type == pa.string()
    assert lazyk.to_awkward(rows).tolist() == expect
    grid = lazyk.array(v[:4].reshape(2, 2))
    assert lazyk.to_arrow(grid).to_pylist() == [WORDS[:2], WORDS[2:4]]
    assert lazyk.to_awkward(grid).tolist() == [WORDS[:2], WORDS[2:4]]


def test_missing_fixed_strings_to_arrow_and_awkward():
    x = lazyk.array([["ab", None], None, ["k\u00e9"]], type="3 * ?var * ?fixed_string[4]")
    expect = [["ab", None], None, ["k\u00e9"]]
    assert lazyk.to_arrow(x).to_pylist() == expect
    assert lazyk.to_arrow(x).type.value_type == pa.string()
    assert lazyk.to_awkward(x).tolist() == expect
    r = lazyk.array([{"s": "ab", "i": 1}], type="1 * {s: fixed_string[3], i: int8}")
    assert lazyk.to_arrow(r).to_pylist() == [{"s": "ab", "i": 1}]


def test_bytes_that_are_not_utf8_are_refused_by_name():
    v = np.array([b"ok", b"\xff\xfe"])
    for convert in (lazyk.to_arrow, lazyk.to_awkward):
        with pytest.raises(NotSupportedError, match=r"fixed_string\[2\].*not UTF-8"):
            convert(lazyk.array(v))
    # valid as a whole, but the second string starts inside a character
    split = np.array([b"\xc3", b"\xa9"])
    with pytest.raises(NotSupportedError, match="not UTF-8"):
        lazyk.to_arrow(lazyk.array(split))


def test_fixed_bytes_to_arrow_and_awkward():
    v = np.array([b"ab", b"c\x00"], dtype="V2")
    out = lazyk.to_arrow(lazyk.array(v))
    assert out.equals(pa.array([b"ab", b"c\x00"], pa.binary(2)))
    assert lazyk.to_awkward(lazyk.array(v)).tolist() == [b"ab", b"c\x00"]


def test_byte_order_and_complex_numbers():
    x = lazyk.from_offsets(np.array([0, 1, 3]), np.arange(3).astype(">i4"))
    out = lazyk.to_awkward(x)
    assert out.tolist() == [[0], [1, 2]] and str(out.type) == "2 * var * int32"
    assert lazyk.to_arrow(x).to_pylist() == [[0], [1, 2]]
    z = lazyk.array(np.array([1 + 2j, 3j]))
    with pytest.raises(NotSupportedError, match=r"complex128 has no Arrow type.*lazyk\.real"):
        lazyk.to_arrow(z)
    assert lazyk.to_awkward(z).tolist() == [1 + 2j, 3j]
    assert lazyk.to_awkward(lazyk.array(np.array([1 + 2j]).astype(">c16"))).tolist() == [1 + 2j]


def test_numpy_text_of_either_byte_order_and_s_bytes_read_back():
    big = np.array(["ab", "c", "é"]).astype(">U2")
    a = lazyk.array(big)
    assert a.to_list() == ["ab", "c", "é"]
    assert (a == "c").eval().to_numpy().tolist() == [False, True, False]
    assert lazyk.array(np.array(["é".encode(), b"a"])).to_list() == ["é", "a"]
    with pytest.raises(ValueError, match=r"not UTF-8 text: .*fixed_bytes\[2\]"):
        lazyk.array(np.array([b"\xff\xfe", b"a"])).to_list()
