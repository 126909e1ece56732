"""The ckernel ABI is real C: a shared library built by the system compiler calls bound kernels."""
import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from lazyk.kernel import abi
from lazyk.kernel.flat import Instr, KernelSpec, bind

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

C_SOURCE = abi.C_DECLARATIONS + r"""
/* Call a bound kernel through the function pointer in its prefix (single request). */
void call_single(ckernel_prefix *self, char *dst, char *const *src) {
    ckernel_single_t fn = (ckernel_single_t)self->function;
    fn(dst, src, self);
}

/* Call the strided request: `count` elements along an explicit outer dim. */
void call_strided(void *fnptr, ckernel_prefix *self, char *dst, intptr_t dst_stride,
                  char *const *src, const intptr_t *src_stride, size_t count) {
    ckernel_strided_t fn = (ckernel_strided_t)fnptr;
    fn(dst, dst_stride, src, src_stride, count, self);
}

/* Copy the kernel data with memcpy (it must be movable), run the copy, destroy the copy. */
void move_and_call(ckernel_prefix *self, size_t size, char *dst, char *const *src) {
    char buf[4096] __attribute__((aligned(16)));
    memcpy(buf, self, size);
    ckernel_prefix *moved = (ckernel_prefix *)buf;
    ((ckernel_single_t)moved->function)(dst, src, moved);
    if (moved->destructor) moved->destructor(moved);
}
"""


@pytest.fixture(scope="module")
def clib(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("cabi")
    src, lib = d / "caller.c", d / "libcaller.so"
    src.write_text("#include <string.h>\n" + C_SOURCE)
    subprocess.run([CC, "-O1", "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(lib), str(src)],
                   check=True, capture_output=True)
    h = ctypes.CDLL(str(lib))
    vp = ctypes.c_void_p
    h.call_single.argtypes = [vp, vp, vp]
    h.call_strided.argtypes = [vp, vp, vp, ctypes.c_ssize_t, vp, vp, ctypes.c_size_t]
    h.move_and_call.argtypes = [vp, ctypes.c_size_t, vp, vp]
    return h


def spec_sqrt_sum():
    f8 = np.dtype("f8")
    body = (Instr("load", f8, (), 0), Instr("load", f8, (), 1), Instr("multiply", f8, (0, 0)),
            Instr("multiply", f8, (1, 1)), Instr("add", f8, (2, 3)), Instr("sqrt", f8, (4,)))
    return KernelSpec((f8, f8), (True, True), body, ((5, f8),))


def test_c_calls_single_through_prefix(clib):
    a, b = np.random.rand(6, 50), np.random.rand(6, 50)[:, ::-1]
    out = np.empty((6, 50))
    with bind(spec_sqrt_sum(), out, a, b) as ck:
        # C gets the real pointers: data of out, an array of input pointers, the prefix
        src = (ctypes.c_void_p * 2)(a.ctypes.data, b.ctypes.data)
        clib.call_single(ck.address, out.ctypes.data, ctypes.addressof(src))
    assert np.array_equal(out, np.sqrt(a * a + b * b))


def test_c_moves_kernel_data_with_memcpy(clib):
    a, b = np.random.rand(1000), np.random.rand(1000)
    out = np.empty(1000)
    with bind(spec_sqrt_sum(), out, a, b) as ck:
        clib.move_and_call(ck.address, ck.compiled.kd_size, ck.dst, ck.src_address)
    assert np.array_equal(out, np.sqrt(a * a + b * b))


def test_c_calls_strided_request(clib):
    """Strided: `count` rows along an explicit outer dim; kernel-data dims 1.. give one row."""
    a, b = np.random.rand(5, 48)[:, :40], np.random.rand(5, 40)
    out = np.empty((5, 40))
    with bind(spec_sqrt_sum(), out, a, b) as ck:  # 2-D: padded rows do not coalesce
        assert ck.layout.ndim == 2
        srcs = (ctypes.c_void_p * 2)(a.ctypes.data, b.ctypes.data)
        sst = (ctypes.c_ssize_t * 2)(a.strides[0], b.strides[0])
        clib.call_strided(ck.compiled.strided_address, ck.address, out.ctypes.data,
                          out.strides[0], ctypes.addressof(srcs), ctypes.addressof(sst), 5)
    assert np.array_equal(out, np.sqrt(a * a + b * b))


def test_builder_zeroed_grows_and_destroys_once():
    with abi.CKernelBuilder(32) as kb:
        off = kb.alloc(24)
        child = kb.alloc(40)
        assert off == 0 and child % abi.ALIGN == 0 and child >= 24
        assert bytes(kb.buffer())[: kb.capacity] == bytes(kb.capacity)  # zero-initialised
        kb.view(ctypes.c_int64, child).value = 42
        kb.reserve(4096)  # growth moves the bytes (offsets, never interior pointers)
        assert kb.view(ctypes.c_int64, child).value == 42
        assert kb.prefix().destructor is None  # half-built: destroying it is a no-op
    assert kb.closed
    calls = []
    destructor = abi.DestructorFn(lambda p: calls.append(p))
    kb = abi.CKernelBuilder()
    kb.prefix().destructor = ctypes.cast(destructor, ctypes.c_void_p).value
    kb.close()
    kb.close()
    assert calls == [kb.address]


def test_a_ragged_loop_nest_is_a_ckernel(clib):
    """The loop nest over var rows: each part's record is a ckernel_prefix and kernel data
    that C code runs through the prefix's function (single request), moved or not."""
    import lazyk
    from lazyk.codegen.nest import PREFIX

    x = lazyk.array([[1.0, 2.0], [], [3.0, 4.0, 5.0]])
    k = lazyk.compile((lazyk.placeholder("x", "N * var * float64") * 2).sum(axis=-1))
    out = np.zeros(3)
    bound = k.bind(out, x)
    blocks = bound._scratch()[0]  # this thread's records, every pointer in place
    record = blocks[0]
    prefix = abi.CKernelPrefix.from_address(record.ctypes.data)
    assert prefix.function == bound._kern.single and prefix.destructor
    words, lay = record[PREFIX:], bound._kern.lay
    src = (ctypes.c_void_p * 1)(int(words[lay["ops"]]))  # the operand's data
    for call in (lambda: clib.call_single(record.ctypes.data, int(words[3]), src),
                 lambda: clib.move_and_call(record.ctypes.data, record.nbytes,
                                            int(words[3]), src)):
        out[:] = -1.0
        call()
        np.testing.assert_array_equal(out, [6.0, 0.0, 24.0])
