"""lazyk: lazy, typed array expressions compiled by LLVM into fused ckernels.

Each block below is owned by one stage; a stage adds its public names to its own block.
"""
from __future__ import annotations

__version__ = "0.1.0"

from lazyk.errors import (  # noqa: F401
    ArrayConstructionError,
    BindError,
    CastingError,
    CompileError,
    DeviceError,
    DTypeError,
    NotSupportedError,
    ShapeError,
    TypeMatchError,
    TypeParseError,
)

# --- types (issue 2) ---
from lazyk import types  # noqa: E402,F401
from lazyk.typeparse import dshape  # noqa: E402,F401
# --- arrays (issue 3) ---
# --- expressions and kernels (issue 4) ---
# --- speed: threads, caches (issue 5) ---
# --- gpu (issue 6) ---
