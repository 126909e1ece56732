"""`explain(target='cuda')` of every kind of expression: the kernels it runs, rendered for the
GPU (NVVM IR, then PTX from libNVVM), without a GPU; histograms and records explained too."""
import numpy as np
import pytest

import lazyk
from lazyk.errors import DeviceError, NotSupportedError

nvvmc = pytest.importorskip("lazyk.backend.nvvmc")
try:
    nvvmc.find_toolchain()
except DeviceError as err:  # pragma: no cover - the cuda extra is a test dependency here
    pytest.skip(f"no CUDA toolchain: {err}", allow_module_level=True)

x = lazyk.array([[1.0, 2.0], [3.0], []])
q = lazyk.array([[1.0, None], None, [3.0]])
NEST_ENTRY = ".entry lazyk_nest_parts("


@pytest.mark.parametrize("make, nests", [
    (lambda: (x * 2).sum(axis=-1), 1),
    (lambda: lazyk.cos(q) + 1, 2),              # ?var rows: count pass, then fill pass
    (lambda: x[x > 1], 1),                      # the mask; its kept items taken natively
    (lambda: lazyk.argmax(x, axis=1), 1),
    (lambda: lazyk.placeholder("p", "N * var * float64") * 2, 1),
])
def test_ragged_expressions_show_their_loop_nests_for_the_gpu(make, nests):
    text = make().explain(target="cuda")
    assert text.count("=== CUDA loop-nest kernel") == nests
    assert text.count(NEST_ENTRY) == nests  # PTX from libNVVM for each
    assert "nvptx64-nvidia-cuda" in text
    # the levels of the nest, not a dense kernel over the sample's shape
    assert "levels fixed * var" in text or "levels fixed" in text
    assert ".entry lazyk_kernel(" not in text


def test_a_var_placeholder_is_not_explained_as_a_dense_kernel():
    text = (lazyk.placeholder("p", "N * var * float64") * 2).explain(target="cuda")
    assert "=== CUDA kernel 0 (reduce=None)" not in text
    assert "var" in text and NEST_ENTRY in text


def test_row_operations_show_their_kernels_for_the_gpu():
    # sort runs a loop nest; num becomes a fixed-dim kernel over the row lengths
    assert NEST_ENTRY in lazyk.sort(x).explain(target="cuda")
    text = lazyk.num(x).explain(target="cuda")
    assert ".entry lazyk_kernel(" in text and "=== CUDA kernel 0" in text


def test_dense_explain_for_the_gpu_is_unchanged():
    text = (lazyk.array(np.ones((3, 4))) * 2).sum(axis=1).explain(target="cuda")
    assert "=== CUDA kernel 0 (reduce=sum) ===" in text and "loop-nest" not in text


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_histograms_and_records_are_explained(target):
    h = lazyk.histogram(x * 2, 4, (0, 8))
    text = h.explain(target=target)
    assert text == lazyk.explain(h, target=target)
    assert "Histogram" in text and "4 bins" in text
    assert ("bins" in text and "loop-nest" in text) if target == "cpu" else NEST_ENTRY in text
    r = lazyk.combinations(x, 2)
    text = lazyk.explain(r, target=target)
    assert text.startswith("== records") and "fields 0, 1" in text
    assert "sample data" not in text and "sample data" not in h.explain(target=target)
    # the result is unchanged by explaining it
    assert lazyk.evaluate(h).tolist() == np.histogram([2, 4, 6], 4, (0, 8))[0].tolist()


def test_histogram_of_a_placeholder_is_explained_on_sample_data():
    p = lazyk.placeholder("p", "N * var * float64")
    text = lazyk.explain(lazyk.histogram(p, 3, (0, 3)))
    assert "run on sample data" in text and "loop-nest" in text


def test_strings_and_unknown_targets_are_refused_by_name():
    s = lazyk.array([["a", "bc"], []])
    with pytest.raises(NotSupportedError, match="strings .* not supported on the GPU"):
        lazyk.str_len(s).explain(target="cuda")
    with pytest.raises(ValueError, match="target must be 'cpu' or 'cuda', not 'gpu'"):
        x.sum().explain(target="gpu") if hasattr(x.sum(), "explain") else \
            lazyk.explain(x.sum(), target="gpu")


def test_a_compiled_expression_is_explained_for_the_gpu():
    f = lazyk.compile((lazyk.placeholder("p", "N * var * float64") * 2).sum(axis=-1))
    text = f.explain(target="cuda")
    assert NEST_ENTRY in text and "nvptx64-nvidia-cuda" in text
    assert "define" in f.explain()  # the CPU's LLVM IR by default


def test_gpu_data_and_complex_nests_are_refused_by_name():
    d = lazyk.DeviceArray((3,), "float64", 4096)  # (an address: nothing is read without a GPU)
    assert lazyk.explain(d * 2, target="cuda").startswith("=== CUDA kernel 0")
    with pytest.raises(lazyk.DeviceError, match="explain\\(target='cuda'\\)"):
        lazyk.explain(d * 2)
    with pytest.raises(ValueError, match="do not make a device array"):
        lazyk.DeviceArray((-3,), object, 0)
    assert lazyk.DeviceArray((0,), "f8", 0).shape == (0,)  # (an empty one needs no address)
    x = lazyk.array([[1 + 1j, 2j], [3 + 0j]])
    with pytest.raises(lazyk.NotSupportedError, match="cos on complex128: not supported on the GPU"):
        lazyk.explain(lazyk.cos(x), target="cuda")
