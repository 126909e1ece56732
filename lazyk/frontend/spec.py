"""The plain data between the front end, the passes and code generation (Contract 3).

`KernelSpec` (one fused flat kernel: leaf dtypes, an SSA body of `Instr`, outputs, an optional
reduction) is what fusion produces and code generation consumes; the parameter slots
(`PARAM_SLOT` bytes each in kernel data) hold the scalar values a kernel reads at run time.
Nothing here compiles or runs anything.
"""
from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from lazyk import lru
from lazyk.errors import BindError
from lazyk.frontend.graph import type_text
from lazyk.frontend.lowering import STRING32, TEXT_PAD, text_unit


@dataclass(frozen=True)
class Instr:
    """One SSA instruction: `load` (attr = input index), `param` (attr = parameter slot: a
    scalar read from kernel data), `const` (attr = value, baked into the code) or an op name."""

    op: str
    dtype: np.dtype
    args: tuple[int, ...] = ()
    attr: Any = None


@dataclass(frozen=True)
class KernelSpec:
    """One fused flat kernel: leaf dtypes, SSA body, outputs and an optional final reduction.

    For a reduction the single output's stored dtype is the accumulator dtype (e.g. `sum`
    of int32 values stores int64); the body value is cast to it before folding.
    """

    inputs: tuple[np.dtype, ...]
    aligned: tuple[bool, ...]
    body: tuple[Instr, ...]
    outputs: tuple[tuple[int, np.dtype], ...]
    reduce: str | None = None

    def __hash__(self) -> int:
        # Cached: the spec is a cache key on every call, and hashing the body is not free.
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.inputs, self.aligned, self.body, self.outputs, self.reduce))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def params(self) -> tuple[np.dtype, ...]:
        """The dtype of each parameter slot (`param` instructions), in slot order."""
        p = self.__dict__.get("_params")
        if p is None:
            slots = {ins.attr: np.dtype(ins.dtype) for ins in self.body if ins.op == "param"}
            p = tuple(slots.get(k) for k in range(len(slots)))
            object.__setattr__(self, "_params", p)
        return p

    def check(self) -> None:
        """Raise ValueError if the body is not well formed: the code generator trusts it
        (a load of input -1 or an argument defined later would read arbitrary memory)."""
        n = len(self.inputs)
        slots: dict = {}
        for ins in self.body:
            if ins.op == "param":
                slots.setdefault(ins.attr, ins.dtype)
        if len(self.aligned) != n:
            raise ValueError(f"malformed KernelSpec: {len(self.aligned)} aligned flags for "
                             f"{n} inputs")
        for i, ins in enumerate(self.body):
            if ins.op == "load" and not (type(ins.attr) is int and 0 <= ins.attr < n):
                raise ValueError(f"malformed KernelSpec: instruction {i} loads input "
                                 f"{ins.attr!r} of {n}")
            if ins.op == "param" and not (type(ins.attr) is int and 0 <= ins.attr < len(slots)
                                          and slots[ins.attr] == ins.dtype):
                raise ValueError(f"malformed KernelSpec: instruction {i} reads parameter "
                                 f"{ins.attr!r}; slots must be 0..n-1, one dtype each")
            if any(not (type(a) is int and 0 <= a < i) for a in ins.args):
                raise ValueError(f"malformed KernelSpec: instruction {i} ({ins.op}) uses "
                                 f"{ins.args}; arguments must be earlier instructions")
        if not self.outputs or any(not (type(k) is int and 0 <= k < len(self.body))
                                   for k, _ in self.outputs):
            raise ValueError(f"malformed KernelSpec: outputs {self.outputs} must name "
                             f"instructions 0..{len(self.body) - 1}")

    def __getstate__(self) -> dict:
        # string hashes differ between processes: never ship the cached hash
        return {k: v for k, v in self.__dict__.items() if k not in ("_hash", "_params")}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)


PARAM_SLOT = 16  # bytes per parameter slot in kernel data (a complex128 fits)


# String parameters: a slot holds `{char *begin; int64 size}` pointing into an immutable
# bytes object kept here for the life of the process, so kernel data built once (cached
# launch entries, compiled dispatchers) stays valid. One entry per distinct string.
_texts: dict = {}
_texts_lock = lru.lock()


def text_param(dt: np.dtype, value: str | bytes) -> bytes:
    """The 16 slot bytes `{begin, size}` of string constant `value` as text dtype `dt`."""
    if isinstance(value, str):
        data = value.encode("utf-32-le" if sys.byteorder == "little" else "utf-32-be") \
            if np.dtype(dt) == STRING32 else value.encode("utf-8")
    else:
        data = bytes(value)
    size = len(data) // text_unit(dt)
    data += bytes(TEXT_PAD)  # NUL padding a kernel may read (lowering.TEXT_PAD)
    with _texts_lock:
        data = _texts.setdefault(data, data)
    begin = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
    return np.array([begin, size], np.int64).tobytes()


def pack_params(dtypes: tuple, values: tuple) -> bytes:
    """Kernel-data bytes of parameter values: slot k holds `values[k]` as `dtypes[k]`."""
    if len(values) != len(dtypes):
        raise BindError(f"kernel takes {len(dtypes)} parameters, got {len(values)}")
    out = bytearray(PARAM_SLOT * len(dtypes))
    for k, (dt, v) in enumerate(zip(dtypes, values)):
        raw = text_param(dt, v) if text_unit(dt) else np.asarray(v, dtype=dt).tobytes()
        out[PARAM_SLOT * k:PARAM_SLOT * k + len(raw)] = raw
    return bytes(out)


def param_values(dtypes: tuple, blob: bytes) -> list:
    """The values packed by `pack_params` (0-d arrays of each slot's dtype)."""
    return [np.frombuffer(blob, dt, 1, PARAM_SLOT * k).reshape(()) for k, dt in enumerate(dtypes)]


def check_params(spec: KernelSpec, params: bytes) -> bytes:
    """`params` if it holds exactly the spec's parameter slots; BindError otherwise."""
    if len(params) != PARAM_SLOT * len(spec.params):
        raise BindError(f"kernel takes {len(spec.params)} parameters ({PARAM_SLOT} bytes "
                        f"each, see pack_params), got {len(params)} bytes")
    return params


def format_spec(spec) -> str:
    """A KernelSpec as SSA text: `%2 = add(%0, %1) : float64`."""
    lines = [f"inputs:  {', '.join(np.dtype(d).str for d in spec.inputs) or '-'}",
             f"aligned: {', '.join(str(a) for a in spec.aligned) or '-'}"]
    for i, ins in enumerate(spec.body):
        if ins.op == "load":
            text = f"load in{ins.attr}"
        elif ins.op == "param":
            text = f"param p{ins.attr}"
        elif ins.op == "const":
            text = f"const {ins.attr!r}"
        else:
            text = f"{ins.op}({', '.join(f'%{a}' for a in ins.args)})"
        name = np.dtype(ins.dtype).name if not text_unit(ins.dtype) else type_text((), ins.dtype)
        lines.append(f"  %{i} = {text} : {name}")
    outs = ", ".join(f"%{i} -> {np.dtype(d).str}" for i, d in spec.outputs)
    lines.append(f"outputs: {outs}" + (f"   reduce: {spec.reduce}" if spec.reduce else ""))
    return "\n".join(lines)
