"""KernelSpec (Contract 3) and the three steps: compile (cached) -> bind(arrmeta) -> execute."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Instr:
    """One SSA instruction: `load` (attr = input index), `const` (attr = value) or an op name."""

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
