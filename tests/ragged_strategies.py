"""Hypothesis strategies for ragged data: (type string, nested list) pairs.

Every layout the ragged kernels must handle is drawn: `var * T`, `var * var * T`,
`N * var * T`, `N * var * var * T`, `3 * var * 4 * T`, `var * var * var * T` (N becomes a
concrete size: arrays have concrete types), with `?T` leaves, `?var` rows below the
outermost dim, empty rows, empty arrays and many length-1 rows. Leaf values are small
integers (or halves for floats) so sums are exact in any order; `nan=True` mixes in NaN
and infinities.

`QVAR_LAYOUTS` put a `?var` (missing rows) last, after fixed dims; `QNEST_LAYOUTS` anywhere; `ragged_pair(own_rows=True)`
gives each operand its own missing rows (and `?var` or plain `var` at random).
"""
from __future__ import annotations

from hypothesis import strategies as st

LAYOUTS = ("var * T", "var * var * T", "N * var * T", "N * var * var * T",
           "3 * var * 4 * T", "var * var * var * T")
QVAR_LAYOUTS = ("N * ?var * T", "3 * N * ?var * T", "?var * T")
# `?var` above or between other dims (elementwise work and last-axis reductions)
QNEST_LAYOUTS = ("var * ?var * T", "N * ?var * var * T", "N * ?var * 4 * T",
                 "var * ?var * ?var * T", "N * var * ?var * T")
DTYPES = ("float64", "float32", "int64", "int32", "bool")
NUMERIC = ("float64", "float32", "int64", "int32")
# row lengths: empty and length-1 rows are common on purpose
LENGTHS = st.sampled_from([0, 1, 1, 2, 3, 4])


def _leaf(draw, dtype: str, nan: bool):
    if dtype == "bool":
        return draw(st.booleans())
    if dtype.startswith("int"):
        return draw(st.integers(-5, 5))
    if nan and draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([float("nan"), float("inf"), float("-inf")]))
    return draw(st.integers(-10, 10)) / 2


def _dims(layout: str, draw) -> list:
    """Concrete dims of a layout: N gets a size, 'var' stays."""
    out = []
    for p in layout.split(" * ")[:-1]:
        out.append(str(draw(st.integers(0, 4))) if p == "N" else p)
    return out


def skeleton(draw, dims, level=0):
    """Nested lists with None leaves to fill, honouring fixed sizes; a `?var` row may be
    missing (a list marked by the string "MISSING")."""
    if level == len(dims):
        return None
    d = dims[level]
    if d.startswith("?") and draw(st.integers(0, 4)) == 0:
        return "MISSING"
    n = int(d.lstrip("?")) if d.lstrip("?").isdigit() else draw(LENGTHS)
    return [skeleton(draw, dims, level + 1) for _ in range(n)]


def fill(draw, sk, dtype, leaf_option, nan, level, nd):
    """Leaf values into a skeleton; a `?T` leaf is None one time in four."""
    if sk == "MISSING":
        return None
    if level == nd:
        if leaf_option and draw(st.integers(0, 3)) == 0:
            return None
        return _leaf(draw, dtype, nan)
    return [fill(draw, x, dtype, leaf_option, nan, level + 1, nd) for x in sk]


def type_string(dims, dtype, leaf_option) -> str:
    return " * ".join(list(dims) + [("?" if leaf_option else "") + dtype])


@st.composite
def layout_types(draw, layouts=LAYOUTS, dtypes=DTYPES, options=True, option_rows=True):
    """(dims, dtype, leaf option): concrete dims, some `var` made `?var` below the top."""
    dims = _dims(draw(st.sampled_from(layouts)), draw)
    if options and option_rows:
        dims = [("?" + d) if i and d == "var" and draw(st.integers(0, 3)) == 0 else d
                for i, d in enumerate(dims)]
    return dims, draw(st.sampled_from(dtypes)), options and draw(st.booleans())


@st.composite
def ragged(draw, layouts=LAYOUTS, dtypes=DTYPES, options=True, nan=False, option_rows=True):
    """One (type string, nested list) pair."""
    dims, dtype, leaf_option = draw(layout_types(layouts, dtypes, options, option_rows))
    sk = skeleton(draw, dims)
    return type_string(dims, dtype, leaf_option), fill(draw, sk, dtype, leaf_option, nan, 0,
                                                        len(dims))


def _shrink_rows(draw, data, dims, level=0):
    """Replace some var rows by length-1 rows (which broadcast under the seed rules)."""
    if level == len(dims) or data is None:
        return data
    rows = [_shrink_rows(draw, x, dims, level + 1) for x in data]
    if "var" in dims[level] and level and rows and draw(st.integers(0, 3)) == 0:
        rows = rows[:1]
    return rows


def _drop_rows(draw, data, dims, level=0):
    """Make some rows at `?var` dims missing (one in four)."""
    if level == len(dims) or data is None:
        return data
    if dims[level].startswith("?") and draw(st.integers(0, 3)) == 0:
        return None
    return [_drop_rows(draw, x, dims, level + 1) for x in data]


@st.composite
def ragged_pair(draw, layouts=LAYOUTS, dtypes=NUMERIC, options=True, nan=False,
                broadcast=False, option_rows=True, own_rows=False):
    """Two operands of one layout and one row structure (their own dtypes, values and
    missing values). `broadcast=True` turns some var rows of either into length-1 rows;
    `own_rows=True` keeps each `?var` dim of each operand or makes it `var`, and misses
    rows of each operand on its own."""
    dims, _, _ = draw(layout_types(layouts, dtypes, options, option_rows))
    sk = skeleton(draw, [d.lstrip("?") for d in dims] if own_rows else dims)
    out = []
    for _ in range(2):
        dtype = draw(st.sampled_from(dtypes))
        leaf_option = options and draw(st.booleans())
        mine = [d if not own_rows or not d.startswith("?") or draw(st.booleans()) else d[1:]
                for d in dims]
        data = fill(draw, sk, dtype, leaf_option, nan, 0, len(dims))
        if broadcast:
            data = _shrink_rows(draw, data, dims)
        if own_rows:
            data = _drop_rows(draw, data, mine)
        out += [type_string(mine, dtype, leaf_option), data]
    return tuple(out)


@st.composite
def reduce_args(draw, ndim: int):
    """(axis, keepdims) for an array of `ndim` dims: None, an int (maybe negative) or a
    tuple of distinct axes."""
    kind = draw(st.sampled_from(["none", "int", "int", "tuple"]))
    if kind == "none" or ndim == 0:
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-ndim, ndim - 1))
    else:
        axis = tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1,
                                         max_size=ndim))))
    return axis, draw(st.booleans())


@st.composite
def long_rows(draw, layouts=("N * var * T", "N * var * var * T"), dtypes=DTYPES,
              nan=False, values=None, options=False):
    """(type string, nested list) with last-level rows of 0-40 elements (longer than the
    others: several blocks of a row, and rows shorter than a block, side by side).
    `values`: the leaf values to pick from (default: small integers or halves);
    `options`: `?T` leaves, about one in four missing (None)."""
    dims = _dims(draw(st.sampled_from(layouts)), draw)
    dtype = draw(st.sampled_from(dtypes))
    pool = values or ([False, True] if dtype == "bool" else list(range(-5, 6))
                      if dtype.startswith("int") else [v / 2 for v in range(-10, 11)])
    if nan and dtype.startswith("float"):
        pool = pool + [float("nan"), float("inf"), float("-inf")]

    def rows(level):
        d = dims[level]
        if level == len(dims) - 1:
            n = draw(st.integers(0, 40))
            return [draw(st.sampled_from(pool)) for _ in range(n)]
        n = int(d) if d.isdigit() else draw(st.integers(0, 4))
        return [rows(level + 1) for _ in range(n)]
    if options:
        pool = pool + [None] * max(1, len(pool) // 3)
    return type_string(dims, dtype, options), rows(0)
