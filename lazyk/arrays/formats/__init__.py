"""Formats: Arrow (`arrow.py`) and Awkward (`awkward.py`) arrays to and from lazyk arrays, over
the same buffers. pyarrow and awkward are optional (`pip install 'lazyk[ragged]'`) and are
imported only inside the functions that need them.
"""
from __future__ import annotations

_EXTRA = "pip install 'lazyk[ragged]'"


def need(name: str):
    """The optional module `name`, or an ImportError that says how to install it."""
    try:
        return __import__(name)
    except ImportError:
        raise ImportError(f"{name} is needed for this conversion: {_EXTRA}") from None
