"""Ragged loop nests for the GPU without a GPU: the nest kernels an expression runs on the CPU,
rendered as NVVM IR (`lazyk.codegen.gpu_nest`), compiled by libNVVM and assembled by ptxas."""
import numpy as np
import pytest

import lazyk
from lazyk.errors import DeviceError, NotSupportedError

nvvmc = pytest.importorskip("lazyk.backend.nvvmc")
try:
    nvvmc.find_toolchain()
except DeviceError as err:  # pragma: no cover - the cuda extra is a test dependency here
    pytest.skip(f"no CUDA toolchain: {err}", allow_module_level=True)

from lazyk.codegen.gpu_nest import ENTRY, lower_nest  # noqa: E402
from lazyk.kernel import nest as nest_kernel  # noqa: E402
from lazyk.runtime import stringeval  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _fresh_ptx_cache(tmp_path_factory):
    """A new on-disk PTX cache: libNVVM really runs, ~/.cache stays untouched."""
    from lazyk.backend.objcache import ObjectCache
    saved, nvvmc._disk = nvvmc._disk, ObjectCache(tmp_path_factory.mktemp("ptx-cache"))
    yield
    nvvmc._disk = saved


def _nests(expr) -> list:
    """The nest kernels `expr` runs on the CPU (keys as `kernel.nest.kernel_for` takes)."""
    nest_kernel.kernels.clear()
    stringeval._nest_entries.clear()  # (a structure evaluated before keeps its kernel there,
    stringeval._nest_by_token.clear()  # and under its build token)
    expr.eval()
    return [k.key for k in nest_kernel.kernels.values()]


x = lazyk.array([[1.0, None, 3.0], [], [4.0]])                      # 3 * var * ?float64
y = lazyk.from_offsets(np.array([0, 3, 3, 4]), np.arange(4.0))        # 3 * var * float64
z = lazyk.array([[[1.0], [2.0, 3.0]], [[4.0]], []])                  # 3 * var * var
w = lazyk.array([[[1.0, 2.0]], [[3.0]], [[4.0], [5.0]]])             # fold over axis 1
q = lazyk.array([[1.0, 2.0], None, [3.0]])                           # 3 * ?var * float64
i32 = lazyk.from_offsets(np.array([0, 2, 5], np.int32), np.arange(5, dtype=np.int16))

EXPRESSIONS = {
    "map": lambda: lazyk.cos(y) * 2 + 1,
    "sum of libm": lambda: lazyk.cos(y).sum(axis=-1),
    "window fold": lambda: (y * 2).sum(axis=-1),
    "count of trues": lambda: (y > 1).sum(axis=-1),
    "skipna mean over ?T": lambda: (x + y).mean(axis=-1, skipna=True),
    "total": lambda: y.max(),
    "var * var": lambda: (z * 2).sum(axis=-1),
    "var * var map": lambda: z + 1,
    "fold over a middle axis": lambda: w.sum(axis=1),
    "missing rows": lambda: q * 2,
    "fold of missing rows": lambda: q.sum(axis=0, skipna=True),
    "where over ?T": lambda: lazyk.where(x > 1, x, y),
    "stepping view": lambda: y[:, ::-1] * 2,
    "int32 indices, int16 values": lambda: (i32 * 3).max(axis=-1),
    "scan": lambda: lazyk.cumsum(y * 2),
    "scan of ?T": lambda: lazyk.cumprod(x + 1),
    "scan of float16": lambda: lazyk.cumsum(lazyk.astype(y, "float16")),
    "pairs folded": lambda: lazyk.sum(lazyk.combinations(x, 2)["0"] * y[:, :1], axis=1),
    "triplets stored": lambda: lazyk.combinations(q, 3)["2"] + 1,
    "product with a witness": lambda: lazyk.cartesian([y, q])["0"].max(axis=1, initial=0.0),
    "positions": lambda: lazyk.argcombinations(z, 2)["1"] * 2,
    "histogram": lambda: lazyk.histogram(x * y, 4, (0, 4)),
    "arg-reduction of short rows": lambda: lazyk.argmax(y, axis=1),
    "arg-reduction of int rows": lambda: lazyk.argmin(i32, axis=1),
}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_every_nest_compiles_for_the_gpu(name):
    keys = _nests(EXPRESSIONS[name]())
    assert keys, "the expression ran no loop nest"
    for spec, levels, kinds, masked, mode, npass, skipna, mean, where_masks in keys:
        text = lower_nest(spec, levels, kinds, masked, mode, npass, skipna, mean, where_masks)
        assert "nvptx64-nvidia-cuda" in text and "!nvvm.annotations" in text
        ptx = nvvmc.compile_ptx(text)  # check_ptx: an entry, no unresolved libdevice call
        assert f".entry {ENTRY}" in ptx
        assert nvvmc.assemble(ptx)  # ptxas accepts it for the GPU's architecture


def test_libdevice_math_in_a_ragged_reduction():
    (key,) = _nests(lazyk.cos(y).sum(axis=-1))
    text = lower_nest(*key)
    assert "__nv_cos" in text and "llvm.cos" not in text


def test_strings_are_refused_by_name():
    s = lazyk.array([["a", "b"], []])
    (key, *_) = _nests(s == "a")
    with pytest.raises(NotSupportedError, match="strings .* not supported on the GPU"):
        lower_nest(*key)
