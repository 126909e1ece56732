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
from lazyk.array import Array, array, empty, full, zeros  # noqa: F401,E402
# --- expressions and kernels (issue 4) ---
from lazyk.expr import (  # noqa: F401,E402
    Expr, abs, absolute, add, all, any, arccos, arccosh, arcsin, arcsinh, arctan, arctan2,
    arctanh, astype, copysign, fmod,
    bitwise_and, bitwise_not, bitwise_or, bitwise_xor, ceil, clip, conj, conjugate, cos,
    cosh, divide, equal, exp, expm1, floor, floor_divide, fmax, fmin, greater,
    greater_equal, hypot, imag, invert, isfinite, isinf, isnan, left_shift, less,
    less_equal, log, log1p, log2, log10, logical_and, logical_not, logical_or, logical_xor,
    max, maximum, mean, min, minimum, mod, multiply, negative, not_equal, placeholder,
    positive, power, prod, real, remainder, right_shift, rint, sign, sin, sinh, sqrt,
    subtract, sum, tan, tanh, true_divide, trunc, where,
)
from lazyk.compiled import CompiledExpr, compile  # noqa: F401,E402
from lazyk.pipeline import evaluate  # noqa: F401,E402
from lazyk.kernel import Instr, KernelSpec  # noqa: F401,E402
from lazyk.kernel import public_stats as stats  # noqa: F401,E402
# --- speed: threads, caches (issue 5) ---
from lazyk.backend.threads import get_num_threads, set_num_threads, threads  # noqa: F401,E402
# --- gpu (issue 6) ---
from lazyk.device import DeviceArray  # noqa: F401,E402  (CUDA itself loads lazily)
