"""Formats: Arrow (`arrow.py`) and Awkward (`awkward.py`) arrays to and from lazyk arrays, over
the same buffers. pyarrow and awkward are optional (`pip install 'lazyk[ragged]'`) and are
imported only inside the functions that need them.
"""
from __future__ import annotations

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.buffers import offsets_array, records_array

_EXTRA = "pip install 'lazyk[ragged]'"


def need(name: str):
    """The optional module `name`, or an ImportError that says how to install it."""
    try:
        return __import__(name)
    except ImportError:
        raise ImportError(f"{name} is needed for this conversion: {_EXTRA}") from None


def column_records(names: list, fields: list, valid: np.ndarray | None = None) -> Array:
    """`records_array(names, fields, valid)` (C structs); for records that cannot be
    missing, each field also reads as its column (`Array._columns`: `x.pt` is the column
    read in place, contiguous, not a strided view of the structs), and the records and
    their columns are read-only (as Arrow's and Awkward's arrays are): no write may make
    them differ. Tuples keep the struct views."""
    out = records_array(names, fields, valid)
    if valid is None and names and not isinstance(names[0], int):
        out._columns = {k: _read_only(f) for k, f in zip(names, fields)}
        _read_only(out)
    return out


def column_lists(offsets: np.ndarray, content: Array, valid: np.ndarray | None = None) -> Array:
    """`offsets_array(offsets, content, valid)`; over `column_records`, each field's lists
    too (their rows all over these offsets), for rows that cannot be missing."""
    out = offsets_array(offsets, content, valid)
    if content._columns is not None and valid is None:
        out._columns = {k: column_lists(offsets, c) for k, c in content._columns.items()}
        _read_only(out)
    return out


def _read_only(x: Array) -> Array:
    x._readonly = True
    if x._np is not None:
        x._np = x._np.view()
        x._np.flags.writeable = False
    return x
