"""The bind-time multistride step: drop, flip, reorder and coalesce loop dims."""
import numpy as np
import pytest

from lazyk.passes.dims import simplify_dims


def _layout(*arrays, reduced=None):
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    views = [np.broadcast_to(a, shape) for a in arrays]
    return simplify_dims(shape, tuple(v.strides for v in views), reduced)


def test_c_contiguous_is_one_flat_loop():
    a = np.zeros((3, 4, 5))
    lay = _layout(a, a.copy())
    assert lay.shape == (60,) and lay.strides == ((8,), (8,))


def test_fortran_order_is_one_flat_loop_in_memory_order():
    a = np.zeros((3, 4, 5), order="F")
    lay = _layout(a, np.asfortranarray(a))
    assert lay.shape == (60,) and lay.strides == ((8,), (8,))


def test_transposed_operand_walked_in_its_memory_order():
    out = np.zeros((4, 3), order="F")
    lay = _layout(out, np.zeros((3, 4)).T)
    assert lay.shape == (12,)
    assert lay.strides == ((8,), (8,))


def test_size_one_and_all_zero_stride_dims_dropped():
    lay = simplify_dims((1, 5, 7), ((0, 0, 8), (0, 0, 4)))
    assert lay.shape == (7,) and lay.strides == ((8,), (4,))


def test_broadcast_operand_keeps_its_dim():
    a = np.zeros((3, 4))
    lay = _layout(a, np.zeros(4))
    assert lay.shape == (3, 4)
    assert lay.strides == ((32, 8), (0, 8))


def test_negative_strides_flipped_with_offsets():
    a = np.zeros((3, 4))[::-1, ::-1]
    lay = _layout(a, np.ascontiguousarray(a)[::-1, ::-1])
    assert lay.shape == (12,) and lay.strides == ((8,), (8,))
    assert lay.offsets == (-88, -88)


def test_reduced_dims_stay_distinguishable():
    # out has stride 0 along the reduced axis; it must not merge with a kept axis
    lay = simplify_dims((3, 4), ((0, 8), (32, 8)), (True, False))
    assert lay.shape == (3, 4) and lay.reduced == (True, False)
    # a reduced dim where every operand is broadcast is still a loop (sum of n copies)
    lay = simplify_dims((5,), ((0,), (0,)), (True,))
    assert lay.shape == (5,) and lay.reduced == (True,)


def test_reduced_contiguous_dims_coalesce():
    lay = simplify_dims((2, 3, 4), ((8, 0, 0), (96, 32, 8)), (False, True, True))
    assert lay.shape == (2, 12) and lay.strides == ((8, 0), (96, 8))


def test_zero_size():
    assert simplify_dims((3, 0), ((8, 8), (8, 8))).shape == (0,)


def test_scalar_and_inner_contiguity():
    lay = simplify_dims((), ((), ()))
    assert lay.shape == () and lay.size == 1
    lay = _layout(np.zeros((3, 4))[:, ::2], np.zeros((3, 2)))
    assert lay.inner_contiguous((8, 8)) == (False, True)


def test_strides_must_match_shape():
    with pytest.raises(ValueError):
        simplify_dims((3,), ((8, 8),))


@pytest.mark.parametrize("order", ["C", "F"])
def test_layout_covers_same_addresses(order):
    a = np.zeros((2, 3, 4), order=order)[:, ::-1, 1:]
    b = np.zeros((2, 3, 3))
    lay = _layout(a, b)
    shape = np.broadcast_shapes(a.shape, b.shape)

    def addrs(strides, offset, shp):
        idx = np.indices(shp).reshape(len(shp), -1)
        return sorted(offset + (np.array(strides)[:, None] * idx).sum(0)) if shp else [offset]

    for k, arr in enumerate((a, b)):
        want = addrs(np.broadcast_to(arr, shape).strides, 0, shape)
        assert addrs(lay.strides[k], lay.offsets[k], lay.shape) == want
