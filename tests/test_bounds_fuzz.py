"""Bounds fuzzing: every call either matches NumPy or raises a clear error; never reads or
writes outside its operands.

Every array (inputs and `out`) is placed inside a raw byte buffer whose bytes outside the
array's region are 0xFF (NaN for floats, -1 for ints): a read past an operand shows up as a
NaN / wrong value in the result, a write past `out` as a changed pad byte. Calls are
repeated with the same geometry (the native guards) and then made with a new geometry.

(a) hypothesis properties (compiled calls, `evaluate` of Exprs and strings, `bind`,
`Dispatcher`, reductions); (b) one regression test per bug this fuzzing found (all fixed).
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lazyk
from lazyk import errors as E
from lazyk.kernel.dispatch import Dispatcher
from lazyk.kernel.flat import bind as kbind
from lazyk.kernel.flat import execute as kexecute

OK_ERRORS = (E.ShapeError, E.TypeMatchError, E.BindError, E.CastingError, E.DTypeError,
             E.NotSupportedError, ValueError, TypeError)
PAD = 64  # bytes of 0xFF sentinel on each side of an operand's region
KINDS = ("C", "F", "rev", "step", "swap", "unaligned", "bcast")


# --------------------------------------------------------------------------- placement
class Placed:
    """An array inside a sentinel-padded raw buffer; `pads_ok()` checks the pads."""

    def __init__(self, values: np.ndarray, kind: str, dtype=None):
        a = np.asarray(values)
        dt = np.dtype(dtype or a.dtype)
        if kind == "swap":
            dt = dt.newbyteorder()
        isz = dt.itemsize
        n = max(a.size, 1)
        span = 2 * n * isz + 4 * isz  # room for step 2 and for a one-element shift
        start = PAD + (1 if kind == "unaligned" else 0)
        self.raw = np.full(start + span + PAD, 0xFF, np.uint8)
        self.lo, self.hi = start, start + span
        base = start + isz  # element 0 of a C layout; -1 element still inside the region
        if kind == "bcast" and a.ndim >= 1 and a.shape[0] > 1:
            # zero stride along axis 0: every row equal to row 0 (values are rewritten)
            row = Placed(a[:1], "C", dt)
            self.raw, self.lo, self.hi = row.raw, row.lo, row.hi
            self.view = np.broadcast_to(row.view, a.shape)
            self.base_offset = row.base_offset
            return
        shape = a.shape
        c = _c_strides(shape, isz)
        if kind == "F":
            strides = _c_strides(shape[::-1], isz)[::-1]
            off = base
        elif kind == "rev":
            strides = tuple(-s for s in c)
            off = base + (a.size - 1) * isz if a.size else base
        elif kind == "step":
            strides = tuple(2 * s for s in c)
            off = base
        else:
            strides, off = c, base
        self.base_offset = off
        self.view = np.ndarray(shape, dt, buffer=self.raw, offset=off, strides=strides)
        self.view[...] = a

    def pads_ok(self) -> bool:
        return bool((self.raw[:self.lo] == 0xFF).all() and (self.raw[self.hi:] == 0xFF).all())


def _c_strides(shape: tuple, isz: int) -> tuple:
    out, acc = [], isz
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _values(shape: tuple, dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(-4, 5, size=shape).astype(dtype)


# --------------------------------------------------------------------------- strategies
dims = st.sampled_from([0, 1, 1, 2, 3, 5, 8, 17])


@st.composite
def shape_pair(draw):
    """Shapes for x and y: y broadcasts with x, or (sometimes) a perturbed shape that does not."""
    x = tuple(draw(st.lists(dims, min_size=1, max_size=3)))
    k = draw(st.integers(0, len(x)))
    y = [1 if draw(st.booleans()) and draw(st.booleans()) else n for n in x[k:]]
    if draw(st.integers(0, 4)) == 0:  # break broadcasting / add or drop a dim
        how = draw(st.sampled_from(["grow", "shrink", "lead", "drop"]))
        if how == "lead":
            y = [draw(st.sampled_from([1, 2]))] + y
        elif how == "drop" and y:
            y = y[1:]
        elif y:
            i = draw(st.integers(0, len(y) - 1))
            y[i] = max(0, y[i] + (1 if how == "grow" else -1))
    return x, tuple(y)


def _perturb(shape: tuple, draw) -> tuple:
    s = list(shape)
    how = draw(st.sampled_from(["same", "same", "grow", "shrink", "lead", "drop", "one"]))
    if how == "lead":
        s = [draw(st.sampled_from([1, 2]))] + s
    elif how == "drop" and s:
        s = s[1:]
    elif how in ("grow", "shrink", "one") and s:
        i = draw(st.integers(0, len(s) - 1))
        s[i] = 1 if how == "one" else max(0, s[i] + (1 if how == "grow" else -1))
    return tuple(s)


# --------------------------------------------------------------------------- oracle helpers
def _sig_dims(shapes: list) -> list:
    """Right-aligned symbols per input; a literal 1 where an input broadcasts a larger size."""
    nd = max(len(s) for s in shapes)
    big = [max([s[d - (nd - len(s))] for s in shapes if d - (nd - len(s)) >= 0] or [1])
           for d in range(nd)]
    out = []
    for s in shapes:
        lead = nd - len(s)
        out.append(tuple("1" if n == 1 and big[lead + d] != 1 else f"D{lead + d}"
                         for d, n in enumerate(s)))
    return out


_compiled: dict = {}


def _compiled_for(name: str, build, shapes: list, dtypes: list):
    key = (name, tuple(_sig_dims(shapes)), tuple(np.dtype(d).str for d in dtypes))
    f = _compiled.get(key)
    if f is None:
        ps = [lazyk.placeholder(f"p{i}", " * ".join(list(ds) + [np.dtype(dt).name]))
              for i, (ds, dt) in enumerate(zip(key[1], dtypes))]
        f = _compiled[key] = lazyk.compile(build(*ps))
    return f


def _numpy(fn, arrays):
    with np.errstate(all="ignore"):
        try:
            return np.asarray(fn(*arrays))
        except (ValueError, TypeError):
            return None


def _check_result(res, expect, out, *, reduction=False):
    """`res` against NumPy's `expect` (None: NumPy raised). With `out`: ufunc semantics for
    elementwise results; a reduction result may also broadcast into `out` (assignment, as
    `lazyk.evaluate` documents)."""
    assert expect is not None, "NumPy raises for these operands, lazyk returned a result"
    if out is None:
        res = np.asarray(res)
        assert res.shape == expect.shape, (res.shape, expect.shape)
        np.testing.assert_allclose(res, expect, rtol=1e-6, atol=1e-6)
        return
    assert res is out
    try:
        full = np.broadcast_shapes(expect.shape, out.shape)
    except ValueError:
        full = None
    if reduction:
        assert full == out.shape, f"result {expect.shape} does not broadcast into {out.shape}"
    else:
        assert full == out.shape, f"NumPy refuses result {expect.shape} into out {out.shape}"
    assert np.can_cast(expect.dtype, out.dtype, "same_kind"), \
        f"NumPy refuses casting {expect.dtype} to {out.dtype}"
    want = np.broadcast_to(expect, out.shape).astype(out.dtype)
    np.testing.assert_allclose(np.asarray(out, dtype=want.dtype), want, rtol=1e-5, atol=1e-5)


def _make_out(draw, shape, dtype, x: Placed | None):
    """None, or a Placed out of `shape` (sometimes perturbed / odd dtype / read-only /
    overlapping x's memory)."""
    how = draw(st.sampled_from(["none", "exact", "exact", "perturb", "ro", "dtype",
                                "overlap"]))
    if how == "none":
        return None, how
    dt = np.dtype(dtype)
    if how == "perturb":
        shape = _perturb(shape, draw)
    if how == "dtype":
        dt = np.dtype(draw(st.sampled_from(["f4", "i8", "c16", "f8", ">f8"])))
    kind = draw(st.sampled_from(["C", "F", "rev", "step", "unaligned"]))
    o = Placed(np.zeros(shape, dt), kind)
    if how == "ro":
        o.view.flags.writeable = False
    if (how == "overlap" and x is not None and x.view.dtype == dt and x.view.strides
            and x.view.strides[-1] != 0 and x.raw.size >= o.raw.size):
        shift = draw(st.sampled_from([-1, 0, 1])) * dt.itemsize
        try:
            v = np.ndarray(shape, dt, buffer=x.raw, offset=x.base_offset + shift,
                           strides=_c_strides(shape, dt.itemsize))
        except (ValueError, TypeError):
            return o, how
        if x.lo <= x.base_offset + shift and x.base_offset + shift + v.nbytes <= x.hi:
            o.view, o.raw, o.lo, o.hi = v, x.raw, x.lo, x.hi
    return o, how


def _place_inputs(draw, shapes, dtypes, seed):
    kinds = [draw(st.sampled_from(KINDS)) for _ in shapes]
    return kinds, [Placed(_values(s, dt, seed + i), k) for i, (s, dt, k) in
                   enumerate(zip(shapes, dtypes, kinds))]


def _attempt(call, placed, out, expect, reduction=False):
    """Run `call`; check the oracle, and that no pad byte of any operand changed."""
    try:
        res = call()
    except OK_ERRORS as e:
        assert str(e), f"{type(e).__name__} without a message"
    else:
        _check_result(res, expect, out.view if out is not None else None,
                      reduction=reduction)
    for p in placed + ([out] if out is not None else []):
        assert p.pads_ok(), "bytes outside an operand changed (out-of-bounds write)"


# --------------------------------------------------------------------------- (a) properties
ELEMENTWISE = {
    "scale": (1, lambda x: 1.5 * x, lambda x: 1.5 * x),
    "axpy": (2, lambda x, y: x * 2 + y, lambda x, y: x * 2 + y),
    "where": (2, lambda x, y: lazyk.where(x > y, x, y - 1), lambda x, y: np.where(x > y, x, y - 1)),
}


def _draw_elementwise(draw, dtype_choices):
    """An elementwise case of ELEMENTWISE with its operand shapes and dtypes."""
    name = draw(st.sampled_from(sorted(ELEMENTWISE)))
    nin, build, npf = ELEMENTWISE[name]
    shapes = list(draw(shape_pair()))[:nin]
    dtypes = [draw(st.sampled_from(dtype_choices)) for _ in shapes]
    return name, build, npf, shapes, dtypes


def _call_sequence(draw, shapes, dtypes, npf, ncalls, salt, fallback_shape):
    """`ncalls` calls with one geometry (the second and later go through native guards), then
    one with a perturbed geometry. Yields (fresh_out, placed, arrays, expect, out): `out` is
    drawn on the first and the last call and kept in between; `expect` is None where NumPy
    raises."""
    out = None
    for call in range(ncalls + 1):
        if call == ncalls:
            shapes = [_perturb(s, draw) for s in shapes]
        _, placed = _place_inputs(draw, shapes, dtypes, salt * call)
        arrays = [p.view for p in placed]
        expect = _numpy(npf, [np.array(a) for a in arrays])
        fresh_out = call in (0, ncalls)
        if fresh_out:
            out, _ = _make_out(draw, expect.shape if expect is not None else fallback_shape,
                               expect.dtype if expect is not None else "f8", placed[0])
        yield fresh_out, placed, arrays, expect, out


@given(st.data())
def test_compiled_elementwise_matches_numpy_or_raises(data):
    draw = data.draw
    name, build, npf, shapes, dtypes = _draw_elementwise(draw, ["f8", "f8", "f4", "i8"])
    xs = shapes[0]
    f = _compiled_for(name, build, shapes, dtypes)
    ncalls = draw(st.integers(1, 3))
    for fresh_out, placed, arrays, expect, out in _call_sequence(
            draw, shapes, dtypes, npf, ncalls, 10, xs):
        if not fresh_out and out is not None and out.view.flags.writeable:
            out.view[...] = 0
        o = out.view if out is not None else None
        if o is not None and np.shares_memory(o, arrays[0]):
            expect = _numpy(npf, [np.array(a) for a in arrays])  # before the call
        _attempt(lambda: f(*arrays, out=o) if o is not None else f(*arrays), placed, out, expect)


@given(st.data())
def test_evaluate_expr_and_string_match_numpy_or_raise(data):
    draw = data.draw
    name, build, npf, shapes, dtypes = _draw_elementwise(draw, ["f8", "f4", "i8"])
    xs = shapes[0]
    kinds, placed = _place_inputs(draw, shapes, dtypes, 1)
    arrays = [p.view for p in placed]
    expect = _numpy(npf, [np.array(a) for a in arrays])
    out, how = _make_out(draw, expect.shape if expect is not None else xs,
                         expect.dtype if expect is not None else "f8", placed[0])
    o = out.view if out is not None else None
    mode = draw(st.sampled_from(["expr", "string", "eval"]))
    text = {"scale": "1.5 * x", "axpy": "x * 2 + y", "where": "where(x > y, x, y - 1)"}[name]

    def call():
        if mode == "string":
            x = arrays[0]  # noqa: F841  (the string's names come from this frame)
            y = arrays[-1]  # noqa: F841
            return lazyk.evaluate(text, out=o)
        e = build(*[lazyk.array(a) for a in arrays])
        if mode == "eval" and o is None:
            return e.eval().to_numpy()
        return lazyk.evaluate(e, out=o)
    _attempt(call, placed, out, expect)


REDUCTIONS = {
    "sum": (lazyk.sum, np.sum),
    "max": (lazyk.max, np.max),
    "mean": (lazyk.mean, np.mean),
}


@given(st.data())
def test_reductions_match_numpy_or_raise(data):
    draw = data.draw
    op = draw(st.sampled_from(sorted(REDUCTIONS)))
    lop, nop = REDUCTIONS[op]
    xs, ys = draw(shape_pair())
    nd = len(xs)
    axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                          st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd,
                                   unique=True).map(tuple)))
    keep = draw(st.booleans())
    dtypes = [draw(st.sampled_from(["f8", "f4", "i8"])) for _ in range(2)]
    build = lambda a, b: lop(a * b, axis=axis, keepdims=keep)  # noqa: E731
    npf = lambda a, b: nop(a * b, axis=axis, keepdims=keep)  # noqa: E731
    mode = draw(st.sampled_from(["compile", "compile", "evaluate"]))
    shapes = [xs, ys]
    f = _compiled_for(f"{op}{axis}{keep}", build, shapes, dtypes) if mode == "compile" else None
    ncalls = draw(st.integers(1, 3))
    for _, placed, arrays, expect, out in _call_sequence(
            draw, shapes, dtypes, npf, ncalls, 7, ()):
        o = out.view if out is not None else None

        def run():
            if f is not None:
                return f(*arrays, out=o) if o is not None else f(*arrays)
            e = build(*[lazyk.array(a) for a in arrays])
            return lazyk.evaluate(e, out=o) if o is not None else lazyk.evaluate(e)
        _attempt(run, placed, out, expect, reduction=True)


@given(st.data())
def test_bind_and_dispatcher_match_numpy_or_raise(data):
    draw = data.draw
    name = draw(st.sampled_from(["axpy", "where"]))
    nin, build, npf = ELEMENTWISE[name]
    xs, ys = draw(shape_pair())
    shapes = [xs, ys]
    dtypes = ["f8", draw(st.sampled_from(["f8", "f4"]))]
    f = _compiled_for(name, build, shapes, dtypes)
    step = f.program.steps[0]
    order = [f.params.index(r) for r in step.inputs]
    d = Dispatcher(step.spec, step.consts)
    mode = draw(st.sampled_from(["fbind", "kbind", "dispatch", "dispatch"]))
    ncalls = draw(st.integers(1, 3))
    for _, placed, arrays, expect, out in _call_sequence(
            draw, shapes, dtypes, npf, ncalls, 3, xs):
        if out is None:  # bind needs an output
            out = Placed(np.zeros(expect.shape if expect is not None else xs), "C")
        o = out.view
        if np.shares_memory(o, arrays[0]):
            expect = _numpy(npf, [np.array(a) for a in arrays])
        ins = [arrays[k] for k in order]

        def run():
            if mode == "fbind":
                with f.bind(o, *arrays) as ck:
                    ck()
                return o
            if mode == "kbind":
                with kbind(step.spec, o, *ins, params=step.consts) as ck:
                    ck()
                return o
            return d(o, *ins)
        _attempt(run, placed, out, expect)


@pytest.mark.parametrize("kind", ["C", "rev", "step", "swap", "unaligned"])
def test_threaded_sizes_stay_in_bounds(kind):
    """n >= 300000 runs on the pool: repeated calls (guards), a new geometry, an n-1 out."""
    x = lazyk.placeholder("x", "N * float64")
    y = lazyk.placeholder("y", "N * float64")
    f = lazyk.compile(x * 2 + y)
    s = lazyk.compile(lazyk.sum(x * y))
    for n in (300001, 300001, 300001, 300017):
        px, py = Placed(_values((n,), "f8", n), kind), Placed(_values((n,), "f8", 1), "C")
        o = Placed(np.zeros(n), "C")
        _attempt(lambda: f(px.view, py.view, out=o.view), [px, py], o,
                 np.array(px.view) * 2 + py.view)
        _attempt(lambda: f(px.view, py.view), [px, py], None, np.array(px.view) * 2 + py.view)
        _attempt(lambda: s(px.view, py.view), [px, py], None,
                 np.asarray(np.dot(np.array(px.view), py.view)))
    short = Placed(np.zeros(n - 1), "C")
    with pytest.raises(E.ShapeError):
        f(px.view, py.view, out=short.view)
    assert short.pads_ok()
    with pytest.raises(E.ShapeError):
        f(px.view[:-1], py.view)


# --------------------------------------------------------------------------- (b) regressions
def _sum_spec():
    x = lazyk.placeholder("x", "M * N * float64")
    y = lazyk.placeholder("y", "N * float64")
    return lazyk.compile(lazyk.sum(x * y, axis=0)).program.steps[0].spec


def test_dispatcher_reduction_with_output_aliasing_an_input():
    d = Dispatcher(_sum_spec())
    X, Y = np.arange(12.0).reshape(3, 4), np.arange(4.0) + 1
    o = np.zeros(4)
    d(o, X, Y)  # installs the guard for this geometry
    d(o, X, Y)
    y2 = Y.copy()
    try:
        d(y2, X, y2)  # kernel.bind raises BindError for exactly this call
    except (E.BindError, ValueError):
        return
    np.testing.assert_allclose(y2, (X * Y).sum(axis=0))  # got [0, 0, 0, 0]


@pytest.mark.parametrize("extra", ["junk", None, np.zeros(5)], ids=["str", "None", "array"])
def test_dispatcher_extra_inputs_raise_a_clear_error(extra):
    x = lazyk.placeholder("x", "N * float64")
    y = lazyk.placeholder("y", "N * float64")
    step = lazyk.compile(x * 2 + y).program.steps[0]
    d = Dispatcher(step.spec, step.consts)
    X, Y, o = np.arange(5.0), np.ones(5), np.zeros(5)
    with pytest.raises(E.BindError):
        d(o, X, Y, extra)  # before the guard: BindError 'kernel takes 2 inputs, got 3'
    d(o, X, Y)
    with pytest.raises((E.BindError, ValueError, TypeError)):
        d(o, X, Y, extra)


def test_bound_kernel_called_after_close_raises():
    code = textwrap.dedent("""
        import numpy as np, lazyk
        from lazyk.kernel.flat import clear_cache
        f = lazyk.compile(lazyk.placeholder('x', 'N * float64') * 2)
        o = np.zeros(5)
        with f.bind(o, np.arange(5.0)) as ck:
            ck()
        clear_cache()
        try:
            ck()
        except (ValueError, TypeError, RuntimeError) as e:
            print('raised', type(e).__name__)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, f"crashed with return code {r.returncode}"  # -11: SIGSEGV
    assert "raised" in r.stdout


@pytest.mark.parametrize("how", ["execute", "bind", "dispatch", "max"])
def test_kernel_level_empty_reduction(how):
    x = lazyk.placeholder("x", "N * float64")
    y = lazyk.placeholder("y", "N * float64")
    op = lazyk.max if how == "max" else lazyk.sum
    spec = lazyk.compile(op(x * y)).program.steps[0].spec
    o = np.full((), 7.0)
    ins = (np.zeros(0), np.zeros(0))
    if how == "max":
        with pytest.raises(ValueError):
            kexecute(spec, o, *ins)
        return
    try:
        if how == "execute":
            kexecute(spec, o, *ins)
        elif how == "bind":
            with kbind(spec, o, *ins) as ck:
                ck()
        else:
            Dispatcher(spec)(o, *ins)
    except OK_ERRORS:
        return
    assert o == 0.0, f"sum over nothing left out = {o}"


@pytest.mark.parametrize("repeat", [1, 3])
def test_compiled_reduction_out_with_fewer_dims_is_refused(repeat):
    x = lazyk.placeholder("x", "M * N * float64")
    f = lazyk.compile(lazyk.sum(x, axis=0, keepdims=True))
    X = np.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError):  # NumPy: wrong number of dimensions
        np.sum(X, axis=0, keepdims=True, out=np.zeros(4))
    with pytest.raises(E.ShapeError):
        lazyk.evaluate(lazyk.sum(lazyk.array(X), axis=0, keepdims=True), out=np.zeros(4))
    for _ in range(repeat):
        with pytest.raises((E.ShapeError, ValueError)):
            f(X, out=np.zeros(4))


# ------------------------------------------------------------------- smaller deviations, fixed
@pytest.mark.parametrize("axis", [True, 1.0, (0, True), "0"])
def test_axis_must_be_ints(axis):
    x = lazyk.placeholder("x", "M * N * float64")
    with pytest.raises(TypeError, match="axis must be an int"):
        lazyk.sum(x, axis=axis)


def test_compiled_call_checks_casting_on_the_fast_path():
    f = lazyk.compile(lazyk.placeholder("x", "N * float64") * 2)
    x, o = np.ones(4), np.zeros(4)
    f(x, out=o)
    f(x, out=o)  # guard installed
    with pytest.raises(ValueError, match="casting must be one of"):
        f(x, out=o, casting="bogus")
    np.testing.assert_array_equal(f(x, out=o, casting="unsafe"), np.full(4, 2.0))


@pytest.mark.parametrize("body, outputs, what", [
    ([("load", -1)], [0], "loads input -1"),
    ([("load", 2)], [0], "loads input 2"),
    ([("load", 0), ("add", (0, 1))], [1], "arguments must be earlier"),
    ([("load", 0)], [3], "must name instructions"),
])
def test_malformed_kernel_spec_is_refused(body, outputs, what):
    from lazyk.codegen.llvm import LayoutClass
    from lazyk.kernel.flat import Instr, KernelSpec
    from lazyk.kernel.flat import compile as kcompile

    f8 = np.dtype("f8")
    instrs = tuple(Instr("load", f8, (), b[1]) if b[0] == "load" else Instr(b[0], f8, b[1])
                   for b in body)
    spec = KernelSpec((f8,), (True,), instrs, tuple((k, f8) for k in outputs))
    with pytest.raises(ValueError, match=what):
        kcompile(spec, LayoutClass(1, "cc"))
