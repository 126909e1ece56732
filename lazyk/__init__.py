"""Typed, lazy array expressions compiled by LLVM into one fused kernel.

Build expressions from typed arrays (NumPy arrays, nested lists, ragged `var` dimensions,
missing values `?T`) with ordinary Python operators and the functions below. Nothing runs
until you ask: then the whole expression is optimised (constant folding, common
subexpressions, fusion), compiled for this CPU by LLVM and run as one native kernel.

    >>> import numpy as np, lazyk
    >>> a = lazyk.array(np.array([0.0, 1.0, 4.0, 9.0]))
    >>> e = lazyk.sqrt(a) * 2 + 1                # lazy: nothing has run yet
    >>> e.type
    dshape('4 * float64')
    >>> e.eval()                                 # one fused kernel
    array([1.0, 3.0, 5.0, 7.0], type='4 * float64')
    >>> lazyk.evaluate("2*x + 1", local_dict={"x": np.ones(3)})    # numexpr-style strings
    array([3., 3., 3.])
    >>> x = lazyk.placeholder("x", "N * float64")
    >>> f = lazyk.compile(x * x + 1.0)           # compile once, call on any length
    >>> f(np.arange(3.0))
    array([1., 2., 5.])
    >>> lazyk.array([[1, None, 3], [4]]).sum(axis=-1, skipna=True).eval()   # ragged, missing
    array([4, 4], type='2 * int64')

Compiled kernels are cached in memory and on disk (`$LAZYK_CACHE_DIR`, else
`$XDG_CACHE_HOME/lazyk` or `~/.cache/lazyk`; see `lazyk cache info`). The command line tool
`lazyk` parses types (`lazyk parse`), shows every compilation step (`lazyk explain`) and runs
the benchmarks (`lazyk bench`). Documentation: README.md, docs/guide.md (the user guide),
docs/ragged.md (ragged and missing data), docs/api.md (every public name with an example),
docs/types.md (the type syntax), docs/design.md and docs/layout.md (internals, memory layout).
"""

from lazyk import hooks as _hooks
from lazyk import types  # noqa: F401
from lazyk.arrays.array import Array, array
from lazyk.arrays.buffers import from_offsets
from lazyk.arrays.filled import empty, full, zeros
from lazyk.arrays.formats.arrow import from_arrow, to_arrow
from lazyk.arrays.formats.awkward import from_awkward, to_awkward
from lazyk.backend import cpu as _cpu
from lazyk.backend import rowcheck as _rowcheck
from lazyk.backend import rowsort as _rowsort
from lazyk.backend.threads import get_num_threads, set_num_threads, threads
from lazyk.errors import (
    ArrayConstructionError,
    BindError,
    CastingError,
    CompileError,
    DeviceError,
    DTypeError,
    ExprParseError,
    NotSupportedError,
    ShapeError,
    TypeMatchError,
    TypeParseError,
    UnsupportedOperandError,
)
from lazyk.frontend import numpy_api as _numpy_api
from lazyk.frontend import ufuncs as _ufuncs
from lazyk.frontend.expression import Expr
from lazyk.frontend.fields import (
    fields,
    from_iter,
    from_numpy,
    run_lengths,
    to_list,
    to_numpy,
    unflatten,
    with_field,
    without_field,
)
from lazyk.frontend.histogram import histogram
from lazyk.frontend.masks import drop_none, mask, nan_to_none, singletons
from lazyk.frontend.operands import placeholder
from lazyk.frontend.records import Records, zip
from lazyk.frontend.reductions import (
    all,
    any,
    argmax,
    argmin,
    count,
    count_nonzero,
    max,
    min,
    prod,
    sum,
)
from lazyk.frontend.rowops import (
    argsort,
    concatenate,
    cumprod,
    cumsum,
    fill_none,
    firsts,
    flatten,
    full_like,
    is_none,
    local_index,
    num,
    ones_like,
    pad_none,
    ravel,
    sort,
    zeros_like,
)
from lazyk.frontend.spec import Instr, KernelSpec
from lazyk.frontend.statistics import (
    mean,
    nanargmax,
    nanargmin,
    nanmax,
    nanmean,
    nanmin,
    nanprod,
    nanstd,
    nansum,
    nanvar,
    ptp,
    std,
    var,
)
from lazyk.frontend.strings import endswith, startswith, str_len
from lazyk.frontend.tuples import argcartesian, argcombinations, cartesian, combinations, unzip
from lazyk.frontend.ufuncs import (
    astype,
    clip,
    imag,
    isclose,
    nan_to_num,
    positive,
    real,
    where,
)
from lazyk.kernel.flat import public_stats as stats
from lazyk.runtime import compiled as _compiled
from lazyk.runtime import device as _device
from lazyk.runtime import explain as _explain
from lazyk.runtime import many as _many
from lazyk.runtime import nest_results as _nest_results
from lazyk.runtime.compiled import CompiledExpr, compile
from lazyk.runtime.device import DeviceArray  # CUDA itself loads only when a GPU array is used
from lazyk.runtime.many import evaluate
from lazyk.runtime.stringeval import re_evaluate
from lazyk.types.parse import dshape
from lazyk.version import __version__

# Earlier stages reach the runtime through lazyk.hooks (they cannot import it); every
# `import lazyk.x` runs this file first, so the services are in place before any use.
_hooks.install(evaluate=evaluate, compile=compile, explain=_explain.explanation,
               as_device_array=_device.as_device_array, to_device=_device.to_device,
               from_arrow=from_arrow, to_arrow=to_arrow, from_awkward=from_awkward,
               var_rows=_nest_results.var_rows,
               evaluate_many=_many.evaluate_many, array_ufunc=_numpy_api.array_ufunc,
               array_function=_numpy_api.array_function, rows_rise=_rowcheck.rises,
               sort_rows=_rowsort.sort_rows, sort_values=_rowsort.sort_values)


def _call_on_dask(k, inputs, out, casting="same_kind"):
    # `k(dask_array)`: lazyk.dask imports dask.array, so it loads only when a Dask array
    # reaches a compiled expression (dask itself is loaded by then); it then installs itself.
    import lazyk.dask

    return lazyk.dask.call_compiled(k, inputs, out, casting)


_compiled.install_dask(_call_on_dask)
_cpu.warm_up()  # LLVM loads in the background while the program builds its data

# `lazyk.explain(e)` is `e.explain()`: the function, not the module of the same name (which
# stays importable as `lazyk.explain` through sys.modules, e.g. `from lazyk.explain import x`).
explain = _explain.explanation
values_astype = astype  # (Awkward's name)

# The public API (`help(lazyk)`, `from lazyk import *`, docs/api.md; keep sorted). Names that
# shadow builtins (abs, all, any, max, min, sum, compile) work like NumPy's on arrays.
# every ufunc of the op table and its aliases (`lazyk.frontend.ufuncs.UFUNCS`), by NumPy's
# name: a new ufunc is one row of the table
globals().update({name: getattr(_ufuncs, name) for name in _ufuncs.UFUNCS})

__all__ = [
    "Array",
    "ArrayConstructionError",
    "BindError",
    "CastingError",
    "CompileError",
    "CompiledExpr",
    "DTypeError",
    "DeviceArray",
    "DeviceError",
    "Expr",
    "ExprParseError",
    "Instr",
    "KernelSpec",
    "NotSupportedError",
    "Records",
    "ShapeError",
    "TypeMatchError",
    "TypeParseError",
    "UnsupportedOperandError",
    "__version__",
    "all",
    "any",
    "argcartesian",
    "argcombinations",
    "argmax",
    "argmin",
    "argsort",
    "array",
    "astype",
    "cartesian",
    "clip",
    "combinations",
    "compile",
    "concatenate",
    "count",
    "count_nonzero",
    "drop_none",
    "cumprod",
    "cumsum",
    "dshape",
    "empty",
    "endswith",
    "evaluate",
    "explain",
    "fill_none",
    "fields",
    "firsts",
    "flatten",
    "from_arrow",
    "from_awkward",
    "from_iter",
    "from_numpy",
    "from_offsets",
    "full",
    "full_like",
    "get_num_threads",
    "histogram",
    "imag",
    "is_none",
    "isclose",
    "local_index",
    "mask",
    "max",
    "mean",
    "min",
    "nan_to_num",
    "nan_to_none",
    "nanargmax",
    "nanargmin",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "num",
    "ones_like",
    "pad_none",
    "placeholder",
    "positive",
    "prod",
    "ptp",
    "ravel",
    "re_evaluate",
    "run_lengths",
    "real",
    "set_num_threads",
    "singletons",
    "sort",
    "startswith",
    "stats",
    "std",
    "str_len",
    "sum",
    "threads",
    "to_arrow",
    "to_awkward",
    "to_list",
    "to_numpy",
    "types",
    "unflatten",
    "unzip",
    "values_astype",
    "var",
    "where",
    "with_field",
    "without_field",
    "zeros",
    "zeros_like",
    "zip",
]
__all__ += _ufuncs.UFUNCS
__all__.sort()
