"""CUDA driver runtime through cuda-bindings: contexts, device memory, PTX modules, launches.

Text in, launches out: NVVM IR or PTX text becomes a loaded module (`load_ir`), whose
functions `launch` runs with raw parameter bytes; `lazyk.kernel.gpu` decides what to launch.

Tests without a GPU run this module against an emulated driver (host memory, the generated
kernels JIT-compiled for the CPU), so the logic around each driver call is exercised there;
`tests/gpu` runs it on a real GPU (an H200 so far). Every failure to reach a driver becomes
`DeviceError` with the reason.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lazyk.backend import nvvmc
from lazyk.errors import DeviceError

_HINT = "install the GPU extra: pip install 'lazyk[cuda]'"
# Blocks per SM for grid-stride kernels: enough warps in flight to hide memory latency
# without launching more blocks than a grid-stride loop needs.
BLOCKS_PER_SM = 8
BLOCK = 256


_driver = None


def driver():
    """The cuda-bindings driver module; DeviceError when the extra is not installed."""
    global _driver
    if _driver is None:  # (an import statement per call costs microseconds per launch)
        try:
            from cuda.bindings import driver as drv
        except ImportError as err:
            raise DeviceError(f"cuda-bindings is not installed ({err}): {_HINT}") from None
        _driver = drv
    return _driver


def check(result):
    """Unpack a cuda-bindings (CUresult, *values) tuple; raise DeviceError on failure."""
    drv = driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(err)
        _, text = drv.cuGetErrorString(err)
        raise DeviceError(f"CUDA driver error {name.decode() if name else err}: "
                          f"{text.decode() if text else ''}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


_init_lock = threading.Lock()
_initialised = False


def init() -> None:
    """cuInit once; a machine without a driver gets DeviceError saying so."""
    global _initialised
    with _init_lock:
        if _initialised:
            return
        drv = driver()
        try:
            check(drv.cuInit(0))
        except DeviceError:
            raise
        except Exception as err:  # cuda-pathfinder raises its own error without libcuda
            raise DeviceError(f"no CUDA driver on this machine ({type(err).__name__}: {err})"
                              ) from None
        _initialised = True


def driver_version() -> int:
    """cuDriverGetVersion, e.g. 13000 for CUDA 13.0."""
    init()
    return check(driver().cuDriverGetVersion())


def available() -> bool:
    """Whether a CUDA driver and at least one device can be used."""
    try:
        return device_count() > 0
    except DeviceError:
        return False


def device_count() -> int:
    """Number of CUDA devices the driver sees."""
    init()
    return check(driver().cuDeviceGetCount())


def pointer_ordinal(ptr: int) -> int | None:
    """The device a pointer from another library (CuPy, PyTorch, ...) belongs to, if known.

    Asks only an already initialised driver: deciding where an operand lives must not be
    what first loads CUDA.
    """
    if not _initialised or not ptr:
        return None
    drv = driver()
    try:
        return int(check(drv.cuPointerGetAttribute(
            drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr)))
    except DeviceError:
        return None


@dataclass
class Device:
    """One GPU with its primary context made current on use."""

    ordinal: int
    handle: object
    context: object
    sm_count: int
    max_threads: int
    capability: tuple[int, int]
    name: str
    memory: int  # bytes

    def activate(self) -> None:
        """Make this device's primary context current on the calling thread (asking first
        costs a fifth of setting it; another library may have changed it since)."""
        drv = driver()
        if int(check(drv.cuCtxGetCurrent()) or 0) != int(self.context):
            check(drv.cuCtxSetCurrent(self.context))

    def launch_config(self, n: int, block: int = BLOCK) -> tuple[int, int]:
        """(grid, block) for a grid-stride loop over n items: at most BLOCKS_PER_SM per SM."""
        block = min(block, self.max_threads)
        grid = max(1, min((n + block - 1) // block, self.sm_count * BLOCKS_PER_SM))
        return grid, block


@lru_cache(maxsize=None)
def get_device(ordinal: int = 0) -> Device:
    """The Device for an ordinal, its primary context retained once per process."""
    init()
    drv = driver()
    count = device_count()
    if not 0 <= ordinal < count:
        raise DeviceError(f"no CUDA device {ordinal} (the driver sees {count})")
    dev = check(drv.cuDeviceGet(ordinal))
    ctx = check(drv.cuDevicePrimaryCtxRetain(dev))
    attr = drv.CUdevice_attribute

    def get(a):
        return check(drv.cuDeviceGetAttribute(a, dev))

    name = check(drv.cuDeviceGetName(64, dev)).split(b"\0")[0].decode()
    cap = (get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
           get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
    if cap < (9, 0):
        # The PTX is generated for compute_90; older GPUs cannot load it.
        raise DeviceError(f"{name} has compute capability {cap[0]}.{cap[1]}; lazyk needs 9.0+")
    d = Device(ordinal, dev, ctx, get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
               get(attr.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK), cap, name,
               int(check(drv.cuDeviceTotalMem(dev))))
    d.activate()
    return d


class _Pool:
    """Freed allocations kept per (device, size class) for reuse: cuMemAlloc/cuMemFree
    synchronize the device and cost far more than a small kernel, so a call that allocates
    its output must not pay them every time. Bounded per device by POOL_BYTES, or a quarter
    of its memory; an allocation that runs out of memory frees the pool and tries again.

    NOTE: reuse is safe in stream order because lazyk launches on the legacy default stream
    (or synchronizes its own streams before results are freed).
    """

    def __init__(self):
        self.free: dict[tuple[int, int], list[int]] = {}
        self.bytes: dict[int, int] = {}
        self.lock = threading.Lock()

    @staticmethod
    def size_class(nbytes: int) -> int:
        # 512-byte steps up to 1 MiB, then 1/8 of the next power of two: <= 12.5% waste.
        if nbytes <= 1 << 20:
            return max(512, (nbytes + 511) // 512 * 512)
        step = 1 << (nbytes.bit_length() - 3)
        return (nbytes + step - 1) // step * step

    def take(self, device: int, size: int) -> int:
        with self.lock:
            ptrs = self.free.get((device, size))
            if ptrs:
                self.bytes[device] -= size
                return ptrs.pop()
        return 0

    def give(self, device: Device, size: int, ptr: int) -> bool:
        limit = device.memory // 4 if POOL_BYTES is None else POOL_BYTES
        with self.lock:
            if self.bytes.get(device.ordinal, 0) + size > limit:
                return False
            self.free.setdefault((device.ordinal, size), []).append(ptr)
            self.bytes[device.ordinal] = self.bytes.get(device.ordinal, 0) + size
            return True

    def release(self, device: Device) -> None:
        """Really free every cached block of a device (e.g. before a large allocation)."""
        with self.lock:
            keys = [k for k in self.free if k[0] == device.ordinal]
            ptrs = [p for k in keys for p in self.free.pop(k)]
            self.bytes[device.ordinal] = 0
        device.activate()
        for p in ptrs:
            check(driver().cuMemFree(p))


# None: a quarter of each device's memory. (A fixed 1 GiB freed every 800 MB result of a
# 1e8-element call once smaller blocks were cached: cuMemFree + cuMemAlloc doubled its time.)
POOL_BYTES: int | None = None
_pool = _Pool()


class Buffer:
    """Device memory owned by lazyk, from the pool or cuMemAlloc; close() returns it."""

    def __init__(self, nbytes: int, device: Device):
        self.device, self.nbytes = device, nbytes
        # Size classes also keep empty arrays on a valid (512-byte) allocation.
        self.size = _Pool.size_class(nbytes)
        self.ptr = _pool.take(device.ordinal, self.size)
        if not self.ptr:
            device.activate()
            try:
                self.ptr = int(check(driver().cuMemAlloc(self.size)))
            except DeviceError:
                _pool.release(device)  # out of memory with blocks cached: free them, retry
                self.ptr = int(check(driver().cuMemAlloc(self.size)))

    def close(self) -> None:
        """Return the allocation to the pool, or free it when the pool is full (idempotent)."""
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            if not _pool.give(self.device, self.size, ptr):
                self.device.activate()
                check(driver().cuMemFree(ptr))

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down the driver
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def copy_to_device(dst: int, host: np.ndarray, stream=0) -> None:
    """Copy a C-contiguous host array to device address dst."""
    host = np.ascontiguousarray(host)
    if host.nbytes:
        check(driver().cuMemcpyHtoDAsync(dst, host.ctypes.data, host.nbytes, stream))
        synchronize(stream)


def copy_to_host(host: np.ndarray, src: int, stream=0) -> None:
    """Copy device address src into a C-contiguous host array."""
    if host.nbytes:
        init()  # (no driver: DeviceError saying what is missing, as every entry point)
        check(driver().cuMemcpyDtoHAsync(host.ctypes.data, src, host.nbytes, stream))
        synchronize(stream)


def copy_device(dst: int, src: int, nbytes: int, stream=0) -> None:
    """Device-to-device copy of nbytes."""
    if nbytes:
        check(driver().cuMemcpyDtoDAsync(dst, src, nbytes, stream))


def synchronize(stream=0) -> None:
    """Wait for all work on a stream (0: the legacy default stream)."""
    check(driver().cuStreamSynchronize(stream))


class Stream:
    """A CUDA stream; close() destroys it."""

    def __init__(self, device: Device):
        device.activate()
        self.handle = check(driver().cuStreamCreate(0))

    def synchronize(self) -> None:
        synchronize(self.handle)

    def close(self) -> None:
        if self.handle is not None:
            check(driver().cuStreamDestroy(self.handle))
            self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Module:
    """A PTX module loaded on one device; functions looked up by name."""

    def __init__(self, ptx: str, device: Device):
        device.activate()
        self.device, self.ptx = device, ptx
        self.handle = check(driver().cuModuleLoadData(ptx.encode() + b"\0"))
        self._functions: dict[str, object] = {}

    def function(self, name: str):
        """The CUfunction called `name`."""
        fn = self._functions.get(name)
        if fn is None:
            fn = self._functions[name] = check(driver().cuModuleGetFunction(self.handle, name.encode()))
        return fn

    def close(self) -> None:
        if self.handle is not None:
            check(driver().cuModuleUnload(self.handle))
            self.handle = None


def load_ir(ir: str, device: Device) -> Module:
    """NVVM IR text -> PTX (libNVVM, at most the PTX version this driver loads) -> a Module."""
    ptx = nvvmc.compile_ptx(ir, max_ptx=nvvmc.max_ptx_for_driver(driver_version()))
    return Module(ptx, device)


def launch(fn, grid: int, block: int, params: list[bytes], stream=0) -> None:
    """cuLaunchKernel with each parameter given as its raw bytes (the kernel-data struct)."""
    bufs = [ctypes.create_string_buffer(p, len(p)) for p in params]
    ptrs = (ctypes.c_void_p * len(bufs))(*[ctypes.addressof(b) for b in bufs])
    # The driver copies parameter values at launch, so the buffers may die afterwards.
    check(driver().cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream,
                                  ctypes.addressof(ptrs), 0))
