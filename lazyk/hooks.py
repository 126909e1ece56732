"""Services an early stage needs from a later one, without importing it.

The import order of lazyk's modules runs one way (docs/import_graph.py): arrays and
expressions come before the runtime that computes them. Yet `expr.eval()`,
`array(..., device='cuda')` or `x.sum(out=buf)` must reach that runtime. They call the
functions here instead, and `lazyk/__init__.py` (which every `import lazyk.x` runs first)
installs the real services once with `install`.
"""
from __future__ import annotations

from typing import Any, Callable

NAMES = ("evaluate", "compile", "explain", "as_device_array", "to_device", "from_arrow",
         "to_arrow", "from_awkward", "var_rows", "evaluate_many", "array_ufunc", "array_function", "launch",
         "rows_rise", "sort_rows", "sort_values")
_services: dict[str, Callable] = {}


def install(**services: Callable) -> None:
    """Install the services named in NAMES (called once by `lazyk/__init__.py`)."""
    unknown = set(services) - set(NAMES)
    if unknown:
        raise TypeError(f"lazyk.hooks has no service(s) {sorted(unknown)}; known: {NAMES}")
    _services.update(services)


def _service(name: str) -> Callable:
    fn = _services.get(name)
    if fn is None:
        raise RuntimeError(f"lazyk.hooks.{name} is not installed: `import lazyk` installs it "
                           "(a module of lazyk was loaded without the package)")
    return fn


def evaluate(expr: Any, out: Any = None, casting: str = "same_kind") -> Any:
    """Compute `expr` (the runtime's `lazyk.evaluate`), into `out` when given."""
    return _service("evaluate")(expr, out=out, casting=casting)


def launch(expr: Any) -> Any:
    """The value of expression `expr` from the runtime's launch, kept on it for the next
    evaluation (`expr._launch`, a call), or NotImplemented where only `evaluate` computes it."""
    fn = _services.get("launch")  # (no `_service` call: `.eval()` pays for this one)
    return (fn if fn is not None else _service("launch"))(expr)


def evaluate_many(*exprs: Any) -> tuple:
    """`lazyk.evaluate(e1, e2, ...)`: each result, the work they share run once."""
    return _service("evaluate_many")(*exprs)


def compile(expr: Any) -> Any:
    """`lazyk.compile(expr)`: a callable compiled once for every input of the same types."""
    return _service("compile")(expr)


def explain(expr: Any, target: str = "cpu") -> str:
    """The text of `expr.explain(target=...)` ('cpu': passes, specs, IR, asm; 'cuda': NVVM)."""
    return _service("explain")(expr, target=target)


def as_device_array(obj: Any) -> Any:
    """A `lazyk.DeviceArray` view of a `__cuda_array_interface__` object."""
    return _service("as_device_array")(obj)


def to_device(obj: Any, device: Any) -> Any:
    """A copy of a NumPy (or GPU) array on `device` ('cuda', 'cuda:N' or 'cpu')."""
    return _service("to_device")(obj, device)


def from_arrow(x: Any) -> Any:
    """`lazyk.from_arrow(x)`: a lazyk array over a pyarrow array's buffers."""
    return _service("from_arrow")(x)


def to_arrow(x: Any) -> Any:
    """`lazyk.to_arrow(x)`: a pyarrow array over a lazyk array's buffers."""
    return _service("to_arrow")(x)


def from_awkward(x: Any) -> Any:
    """`lazyk.from_awkward(x)`: a lazyk array over an Awkward array's buffers."""
    return _service("from_awkward")(x)


def var_rows(arr: Any) -> tuple:
    """An `N * ?n * T` array read as `?var` rows of n elements, and {dim: n}
    (`lazyk.runtime.nest_results.var_rows`)."""
    return _service("var_rows")(arr)


def array_ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    """NumPy's `__array_ufunc__` on lazyk values (`lazyk.frontend.numpy_api.array_ufunc`)."""
    return _service("array_ufunc")(ufunc, method, inputs, kwargs)


def array_function(func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
    """NumPy's `__array_function__` on expressions (`lazyk.frontend.numpy_api.array_function`)."""
    return _service("array_function")(func, types, args, kwargs)


def rows_rise(offsets: Any) -> bool:
    """Whether 1-d integer `offsets` never decrease (`lazyk.backend.rowcheck.rises`: one
    read, on the thread pool)."""
    return _service("rows_rise")(offsets)


def sort_rows(offsets: Any, keys: Any, positions: Any) -> None:
    """Sort each short list of int64 `keys` in place, stably, with their `positions`:
    `lazyk.backend.rowsort.sort_rows`, on the thread pool."""
    _service("sort_rows")(offsets, keys, positions)


def sort_values(offsets: Any, values: Any, out: Any, ascending: bool) -> None:
    """Write into `out` each short list of `values` sorted (NaN last; `ascending=False`:
    reversed): `lazyk.backend.rowsort.sort_values`, on the thread pool."""
    _service("sort_values")(offsets, values, out, ascending)
