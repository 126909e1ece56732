"""Vector math: rename LLVM's vector math intrinsics to glibc libmvec functions after O3.

The loop vectorizer turns `llvm.sin.f64` into `llvm.sin.v4f64`, which codegen would scalarize
into four libm calls (~7 ns per element here). glibc's libmvec exports the same functions with
the same vector signatures under x86 vector-ABI names (`_ZGVdN4v_sin` = AVX2, 4 x double), so
renaming the declared function is enough (`vector_name`: the backend renames it in the optimized
module; `rewrite`: the same in IR text). `--vector-library=LIBMVEC` has no effect through
llvmlite's pass builder (FACTS.md), hence the renaming.

libm functions without an LLVM intrinsic (`LIBM`: log1p, expm1, asinh, acosh, atanh, hypot;
glibc >= 2.35 has their libmvec variants) would stay one scalar call per element, and keep the
rest of their loop scalar. `annotate` gives their declarations, before O3, LLVM's
`vector-function-abi-variant` attribute naming the libmvec variants the CPU can run (declared
too, and kept alive for the vectorizer by `llvm.compiler.used`), and declares them free of side
effects (libm's only one is errno, which nothing reads): the loop vectorizer then calls those.
"""
from __future__ import annotations

import ctypes.util
import re
from collections.abc import Iterable

# LLVM intrinsic base name -> (libm name, number of vector arguments).
FUNCTIONS: dict[str, tuple[str, int]] = {
    "sin": ("sin", 1), "cos": ("cos", 1), "tan": ("tan", 1),
    "asin": ("asin", 1), "acos": ("acos", 1), "atan": ("atan", 1),
    "sinh": ("sinh", 1), "cosh": ("cosh", 1), "tanh": ("tanh", 1),
    "exp": ("exp", 1), "exp2": ("exp2", 1), "exp10": ("exp10", 1),
    "log": ("log", 1), "log2": ("log2", 1), "log10": ("log10", 1),
    "pow": ("pow", 2), "atan2": ("atan2", 2),
}

# (element type, lanes) -> (ISA letter, CPU feature the ISA needs); libmvec's x86 vector ABI:
# b = SSE4 (128-bit), d = AVX2 (256-bit), e = AVX-512 (512-bit).
_VARIANTS: dict[tuple[str, int], tuple[str, str]] = {
    ("f64", 2): ("b", "sse4.1"), ("f64", 4): ("d", "avx2"), ("f64", 8): ("e", "avx512f"),
    ("f32", 4): ("b", "sse4.1"), ("f32", 8): ("d", "avx2"), ("f32", 16): ("e", "avx512f"),
}

# libm functions with no LLVM intrinsic -> number of arguments (see `annotate`).
LIBM: dict[str, int] = {"log1p": 1, "expm1": 1, "asinh": 1, "acosh": 1, "atanh": 1,
                        "hypot": 2}

# Part of the disk cache's key for objects compiled with libmvec: a new tag whenever what this
# module does to a kernel changes (objects compiled before `annotate` had scalar libm calls).
CACHE_TAG = "mvec2"

_INTRINSIC = re.compile(r"@llvm\.(" + "|".join(FUNCTIONS) + r")\.v(\d+)(f64|f32)\b")

_DECLARE = re.compile(r'^declare (double|float) @"?(' + "|".join(LIBM) + r')(f?)"?\((.*)$', re.M)
_USED = re.compile(r'^@"?llvm\.compiler\.used"? = appending global \[(\d+) x [^\]]+\] '
                   r'\[(.*)\], section "llvm\.metadata"$', re.M)
_PURE = 'nounwind willreturn memory(none)'

_loaded: bool | None = None


def load() -> bool:
    """Load libmvec into the process once so the JIT can resolve `_ZGV*` symbols; False if absent."""
    global _loaded
    if _loaded is None:
        import llvmlite.binding as llvm

        _loaded = False
        for name in ("libmvec.so.1", ctypes.util.find_library("mvec")):
            if not name:
                continue
            try:
                llvm.load_library_permanently(name)
                _loaded = True
                break
            except RuntimeError:
                continue
    return _loaded


def parse_features(cpu_features: str | Iterable[str]) -> frozenset[str]:
    """Enabled feature names from LLVM's '+avx2,-avx512f,...' string or an iterable of names."""
    if isinstance(cpu_features, str):
        items = cpu_features.split(",")
    else:
        items = list(cpu_features)
    return frozenset(f.strip().lstrip("+") for f in items if f.strip() and not f.strip().startswith("-"))


def symbol(func: str, lanes: int, elem: str) -> str:
    """libmvec's name for `func` over `lanes` elements of `elem` ('f64' or 'f32')."""
    libm, nargs = FUNCTIONS[func]
    isa, _ = _VARIANTS[(elem, lanes)]
    return f"_ZGV{isa}N{lanes}{'v' * nargs}_{libm}{'f' if elem == 'f32' else ''}"


def rewrite(ir_text: str, cpu_features: str | Iterable[str], *, available: bool | None = None) -> str:
    """Rename vector math intrinsics in optimized IR to libmvec symbols the CPU can run.

    Intrinsics without a libmvec variant for this CPU are left alone (LLVM scalarizes them into
    libm calls), and so is everything when libmvec is not available.
    """
    if available is None:
        available = load()
    if not available:
        return ir_text
    features = parse_features(cpu_features)
    return _INTRINSIC.sub(lambda m: "@" + (vector_name(m.group(0)[1:], features)
                                           or m.group(0)[1:]), ir_text)


def vector_name(name: str, features: frozenset[str]) -> str | None:
    """libmvec's name for the intrinsic function `name` (`llvm.sin.v4f64`) on a CPU with
    `features` (see `parse_features`), or None (not a vector math intrinsic, or no variant)."""
    m = _INTRINSIC.fullmatch("@" + name)
    if m is None:
        return None
    func, lanes, elem = m.group(1), int(m.group(2)), m.group(3)
    variant = _VARIANTS.get((elem, lanes))
    if variant is None or variant[1] not in features:
        return None
    if variant[0] == "b" and "avx2" in features:
        # NOTE: a loop of AVX code (4 x double loads, then 4 x float math) calling the SSE
        # variant ran 30x slower on Intel (SSE / AVX transitions): libm's scalar calls
        # instead (4e6 sin of a float32 cast: 271 -> 21 ms)
        return None
    return symbol(func, lanes, elem)


def variants(elem: str, features: frozenset[str]) -> list[tuple[str, int]]:
    """(ISA letter, lanes) of the libmvec variants over `elem` ('f64' or 'f32') that a CPU
    with `features` runs well (no SSE variant where it has AVX2: see `vector_name`)."""
    return [(isa, lanes) for (e, lanes), (isa, need) in _VARIANTS.items()
            if e == elem and need in features and not (isa == "b" and "avx2" in features)]


def annotate(ir_text: str, features: frozenset[str]) -> str:
    """IR text (as llvmlite.ir prints it, before O3) whose declarations of `LIBM` functions
    name their libmvec variants for a CPU with `features` (see `parse_features`), which are
    declared and listed in `llvm.compiler.used` (merged into the module's own list). Call only
    where libmvec is loaded (`load`)."""
    used: list[str] = []
    added: list[str] = []

    def declare(m: re.Match) -> str:
        ty, func, f, rest = m.groups()
        elem = "f64" if ty == "double" else "f32"
        if (f == "f") != (elem == "f32"):
            return m.group(0)
        nargs = LIBM[func]
        names = []
        for isa, lanes in variants(elem, features):
            vec = f"_ZGV{isa}N{lanes}{'v' * nargs}_{func}{f}"
            vt = f"<{lanes} x {ty}>"
            added.append(f"declare {vt} @{vec}({', '.join([vt] * nargs)}) {_PURE}")
            used.append(f"ptr @{vec}")
            names.append(f"{vec}({vec})")
        if not names:
            return m.group(0)
        return f'{m.group(0)} {_PURE} "vector-function-abi-variant"="{",".join(names)}"'

    text = _DECLARE.sub(declare, ir_text)
    if not added:
        return ir_text
    old = _USED.search(text)
    if old is not None:
        used = [old.group(2)] + used
        text = text[:old.start()] + text[old.end():]
    n = int(old.group(1)) if old is not None else 0
    return (text + "\n" + "\n".join(added) + f"\n@llvm.compiler.used = appending global "
            f"[{n + len(added)} x ptr] [{', '.join(used)}], section \"llvm.metadata\"\n")
