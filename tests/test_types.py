"""Type objects: interning, immutability, properties, NumPy conversion, pickling."""
import copy
import pickle
import sys

import numpy as np
import pytest

from lazyk import NotSupportedError, dshape
from lazyk.types import (
    EllipsisDim,
    FixedBytes,
    FixedDim,
    FixedString,
    Function,
    Option,
    Pointer,
    Record,
    Scalar,
    SymbolicDim,
    Timedelta,
    Tuple,
    TypeVar,
    VarDim,
    from_numpy,
)

i32 = Scalar("int32")


def test_interning_and_identity():
    assert FixedDim(3, i32) is FixedDim(3, Scalar("int32", "="))
    assert FixedDim(np.int64(3), i32) is FixedDim(3, i32)
    assert Record((("x", i32),)) is dshape("{x: int32}")
    assert hash(dshape("3 * int32")) == hash(FixedDim(3, i32))
    native = "<" if sys.byteorder == "little" else ">"
    assert Scalar("int32", native) is i32 and Scalar("int32", "|") is i32
    assert Scalar("int8", ">").byteorder == "|"
    assert Scalar("int32", ">" if native == "<" else "<") is not i32


def test_immutable():
    t = dshape("3 * int32")
    with pytest.raises(AttributeError):
        t.size = 4
    with pytest.raises(AttributeError):
        del t.elem


def test_pickle_and_copy_reintern():
    for text in ["3 * var * {x: ?int32, 'a b': (float64, fixed_string[3])}",
                 "(N * T, scale: float64) -> N * T", ">float32", "Dims... * pointer[int8]"]:
        t = dshape(text)
        assert pickle.loads(pickle.dumps(t)) is t
        assert copy.copy(t) is t and copy.deepcopy(t) is t


@pytest.mark.parametrize("text, ndim, shape, dtype", [
    ("int32", 0, (), "int32"),
    ("3 * 4 * float64", 2, (3, 4), "float64"),
    ("3 * var * int8", 2, (3, None), "int8"),
    ("N * 2 * T", 2, (None, 2), "T"),
    ("?var * ?int32", 1, (None,), "?int32"),
    ("Dims... * 3 * int32", 1, (..., 3), "int32"),
    ("2 * {x: 3 * int32}", 1, (2,), "{x: 3 * int32}"),
])
def test_shape_properties(text, ndim, shape, dtype):
    t = dshape(text)
    assert t.ndim == ndim and t.shape == shape and t.dtype is dshape(dtype)


@pytest.mark.parametrize("text, itemsize, alignment", [
    ("bool", 1, 1), ("int16", 2, 2), ("complex64", 8, 4), ("complex128", 16, 8),
    ("3 * 4 * float32", 48, 4), ("var * int8", 16, 8), ("string", 16, 8),
    ("{a: int8, b: float64, c: int16}", 24, 8), ("(int8, int32)", 8, 4), ("{}", 0, 1),
    ("fixed_string[5, 'utf32']", 20, 4), ("fixed_bytes[8, align=4]", 8, 4),
    ("pointer[int8]", 8, 8), ("?int16", 2, 2), ("timedelta[unit='ns']", 8, 8),
    ("char", 4, 4), ("2 * (int8, float64)", 32, 8),
])
def test_itemsize_alignment(text, itemsize, alignment):
    t = dshape(text)
    assert (t.itemsize, t.alignment) == (itemsize, alignment)


def test_record_and_tuple_fields():
    r = dshape("{a: int8, b: float64, c: int16}")
    assert r.names == ("a", "b", "c")
    assert r.types == (Scalar("int8"), Scalar("float64"), Scalar("int16"))
    assert r.field("b") is Scalar("float64") and r.offsets == (0, 8, 16)
    with pytest.raises(KeyError):
        r.field("z")
    assert dshape("(int8, int32)").offsets == (0, 4)


@pytest.mark.parametrize("text", ["N * int32", "T", "Dims... * int32",
                                  "(int32) -> int32"])
def test_symbolic_has_no_itemsize(text):
    t = dshape(text)
    assert t.is_symbolic or isinstance(t, Function)
    with pytest.raises(TypeError):
        t.itemsize


def test_flags():
    assert dshape("3 * ?float32").is_numeric and dshape("bool").is_numeric
    assert not dshape("string").is_numeric and not dshape("{x: int32}").is_numeric
    assert not dshape("3 * var * int32").is_symbolic
    assert dshape("{x: N * int32}").is_symbolic and dshape("pointer[T]").is_symbolic


@pytest.mark.parametrize("np_dtype", [
    "bool", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16",
    ">i4", "<f8", ">c16", "U5", "S3", "V4", "m8[ns]", "M8[us]", "M8[D]", "M8[ns]",
])
def test_numpy_round_trip(np_dtype):
    dt = np.dtype(np_dtype)
    t = from_numpy(dt)
    assert t.to_numpy() == dt and t.itemsize == dt.itemsize
    assert dshape(str(t)) is t


def test_numpy_shapes_and_records():
    assert from_numpy("f4", (2, 3)) is dshape("2 * 3 * float32")
    assert from_numpy(np.dtype(("i2", (4,)))) is dshape("4 * int16")
    rec = np.dtype([("a", "i1"), ("b", "f8")], align=True)
    t = from_numpy(rec)
    assert t is dshape("{a: int8, b: float64}") and t.to_numpy() == rec
    assert dshape("3 * int16").to_numpy() == np.dtype(("i2", (3,)))
    assert dshape("(int8, int32)").to_numpy().itemsize == 8
    assert dshape(">int32").to_numpy() == np.dtype(">i4")
    assert dshape("intptr").to_numpy() == np.dtype(np.intp)


@pytest.mark.parametrize("bad", ["O", np.dtype([("a", "i1"), ("b", "f8")]), "M8", "m8[5s]"])
def test_from_numpy_unsupported(bad):
    with pytest.raises(NotSupportedError):
        from_numpy(bad)


@pytest.mark.parametrize("text", ["var * int32", "N * int32", "string", "?int32",
                                  "fixed_string[3]", "pointer[int8]"])
def test_to_numpy_unsupported(text):
    with pytest.raises(NotSupportedError):
        dshape(text).to_numpy()


def test_constructor_checks():
    with pytest.raises(ValueError):
        FixedDim(-1, i32)
    with pytest.raises(ValueError):
        FixedDim(2**63, i32)
    with pytest.raises(TypeError):
        FixedDim(True, i32)
    with pytest.raises(TypeError):
        FixedDim(3.0, i32)
    with pytest.raises(TypeError):
        VarDim("int32")
    with pytest.raises(ValueError):
        Scalar("int33")
    with pytest.raises(ValueError):
        SymbolicDim("n", i32)
    with pytest.raises(ValueError):
        Record((("a", i32), ("a", i32)))
    with pytest.raises(ValueError):
        EllipsisDim(None, FixedDim(2, EllipsisDim("D", i32)))
    with pytest.raises(ValueError):
        FixedString(0)
    with pytest.raises(ValueError):
        FixedBytes(6, 4)
    with pytest.raises(ValueError):
        Timedelta("weeks")
    with pytest.raises(TypeError):
        FixedDim(3, Function((), (), i32))
    with pytest.raises(ValueError):
        Function((), (("not ok", i32),), i32)
    assert Option(Option(i32)) is Option(i32)
    assert TypeVar("T") is dshape("T") and Pointer(i32) is dshape("pointer[int32]")
    assert Tuple([i32]) is dshape("(int32,)")


def test_too_deep_construction():
    t = i32
    with pytest.raises(ValueError):
        for _ in range(1000):
            t = FixedDim(1, t)


def test_void_is_only_a_return_type():
    void = Scalar("void")
    assert Function((i32,), (), void).ret is void
    for build in [lambda: FixedDim(3, void), lambda: VarDim(void), lambda: Option(void),
                  lambda: Pointer(void), lambda: Tuple((void,)),
                  lambda: Record((("a", void),)), lambda: Function((void,), (), i32),
                  lambda: Function((), (("k", void),), i32)]:
        with pytest.raises(TypeError, match="void"):
            build()


def test_unaddressable_sizes_are_refused():
    u8, big = Scalar("uint8"), 3074457345618258603
    assert FixedDim(2**63 - 1, u8).itemsize == 2**63 - 1
    with pytest.raises(ValueError, match="elements"):
        FixedDim(3, FixedDim(big, u8))
    with pytest.raises(ValueError, match="elements"):
        FixedDim(3, FixedDim(big, TypeVar("T")))  # counted even without an itemsize
    with pytest.raises(ValueError, match="bytes"):
        FixedDim(2**62, Scalar("int16"))
    half = FixedDim(2**62, u8)
    with pytest.raises(ValueError, match="bytes"):
        Record((("a", half), ("b", half)))
    with pytest.raises(ValueError, match="bytes"):
        Tuple((half, half))
    with pytest.raises(ValueError, match="bytes"):
        FixedString(2**62, "utf16")
    # a refused type is not interned: the same call is refused again
    with pytest.raises(ValueError):
        FixedDim(2**62, Scalar("int16"))
    assert FixedDim(3, VarDim(FixedDim(2**62, u8))).itemsize == 48  # var rows: 16 bytes each


@pytest.mark.parametrize("np_dtype", ["V0", "U0", "S0", np.void, np.str_])
def test_from_numpy_sizeless(np_dtype):
    with pytest.raises(NotSupportedError, match="no size"):
        from_numpy(np_dtype)


# Each imports only modules before it; `types` gathers them all.
STAGE = ["base", "elements", "build", "fastparse", "parse", "promote", "unify", "__init__"]


def _stage_imports(name):
    """(modules of the stage imported at module level, imports found inside functions)."""
    import ast
    from pathlib import Path

    import lazyk.types

    tree = ast.parse((Path(lazyk.types.__file__).parent / f"{name}.py").read_text())
    top, nested = set(), []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested += [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "lazyk.types":
            top |= {a.name for a in node.names if a.name in STAGE}
        elif isinstance(node, ast.ImportFrom) and node.module:
            top |= {m for m in STAGE if node.module == f"lazyk.types.{m}"}
        elif isinstance(node, ast.Import):
            top |= {m for a in node.names for m in STAGE if a.name == f"lazyk.types.{m}"}
    return top, nested


@pytest.mark.parametrize("name", STAGE)
def test_types_stage_is_an_import_chain(name):
    top, nested = _stage_imports(name)
    assert not nested, f"imports inside functions of lazyk/types/{name}.py"
    later = set(STAGE[STAGE.index(name):])
    assert not top & later, f"lazyk/types/{name}.py imports {top & later} (a cycle)"


def test_types_module_still_names_the_whole_stage():
    import importlib

    import lazyk

    typeparse, promote, unify = (importlib.import_module(f"lazyk.types.{m}")
                                 for m in ("parse", "promote", "unify"))

    t = lazyk.types
    assert t.dshape is typeparse.dshape is lazyk.dshape and t.promote is promote.promote
    assert (t.match, t.solve, t.broadcast) == (unify.match, unify.solve, unify.broadcast)
    assert all(hasattr(t, n) for n in t.__all__)
