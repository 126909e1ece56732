"""`expr.explain()`: graph before/after each pass, kernel specs, layouts, kernel data, IR, asm."""
from __future__ import annotations

import html
import sys
from typing import Any

import numpy as np

from lazyk.arrays.array import Array
from lazyk.arrays.array import array as lazyk_array
from lazyk.backend import nvvmc
from lazyk.codegen import gpu_nest
from lazyk.errors import DeviceError, NotSupportedError, ShapeError, UnsupportedOperandError
from lazyk.frontend.expression import Expr, typed_dump
from lazyk.frontend.exprparse import ExprParseError, build, names
from lazyk.frontend.graph import REDUCE_OP, has_rows, rewrite, toposort, type_text
from lazyk.frontend.histogram import Histogram
from lazyk.frontend.leaves import (
    Placeholder,
    RaggedLeaf,
    RaggedPlaceholder,
    is_text,
    leaf_data,
)
from lazyk.frontend.operands import as_expr, placeholder
from lazyk.frontend.records import Records
from lazyk.frontend.spec import format_spec, param_values
from lazyk.frontend.tuples import reshaped
from lazyk.kernel import flat as kernel
from lazyk.kernel import gpu
from lazyk.passes.fuse import fuse_elementwise
from lazyk.runtime import launch as runtime
from lazyk.runtime import ragged, row_steps
from lazyk.runtime.compiled import CompiledExpr
from lazyk.runtime.device import explain_cuda, on_gpu
from lazyk.runtime.many import evaluate
from lazyk.runtime.nest_run import explain_nests
from lazyk.runtime.nest_select import needs_nest
from lazyk.runtime.ragged_rules import RECORDERS
from lazyk.runtime.text_steps import has_text_where, select_text, text_result

SYMBOL_SIZE = 8  # placeholders get this size per symbolic dim for a representative layout


def format_layout(layout) -> str:
    """The simplified loop nest: shape, per-operand strides (output first), offsets."""
    names = ["out"] + [f"in{k}" for k in range(len(layout.strides) - 1)]
    levels = " * ".join(["fixed"] * layout.ndim) or "none (one element)"
    lines = [f"levels {levels} (a strided loop each; stride 0: broadcast, or folded into "
             "the output)",
             f"shape {layout.shape} (ndim {layout.ndim}), reduced {layout.reduced}"]
    for name, st, off in zip(names, layout.strides, layout.offsets):
        lines.append(f"  {name:>4}: strides {st}, offset {off}")
    return "\n".join(lines)


def format_kernel_data(layout) -> str:
    """Kernel data bytes (Contract 4 plus the codegen's int64 fields) for this layout."""
    nd = layout.ndim
    rows = [(0, "function", "void *"), (8, "destructor", "void (*)(ckernel_prefix *)"),
            (16, "ndim", f"int64 = {nd}")]
    for d in range(nd):
        rows.append((24 + 8 * d, f"shape[{d}]", f"int64 = {layout.shape[d]}"))
    off = 24 + 8 * nd
    names = ["out"] + [f"in{k}" for k in range(len(layout.strides) - 1)]
    for name, st in zip(names, layout.strides):
        for d in range(nd):
            rows.append((off, f"{name}_stride[{d}]", f"int64 = {st[d]}"))
            off += 8
    return "\n".join(f"  {o:4d}  {n:<16} {t}" for o, n, t in rows) + f"\n  ({off} bytes)"


def symbol_sizes(root) -> dict[str, int]:
    """Sizes for the symbolic dims of sample data: a symbol broadcast against a concrete
    size (`N` against `lazyk.array([1.0, 2.0])`) takes that size, the others SYMBOL_SIZE
    (two symbols never broadcast together)."""
    sizes: dict[str, int] = {}
    for node in toposort(root):
        for d in node.shape:
            if isinstance(d, str):
                sizes.setdefault(d, SYMBOL_SIZE)
        if node.is_leaf or node.op == REDUCE_OP:
            continue
        for src in node.srcs:
            for d, n in zip(reversed(src.shape), reversed(node.shape)):
                if isinstance(d, str) and isinstance(n, int) and n != 1:
                    sizes[d] = n
    return sizes


def _size(d: Any, sizes: dict) -> Any:
    return sizes.get(d, SYMBOL_SIZE) if isinstance(d, str) else d


def _sampled(leaves) -> bool:
    """Whether any of the leaves is a placeholder (explain then runs on sample data)."""
    return any(isinstance(leaf_data(v), Placeholder) for v in leaves)


# The most sample data explain builds for one placeholder: bytes of NumPy ones, items of
# the Python lists that var rows, missing values and strings are built from
SAMPLE_BYTES, SAMPLE_ITEMS = 1 << 28, 1 << 20


def _sample_size(v: Placeholder, sizes: dict, limit: int, unit: str, itemsize: int = 1) -> None:
    """Refuse sample data for `v` past `limit` (a fixed dim of 1e5 * 1e5 values), clearly."""
    n = itemsize
    for d in v.shape:
        n *= 2 if d is None else _size(d, sizes)
    if n > limit:
        raise NotSupportedError(
            f"explain runs the expression on sample data ({SYMBOL_SIZE} per symbolic dim), "
            f"and placeholder {v.name!r} ({v.type_text()}) would hold {n:,} {unit} (more "
            f"than {limit:,}): explain a type with smaller fixed dims or fewer dims")


def _sample_leaf(value: Any, sizes: dict) -> Any:
    """Sample data for a fixed-dims placeholder: ones, or short words for string / bytes
    elements (a `{begin, size}` leaf over real characters); other leaves as they are."""
    v = leaf_data(value)
    if not isinstance(v, Placeholder):
        return value
    if np.dtype(v.dtype).kind in "SUV":
        return _ragged_sample(value, sizes)
    _sample_size(v, sizes, SAMPLE_BYTES, "bytes", np.dtype(v.dtype).itemsize)
    return np.ones(tuple(_size(d, sizes) for d in v.shape), v.dtype)


def _ragged_sample(value: Any, sizes: dict) -> Any:
    """Sample data for a parameter: `sizes` (or SYMBOL_SIZE) per symbolic dim, var rows of
    2 values (rows that line up, none empty: a min, a fold over rows, a take-back at 0
    answer), every third value missing for `?T`, every fourth row for `?var`; ints 0 (a
    position inside every row, an exponent), bools both ways (other leaves as they are)."""
    v = leaf_data(value)
    if not isinstance(v, Placeholder):
        return value
    if not isinstance(v, RaggedPlaceholder) and np.dtype(v.dtype).kind not in "SUV":
        return _sample_leaf(value, sizes)
    _sample_size(v, sizes, SAMPLE_ITEMS, "items")
    count = iter(range(1 << 30))
    elem = type_text((), v.dtype)
    text_kind = np.dtype(v.dtype).kind in "SUV"  # strings and bytes: short words as samples

    rows = getattr(v, "rows", ())

    def fill(dims: tuple, row: int) -> Any:
        depth = len(v.shape) - len(dims)
        if 0 < depth < len(rows) and rows[depth] and row % 4 == 3:
            return None  # a missing row
        if not dims:
            k = next(count)
            if getattr(v, "option", False) and k % 3 == 2:
                return None
            if text_kind:
                word = "kiwi x fig  plum a b".split(" ")[k % 7]
                return word.encode() if elem == "bytes" else word
            kind = np.dtype(v.dtype).kind
            return bool(k % 2) if kind == "b" else 0 if kind in "iu" else k % 7
        d = dims[0]
        n = 2 if d is None else _size(d, sizes)
        return [fill(dims[1:], i) for i in range(n)]
    dims = [("?" if k < len(rows) and rows[k] else "") + ("var" if d is None else
                                                           str(_size(d, sizes)))
            for k, d in enumerate(v.shape)]
    data = fill(tuple(v.shape), 1)
    option = getattr(v, "option", False)
    text = " * ".join(dims + [("?" if option else "") + elem])
    if not isinstance(v, RaggedPlaceholder):  # fixed strings: a `{begin, size}` leaf
        return next(iter(as_expr(lazyk_array(data, type=text)).env.values()))
    return RaggedLeaf(lazyk_array(data, type=text), v.option or any(rows))


class Explanation(str):
    """The text of `explain()`: a str whose repr is the text itself, so the REPL prints it
    with its line breaks (`str(x)` and every str method work as before); a notebook shows
    it as preformatted text."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"


def explain(expr: Any, ir: bool = True, asm: bool = True) -> str:
    """Everything lazyk does with `expr`, as text (runs it once on its data or sample data)."""
    e = declared = as_expr(expr)
    if any(hasattr(v, "stand_in") for v in e.env.values()):  # partitioned (lazyk.dask)
        e = declared = _stood_in(e)
        combined = any(n.op == REDUCE_OP and 0 in n.arg[1] for n in toposort(e.node))
        return ("== the work of one Dask partition (N rows; " +
                ("its reduction over the rows' axis is then combined with the other "
                 "partitions'" if combined else "its rows are those rows of the result") +
                "):\n" + explain(e, ir, asm))
    if has_rows(e.node):
        return _explain_rows(e, ir, asm)
    if has_text_where(e):
        return _explain_text_where(e, ir, asm)
    if e.node.op == "input" and is_text(e.dtype) and \
            isinstance(leaf_data(e.env[e.node.arg]), (np.ndarray, Placeholder)):
        return (f"== expression: {e.type}\n== no kernel: the strings "
                "themselves (evaluating them copies them)")
    sizes = symbol_sizes(e.node)
    if any(isinstance(v, RaggedPlaceholder) for v in e.env.values()) or (
            needs_nest(e.node) and _sampled(e.env.values())):
        e = Expr(e.node, {n: _ragged_sample(v, sizes) for n, v in e.env.items()})
        return ragged.explain(e, declared, ir, asm)  # var / option parameters: on samples
    dense = not any(ragged.is_ragged(v) for v in e.env.values())
    if dense and ragged.dense_position(e.node, e.env):  # (as ragged.evaluate_if_ragged)
        axes = tuple(e.node.arg[1])
        x = e.node.srcs[0]
        return (f"== {e.node.arg[0]} over axes {list(axes)} of the values below: NumPy's "
                f"{e.node.arg[0]}\n" + (f"== no kernel: the array {x.arg} itself"
                                         if x.op == "input" else
                                         explain(Expr(x, e.env), ir, asm)))
    if needs_nest(e.node):  # x[mask], x[positions], argmax: the loop-nest kernels
        return ragged.explain(e, ir=ir, asm=asm)
    if not dense:
        return ragged.explain(e, ir=ir, asm=asm)  # var / option leaves: loop-nest kernels
    if not _sampled(e.env.values()):
        runtime.check_int_powers(e)  # (NumPy's ValueError before any kernel: explain says so)
    out = [f"== expression: {type_text(e.shape, e.dtype)}"]
    trace: list = []
    root = runtime.run_passes(e.node, check=True, trace=trace)
    for name, text in trace:
        out.append(f"== graph {'as built' if name == 'input' else 'after ' + name}\n{text}")
    prog = fuse_elementwise(root)
    out.append(f"== {runtime.FUSE[0]}: {len(prog.steps)} kernel(s)")
    record: list = []
    runtime.recorders.append(record)
    sample = {n: _sample_leaf(v, sizes) for n, v in e.env.items()}  # kept until run
    try:
        with np.errstate(all="ignore"):
            runtime.run_program(prog, {n: leaf_data(v) for n, v in sample.items()})
    finally:
        runtime.recorders.remove(record)
    for k, step in enumerate(prog.steps):
        src = ", ".join(f"in{j} = {r}" if isinstance(r, str) else f"in{j} = kernel {r + 1}"
                        for j, r in enumerate(step.inputs))
        out.append(f"== kernel {k + 1}: {src or 'no inputs'}"
                   + (f"; reduces axes {list(step.axes)}" if step.axes is not None else ""))
        out.append(format_spec(step.spec))
        if step.spec.params:
            vals = param_values(step.spec.params, step.consts)
            out.append("params (kernel data after the strides, 16 bytes each): " + ", ".join(
                f"p{j} = {v.item()!r}" for j, v in enumerate(vals)))
    if prog.steps and not record:
        out.append("== no launch: the data holds no elements, so no kernel ran (explain it on "
                   "data with elements, or on placeholders, for the layout, IR and assembly)")
    for k, (spec, layout) in enumerate(record):
        out.append(f"== launch {k + 1}: layout after passes.dims\n{format_layout(layout)}")
        out.append(f"== launch {k + 1}: kernel data\n{format_kernel_data(layout)}")
        out.extend(_codegen(spec, layout, ir, asm))
    return "\n".join(out)


def _explain_text_where(e: Expr, ir: bool, asm: bool) -> str:
    """where() over strings runs as numeric where()s of the selected strings' `begin` and
    `size` halves (no character is copied), then whatever uses the selected strings."""
    types = ", ".join(f"{n}: {_leaf_type(v)}" for n, v in e.env.items())
    out = [f"== expression over ({types}) -> {e.type}", f"== graph as built\n{typed_dump(e)}"]
    if _sampled(e.env.values()):
        out.append(f"== (run on sample data: {SYMBOL_SIZE} per symbolic dim)")
        sizes = symbol_sizes(e.node)
        env = {n: _ragged_sample(v, sizes) for n, v in e.env.items()}

        def sized(node, srcs):  # (the graph at the samples' sizes, not the symbols)
            shape = getattr(leaf_data(env[node.arg]), "shape", None) if node.op == "input" \
                else None
            return node.replace(shape=tuple(shape)) if shape is not None and \
                len(shape) == len(node.shape) else reshaped(node, srcs, env)
        e = Expr(rewrite(e.node, sized), env)
    parts: list = []
    rest = select_text(e, parts)
    out.append(f"== where() over strings: {len(parts)}; each selects the {{begin, size}} "
               "elements of its branches (the characters are not copied: the result keeps "
               "the sources' character blocks) with two numeric where()s, the condition "
               "computed in each")
    for k, (begins, sizes) in enumerate(parts):
        for what, part in (("begin addresses", begins), ("sizes", sizes)):
            out.append(f"==== where() {k + 1}, the selected strings' {what}:")
            out.append(explain(part, ir, asm))
    if text_result(rest) is None:
        out.append("==== then, over the selected strings:")
        out.append(explain(rest, ir, asm))
    else:
        out.append("== result: the selected strings themselves (no further kernel)")
    return "\n".join(out)


def _leaf_type(v: Any) -> str:
    """A leaf's type as declared (placeholders) or as its array has it."""
    d = leaf_data(v)
    if isinstance(d, RaggedPlaceholder):
        return d.type_text()
    if isinstance(d, Placeholder):
        return type_text(d.shape, d.dtype)
    if ragged.is_ragged(v):
        return str(v.array.type)
    owner = getattr(v, "owner", None)
    return str(owner.type) if owner is not None else type_text(np.shape(d), np.asarray(d).dtype)


def _explain_rows(e: Expr, ir: bool, asm: bool) -> str:
    """explain() of an expression with row operations: they are lowered first (scans run
    in a loop nest, is_none / fill_none fuse into the graph, the rest is computed with
    NumPy), then the graph that is left runs as any other."""
    sizes = symbol_sizes(e.node)
    sample = Expr(e.node, {n: _ragged_sample(v, sizes) for n, v in e.env.items()})
    record: list = []
    RECORDERS.append(record)
    try:
        low = row_steps.lower(sample)
    finally:
        RECORDERS.remove(record)
    out = [f"== expression with row operations -> {e.type}",
           f"== graph as built\n{typed_dump(e)}",
           "== row operations lowered (scans in their own loop nest, is_none / fill_none "
           "fused into the graph that reads them, the others computed with NumPy over the "
           f"offsets)\n{typed_dump(low)}"]
    nests = [r[1:] for r in record if r[0] == "nest"]
    if nests:
        out.append(explain_nests(nests, ir, asm))
    out.append(explain(low, ir, asm))
    return "\n".join(out)


def explanation(expr: Any, target: str = "cpu", local_dict: Any = None,
                global_dict: Any = None) -> Explanation:
    """Everything lazyk does with `expr`, as text: the graph before and after each pass, the
    kernel specs, layouts, kernel data, LLVM IR and assembly (`target='cuda'`: each kernel's
    NVVM IR and PTX instead, loop nests over var dims and missing values included). A
    histogram or records (`lazyk.zip`, `lazyk.combinations`) show the kernels that compute
    them; a tuple of them (what `lazyk.evaluate(e1, e2, ...)` takes), each one's.

    `lazyk.explain(e)` is `e.explain()`; a numexpr-style string takes its names from the
    caller's frame or from `local_dict` / `global_dict`, as `lazyk.evaluate` does
    (`lazyk.explain("2*a + b")`, `lazyk.explain("2*a", local_dict={"a": x})`). The text
    prints with its line breaks at a prompt and as preformatted text in a notebook; it
    runs the expression once, on its data or (for placeholders) on sample data.
    """
    if not isinstance(target, str) or target not in ("cpu", "cuda"):
        hint = " (a string's names: local_dict=...)" if isinstance(target, dict) else ""
        raise ValueError(f"explain: target must be 'cpu' or 'cuda', not {target!r:.80}{hint}"
                         " (explain() shows the expression it is called on: it takes no "
                         "data)" if hasattr(target, "shape") else
                         f"explain: target must be 'cpu' or 'cuda', not {target!r:.80}{hint}")
    if isinstance(expr, str):  # names from the caller's frame, as `lazyk.evaluate` reads them
        runtime.check_options("K", "same_kind", local_dict, global_dict)
        frame = sys._getframe(1)  # (the caller of `lazyk.explain`, which is this function)
        try:
            expr = build(expr, frame.f_locals if local_dict is None else local_dict,
                         frame.f_globals if global_dict is None else global_dict)
        finally:
            del frame
    if isinstance(expr, (tuple, list)) and expr:  # `lazyk.evaluate(e1, e2, ...)`'s results
        return Explanation("\n".join(
            f"== result {k + 1} of {len(expr)} (lazyk.evaluate of them all runs the work "
            f"they share once)\n{explanation(e, target)}" for k, e in enumerate(expr)))
    return _explained(expr, target)


def _explained(expr: Any, target: str, ir: bool = True, asm: bool = True) -> Explanation:
    """`explanation`, or what running the expression raised, said after its graph."""
    try:
        return _explanation(expr, target, ir, asm)
    except (ShapeError, IndexError, ValueError, NotSupportedError) as err:  # (explain says so)
        if isinstance(err, NotSupportedError) and target != "cpu":
            raise  # (what the GPU does not take: refused by name)
        if isinstance(expr, Expr):
            head = f"== expression: {expr.type}\n== graph as built\n{typed_dump(expr)}"
        elif isinstance(expr, (Histogram, Records)):
            head = f"== {expr!r}"
        else:
            raise
        on = "sample data for its placeholders" if isinstance(expr, Expr) and \
            _sampled(expr.env.values()) else "its data"
        return Explanation(f"{head}\n== running it on {on} raised {type(err).__name__}: "
                           f"{err}\n(explain runs the expression once; the kernels it would "
                           "run are shown for data it runs on)")


def _explanation(expr: Any, target: str, ir: bool = True, asm: bool = True) -> Explanation:
    """`explanation` of an expression, array, histogram, records or compiled expression."""
    if isinstance(expr, (Histogram, Records)):
        return Explanation(_explain_evaluated(expr, target))
    if isinstance(expr, CompiledExpr):
        return Explanation(expr.explain(target=target))  # its expression's
    if isinstance(expr, Array):
        try:
            as_expr(expr)
        except (NotSupportedError, UnsupportedOperandError):  # records, dates: no operands
            return Explanation(f"== array: {expr.type}\n== no kernel: evaluating an array "
                               "gives the array itself (its elements are no operands of "
                               "kernels: take its fields, or numbers from its elements)")
    if target == "cpu" and isinstance(expr, Expr) and on_gpu(expr.env):
        raise DeviceError("explain() of an expression over GPU data (lazyk.DeviceArray): "
                          "its kernels run on the GPU, explain(target='cuda') shows them")
    if target == "cuda":
        e = as_expr(expr)
        if _dense(e):
            return Explanation(explain_cuda(e))
        return Explanation(_explain_cuda_nests(e))
    return Explanation(explain(expr, ir, asm))


def _dense(e: Expr) -> bool:
    """Whether `e` runs as fixed-dim kernels only (no loop nest, no row operation)."""
    return not (has_rows(e.node) or has_text_where(e) or needs_nest(e.node) or any(
        isinstance(v, RaggedPlaceholder) or ragged.is_ragged(v) for v in e.env.values()))


def _recording(run) -> tuple[list, list]:
    """Run `run()` and give what it launched: the loop-nest kernels (kernel, parts) and the
    fixed-dim kernels (spec, layout)."""
    nests: list = []
    launches: list = []
    RECORDERS.append(nests)
    runtime.recorders.append(launches)
    try:
        with np.errstate(all="ignore"):
            run()
    finally:
        RECORDERS.remove(nests)
        runtime.recorders.remove(launches)
    return [r[1:] for r in nests if r[0] == "nest"], launches


def _cuda_nests(nests: list) -> list[str]:
    """NVVM IR and PTX of each loop-nest kernel: the same levels rendered for the GPU (one
    part of the nest per GPU thread)."""
    out = []
    for k, (kern, nparts) in enumerate(nests):
        levels = " * ".join(lv.value for lv in kern.levels)
        out.append(f"=== CUDA loop-nest kernel {k}: {kern.mode}, pass {kern.npass}, "
                   f"levels {levels} (entry {gpu_nest.ENTRY}: one part per thread)")
        text = gpu_nest.lower_nest(*kern.key)
        out += ["--- NVVM IR ---", text, "--- PTX (libNVVM -arch=compute_90 -fma=0) ---",
                nvvmc.compile_ptx(text)]
    return out


def _cuda_launches(launches: list) -> list[str]:
    out = []
    for k, (spec, layout) in enumerate(launches):
        out.append(f"=== CUDA kernel {k} (reduce={spec.reduce}) ===")
        out.append(gpu.explain(spec, layout))
    return out


def _explain_cuda_nests(e: Expr) -> str:
    """`explain(target='cuda')` of a var / option / row-operation expression: the kernels
    it runs (on its data, or placeholders on sample data), each rendered for the GPU."""
    cpu_text: list = []
    nests, launches = _recording(lambda: cpu_text.append(explain(e, ir=False, asm=False)))
    head = cpu_text[0].split("\n== loop-nest kernels", 1)[0]
    out = ["== how the expression runs (as on the CPU, without LLVM IR and assembly)", head,
           f"== its kernels rendered for the GPU: {len(nests)} loop nest(s), {len(launches)} "
           "fixed-dim kernel(s); NVVM IR and PTX of each"]
    return "\n".join(out + _cuda_nests(nests) + _cuda_launches(launches))


def _on_samples(e: Any) -> Expr:
    """`e` over sample arrays in place of its placeholders (`_ragged_sample`)."""
    e = as_expr(e)
    if not _sampled(e.env.values()):
        return e
    sizes = symbol_sizes(e.node)
    return Expr(e.node, {n: _ragged_sample(v, sizes) for n, v in e.env.items()})


def _stood_in(e: Any) -> Expr:
    """`e` with placeholders in place of its partitioned leaves (lazyk.dask)."""
    e = as_expr(e)
    return Expr(e.node, {n: v.stand_in(n) if hasattr(v, "stand_in") else v
                         for n, v in e.env.items()})


def _mapped(obj: Any, fn) -> Any:
    """Records or a histogram with `fn` applied to each of its expressions."""
    if isinstance(obj, Records):
        return obj.map(fn)
    return Histogram(fn(obj.x), obj.bins, obj.range,
                     None if obj.weights is None else fn(obj.weights), obj.density)


def _explain_evaluated(obj: Any, target: str) -> str:
    """explain() of a histogram or of records: the kernels their evaluation runs."""
    exprs = obj.leaves() if isinstance(obj, Records) else [obj.x, obj.weights]
    leaves = [v for e in exprs if e is not None for v in as_expr(e).env.values()]
    if any(hasattr(v, "stand_in") for v in leaves):  # partitioned (lazyk.dask)
        return ("== the work of one Dask partition (N rows; " +
                ("its records are those rows of the result" if isinstance(obj, Records) else
                 "the partitions' counts are then added") +
                "):\n" + _explain_evaluated(_mapped(obj, _stood_in), target))
    sampled = _sampled(leaves)
    what = f"records {obj.type}: fields " + ", ".join(obj.fields) \
        if isinstance(obj, Records) else repr(obj)
    sample = _mapped(obj, _on_samples) if sampled else obj
    nests, launches = _recording(lambda: evaluate(sample))
    out = [f"== {what}", f"== kernels: {len(nests)} loop nest(s), {len(launches)} fixed-dim "
           "kernel(s)" + ("" if not sampled else f" (run on sample data: {SYMBOL_SIZE} per "
                          "symbolic dim, rows of 2 values)")]
    if target == "cuda":
        return "\n".join(out + _cuda_nests(nests) + _cuda_launches(launches))
    if nests:
        out.append(explain_nests(nests))
    for k, (spec, layout) in enumerate(launches):
        out.append(f"== launch {k + 1}: layout after passes.dims\n{format_layout(layout)}")
        out.append(format_spec(spec))
        out.extend(_codegen(spec, layout, True, True))
    return "\n".join(out)


def _codegen(spec, layout, ir: bool, asm: bool) -> list[str]:
    compiled = kernel.compile(spec, kernel.layout_class(spec, layout))
    text = [f"== layout class {kernel.layout_class(spec, layout)}"]
    if ir:  # (re-optimized on demand after a disk-cache hit)
        text.append(f"== LLVM IR (optimized)\n{compiled.jit.optimized_ir()}")
    if asm:
        text.append(f"== assembly\n{compiled.asm}")
    return text


def build_from_text(text: str, types: dict[str, str]):
    """An Expr from expression text over typed placeholders (numexpr's grammar: errors point
    at the text)."""
    names = {n: placeholder(n, t) for n, t in types.items()}
    return build(text, local_dict=names)


def command(args: Any) -> int:
    """`lazyk explain "EXPR" --type a='N * float64'`: print explain() of the expression."""
    types = {}
    for item in args.type:
        name, sep, t = item.partition("=")
        if not sep or name.strip() in types:
            print(f"error: --type wants NAME=TYPE once per name, got {item!r}", file=sys.stderr)
            return 2
        types[name.strip()] = t.strip().strip("'\"")
    try:
        unused = sorted(set(types) - set(names(args.expr)))
        if unused:  # (a typo: that name's type would be silently ignored)
            print(f"error: --type {unused[0]}: the expression has no name {unused[0]!r} (its "
                  f"names: {', '.join(names(args.expr)) or 'none'})", file=sys.stderr)
            return 2
        e = build_from_text(args.expr, types)
        if getattr(args, "target", "cpu") == "cuda":  # NVVM IR and PTX
            if args.no_ir or args.no_asm:
                print("error: --no-ir and --no-asm shorten the CPU's explain; --target cuda "
                      "shows each kernel's NVVM IR and PTX", file=sys.stderr)
                return 2
            try:
                print(explanation(e, target="cuda"))
            except DeviceError as err:
                print(f"error: {err}", file=sys.stderr)
                return 1
            return 0
        print(_explained(e, "cpu", ir=not args.no_ir, asm=not args.no_asm))
    except (TypeError, ValueError, NameError, SyntaxError, NotImplementedError,
            ArithmeticError, LookupError) as err:
        print(f"error: {type(err).__name__}: {err}", file=sys.stderr)
        untyped = [n for n in names(args.expr) if n not in types] \
            if isinstance(err, ExprParseError) and "is not defined" in err.reason else []
        if untyped:  # how to give them their types
            example = " ".join(f"--type {n}='N * float64'" for n in untyped)
            print(f"hint: give each name's type with --type, e.g. lazyk explain "
                  f"{args.expr!r} {example}", file=sys.stderr)
        return 1
    return 0
